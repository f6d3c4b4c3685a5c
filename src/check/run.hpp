// The implementation behind run_case_against, with a hook that can alter the tested backend's
// outputs before comparison: the harness's own tests use it to prove that a wrong result fails.
#pragma once

#include <functional>
#include <string>

#include "check/check.hpp"
#include "check/execute.hpp"

namespace attnkit::check::detail {

using OutputHook = std::function<void(Outputs&)>;

Report run_case_impl(const Case& c, const std::string& backend, const std::string& reference,
                     Device device, uint64_t seed, const Tolerance& tol,
                     const OutputHook& alter_tested = nullptr);

}  // namespace attnkit::check::detail
