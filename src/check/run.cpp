// run_case / run_case_against: the same inputs through the backend under test and the reference,
// then every comparison. Never throws for a failing comparison; unsupported calls are skips.
#include <string>

#include "attnkit/attention.hpp"
#include "attnkit/error.hpp"
#include "check/check.hpp"
#include "check/compare.hpp"
#include "check/execute.hpp"
#include "check/inputs.hpp"
#include "check/run.hpp"

namespace attnkit::check {
namespace {

bool is_skip(ErrorCode code) {
  // kTooLarge: the backend's own memory cap (math's score matrix) rules the case out.
  return code == ErrorCode::kUnsupported || code == ErrorCode::kNotBuilt ||
         code == ErrorCode::kTooLarge;
}

}  // namespace

namespace detail {

Report run_case_impl(const Case& c, const std::string& backend, const std::string& reference,
                     Device device, uint64_t seed, const Tolerance& tol,
                     const OutputHook& alter_tested) {
  Report rep;
  rep.backend = backend;
  rep.case_name = c.name();
  std::string stage;
  detail::Inputs in;
  detail::Outputs got, ref;
  try {
    in = detail::build_inputs(c, seed);
  } catch (const std::exception& e) {
    rep.detail = std::string("building inputs: ") + e.what();
    return rep;
  }

  try {
    got = detail::execute(c, in, backend, device, stage);
  } catch (const Error& e) {
    rep.skipped = is_skip(e.code());
    rep.detail = backend + " " + stage + ": [" + error_code_name(e.code()) + "] " + e.what();
    return rep;
  } catch (const std::exception& e) {
    rep.detail = backend + " " + stage + ": " + e.what();
    return rep;
  }

  if (alter_tested) alter_tested(got);

  // The CPU oracle runs on host memory; any other reference on the device under test.
  std::string ref_name = reference;
  try {
    ref_name = canonical_backend_name(reference);
  } catch (const Error&) {
  }
  const Device ref_device = ref_name == "math" ? Device::cpu() : device;
  try {
    ref = detail::execute(c, in, reference, ref_device, stage);
  } catch (const Error& e) {
    // A reference that cannot run the case (math over its memory cap, cuda_math without the
    // feature) leaves nothing to compare with: a skip, with the reason.
    rep.skipped = is_skip(e.code());
    rep.detail = "reference " + reference + " " + stage + ": [" + error_code_name(e.code()) + "] " +
                 e.what();
    return rep;
  } catch (const std::exception& e) {
    rep.detail = "reference " + reference + " " + stage + ": " + e.what();
    return rep;
  }

  std::string& why = rep.detail;
  rep.metrics.push_back(
      detail::compare_values("out", got.out, ref.out, tol.out_rel, tol.out_abs, why));
  if (c.lse || c.backward)
    rep.metrics.push_back(detail::compare_lse(got.lse, ref.lse, tol.lse_abs, why));
  if (c.backward) {
    rep.metrics.push_back(detail::compare_values("dq", got.dq, ref.dq, tol.grad_rel, 0, why));
    rep.metrics.push_back(detail::compare_values("dk", got.dk, ref.dk, tol.grad_rel, 0, why));
    rep.metrics.push_back(detail::compare_values("dv", got.dv, ref.dv, tol.grad_rel, 0, why));
  }
  if (got.has_repeat) {
    rep.metrics.push_back(detail::compare_bitwise("dq_repeat", got.dq, got.dq2, why));
    rep.metrics.push_back(detail::compare_bitwise("dk_repeat", got.dk, got.dk2, why));
    rep.metrics.push_back(detail::compare_bitwise("dv_repeat", got.dv, got.dv2, why));
  }
  rep.pass = true;
  for (const Metric& m : rep.metrics)
    rep.pass = rep.pass && m.pass;
  return rep;
}

}  // namespace detail

Report run_case_against(const Case& c, const std::string& backend, const std::string& reference,
                        Device device, uint64_t seed, const Tolerance& tol) {
  return detail::run_case_impl(c, backend, reference, device, seed, tol);
}

Report run_case(const Case& c, const std::string& backend, Device device, uint64_t seed,
                const Tolerance& tol) {
  return run_case_against(c, backend, "math", device, seed, tol);
}

}  // namespace attnkit::check
