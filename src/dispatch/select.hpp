// Backend selection as a pure function (no backends, no globals): unit-tested on the CPU.
//
// Order: per-call > innermost scoped guard > process default (set_default_backend, then env
// ATTNKIT_BACKEND) > auto. A backend named explicitly that cannot run the call is an error listing
// every reason — never a silent fallback. auto takes the first supporting candidate in preference
// order and skips quantized-tier backends unless allowed.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "attnkit/backend_info.hpp"
#include "attnkit/error.hpp"

namespace attnkit {

struct SelectionRequest {
  std::string per_call;         // Options::backend
  std::string scoped;           // innermost BackendGuard on this thread
  std::string process_default;  // set_default_backend()
  std::string env_default;      // ATTNKIT_BACKEND
  DeviceType device = DeviceType::cpu;
  bool allow_quantized = false;
  // auto only: backends tried before the preference order (api.cpp request_for sets it for call
  // classes where a later backend measured faster), each still only if it can run the call.
  std::vector<std::string> prefer;
};

/// One known backend as selection sees it, in preference order.
struct SelectionCandidate {
  std::string name;  // canonical
  bool built = false;
  std::string not_built_reason;
  DeviceType device = DeviceType::cpu;
  AccuracyTier tier = AccuracyTier::exact;
  std::vector<std::string> reasons;  // why it cannot run this call (empty = it can)
};

struct Selection {
  std::string backend;  // canonical name chosen
  std::string rule;     // which rule decided: "per-call", "scoped guard", ...
};

/// Resolves a user-facing name: canonical, alias, "auto"/"native"/"default"/"" → "auto"
/// ("native" is cpu_flash on CPU tensors). Throws kUnknownBackend with the known names.
std::string resolve_backend_name(const std::string& name, DeviceType device);

/// Throws Error(kUnknownBackend | kNotBuilt | kUnsupported) when nothing can run the call.
/// Uses each candidate's `reasons`.
Selection select_backend(const SelectionRequest& req,
                         const std::vector<SelectionCandidate>& candidates);

/// The same rule, asking `reasons_of` only for the candidates it has to look at: the named one,
/// or for auto the built ones on the call's device up to the first that can run it. The call
/// path uses this (reasons include each backend's extra_reasons(), not free to compute for all).
using ReasonsOf = std::function<std::vector<std::string>(const SelectionCandidate&)>;
Selection select_backend(const SelectionRequest& req,
                         const std::vector<SelectionCandidate>& candidates,
                         const ReasonsOf& reasons_of);

}  // namespace attnkit
