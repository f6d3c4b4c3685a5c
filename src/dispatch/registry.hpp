// All known backend names (built or not), aliases, and the backends compiled into this binary.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "dispatch/backend.hpp"

namespace attnkit {

struct KnownBackend {
  const char* name;
  std::vector<const char*> aliases;
  const char* summary;
};

/// DESIGN.md §3's table, in the default preference order of `auto`.
const std::vector<KnownBackend>& known_backends();

/// Canonical name for a name or alias, or nullopt. "auto" and "native" map to "auto";
/// `native` means cpu_flash on CPU tensors and auto on CUDA ones (resolved in select.cpp).
std::optional<std::string> lookup_canonical(const std::string& name_or_alias);

/// The backend compiled into this binary under canonical `name`, or nullptr.
Backend* built_backend(const std::string& name);
/// Why canonical `name` is not built ("" if it is built or unknown).
std::string not_built_reason(const std::string& name);

/// Compiled backends in preference order.
std::vector<Backend*> built_backends();

}  // namespace attnkit
