// cuda_math against the independent fp64 reference (reference.hpp) on hostile shapes, through
// the public API (attnkit::forward/backward with backend "cuda_math"): forward out/lse, backward
// dq/dk/dv, every option, f32/f16/bf16, three layouts. Outputs are poisoned (NaN) first and the
// padding of padded layouts must still be poison afterwards (no stray writes). Skips visibly
// without a GPU.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>
#include <limits>

#include "attnkit/attention.hpp"
#include "backends/cuda_math/cuda_math.hpp"
#include "backends/cuda_math/reference.hpp"
#include "common/cuda_skip.hpp"
#include "core/device_runtime.hpp"
#include "core/dtype_convert.hpp"

// Specs are written with designated initializers naming only the fields that matter.
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

namespace attnkit::cmtest {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

/// A device tensor made from (or read back into) canonical host data.
/// Dense: logical [B, S, H, E]; varlen (b = 0): [rows, H, E].
struct DevTensor {
  DeviceBuffer buf;
  TensorView view;
  std::vector<int64_t> offsets;  // element offset of canonical element n
  int64_t span = 0;              // elements in the allocation
  DType dtype = DType::f32;
};

DevTensor make_tensor(const std::vector<double>* data, DType dt, int64_t b, int64_t s, int64_t h,
                      int64_t e, Layout layout) {
  DevTensor t;
  t.dtype = dt;
  const bool varlen = b == 0;
  const int64_t rows = varlen ? s : b * s;
  const int64_t pe = layout == Layout::padded ? e + 3 : e;           // padded head stride
  const int64_t ps = layout == Layout::padded ? h * pe + 5 : h * e;  // padded token stride
  int64_t sb, ss, sh;
  if (layout == Layout::bhsd && !varlen) {
    sb = h * s * e, ss = e, sh = s * e;
  } else {
    ss = ps, sh = pe, sb = s * ps + (layout == Layout::padded ? 7 : 0);
  }
  t.span = varlen ? rows * ss : b * sb;
  t.span = std::max<int64_t>(t.span, 1);
  t.offsets.resize(static_cast<size_t>(rows * h * e));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t hh = 0; hh < h; ++hh)
      for (int64_t x = 0; x < e; ++x) {
        const int64_t bi = varlen ? 0 : r / s, si = varlen ? r : r % s;
        t.offsets[(r * h + hh) * e + x] = bi * sb + si * ss + hh * sh + x;
      }
  // Host image: NaN everywhere (padding poisons any stray read; outputs start as poison).
  std::vector<uint8_t> img(static_cast<size_t>(t.span * dtype_size(dt)));
  for (int64_t n = 0; n < t.span; ++n)
    store_from_double(img.data(), n, dt, kNaN);
  if (data)
    for (size_t n = 0; n < data->size(); ++n)
      store_from_double(img.data(), t.offsets[n], dt, (*data)[n]);
  t.buf = DeviceBuffer(img.size(), Device::cuda(0));
  device_runtime(DeviceType::cuda)
      .copy_to_device(t.buf.get(), img.data(), img.size(), Device::cuda(0));
  t.view.data = t.buf.get();
  t.view.dtype = dt;
  t.view.device = Device::cuda(0);
  if (varlen) {
    t.view.rank = 3;
    t.view.shape = {rows, h, e, 0};
    t.view.stride = {ss, sh, 1, 0};
  } else {
    t.view.rank = 4;
    t.view.shape = {b, s, h, e};
    t.view.stride = {sb, ss, sh, 1};
  }
  return t;
}

/// Canonical values; `stray` counts non-logical elements that are no longer NaN.
std::vector<double> read_back(const DevTensor& t, int64_t* stray = nullptr) {
  std::vector<uint8_t> img(static_cast<size_t>(t.span * dtype_size(t.dtype)));
  device_runtime(DeviceType::cuda)
      .copy_to_host(img.data(), t.buf.get(), img.size(), Device::cuda(0));
  std::vector<double> out(t.offsets.size());
  std::vector<bool> logical(static_cast<size_t>(t.span), false);
  for (size_t n = 0; n < out.size(); ++n) {
    out[n] = load_as_double(img.data(), t.offsets[n], t.dtype);
    logical[static_cast<size_t>(t.offsets[n])] = true;
  }
  if (stray) {
    *stray = 0;
    for (int64_t n = 0; n < t.span; ++n)
      if (!logical[n] && !std::isnan(load_as_double(img.data(), n, t.dtype))) ++*stray;
  }
  return out;
}

DevTensor raw_tensor(const void* host, size_t bytes, DType dt,
                     std::initializer_list<int64_t> shape) {
  DevTensor t;
  t.dtype = dt;
  t.buf = DeviceBuffer(std::max<size_t>(bytes, 4), Device::cuda(0));
  if (bytes)
    device_runtime(DeviceType::cuda).copy_to_device(t.buf.get(), host, bytes, Device::cuda(0));
  t.view = TensorView::contiguous(t.buf.get(), dt, shape, Device::cuda(0));
  return t;
}

struct Tol {
  double out, lse, grad;
};
Tol tolerance(DType t) {
  if (t == DType::f32) return {1e-5, 1e-4, 1e-4};
  return {1e-2, 2e-3, 2e-2};
}

/// ||x - ref|| / ||ref|| with NaN/Inf mismatches counted as failures (-inf must match -inf).
::testing::AssertionResult close(const char* what, const std::vector<double>& x,
                                 const std::vector<double>& ref, double rel_tol) {
  if (x.size() != ref.size()) return ::testing::AssertionFailure() << what << ": size mismatch";
  double num = 0, den = 0, max_abs = 0;
  int64_t bad = 0, first_bad = -1;
  for (size_t n = 0; n < x.size(); ++n) {
    if (!std::isfinite(ref[n]) || !std::isfinite(x[n])) {
      if (!(x[n] == ref[n])) {  // NaN never equals; -inf == -inf passes
        ++bad;
        if (first_bad < 0) first_bad = static_cast<int64_t>(n);
      }
      continue;
    }
    const double d = x[n] - ref[n];
    num += d * d;
    den += ref[n] * ref[n];
    max_abs = std::max(max_abs, std::fabs(d));
  }
  const double rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  if (bad == 0 && rel <= rel_tol) return ::testing::AssertionSuccess();
  auto f = ::testing::AssertionFailure();
  f << what << ": rel " << rel << " (tol " << rel_tol << "), max abs " << max_abs << ", " << bad
    << " non-finite mismatches";
  if (first_bad >= 0)
    f << " (first at " << first_bad << ": " << x[first_bad] << " vs " << ref[first_bad] << ")";
  return f;
}

/// Everything one run needs on the device.
struct DeviceProblem {
  DevTensor q, k, v, out, lse, dout, dq, dk, dv, mask, slopes, cu_q, cu_k;
  Options opts;
};

DeviceProblem upload(const HostProblem& p) {
  const Spec& s = p.s;
  DeviceProblem d;
  const bool vl = s.varlen();
  const int64_t B = vl ? 0 : s.b, SQ = vl ? p.tq : s.sq, SK = vl ? p.tk : s.sk;
  d.q = make_tensor(&p.q, s.dtype, B, SQ, s.hq, s.d, s.layout);
  d.k = make_tensor(&p.k, s.dtype, B, SK, s.hkv, s.d, s.layout);
  d.v = make_tensor(&p.v, s.dtype, B, SK, s.hkv, s.dv, s.layout);
  d.dout = make_tensor(&p.dout, s.dtype, B, SQ, s.hq, s.dv, s.layout);
  d.out = make_tensor(nullptr, s.dtype, B, SQ, s.hq, s.dv, s.layout);
  d.dq = make_tensor(nullptr, s.dtype, B, SQ, s.hq, s.d, s.layout);
  d.dk = make_tensor(nullptr, s.dtype, B, SK, s.hkv, s.d, s.layout);
  d.dv = make_tensor(nullptr, s.dtype, B, SK, s.hkv, s.dv, s.layout);
  // lse: dense [B, Hq, Sq] / varlen [Hq, total_q]; canonical order here is [Hq, tq] for both, so
  // the dense tensor is described by strides over a [Hq, B*Sq]-ordered buffer... kept simple:
  // allocate [Hq, tq] and give the dense view strides (b: Sq, h: tq, s: 1).
  std::vector<float> nanv(static_cast<size_t>(std::max<int64_t>(p.tq * s.hq, 1)), NAN);
  d.lse = raw_tensor(nanv.data(), nanv.size() * 4, DType::f32, {s.hq, std::max<int64_t>(p.tq, 1)});
  if (vl) {
    d.lse.view.shape = {s.hq, p.tq, 0, 0};
    d.lse.view.stride = {p.tq, 1, 0, 0};
  } else {
    d.lse.view.rank = 3;
    d.lse.view.shape = {s.b, s.hq, s.sq, 0};
    d.lse.view.stride = {s.sq, p.tq, 1, 0};
  }
  Options& o = d.opts;
  o.backend = "cuda_math";
  o.scale = p.scale;
  o.causal = s.causal;
  o.window_left = s.wl;
  o.window_right = s.wr;
  o.softcap = s.softcap;
  o.dropout_p = s.dropout;
  o.dropout_seed = p.seed;
  o.dropout_offset = p.offset;
  if (s.mask != Mask::none) {
    const int64_t n = static_cast<int64_t>(p.mask.size());
    if (s.mask == Mask::keep_bool) {
      std::vector<uint8_t> m(static_cast<size_t>(n));
      for (int64_t e = 0; e < n; ++e)
        m[e] = p.mask[e] != 0.0;
      d.mask = raw_tensor(m.data(), m.size(), DType::b8, {p.mb, p.mh, p.mi, s.sk});
    } else {
      const DType mdt = s.dtype;  // additive mask in the inputs' dtype (values representable)
      std::vector<uint8_t> m(static_cast<size_t>(n * dtype_size(mdt)));
      for (int64_t e = 0; e < n; ++e)
        store_from_double(m.data(), e, mdt, p.mask[e]);
      d.mask = raw_tensor(m.data(), m.size(), mdt, {p.mb, p.mh, p.mi, s.sk});
    }
    o.mask = d.mask.view;
  }
  if (s.alibi) {
    if (s.alibi == 2)
      d.slopes = raw_tensor(p.slopes.data(), p.slopes.size() * 4, DType::f32, {s.b, s.hq});
    else
      d.slopes = raw_tensor(p.slopes.data(), p.slopes.size() * 4, DType::f32, {s.hq});
    o.alibi_slopes = d.slopes.view;
  }
  if (vl) {
    d.cu_q = raw_tensor(p.cu_q.data(), p.cu_q.size() * 4, DType::i32,
                        {static_cast<int64_t>(p.cu_q.size())});
    d.cu_k = raw_tensor(p.cu_k.data(), p.cu_k.size() * 4, DType::i32,
                        {static_cast<int64_t>(p.cu_k.size())});
    o.cu_seqlens_q = d.cu_q.view;
    o.cu_seqlens_k = d.cu_k.view;
    o.max_seqlen_q = s.sq;
    o.max_seqlen_k = s.sk;
  }
  return d;
}

std::vector<double> read_lse(const DevTensor& t) {
  std::vector<float> f(static_cast<size_t>(t.buf.bytes() / 4));
  device_runtime(DeviceType::cuda)
      .copy_to_host(f.data(), t.buf.get(), f.size() * 4, Device::cuda(0));
  return std::vector<double>(f.begin(), f.end());
}

void run_and_compare(const Spec& spec, uint64_t seed) {
  const HostProblem hp = make_problem(spec, seed);
  const Reference ref = reference(hp, true);
  DeviceProblem d = upload(hp);
  const Tol tol = tolerance(spec.dtype);

  EXPECT_EQ(forward({d.q.view, d.k.view, d.v.view, d.out.view, d.lse.view}, d.opts), "cuda_math");
  device_runtime(DeviceType::cuda).synchronize(Device::cuda(0));
  int64_t stray = 0;
  EXPECT_TRUE(close("out", read_back(d.out, &stray), ref.out, tol.out));
  EXPECT_EQ(stray, 0) << "out: elements outside the view were written";
  std::vector<double> lse = read_lse(d.lse);
  lse.resize(ref.lse.size());
  EXPECT_TRUE(close("lse", lse, ref.lse, tol.lse));

  backward({d.dout.view, d.q.view, d.k.view, d.v.view, d.out.view, d.lse.view, d.dq.view, d.dk.view,
            d.dv.view},
           d.opts);
  device_runtime(DeviceType::cuda).synchronize(Device::cuda(0));
  EXPECT_TRUE(close("dq", read_back(d.dq, &stray), ref.dq, tol.grad));
  EXPECT_EQ(stray, 0) << "dq: elements outside the view were written";
  EXPECT_TRUE(close("dk", read_back(d.dk, &stray), ref.dk, tol.grad));
  EXPECT_EQ(stray, 0) << "dk: elements outside the view were written";
  EXPECT_TRUE(close("dv", read_back(d.dv, &stray), ref.dv, tol.grad));
  EXPECT_EQ(stray, 0) << "dv: elements outside the view were written";
}

std::vector<Spec> hostile_specs() {
  std::vector<Spec> base;
  auto add = [&](Spec s) { base.push_back(std::move(s)); };
  add({.label = "plain_b2_sq37_sk53_h4_d64", .b = 2, .sq = 37, .sk = 53, .hq = 4, .hkv = 4});
  add({.label = "len1", .b = 1, .sq = 1, .sk = 1, .hq = 2, .hkv = 1, .d = 32, .dv = 32});
  add({.label = "causal_tl_sq61_sk29",
       .b = 2,
       .sq = 61,
       .sk = 29,
       .hq = 2,
       .hkv = 2,
       .causal = Causal::top_left});
  add({.label = "causal_br_sq61_sk29_empty_rows",
       .b = 2,
       .sq = 61,
       .sk = 29,
       .hq = 2,
       .hkv = 1,
       .causal = Causal::bottom_right});
  add({.label = "causal_br_sq29_sk131",
       .b = 1,
       .sq = 29,
       .sk = 131,
       .hq = 2,
       .hkv = 2,
       .causal = Causal::bottom_right});
  add({.label = "gqa8_d128_causal_br_130",
       .b = 1,
       .sq = 130,
       .sk = 130,
       .hq = 8,
       .hkv = 1,
       .d = 128,
       .dv = 128,
       .causal = Causal::bottom_right});
  add({.label = "gqa2_d80_dv48_bhsd",
       .b = 2,
       .sq = 67,
       .sk = 45,
       .hq = 4,
       .hkv = 2,
       .d = 80,
       .dv = 48,
       .layout = Layout::bhsd});
  add({.label = "d256_padded_sq65",
       .b = 1,
       .sq = 65,
       .sk = 70,
       .hq = 2,
       .hkv = 1,
       .d = 256,
       .dv = 256,
       .layout = Layout::padded});
  add({.label = "d96_d192", .b = 1, .sq = 33, .sk = 40, .hq = 2, .hkv = 2, .d = 192, .dv = 96});
  add({.label = "window_16_8_alibi_softcap",
       .b = 2,
       .sq = 90,
       .sk = 100,
       .hq = 4,
       .hkv = 2,
       .wl = 16,
       .wr = 8,
       .softcap = 2.0,
       .alibi = 1});
  add({.label = "window_left0_right0",
       .b = 1,
       .sq = 50,
       .sk = 50,
       .hq = 2,
       .hkv = 2,
       .wl = 0,
       .wr = 0});
  add({.label = "alibi_per_batch_causal_tl",
       .b = 2,
       .sq = 70,
       .sk = 64,
       .hq = 3,
       .hkv = 3,
       .causal = Causal::top_left,
       .alibi = 2});
  add({.label = "bool_mask_bcast_b",
       .b = 2,
       .sq = 45,
       .sk = 77,
       .hq = 2,
       .hkv = 2,
       .mask = Mask::keep_bool,
       .mask_bcast_b = true});
  add({.label = "additive_mask_bcast_h_causal",
       .b = 2,
       .sq = 47,
       .sk = 47,
       .hq = 4,
       .hkv = 2,
       .causal = Causal::bottom_right,
       .mask = Mask::additive,
       .mask_bcast_h = true});
  add({.label = "additive_mask_full_padded",
       .b = 2,
       .sq = 31,
       .sk = 66,
       .hq = 2,
       .hkv = 2,
       .layout = Layout::padded,
       .mask = Mask::additive});
  add({.label = "bool_mask_bcast_bhi",
       .b = 2,
       .sq = 20,
       .sk = 35,
       .hq = 2,
       .hkv = 1,
       .mask = Mask::keep_bool,
       .mask_bcast_b = true,
       .mask_bcast_h = true,
       .mask_bcast_i = true});
  add({.label = "dropout_0p2_causal",
       .b = 2,
       .sq = 75,
       .sk = 75,
       .hq = 2,
       .hkv = 1,
       .causal = Causal::top_left,
       .dropout = 0.2});
  add({.label = "dropout_0p5_softcap_gqa",
       .b = 1,
       .sq = 40,
       .sk = 90,
       .hq = 4,
       .hkv = 2,
       .softcap = 1.5,
       .dropout = 0.5});
  add({.label = "varlen_empty_seqs",
       .hq = 4,
       .hkv = 2,
       .lens_q = {5, 0, 70, 1, 9},
       .lens_k = {9, 3, 66, 0, 1}});
  add({.label = "varlen_causal_br_window_dropout",
       .hq = 2,
       .hkv = 1,
       .d = 32,
       .dv = 32,
       .causal = Causal::bottom_right,
       .wl = 12,
       .dropout = 0.1,
       .lens_q = {33, 130, 2},
       .lens_k = {40, 129, 7}});
  add({.label = "varlen_padded_alibi_softcap",
       .hq = 2,
       .hkv = 2,
       .layout = Layout::padded,
       .softcap = 3.0,
       .alibi = 2,
       .lens_q = {17, 64},
       .lens_k = {65, 3}});
  add({.label = "long_sk700_causal_br",
       .b = 1,
       .sq = 300,
       .sk = 700,
       .hq = 2,
       .hkv = 1,
       .d = 96,
       .dv = 96,
       .causal = Causal::bottom_right});
  std::vector<Spec> all;
  for (DType dt : {DType::f32, DType::f16, DType::bf16})
    for (Spec s : base) {
      s.dtype = dt;
      all.push_back(s);
    }
  return all;
}

class CudaMathHostile : public ::testing::TestWithParam<Spec> {};

TEST_P(CudaMathHostile, ForwardBackwardMatchFp64Reference) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  run_and_compare(GetParam(), 7);
}

INSTANTIATE_TEST_SUITE_P(Shapes, CudaMathHostile, ::testing::ValuesIn(hostile_specs()),
                         [](const ::testing::TestParamInfo<Spec>& i) { return i.param.name(); });

/// Same cases with the workspace capped at one row block: every chunk boundary path runs
/// (dK/dV accumulated across chunks, GQA units split between chunks).
TEST(CudaMathChunks, TinyWorkspaceStillMatches) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  cuda_math::set_workspace_budget_for_testing(1);
  for (const Spec& s : hostile_specs()) {
    if (s.dtype != DType::f32) continue;
    SCOPED_TRACE(s.name());
    run_and_compare(s, 11);
  }
  cuda_math::set_workspace_budget_for_testing(0);
}

/// Backward twice on the same inputs: bit-identical gradients (no atomics, fixed order).
TEST(CudaMathDeterminism, BackwardBitIdentical) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  Spec s{.label = "det",
         .b = 2,
         .sq = 200,
         .sk = 190,
         .hq = 8,
         .hkv = 2,
         .d = 64,
         .dv = 64,
         .dtype = DType::bf16,
         .causal = Causal::bottom_right,
         .dropout = 0.1};
  const HostProblem hp = make_problem(s, 3);
  DeviceProblem d = upload(hp);
  d.opts.deterministic = true;
  forward({d.q.view, d.k.view, d.v.view, d.out.view, d.lse.view}, d.opts);
  std::vector<double> first[3];
  for (int run = 0; run < 2; ++run) {
    backward({d.dout.view, d.q.view, d.k.view, d.v.view, d.out.view, d.lse.view, d.dq.view,
              d.dk.view, d.dv.view},
             d.opts);
    device_runtime(DeviceType::cuda).synchronize(Device::cuda(0));
    const std::vector<double> g[3] = {read_back(d.dq), read_back(d.dk), read_back(d.dv)};
    for (int x = 0; x < 3; ++x) {
      if (run == 0) {
        first[x] = g[x];
      } else {
        ASSERT_EQ(g[x].size(), first[x].size());
        EXPECT_EQ(std::memcmp(g[x].data(), first[x].data(), g[x].size() * sizeof(double)), 0)
            << "gradient " << x << " differs between two runs";
      }
    }
  }
}

/// The shape cuda_math exists for: B*H = 16, S = 16k, D = 128, bf16, forward and backward.
/// Sampled rows of out/lse/dq are checked against the fp64 reference; every output must be
/// finite. Prints the elapsed times (information only, never asserted).
TEST(CudaMathLarge, S16kD128RunsAndMatchesOnSampledRows) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  Spec s{.label = "large",
         .b = 1,
         .sq = 16384,
         .sk = 16384,
         .hq = 16,
         .hkv = 16,
         .d = 128,
         .dv = 128,
         .dtype = DType::bf16,
         .causal = Causal::bottom_right};
  const HostProblem hp = make_problem(s, 5);
  DeviceProblem d = upload(hp);
  auto now = [] { return std::chrono::steady_clock::now(); };
  auto t0 = now();
  forward({d.q.view, d.k.view, d.v.view, d.out.view, d.lse.view}, d.opts);
  device_runtime(DeviceType::cuda).synchronize(Device::cuda(0));
  auto t1 = now();
  backward({d.dout.view, d.q.view, d.k.view, d.v.view, d.out.view, d.lse.view, d.dq.view, d.dk.view,
            d.dv.view},
           d.opts);
  device_runtime(DeviceType::cuda).synchronize(Device::cuda(0));
  auto t2 = now();
  std::cout << "[cuda_math large] B*H=16 S=16384 D=128 bf16 causal: forward "
            << std::chrono::duration<double>(t1 - t0).count() << " s, backward "
            << std::chrono::duration<double>(t2 - t1).count()
            << " s (first call, incl. workspace)\n";

  auto sampled = [](int64_t, int64_t h, int64_t i) {
    return (h == 0 || h == 15) && (i == 0 || i == 1 || i == 4097 || i == 9999 || i == 16383);
  };
  const Reference ref = reference(hp, true, sampled);
  const std::vector<double> out = read_back(d.out), dq = read_back(d.dq);
  const std::vector<double> lse = read_lse(d.lse);
  std::vector<double> o_x, o_r, q_x, q_r, l_x, l_r;
  for (int64_t h : {0, 15})
    for (int64_t i : {0, 1, 4097, 9999, 16383}) {
      for (int64_t e = 0; e < s.d; ++e) {
        const size_t n = static_cast<size_t>((i * s.hq + h) * s.d + e);
        o_x.push_back(out[n]), o_r.push_back(ref.out[n]);
        q_x.push_back(dq[n]), q_r.push_back(ref.dq[n]);
      }
      l_x.push_back(lse[h * hp.tq + i]), l_r.push_back(ref.lse[h * hp.tq + i]);
    }
  EXPECT_TRUE(close("out (sampled rows)", o_x, o_r, 1e-2));
  EXPECT_TRUE(close("lse (sampled rows)", l_x, l_r, 2e-3));
  EXPECT_TRUE(close("dq (sampled rows)", q_x, q_r, 2e-2));
  for (const DevTensor* t : {&d.out, &d.dq, &d.dk, &d.dv}) {
    const std::vector<double> x = read_back(*t);
    int64_t nonfinite = 0;
    for (double e : x)
      nonfinite += !std::isfinite(e);
    EXPECT_EQ(nonfinite, 0);
  }
}

}  // namespace
}  // namespace attnkit::cmtest
