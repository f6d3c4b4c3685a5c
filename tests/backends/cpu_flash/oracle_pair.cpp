#include "backends/cpu_flash/oracle_pair.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "core/dtype_convert.hpp"

namespace attnkit::testing {
namespace {

struct Tensor {
  std::vector<uint8_t> mem;
  TensorView v;
};

// Logical [B, S, H, D] (rank 4) or varlen [T, H, D] (rank 3). Padding (noncontiguous) and every
// element start as NaN (0xff bytes), so a read of padding or an unwritten output shows up.
Tensor make_bshd(DType dt, bool varlen, int64_t b, int64_t s, int64_t h, int64_t d,
                 check::Layout layout, bool noncontig) {
  Tensor t;
  const int64_t dpad = d + (noncontig ? 3 : 0);
  t.v.dtype = dt;
  if (varlen) {
    t.v.rank = 3;
    t.v.shape = {s, h, d, 0};
    t.v.stride = {h * dpad, dpad, 1, 0};
    t.mem.assign(s * h * dpad * dtype_size(dt), 0xff);
  } else {
    t.v.rank = 4;
    t.v.shape = {b, s, h, d};
    if (layout == check::Layout::bhsd)
      t.v.stride = {h * s * dpad, dpad, s * dpad, 1};
    else
      t.v.stride = {s * h * dpad, h * dpad, dpad, 1};
    t.mem.assign(b * s * h * dpad * dtype_size(dt), 0xff);
  }
  t.v.data = t.mem.data();
  return t;
}

template <typename F>
void for_each_offset(const TensorView& v, F f) {
  int64_t idx[4] = {0, 0, 0, 0};
  const int64_t n = v.numel();
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (int a = 0; a < v.rank; ++a)
      off += idx[a] * v.stride[a];
    f(off);
    for (int a = v.rank - 1; a >= 0; --a) {
      if (++idx[a] < v.shape[a]) break;
      idx[a] = 0;
    }
  }
}

void fill_normal(Tensor& t, std::mt19937_64& rng) {
  std::normal_distribution<double> nd;
  for_each_offset(t.v,
                  [&](int64_t off) { store_from_double(t.mem.data(), off, t.v.dtype, nd(rng)); });
}

std::vector<double> gather(const TensorView& v) {
  std::vector<double> out;
  out.reserve(v.numel());
  for_each_offset(v, [&](int64_t off) { out.push_back(load_as_double(v.data, off, v.dtype)); });
  return out;
}

void poison(Tensor& t) {
  std::memset(t.mem.data(), 0xff, t.mem.size());
}

}  // namespace

struct PairRunner::Impl {
  check::Case c;
  int64_t total_q = 0, total_k = 0, bq = 0;
  Tensor q, k, v, out, lse, dout, dq, dk, dv, mask, slopes, cuq, cuk;
  Tensor ref_out, ref_lse;  // the oracle's forward, input to every backward
  Options opts;
  bool have_ref = false;

  Tensor make_lse() {
    Tensor t;
    t.v.dtype = DType::f32;
    if (c.varlen) {
      t.v.rank = 2;
      t.v.shape = {c.hq, total_q, 0, 0};
      t.v.stride = {total_q, 1, 0, 0};
      t.mem.assign(c.hq * total_q * 4, 0xff);
    } else {
      t.v.rank = 3;
      t.v.shape = {c.b, c.hq, c.sq, 0};
      t.v.stride = {c.hq * c.sq, c.sq, 1, 0};
      t.mem.assign(c.b * c.hq * c.sq * 4, 0xff);
    }
    t.v.data = t.mem.data();
    return t;
  }

  void run_forward(const std::string& backend, Tensor& o, Tensor& l) {
    poison(o);
    poison(l);
    Options op = opts;
    op.backend = backend;
    ForwardArgs a{q.v, k.v, v.v, o.v, l.v};
    forward(a, op);
  }
};

PairRunner::PairRunner(const check::Case& c, uint64_t seed) : impl(new Impl) {
  Impl& x = *impl;
  x.c = c;
  std::mt19937_64 rng(seed);
  const int64_t nb = c.varlen ? static_cast<int64_t>(c.seqlens_q.size()) : c.b;
  int64_t max_q = c.sq, max_k = c.sk;
  if (c.varlen) {
    max_q = max_k = 0;
    std::vector<int32_t> cq{0}, ck{0};
    for (size_t i = 0; i < c.seqlens_q.size(); ++i) {
      cq.push_back(cq.back() + static_cast<int32_t>(c.seqlens_q[i]));
      ck.push_back(ck.back() + static_cast<int32_t>(c.seqlens_k[i]));
      max_q = std::max<int64_t>(max_q, c.seqlens_q[i]);
      max_k = std::max<int64_t>(max_k, c.seqlens_k[i]);
    }
    x.total_q = cq.back();
    x.total_k = ck.back();
    auto mk = [&](Tensor& t, const std::vector<int32_t>& vals) {
      t.mem.resize(vals.size() * 4);
      std::memcpy(t.mem.data(), vals.data(), t.mem.size());
      t.v = TensorView::contiguous(t.mem.data(), DType::i32, {static_cast<int64_t>(vals.size())});
    };
    mk(x.cuq, cq);
    mk(x.cuk, ck);
    x.opts.cu_seqlens_q = x.cuq.v;
    x.opts.cu_seqlens_k = x.cuk.v;
    x.opts.max_seqlen_q = max_q;
    x.opts.max_seqlen_k = max_k;
  }
  const int64_t sq = c.varlen ? x.total_q : c.sq, sk = c.varlen ? x.total_k : c.sk;
  x.q = make_bshd(c.dtype, c.varlen, c.b, sq, c.hq, c.d, c.layout, c.noncontiguous);
  x.k = make_bshd(c.dtype, c.varlen, c.b, sk, c.hkv, c.d, c.layout, c.noncontiguous);
  x.v = make_bshd(c.dtype, c.varlen, c.b, sk, c.hkv, c.dv, c.layout, c.noncontiguous);
  x.out = make_bshd(c.dtype, c.varlen, c.b, sq, c.hq, c.dv, c.layout, c.noncontiguous);
  x.ref_out = make_bshd(c.dtype, c.varlen, c.b, sq, c.hq, c.dv, c.layout, c.noncontiguous);
  x.dout = make_bshd(c.dtype, c.varlen, c.b, sq, c.hq, c.dv, c.layout, c.noncontiguous);
  x.dq = make_bshd(c.dtype, c.varlen, c.b, sq, c.hq, c.d, c.layout, c.noncontiguous);
  x.dk = make_bshd(c.dtype, c.varlen, c.b, sk, c.hkv, c.d, c.layout, c.noncontiguous);
  x.dv = make_bshd(c.dtype, c.varlen, c.b, sk, c.hkv, c.dv, c.layout, c.noncontiguous);
  fill_normal(x.q, rng);
  fill_normal(x.k, rng);
  fill_normal(x.v, rng);
  fill_normal(x.dout, rng);
  x.lse = x.make_lse();
  x.ref_lse = x.make_lse();
  if (!c.lse && !c.backward) x.lse.v = TensorView{};

  Options& o = x.opts;
  if (c.scale) o.scale = *c.scale;
  o.softcap = c.softcap;
  o.causal = c.causal;
  o.window_left = c.window_left;
  o.window_right = c.window_right;
  o.dropout_p = c.dropout_p;
  o.dropout_seed = 0x1234567890abcdefull;
  o.dropout_offset = 7;
  o.deterministic = c.deterministic;
  if (c.alibi) {
    const int64_t rows = c.alibi_per_batch ? nb : 1;
    std::vector<float> s(rows * c.hq);
    for (int64_t e = 0; e < rows * c.hq; ++e)
      s[e] = std::exp2(-8.0 * (e % c.hq + 1) / c.hq) * (1 + e / c.hq);
    x.slopes.mem.resize(s.size() * 4);
    std::memcpy(x.slopes.mem.data(), s.data(), x.slopes.mem.size());
    x.slopes.v = c.alibi_per_batch
                     ? TensorView::contiguous(x.slopes.mem.data(), DType::f32, {nb, c.hq})
                     : TensorView::contiguous(x.slopes.mem.data(), DType::f32, {c.hq});
    o.alibi_slopes = x.slopes.v;
  }
  if (c.mask != check::MaskCase::none) {
    const int64_t mb = (c.mask_broadcast & 1) ? 1 : c.b, mh = (c.mask_broadcast & 2) ? 1 : c.hq;
    const int64_t mq = (c.mask_broadcast & 4) ? 1 : c.sq;
    const bool is_bool = c.mask == check::MaskCase::keep_bool;
    const DType mdt = is_bool ? DType::b8 : DType::f32;
    x.mask.mem.assign(mb * mh * mq * c.sk * dtype_size(mdt), 0);
    x.mask.v = TensorView::contiguous(x.mask.mem.data(), mdt, {mb, mh, mq, c.sk});
    std::uniform_real_distribution<double> u;
    std::normal_distribution<double> nd;
    for (int64_t e = 0; e < mb * mh * mq * c.sk; ++e) {
      const int64_t row = e / c.sk;
      const bool hidden = (mq > 1 && row % 7 == 3) || u(rng) < 0.25;  // row 3 of 7: all masked
      if (is_bool)
        x.mask.mem[e] = hidden ? 0 : 1;
      else
        reinterpret_cast<float*>(x.mask.mem.data())[e] =
            hidden ? -std::numeric_limits<float>::infinity() : static_cast<float>(nd(rng));
    }
    o.mask = x.mask.v;
  }
}

PairRunner::~PairRunner() {
  delete impl;
}

Outputs PairRunner::run(const std::string& backend) {
  Impl& x = *impl;
  Outputs r;
  x.run_forward(backend, x.out, x.lse);
  r.out = gather(x.out.v);
  if (x.lse.v.defined()) r.lse = gather(x.lse.v);
  if (!x.c.backward) return r;
  if (!x.have_ref) {
    x.run_forward("math", x.ref_out, x.ref_lse);
    x.have_ref = true;
  }
  poison(x.dq);
  poison(x.dk);
  poison(x.dv);
  Options op = x.opts;
  op.backend = backend;
  BackwardArgs a{x.dout.v, x.q.v, x.k.v, x.v.v, x.ref_out.v, x.ref_lse.v, x.dq.v, x.dk.v, x.dv.v};
  backward(a, op);
  r.dq = gather(x.dq.v);
  r.dk = gather(x.dk.v);
  r.dv = gather(x.dv.v);
  return r;
}

Diff compare(const std::vector<double>& got, const std::vector<double>& ref) {
  Diff d;
  double num = 0, den = 0;
  const size_t n = std::min(got.size(), ref.size());
  if (got.size() != ref.size()) d.mismatched_nonfinite = 1;
  for (size_t e = 0; e < n; ++e) {
    const double g = got[e], r = ref[e];
    if (std::isnan(g) || std::isnan(r) || (std::isinf(g) || std::isinf(r))) {
      if (!(g == r)) ++d.mismatched_nonfinite;  // equal infinities are fine (lse = -inf)
      continue;
    }
    num += (g - r) * (g - r);
    den += r * r;
    d.max_abs = std::max(d.max_abs, std::abs(g - r));
  }
  d.rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return d;
}

}  // namespace attnkit::testing
