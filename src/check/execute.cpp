#include "check/execute.hpp"

#include <memory>
#include <optional>

#include "attnkit/attention.hpp"
#include "attnkit/error.hpp"

namespace attnkit::check::detail {
namespace {

// A named backend must run itself: the API never falls back silently, and the harness makes sure.
void expect_ran(const std::string& requested, const std::string& ran) {
  const std::string want = canonical_backend_name(requested);
  if (want != "auto" && ran != want)
    throw Error(ErrorCode::kInternal,
                "asked for backend '" + requested + "', but '" + ran + "' ran");
}

}  // namespace

Outputs execute(const Case& c, const Inputs& in, const std::string& backend, Device device,
                std::string& stage) {
  stage = "copying inputs";
  const DeviceCopy q(in.q, device), k(in.k, device), v(in.v, device);
  std::optional<DeviceCopy> mask, alibi, cu_q, cu_k;
  Options o = in.opts;
  o.backend = backend;
  if (in.has_mask) o.mask = mask.emplace(in.mask, device).view();
  if (in.has_alibi) o.alibi_slopes = alibi.emplace(in.alibi, device).view();
  if (c.varlen) {
    o.cu_seqlens_q = cu_q.emplace(in.cu_q, device).view();
    o.cu_seqlens_k = cu_k.emplace(in.cu_k, device).view();
  }

  Outputs res;
  res.out = in.out;
  res.out.poison();
  res.lse = in.lse;
  res.lse.poison();
  const bool want_lse = c.lse || c.backward;
  const DeviceCopy out(res.out, device), lse(res.lse, device);

  stage = "forward";
  ForwardArgs fa;
  fa.q = q.view();
  fa.k = k.view();
  fa.v = v.view();
  fa.out = out.view();
  if (want_lse) fa.lse = lse.view();
  const std::string ran = forward(fa, o);
  expect_ran(backend, ran);
  device_runtime(device.type).synchronize(device);
  out.copy_back(res.out);
  lse.copy_back(res.lse);
  if (!c.backward) return res;

  const DeviceCopy dout(in.dout, device);
  auto run_backward = [&](HostTensor& dq_h, HostTensor& dk_h, HostTensor& dv_h) {
    dq_h = in.q;
    dk_h = in.k;
    dv_h = in.v;
    dq_h.poison();
    dk_h.poison();
    dv_h.poison();
    const DeviceCopy dq(dq_h, device), dk(dk_h, device), dv(dv_h, device);
    BackwardArgs ba;
    ba.dout = dout.view();
    ba.q = q.view();
    ba.k = k.view();
    ba.v = v.view();
    ba.out = out.view();  // the backend's own forward results
    ba.lse = lse.view();
    ba.dq = dq.view();
    ba.dk = dk.view();
    ba.dv = dv.view();
    expect_ran(backend, backward(ba, o));
    device_runtime(device.type).synchronize(device);
    dq.copy_back(dq_h);
    dk.copy_back(dk_h);
    dv.copy_back(dv_h);
  };
  stage = "backward";
  run_backward(res.dq, res.dk, res.dv);
  res.has_grads = true;
  if (c.deterministic) {
    stage = "backward (repeat for determinism)";
    run_backward(res.dq2, res.dk2, res.dv2);
    res.has_repeat = true;
  }
  return res;
}

}  // namespace attnkit::check::detail
