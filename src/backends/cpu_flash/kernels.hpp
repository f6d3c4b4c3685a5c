// The SIMD kernel table of cpu_flash: the few hot loops, compiled once per ISA (portable, AVX2+FMA,
// AVX-512) from microkernels.inc and picked at run time (isa.cpp). Everything here works on fp32
// tiles whose column counts are multiples of kPad; callers pad packed tiles with zeros.
//
// The ISA translation units include nothing but this header and <cstdint>/<cstring>, so no inline
// function of the rest of the project is ever emitted with AVX-512 instructions (an ODR pick of
// such a copy would crash a CPU without AVX-512).
#pragma once

#include <cstdint>

namespace attnkit::cpu_flash {

/// Column padding of every packed tile (floats): the widest vector (AVX-512: 16 lanes).
inline constexpr int64_t kPad = 16;

/// A 2-D region to prefetch into L2: `rows` rows of `row_bytes` at `stride_bytes` from `base`.
struct Prefetch2D {
  const void* base = nullptr;
  int64_t row_bytes = 0, stride_bytes = 0, rows = 0;
};

struct KernelTable {
  const char* name;  // "portable", "avx2", "avx512", "avx512bf16"
  /// C[r, c] (+)= sum_t A[r*a_rs + t*a_ts] * B[t*ldb + c] for r < rows, c < cols, t < depth.
  /// cols % kPad == 0. accumulate = false overwrites C. A's strides let one kernel serve
  /// Q K^T, P V, dO V^T, P^T dO, dS K and dS^T Q.
  void (*gemm)(float* c, int64_t ldc, const float* a, int64_t a_rs, int64_t a_ts, const float* b,
               int64_t ldb, int64_t rows, int64_t cols, int64_t depth, bool accumulate);
  /// Online-softmax step over a score tile S [rows, cols] (row stride lds; -inf = invisible), in
  /// base 2: S holds scores times log2(e), m is the running row max in the same units.
  /// Per row r: m_new = max(m[r], max_c S[r, c]); alpha[r] = 2^(m[r] - m_new) (0 when m[r] =
  /// -inf); S[r, c] <- 2^(S[r, c] - m_new) (exact 0 for -inf); l[r] = l[r]*alpha[r] + sum_c;
  /// m[r] = m_new. A row still all -inf keeps m = -inf, alpha = 1, and gets P = 0.
  void (*softmax_step)(float* s, int64_t lds, int64_t rows, int64_t cols, float* m, float* l,
                       float* alpha);
  /// Backward recompute: S[r, c] <- exp(S[r, c] - lse[r]); rows with lse = -inf get 0.
  void (*exp_minus_lse)(float* s, int64_t lds, int64_t rows, int64_t cols, const float* lse);
  /// dS = P * (dP - delta[r]), written over dp (row strides ld).
  void (*softmax_grad)(float* dp, const float* p, int64_t ld, int64_t rows, int64_t cols,
                       const float* delta);
  /// y[c] *= f for c < cols (cols % kPad == 0).
  void (*scale_row)(float* y, int64_t cols, float f);

  // ---- bf16 dot-product kernels (AVX512-BF16 VDPBF16PS); null when the set has none ----------
  /// C[r, c] (+)= sum_t A[r, t] * B[t, c] with fp32 accumulation. A: bf16 row-major, element
  /// (r, t) at a[r*lda + t]; B: bf16 "pair-packed", element (t, c) at b[(t/2)*ldb2 + 2*c + t%2]
  /// (consecutive t of one column adjacent, as VDPBF16PS consumes them). depth even,
  /// cols % kPad == 0, ldb2 >= 2*cols.
  void (*gemm_bf16)(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint16_t* b,
                    int64_t ldb2, int64_t rows, int64_t cols, int64_t depth, bool accumulate);
  /// dst[r*ldd + c] = bf16(src[r*lds + c]) (round to nearest even), c < cols, cols % kPad == 0.
  void (*to_bf16)(uint16_t* dst, int64_t ldd, const float* src, int64_t lds, int64_t rows,
                  int64_t cols);
  /// Pair-packs fp32 rows as a gemm_bf16 B operand: dst[(r/2)*ldb2 + 2*c + r%2] = bf16(src[r*lds
  /// + c]) for r < round_up(rows, 2) (a missing last row of an odd count is 0), c < cols.
  void (*to_bf16_pairs)(uint16_t* dst, int64_t ldb2, const float* src, int64_t lds, int64_t rows,
                        int64_t cols);

  // ---- fused forward kernel (AVX-512 sets); null when the set has none ------------------------
  /// S = Q K^T followed by softmax_step, for one block of exactly 128 keys that every row sees
  /// completely (no policy, no dropout): q [rows][dp] at row stride ldq, kt [dp][128] (row stride
  /// 128; scale * log2(e) folded into one of the two), s [rows][128] receives P; m, l, alpha as
  /// softmax_step.
  /// rows % 4 == 0, rows <= 256, dp even. pf[0..npf) (npf <= 3): regions prefetched into L2 one
  /// cache line each per exp vector (the next key block's K^T and V, or the next item's).
  void (*qk_softmax)(const float* q, int64_t ldq, int64_t dp, const float* kt, int64_t rows,
                     float* s, float* m, float* l, float* alpha, const Prefetch2D* pf, int npf);
  /// C[r, c] = row_scale[r] * C[r, c] + sum_t A[r*a_rs + t] * B[t*ldb + c] (gemm with
  /// accumulate, each C row first scaled): O = alpha O + P V in one pass. cols % kPad == 0.
  void (*gemm_row_scaled)(float* c, int64_t ldc, const float* a, int64_t a_rs, const float* b,
                          int64_t ldb, int64_t rows, int64_t cols, int64_t depth,
                          const float* row_scale);
  /// dst[d * ldd + u] = scale * src[u][d] for u < 16, d < n (16 rows into 16 columns; AVX-512
  /// sets, else null).
  void (*transpose16)(float* dst, int64_t ldd, const float* const* src, int64_t n, float scale);
  /// Unit-stride f16 rows (AVX-512 sets, else null): dst[i] = scale * f32(src[i]), and
  /// dst[i] = f16(scale * src[i]) rounded to nearest even; i < n.
  void (*f16_row_to_f32)(float* dst, const uint16_t* src, int64_t n, float scale);
  void (*f32_row_to_f16)(uint16_t* dst, const float* src, int64_t n, float scale);
};

const KernelTable& kernels_portable();
#if defined(ATTNKIT_CPU_FLASH_X86)
const KernelTable& kernels_avx2();
const KernelTable& kernels_avx512();
const KernelTable& kernels_avx512bf16();
#endif

}  // namespace attnkit::cpu_flash
