// The interface every backend implements. A backend receives only resolved, validated Params.
//
// Adding a backend NAME:
//   1. src/backends/NAME/CMakeLists.txt calls attnkit_add_backend(NAME SOURCES ...)
//      (or attnkit_backend_not_built(NAME "reason") when its toolchain is missing);
//   2. src/backends/NAME/backend.cpp defines `attnkit::Backend& attnkit::backend_NAME();`
//      returning a function-local static instance;
//   3. the canonical name and aliases are already in registry.cpp's table (DESIGN.md §3).
#pragma once

#include <string>
#include <vector>

#include "attnkit/backend_info.hpp"
#include "core/params.hpp"

namespace attnkit {

class Backend {
 public:
  virtual ~Backend() = default;
  /// Name, aliases, summary and capabilities (built = true).
  virtual const BackendDescription& description() const = 0;
  /// Reasons beyond the capability table (alignment, shared-memory limits, ...). Appends to
  /// `reasons`; appends nothing when the call can run. Called only after the capability check.
  virtual void extra_reasons(const Params& /*p*/, std::vector<std::string>& /*reasons*/) const {}
  virtual void forward(const Params& p) = 0;
  virtual void backward(const Params& p) = 0;
};

/// Every reason `backend` cannot run `p` (empty = it can): the capability table first, then
/// extra_reasons(). `arch` is the device's compute capability * 10 (0 on the CPU).
std::vector<std::string> backend_reasons(const Backend& backend, const Params& p, int arch);

}  // namespace attnkit
