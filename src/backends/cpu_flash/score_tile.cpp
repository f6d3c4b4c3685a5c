#include "backends/cpu_flash/score_tile.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu_flash/tiles.hpp"
#include "core/dtype_convert.hpp"
#include "core/philox.hpp"

namespace attnkit::cpu_flash {

KeyRange tile_key_range(const Params& p, const SeqSpan& sp, int64_t i0, int64_t rows) {
  // lo(i) and hi(i) are non-decreasing in i, so the union over the tile's rows is
  // [lo(first row), hi(last row)].
  KeyRange r{structural_key_range(p, i0, sp.sq, sp.sk).lo,
             structural_key_range(p, i0 + rows - 1, sp.sq, sp.sk).hi};
  if (r.lo < 0) r.lo = 0;
  if (r.hi > sp.sk - 1) r.hi = sp.sk - 1;
  return r;
}

bool tile_needs_policy(const Params& p, const SeqSpan& sp, int64_t i0, int64_t rows, int64_t j0) {
  if (p.softcap > 0.0f || p.alibi != nullptr || p.has_mask()) return true;
  if (j0 + kBk > sp.sk) return true;
  // Every row sees [j0, j0 + kBk) iff the first row's hi and the last row's lo allow it.
  const KeyRange first = structural_key_range(p, i0, sp.sq, sp.sk);
  const KeyRange last = structural_key_range(p, i0 + rows - 1, sp.sq, sp.sk);
  return !(last.lo <= j0 && first.hi >= j0 + kBk - 1);
}

namespace {

inline float mask_value(const Params& p, int64_t off) {
  switch (p.mask_dtype) {
    case DType::f32:
      return static_cast<const float*>(p.mask)[off];
    case DType::bf16:
      return bf16_to_f32(static_cast<const uint16_t*>(p.mask)[off]);
    case DType::f16:
      return f16_to_f32(static_cast<const uint16_t*>(p.mask)[off]);
    default:
      return 0.0f;  // bool masks are read by the caller
  }
}

}  // namespace

void apply_score_policy(const Params& p, const SeqSpan& sp, int64_t b, int64_t h, int64_t i0,
                        int64_t rows, int64_t j0, float* s, int64_t lds, float* tanh_out) {
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const float cap = p.softcap;
  if (cap <= 0.0f && p.alibi == nullptr && !p.has_mask()) {
    // Causal / window / tail edges only: per row, two -inf fills outside [lo, hi]. The per-element
    // path below cost ~10% of a causal S=1024, D=64 forward (a quarter of the visited tiles lie on
    // the diagonal).
    for (int64_t r = 0; r < rows; ++r) {
      const KeyRange kr = structural_key_range(p, i0 + r, sp.sq, sp.sk);
      const int64_t hi = kr.hi < sp.sk - 1 ? kr.hi : sp.sk - 1;
      const int64_t c_lo = std::clamp<int64_t>(kr.lo - j0, 0, kBk);
      const int64_t c_hi = std::clamp<int64_t>(hi - j0 + 1, c_lo, kBk);  // visible [c_lo, c_hi)
      float* sr = s + r * lds;
      std::fill(sr, sr + c_lo, kNegInf);
      std::fill(sr + c_hi, sr + kBk, kNegInf);
    }
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r;
    float* sr = s + r * lds;
    float* tr = tanh_out ? tanh_out + r * lds : nullptr;
    const KeyRange kr = structural_key_range(p, i, sp.sq, sp.sk);
    const int64_t lo = kr.lo, hi = kr.hi < sp.sk - 1 ? kr.hi : sp.sk - 1;
    const int64_t mrow = p.has_mask() ? b * p.mask_st.b + h * p.mask_st.h + i * p.mask_st.s : 0;
    for (int64_t c = 0; c < kBk; ++c) {
      const int64_t j = j0 + c;
      if (j < lo || j > hi) {
        sr[c] = kNegInf;
        if (tr) tr[c] = 0.0f;
        continue;
      }
      float x = sr[c];
      if (cap > 0.0f) {
        const float t = std::tanh(x / cap);
        if (tr) tr[c] = t;
        x = cap * t;
      }
      if (p.alibi) x += alibi_bias<float>(p, b, h, i, j, sp.sq, sp.sk);
      if (p.mask_kind == MaskKind::keep_bool) {
        if (!static_cast<const uint8_t*>(p.mask)[mrow + j * p.mask_st.d]) x = kNegInf;
      } else if (p.mask_kind == MaskKind::additive) {
        x += mask_value(p, mrow + j * p.mask_st.d);
      }
      sr[c] = x;
    }
  }
}

void apply_dropout(const Params& p, int64_t b, int64_t h, int64_t i0, int64_t rows, int64_t j0,
                   int64_t cols, float* t, int64_t ld, float* t2) {
  const float keep_scale = p.dropout_rescale;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t i = i0 + r;
    for (int64_t c0 = 0; c0 < cols; c0 += 4) {  // j0 % 4 == 0: one Philox call per 4 keys
      const uint32_t bits =
          dropout_keep_bits4(p.seed, p.offset, b, h, p.heads_q, i, j0 + c0, p.dropout_threshold);
      for (int64_t w = 0; w < 4 && c0 + w < cols; ++w) {
        const float f = (bits >> w) & 1u ? keep_scale : 0.0f;
        t[r * ld + c0 + w] *= f;
        if (t2) t2[r * ld + c0 + w] *= f;
      }
    }
  }
}

}  // namespace attnkit::cpu_flash
