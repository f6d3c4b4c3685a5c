#include "check/inputs.hpp"

#include <cmath>
#include <limits>

#include "core/dtype_convert.hpp"

namespace attnkit::check::detail {
namespace {

// Logical [B, S, H, D] (dense) or [total, H, D] (varlen) in the case's layout.
HostTensor token_tensor(const Case& c, DType t, int64_t b_or_total, int64_t s, int64_t h,
                        int64_t d) {
  const bool bhsd = c.layout == Layout::bhsd;
  if (c.varlen)  // [total, H, D]; "bhsd" = physical [H, total, D]
    return HostTensor::make(t, {b_or_total, h, d},
                            bhsd ? std::vector<int>{1, 0, 2} : std::vector<int>{0, 1, 2},
                            c.noncontiguous);
  return HostTensor::make(t, {b_or_total, s, h, d},
                          bhsd ? std::vector<int>{0, 2, 1, 3} : std::vector<int>{0, 1, 2, 3},
                          c.noncontiguous);
}

int64_t sum(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t x : v)
    s += x;
  return s;
}

int64_t max_of(const std::vector<int64_t>& v) {
  int64_t m = 0;
  for (int64_t x : v)
    m = std::max(m, x);
  return m;
}

HostTensor cu_seqlens(const std::vector<int64_t>& lens) {
  HostTensor t = HostTensor::contiguous(DType::i32, {static_cast<int64_t>(lens.size()) + 1});
  int32_t* p = reinterpret_cast<int32_t*>(t.bytes.data());
  p[0] = 0;
  for (size_t i = 0; i < lens.size(); ++i)
    p[i + 1] = p[i] + static_cast<int32_t>(lens[i]);
  return t;
}

// Mask [Bm, Hm, Sqm, Sk]; broadcast dims have size 1. Leading size-1 broadcast dims are dropped
// (batch broadcast -> rank 3; batch and head -> rank 2) to exercise right-aligned broadcasting.
// With kMaskExpanded the mask stays rank 4 and the broadcast dims become stride-0 expansions
// (what torch's expand() hands over).
HostTensor make_mask(const Case& c, std::mt19937_64& gen) {
  const bool bb = c.mask_broadcast & 1, hb = c.mask_broadcast & 2, rb = c.mask_broadcast & 4;
  const int64_t bm = bb ? 1 : c.b, hm = hb ? 1 : c.hq, sqm = rb ? 1 : c.sq;
  const bool expanded = c.mask_broadcast & kMaskExpanded;
  std::vector<int64_t> shape = {bm, hm, sqm, c.sk};
  if (!expanded && bb && hb)
    shape = {sqm, c.sk};
  else if (!expanded && bb)
    shape = {hm, sqm, c.sk};
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(shape.size()); ++i)
    order.push_back(i);
  const DType t = c.mask == MaskCase::keep_bool ? DType::b8 : c.mask_dtype.value_or(c.dtype);
  HostTensor m = HostTensor::make(t, shape, order, c.noncontiguous);
  std::uniform_real_distribution<double> u(0.0, 1.0);
  std::normal_distribution<double> n(0.0, 1.0);
  int64_t e = 0;
  for (int64_t ib = 0; ib < bm; ++ib)
    for (int64_t ih = 0; ih < hm; ++ih)
      for (int64_t ii = 0; ii < sqm; ++ii) {
        // Fully masked rows (only where rows are not broadcast, or every row would be empty).
        const bool empty_row = sqm > 1 && (ii * 3 + ib + ih) % 7 == 2;
        for (int64_t j = 0; j < c.sk; ++j, ++e) {
          const double r = u(gen);
          if (c.mask == MaskCase::keep_bool) {
            m.set(e, (!empty_row && r >= 0.3) ? 1.0 : 0.0);
          } else {
            const double x = n(gen);
            m.set(e, (empty_row || r < 0.1) ? -std::numeric_limits<double>::infinity() : x);
          }
        }
      }
  if (expanded) {  // [B, Hq, Sq, Sk] view with stride 0 on the broadcast dims
    if (bb) m.expand(0, c.b);
    if (hb) m.expand(1, c.hq);
    if (rb) m.expand(2, c.sq);
  }
  return m;
}

}  // namespace

Inputs build_inputs(const Case& c, uint64_t seed) {
  std::mt19937_64 gen(seed);
  Inputs in;
  const int64_t tq = c.varlen ? sum(c.seqlens_q) : c.b;
  const int64_t tk = c.varlen ? sum(c.seqlens_k) : c.b;
  in.q = token_tensor(c, c.dtype, tq, c.sq, c.hq, c.d);
  in.k = token_tensor(c, c.dtype, tk, c.sk, c.hkv, c.d);
  in.v = token_tensor(c, c.dtype, tk, c.sk, c.hkv, c.dv);
  in.out = token_tensor(c, c.dtype, tq, c.sq, c.hq, c.dv);
  in.dout = token_tensor(c, c.dtype, tq, c.sq, c.hq, c.dv);
  in.lse = c.varlen ? HostTensor::make(DType::f32, {c.hq, tq}, {0, 1}, c.noncontiguous)
                    : HostTensor::make(DType::f32, {c.b, c.hq, c.sq}, {0, 1, 2}, c.noncontiguous);
  in.q.fill_normal(gen);
  in.k.fill_normal(gen);
  in.v.fill_normal(gen);
  in.dout.fill_normal(gen);

  Options& o = in.opts;
  o.scale = c.scale;
  o.softcap = c.softcap;
  o.causal = c.causal;
  o.window_left = c.window_left;
  o.window_right = c.window_right;
  o.dropout_p = c.dropout_p;
  // Seed and offset with nonzero high words, so both halves of the Philox key are exercised.
  o.dropout_seed = 0x9E3779B97F4A7C15ull ^ seed;
  o.dropout_offset = (uint64_t{3} << 32) + 17 + seed;
  o.deterministic = c.deterministic;

  if (c.mask != MaskCase::none) {
    in.has_mask = true;
    in.mask = make_mask(c, gen);
  }
  if (c.alibi) {
    in.has_alibi = true;
    in.alibi = c.alibi_per_batch ? HostTensor::contiguous(DType::f32, {c.b, c.hq})
                                 : HostTensor::contiguous(DType::f32, {c.hq});
    const int64_t nb = c.alibi_per_batch ? c.b : 1;
    for (int64_t b = 0; b < nb; ++b)
      for (int64_t h = 0; h < c.hq; ++h)
        in.alibi.set(b * c.hq + h, std::exp2(-8.0 * (h + 1) / c.hq) * (1.0 + 0.25 * b));
  }
  if (c.varlen) {
    in.cu_q = cu_seqlens(c.seqlens_q);
    in.cu_k = cu_seqlens(c.seqlens_k);
    o.max_seqlen_q = c.varlen_max_given ? max_of(c.seqlens_q) : -1;
    o.max_seqlen_k = c.varlen_max_given ? max_of(c.seqlens_k) : -1;
  }
  return in;
}

}  // namespace attnkit::check::detail
