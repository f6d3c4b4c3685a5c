// Backward kernels.
//   1. bwd_delta_kernel:  delta[b, h, i] = sum_d dO[i, d] * O[i, d]   (fp32 workspace)
// FA-2 schedule (default, `deterministic` false), 5 GEMMs per (query block, key block) tile:
//   2. bwd_fused_kernel:  one CTA per (key block, kv head, batch) loops over the query blocks of
//                         every q head of its GQA group: S = Q K^T, P from lse, dP = dO V^T,
//                         dS = P * (dP - delta); dV += P_dropped^T dO, dK += dS^T Q in registers;
//                         dQ_accum (fp32 workspace, zeroed on the stream) += dS K with atomics.
//   3. bwd_dq_convert_kernel: dQ = scale * dQ_accum in the output dtype and strides.
// Deterministic schedule (`deterministic` true), no atomics anywhere, 7 GEMMs per tile:
//   2'. bwd_dkdv_kernel:  as 2 without dQ; dK / dV per key block.
//   3'. bwd_dq_kernel:    one CTA per (query block, q head, batch) loops over key blocks:
//                         dQ += dS K, dS kept in registers as the A operand.
// S and dP are recomputed in both 2' and 3' in exchange for a fixed reduction order; see
// bench/notes/flash.md.
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backends/flash/score_mod.cuh"
#include "backends/flash/smem_layout.hpp"
#include "backends/flash/traits.hpp"
#include "backends/flash/warp_mma.cuh"

namespace attnkit::flash {

/// Query blocks of kBM rows per (batch, q head) in the packed stats workspace (kStatsBM > 0 in
/// bwd_delta_kernel): sized by the longest sequence (seqlen_q).
template <int kBM>
__host__ __device__ __forceinline__ int64_t stats_blocks(const Params& p) {
  return (p.seqlen_q + kBM - 1) / kBM;
}

/// kStatsBM == 0: delta (B, Hq, seqlen_q) fp32; kLanes lanes per row (32 / kLanes rows per warp),
/// 8 elements (16 bytes) per lane and step.
/// kStatsBM > 0 (ATTNKIT_FLASH_BWD_STATS_WS): the fused kernel's packed row statistics, per
/// (batch b, q head h, query block mb of kStatsBM rows) one block of 2 kStatsBM floats at
/// ((b Hq + h) stats_blocks + mb) 2 kStatsBM: lse in log2 units (+inf where lse = -inf or the
/// row is past the sequence: P = exp2(x - lse2) = 0 there), then delta (0 past the sequence).
/// The grid covers stats_blocks * kStatsBM rows. The lse load is issued before the O / dO loads
/// (one global latency per row, not two).
template <typename T, int kStatsBM = 0, int kLanes = 32>
__device__ __forceinline__ void bwd_delta_rows(const Params& p, float* delta) {
  static_assert(kLanes >= 1 && kLanes <= 32 && (kLanes & (kLanes - 1)) == 0, "lanes per row");
  constexpr int kRowsPerWarp = 32 / kLanes;
  const int64_t b = blockIdx.z, h = blockIdx.y;
  const int lane = threadIdx.x % 32, sub = lane % kLanes;
  const int64_t i =
      (static_cast<int64_t>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32) * kRowsPerWarp +
      lane / kLanes;
  // The kLanes lanes of this row (they return or stay together: same i).
  const unsigned gmask =
      kLanes == 32 ? 0xffffffffu : ((1u << kLanes) - 1u) << (lane / kLanes * kLanes);
  const SeqSpan sp = seq_span(p, b);
  float* st = nullptr;  // kStatsBM: this row's lse2 (delta at + kStatsBM)
  float l = 0.f;
  if constexpr (kStatsBM > 0) {
    const int64_t nb = stats_blocks<kStatsBM>(p);
    if (i >= nb * kStatsBM) return;
    st = delta + ((b * p.heads_q + h) * nb + i / kStatsBM) * (2 * kStatsBM) + i % kStatsBM;
    if (i >= sp.sq) {
      if (sub == 0) {
        st[0] = INFINITY;
        st[kStatsBM] = 0.f;
      }
      return;
    }
    if (sub == 0) l = p.lse[b * p.lse_st.b + h * p.lse_st.h + (sp.q_start + i) * p.lse_st.s];
  } else {
    if (i >= sp.sq) return;
  }
  const T* o = static_cast<const T*>(p.out) + b * p.out_st.b + (sp.q_start + i) * p.out_st.s +
               h * p.out_st.h;
  const T* d = static_cast<const T*>(p.dout) + b * p.dout_st.b + (sp.q_start + i) * p.dout_st.s +
               h * p.dout_st.h;
  float acc = 0.f;
  for (int c = sub * 8; c < p.head_dim_v; c += kLanes * 8) {
    const uint4 ov = *reinterpret_cast<const uint4*>(o + c);
    const uint4 dv = *reinterpret_cast<const uint4*>(d + c);
    const T* oe = reinterpret_cast<const T*>(&ov);
    const T* de = reinterpret_cast<const T*>(&dv);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      acc += static_cast<float>(oe[e]) * static_cast<float>(de[e]);
  }
#pragma unroll
  for (int s = kLanes / 2; s > 0; s /= 2)
    acc += __shfl_xor_sync(gmask, acc, s);
  if (sub != 0) return;
  if constexpr (kStatsBM > 0) {
    st[0] = l == -INFINITY ? INFINITY : l * kLog2e;  // as lse_log2()
    st[kStatsBM] = acc;
  } else {
    delta[(b * p.heads_q + h) * p.seqlen_q + i] = acc;
  }
}

template <typename T, int kStatsBM = 0, int kLanes = 32>
__global__ void bwd_delta_kernel(const Params p, float* delta) {
  bwd_delta_rows<T, kStatsBM, kLanes>(p, delta);
}

/// bwd_delta_kernel that also zeroes the fused kernel's dQ_accum (ATTNKIT_FLASH_BWD_DELTA_ZERO;
/// with kStatsBM and DQ_PERM, whose dQ_accum slot of (b, h) has exactly stats_blocks * kStatsBM
/// rows of kZeroD floats): each block its rows, first, in place of the launcher's memset (FA-2's
/// dot_do_o kernel clears its dQ accumulator the same way): one launch fewer per backward.
/// blockDim.x = 256.
template <typename T, int kStatsBM, int kLanes, int kZeroD>
__global__ void bwd_delta_zero_kernel(const Params p, float* delta, float* dq_accum) {
  static_assert(kStatsBM > 0, "dQ_accum rows follow the packed stats blocks");
  constexpr int kRows = 8 * (32 / kLanes), kVecs = kRows * kZeroD / 4;  // float4 per block
  static_assert(kStatsBM % kRows == 0 && kZeroD % 4 == 0, "whole blocks, whole float4 rows");
  const int64_t b = blockIdx.z, h = blockIdx.y;
  float4* z = reinterpret_cast<float4*>(
      dq_accum + ((b * p.heads_q + h) * stats_blocks<kStatsBM>(p) * kStatsBM +
                  static_cast<int64_t>(blockIdx.x) * kRows) *
                     kZeroD);
#pragma unroll
  for (int v = 0; v < (kVecs + 255) / 256; ++v) {
    const int e = v * 256 + static_cast<int>(threadIdx.x);
    if (kVecs % 256 == 0 || e < kVecs) z[e] = make_float4(0.f, 0.f, 0.f, 0.f);  // D = 96 / 192
  }
  bwd_delta_rows<T, kStatsBM, kLanes>(p, delta);
}

/// lse of row i in log2 units, +inf for rows with no visible key (lse = -inf) or past the end,
/// so that P = exp2(x - lse2) is 0 there instead of NaN.
__device__ __forceinline__ float lse_log2(const Params& p, int64_t b, int64_t h, int64_t q_start,
                                          int64_t i, int64_t sq) {
  if (i >= sq) return INFINITY;
  const float l = p.lse[b * p.lse_st.b + h * p.lse_st.h + (q_start + i) * p.lse_st.s];
  return l == -INFINITY ? INFINITY : l * kLog2e;
}

/// Turns the S and dP accumulators of one warp tile into P (dropout applied, for dV) and dS
/// (w.r.t. the raw scaled dot product, softcap derivative applied). Rows at m0 + row0, columns
/// at n0 + col0 of sequence coordinates. kStatsSmem: lse and delta of row i are read from
/// shared memory, s_lse[i - stats_row0] (raw, natural-log lse) and s_delta[i - stats_row0],
/// staged with the query block's tiles; else from global memory (lse, delta_bh).
/// kStatsFilled (with kStatsSmem): rows past the sequence hold lse = +inf and delta = 0 in
/// shared memory, so no row test is needed; lse = -inf (a row with no visible key) can only
/// occur where the element check runs (or on the general path), so only there is it mapped to
/// +inf.
/// kCheckPass false (fast path only): the caller has applied the element check already
/// (mask_band); `check` then only maps lse = -inf to +inf.
/// kStatsLog2 (with kStatsSmem, ATTNKIT_FLASH_BWD_STATS_WS): s_lse holds lse2 as P needs it
/// (log2 units, +inf for rows past the sequence or with lse = -inf): read as is.
template <bool kGeneral, bool kStatsSmem = false, bool kStatsFilled = false, bool kCheckPass = true,
          bool kStatsLog2 = false, int MT, int NT>
__device__ __forceinline__ void bwd_p_ds(const Params& p, const ScoreCtx& ctx,
                                         float (&s)[MT][NT][4], float (&dp)[MT][NT][4], int row0,
                                         int col0, const float* delta_bh, int64_t q_start,
                                         bool check, const float* s_lse = nullptr,
                                         const float* s_delta = nullptr, int stats_row0 = 0) {
  static_assert(kCheckPass || !kGeneral, "the general path's logits pass is not optional");
  const int lane = threadIdx.x % 32;
  const int qr = lane / 4, qc = (lane % 4) * 2;
  // Logits: a separate pass, only where needed (see the forward kernel).
  float dcap[MT][NT][4];
  if (kGeneral || (kCheckPass && check)) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int i = row0 + mt * 16 + qr + r * 8;
        const Range32 rr = row_range(p, i, ctx.sq, ctx.sk);
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float& x = s[mt][nt][r * 2 + e];
            x = score_log2<kGeneral>(p, ctx, x, i, col0 + nt * 8 + qc + e, rr, true,
                                     dcap[mt][nt][r * 2 + e]);
          }
      }
  }
  const float mul = logit_mul<kGeneral>(ctx);
#pragma unroll
  for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int i = row0 + mt * 16 + qr + r * 8;
      float lse2, dl;
      if constexpr (kStatsSmem && kStatsLog2) {
        lse2 = s_lse[i - stats_row0];
        dl = s_delta[i - stats_row0];
      } else if constexpr (kStatsSmem && kStatsFilled) {
        const float l = s_lse[i - stats_row0];
        lse2 = ((kGeneral || check) && l == -INFINITY) ? INFINITY : l * kLog2e;
        dl = s_delta[i - stats_row0];
      } else if constexpr (kStatsSmem) {
        const float l = s_lse[i - stats_row0];
        lse2 = (i >= ctx.sq || l == -INFINITY) ? INFINITY : l * kLog2e;  // as lse_log2()
        dl = i < ctx.sq ? s_delta[i - stats_row0] : 0.f;
      } else {
        lse2 = lse_log2(p, ctx.b, ctx.h, q_start, i, ctx.sq);
        dl = i < ctx.sq ? delta_bh[i] : 0.f;
      }
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int j = col0 + nt * 8 + qc;
        uint32_t keep = 3u;
        if constexpr (kGeneral) {
          if (p.dropout_threshold != 0) keep = keep_pair(p, ctx, i, j);
        }
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const float pr = fast_exp2(fmaf(s[mt][nt][r * 2 + e], mul, -lse2));
          float z = 1.f;
          if constexpr (kGeneral) {
            if (p.dropout_threshold != 0) z = ((keep >> e) & 1u) ? p.dropout_rescale : 0.f;
          }
          const float dpv = dp[mt][nt][r * 2 + e] * z;
          s[mt][nt][r * 2 + e] = pr * z;  // P after dropout (dV operand)
          float ds = pr * (dpv - dl);     // dS
          if constexpr (kGeneral) ds *= dcap[mt][nt][r * 2 + e];
          dp[mt][nt][r * 2 + e] = ds;
        }
      }
    }
  }
}

/// The structural rules (core/score_policy.hpp) as one band of diagonals: with d = sk - sq,
/// row i sees key j >= 0 iff j <= sk - 1 and lo <= j - i <= hi, hi = min(0 [top-left causal],
/// d [bottom-right causal], d + window_right), lo = d - window_left (row_range's clipping of
/// [lo(i), hi(i)] to [0, sk - 1] is j >= 0, always true, and j <= sk - 1). An unbounded side,
/// or a window of 2^40 or more (no |j - i| < 2^31 reaches it), is +-2^40.
struct DiagBand {
  int64_t lo, hi;
};
__host__ __device__ __forceinline__ DiagBand diag_band(const Params& p, int64_t sq, int64_t sk) {
  constexpr int64_t kFar = int64_t{1} << 40;
  const int64_t d = sk - sq;
  DiagBand band{-kFar, kFar};
  if (p.causal == Causal::top_left) band.hi = 0;
  if (p.causal == Causal::bottom_right && d < band.hi) band.hi = d;
  if (p.window_right >= 0 && p.window_right < kFar && d + p.window_right < band.hi)
    band.hi = d + p.window_right;
  if (p.window_left >= 0 && p.window_left < kFar) band.lo = d - p.window_left;
  return band;
}

/// One lane's limits for the element check of a tile at query row m0, key n0: the lane's element
/// (R, C) (row m0 + io + R, key n0 + jo + C) is visible iff x0 + C - R >= 0 (j - i >= lo) and
/// min(y0 + R, c0) - C >= 0 (j - i <= hi, j <= sk - 1). x0 and y0 are clamped to +-2^20, which
/// keeps every sign for |C - R| < 2^20; c0 is exact (n0 < sk).
struct BandLimits {
  int x0, y0, c0;
};
__host__ __device__ __forceinline__ BandLimits band_limits(const DiagBand& band, int64_t m0,
                                                           int64_t n0, int64_t sk, int io, int jo) {
  constexpr int64_t kClamp = int64_t{1} << 20;
  const int64_t e = n0 - m0;
  int64_t x = e - band.lo, y = band.hi - e;
  x = x < -kClamp ? -kClamp : (x > kClamp ? kClamp : x);
  y = y < -kClamp ? -kClamp : (y > kClamp ? kClamp : y);
  return BandLimits{static_cast<int>(x) + (jo - io), static_cast<int>(y) - (jo - io),
                    static_cast<int>(sk - 1 - n0) - jo};
}
__host__ __device__ __forceinline__ bool band_visible(const BandLimits& l, int R, int C) {
  const int yr = l.y0 + R < l.c0 ? l.y0 + R : l.c0;
  return l.x0 + C - R >= 0 && yr - C >= 0;
}

/// threadIdx.x from a volatile read: computed where it is used (a branch taken on few items)
/// instead of CSE'd with the kernel's threadIdx.x and kept live across a loop.
__device__ __forceinline__ int tid_volatile() {
  int t;
  asm volatile("mov.u32 %0, %%tid.x;" : "=r"(t));
  return t;
}

/// The fast path's element check of a warp's C-layout S tile from band_limits (lane element
/// offsets R = 16 mt + 8 r, C = 8 nt + e): invisible logits to -inf, as bwd_p_ds's check pass
/// (ATTNKIT_FLASH_BWD_CHECK_LIMITS). Per element two compares with immediates and a select
/// (the per-row min is shared by a row's elements).
template <int MT, int NT>
__device__ __forceinline__ void mask_band(float (&s)[MT][NT][4], const BandLimits& l) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          if (!band_visible(l, mt * 16 + r * 8, nt * 8 + e)) s[mt][nt][r * 2 + e] = -INFINITY;
}

/// Stores a warp's C-layout tile (rows m0.., cols n0..) into a swizzled shared tile as T.
template <typename L, typename T, int MT, int NT>
__device__ __forceinline__ void store_c_smem(T* s, const float (&c)[MT][NT][4], int m0, int n0) {
  const int lane = threadIdx.x % 32;
  const int qr = lane / 4, qc = (lane % 4) * 2;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        *reinterpret_cast<uint32_t*>(s + L::off(m0 + mt * 16 + qr + r * 8, n0 + nt * 8 + qc)) =
            ptx::pack2<T>(c[mt][nt][r * 2], c[mt][nt][r * 2 + 1]);
}

/// store_c_smem from one per-thread offset: a lane's (m0 + qr, n0 + qc) element offset o;
/// column n0 + qc + 8 nt is chunk ((n0 & 63) / 8 + nt) ^ (row & 7) of the same 64-wide panel
/// (n0 a multiple of 8 NT, 8 NT <= 64: nt only sets chunk bits that n0 leaves clear), i.e.
/// o ^ (nt << 3); rows R (a multiple of 8) later keep row & 7, i.e. + R * 64. Exactly off().
template <typename L, typename T, int MT, int NT>
__device__ __forceinline__ void store_c_smem_split(T* s, const float (&c)[MT][NT][4], int m0,
                                                   int n0) {
  static_assert(!L::kHasHalfPanel && (NT & (NT - 1)) == 0 && 8 * NT <= 64,
                "64-wide panels, power-of-two n8 count inside one panel");
  const int lane = threadIdx.x % 32;
  const int o = L::off(m0 + lane / 4, n0 + (lane % 4) * 2);
#pragma unroll
  for (int nt = 0; nt < NT; ++nt) {
    T* sn = s + (o ^ (nt << 3));
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r)
        *reinterpret_cast<uint32_t*>(sn + (mt * 16 + r * 8) * 64) =
            ptx::pack2<T>(c[mt][nt][r * 2], c[mt][nt][r * 2 + 1]);
  }
}

/// ATTNKIT_FLASH_BWD_STSM (sm90; off by default: not yet run on a GPU): store_c_smem_split with
/// one stmatrix.x4 per 16 x 16 block (mt, n16 pair np) instead of four 32-bit STS: the block's four
/// 8x8 matrices are (rows 0-7 | 8-15) x (n-tile 2 np | 2 np + 1), i.e. a lane's packed C pairs
/// c[mt][2np][0..1], [2..3], c[mt][2np + 1][0..1], [2..3] (the mma C layout is stmatrix's
/// fragment layout); lane l gives the row address of matrix l / 8, row l % 8: element
/// (m0 + 16 mt + 8 ((l / 8) & 1) + l % 8, n0 + 16 np + 8 (l / 16)). Same bytes to the same
/// elements (host model: bwd_bank_model_test.cu), 4x fewer shared-store instructions (D = 128:
/// 32 -> 8 per thread and item; the shared-memory instruction queue stall, mio_throttle, was
/// 0.84 vs FA-2's 0.54 per instruction, ncu session 4), the same wavefronts (1 per 8 rows x 16 B,
/// conflict-free like the ldmatrix reads). Column offsets: the lane's chunk (n0 / 8 + l / 16)
/// and 2 np are disjoint bits (n0 a multiple of 8 NT, NT a power of two <= 8), so block np is
/// o ^ (np << 4) as in store_c_smem_split; rows + 16 mt keep row & 7. Without sm90, STS.
template <typename L, typename T, int MT, int NT>
__device__ __forceinline__ void store_c_smem_stsm(T* s, const float (&c)[MT][NT][4], int m0,
                                                  int n0) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  static_assert(!L::kHasHalfPanel && (NT & (NT - 1)) == 0 && NT >= 2 && 8 * NT <= 64,
                "64-wide panels, power-of-two n8 count (>= 2) inside one panel");
  const int lane = threadIdx.x % 32;
  const int o = L::off(m0 + (((lane >> 3) & 1) << 3) + (lane & 7), n0 + ((lane >> 4) << 3));
  const uint32_t base = ptx::smem_addr(s);
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      const uint32_t addr = base + 2u * static_cast<uint32_t>((o ^ (np << 4)) + mt * 16 * 64);
      asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};\n" ::"r"(addr),
                   "r"(ptx::pack2<T>(c[mt][2 * np][0], c[mt][2 * np][1])),
                   "r"(ptx::pack2<T>(c[mt][2 * np][2], c[mt][2 * np][3])),
                   "r"(ptx::pack2<T>(c[mt][2 * np + 1][0], c[mt][2 * np + 1][1])),
                   "r"(ptx::pack2<T>(c[mt][2 * np + 1][2], c[mt][2 * np + 1][3])));
    }
#else
  store_c_smem_split<L>(s, c, m0, n0);
#endif
}

/// Stores a warp's C-layout tile (rows row0.., cols col0..) scaled by `mul` to global rows
/// < valid_rows, columns < valid_cols.
template <typename T, int MT, int NT>
__device__ __forceinline__ void store_c_global(T* g, int64_t row_stride,
                                               const float (&c)[MT][NT][4], int64_t row0, int col0,
                                               int64_t valid_rows, int valid_cols, float mul) {
  const int lane = threadIdx.x % 32;
  const int qr = lane / 4, qc = (lane % 4) * 2;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int64_t i = row0 + mt * 16 + qr + r * 8;
      if (i >= valid_rows) continue;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt) {
        const int cc = col0 + nt * 8 + qc;
        if (cc < valid_cols)
          *reinterpret_cast<uint32_t*>(g + i * row_stride + cc) =
              ptx::pack2<T>(c[mt][nt][r * 2] * mul, c[mt][nt][r * 2 + 1] * mul);
      }
    }
}

/// The end of a key-block kernel (fused / deterministic dK dV): dK (kBN, D) * scale and dV
/// (kBN, Dv) from the warp tiles dk / dv (origin k_m0, k_n0) to keys n0 .. n0 + keys - 1 of
/// (batch b, KV head g), columns < dvalid (dK) and < head_dim_v (dV), cast to T.
template <typename T, int MT, int NT>
__device__ __forceinline__ void store_dk_dv(const Params& p, int64_t b, int64_t g,
                                            const SeqSpan& sp, int64_t n0,
                                            const float (&dk)[MT][NT][4],
                                            const float (&dv)[MT][NT][4], int k_m0, int k_n0,
                                            int keys, int dvalid) {
  T* dk_ptr = static_cast<T*>(p.dk) + b * p.dk_st.b + (sp.k_start + n0) * p.dk_st.s + g * p.dk_st.h;
  T* dv_ptr = static_cast<T*>(p.dv) + b * p.dv_st.b + (sp.k_start + n0) * p.dv_st.s + g * p.dv_st.h;
  store_c_global(dk_ptr, p.dk_st.s, dk, k_m0, k_n0, keys, dvalid, p.scale);
  store_c_global(dv_ptr, p.dv_st.s, dv, k_m0, k_n0, keys, static_cast<int>(p.head_dim_v), 1.f);
}

/// store_dk_dv through shared memory (ATTNKIT_FLASH_BWD_SMEM_EPILOGUE): dK * scale and dV into
/// sdk / sdv ((kBN, D) tiles of layout L, free: the caller's barrier) from the warp tiles, one
/// barrier, then each thread copies 16-byte chunks idx = it * kThreads + tid (row idx / (D / 8),
/// column 8 (idx % (D / 8))): 8 lanes read one 128-byte panel row (conflict-free), a warp stores
/// 512 contiguous bytes of whole rows. Same rows / columns stored as store_dk_dv, same values
/// (dk * scale rounded once to T). kStsm: stmatrix for the shared stores (sm90, as the P / dS
/// stores); the split form where L has 64-wide panels only; else store_c_smem.
template <typename T, typename L, int kThreads, bool kStsm, int MT, int NT>
__device__ __forceinline__ void store_dk_dv_smem(const Params& p, int64_t b, int64_t g,
                                                 const SeqSpan& sp, int64_t n0,
                                                 float (&dk)[MT][NT][4],
                                                 const float (&dv)[MT][NT][4], int k_m0, int k_n0,
                                                 int keys, int dvalid, T* sdk, T* sdv) {
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int nt = 0; nt < NT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        dk[mt][nt][e] *= p.scale;
  constexpr bool kSplit = !L::kHasHalfPanel && (NT & (NT - 1)) == 0 && 8 * NT <= 64;
  if constexpr (kStsm && kSplit && NT >= 2) {
    store_c_smem_stsm<L>(sdk, dk, k_m0, k_n0);
    store_c_smem_stsm<L>(sdv, dv, k_m0, k_n0);
  } else if constexpr (kSplit) {
    store_c_smem_split<L>(sdk, dk, k_m0, k_n0);
    store_c_smem_split<L>(sdv, dv, k_m0, k_n0);
  } else {
    store_c_smem<L>(sdk, dk, k_m0, k_n0);
    store_c_smem<L>(sdv, dv, k_m0, k_n0);
  }
  __syncthreads();
  T* dk_ptr = static_cast<T*>(p.dk) + b * p.dk_st.b + (sp.k_start + n0) * p.dk_st.s + g * p.dk_st.h;
  T* dv_ptr = static_cast<T*>(p.dv) + b * p.dv_st.b + (sp.k_start + n0) * p.dv_st.s + g * p.dv_st.h;
  const int dvalid_v = static_cast<int>(p.head_dim_v);
  constexpr int kCpr = L::kCols / 8, kChunks = L::kRows * kCpr;
  static_assert(kChunks % kThreads == 0, "dK / dV chunks must split evenly over the threads");
#pragma unroll
  for (int it = 0; it < kChunks / kThreads; ++it) {
    const int idx = it * kThreads + tid_volatile();
    const int r = idx / kCpr, c = (idx % kCpr) * 8;
    if (r >= keys) continue;
    const int o = L::off(r, c);
    if (c < dvalid)
      *reinterpret_cast<uint4*>(dk_ptr + r * p.dk_st.s + c) =
          *reinterpret_cast<const uint4*>(sdk + o);
    if (c < dvalid_v)
      *reinterpret_cast<uint4*>(dv_ptr + r * p.dv_st.s + c) =
          *reinterpret_cast<const uint4*>(sdv + o);
  }
}

/// dst[0..1] += (a, b) in global memory without a return value (8-byte aligned dst).
/// sm90: one vector reduction (red.global.add.v2.f32); sm80: two scalar ones.
__device__ __forceinline__ void red_add2(float* dst, float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("red.global.add.v2.f32 [%0], {%1, %2};" ::"l"(dst), "f"(a), "f"(b) : "memory");
#else
  atomicAdd(dst, a);
  atomicAdd(dst + 1, b);
#endif
}

/// red_c_global with the leading dimension LD known: one per-thread address (32-bit offset from
/// g), rows and columns as immediate offsets; the row test only where the warp tile reaches
/// past valid_rows (one uniform branch on full tiles instead of one per row).
template <int LD, int MT, int NT>
__device__ __forceinline__ void red_c_global_split(float* g, const float (&c)[MT][NT][4], int row0,
                                                   int col0, int valid_rows) {
  const int lane = threadIdx.x % 32;
  const int qr = lane / 4;
  float* gt = g + ((row0 + qr) * LD + col0 + (lane % 4) * 2);
  if (valid_rows - row0 >= MT * 16) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int nt = 0; nt < NT; ++nt)
          red_add2(gt + (mt * 16 + r * 8) * LD + nt * 8, c[mt][nt][r * 2], c[mt][nt][r * 2 + 1]);
    return;
  }
  const int left = valid_rows - row0 - qr;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if (mt * 16 + r * 8 >= left) continue;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
        red_add2(gt + (mt * 16 + r * 8) * LD + nt * 8, c[mt][nt][r * 2], c[mt][nt][r * 2 + 1]);
    }
}

/// Adds a warp's C-layout tile (rows row0.., cols col0..) into an fp32 (rows, ld) array; rows
/// >= valid_rows are skipped (their values are 0 anyway: P = 0 past the sequence).
template <int MT, int NT>
__device__ __forceinline__ void red_c_global(float* g, int ld, const float (&c)[MT][NT][4],
                                             int row0, int col0, int valid_rows) {
  const int lane = threadIdx.x % 32;
  const int qr = lane / 4, qc = (lane % 4) * 2;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int i = row0 + mt * 16 + qr + r * 8;
      if (i >= valid_rows) continue;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
        red_add2(g + static_cast<int64_t>(i) * ld + col0 + nt * 8 + qc, c[mt][nt][r * 2],
                 c[mt][nt][r * 2 + 1]);
    }
}

/// ATTNKIT_FLASH_BWD_DQ_PERM: the fused kernel's dQ_accum in its own order inside each (kBM, D)
/// query-block tile: warp w's chunk ch (kQMT x kQNT m16n8 tiles) is one run of kQMT kQNT 2 x 64
/// floats, and each (mt, nt, r) of it 64 floats, lane l's pair at 2 l. A warp's red.v2 then adds
/// to 256 contiguous bytes (2 L2 requests) instead of 8 rows x 32 bytes (8 requests: ncu,
/// session 4, D = 128 S = 4k: 134 M L2 red requests vs FA-2's 33.5 M for the same sectors, and
/// 0.44 lg_throttle stall cycles per instruction vs 0.01; FA-2 also adds in its MMA order).
/// Columns c..c + 7 (c % 8 == 0) of a tile row are 8 consecutive floats (lanes 4 qr .. 4 qr + 3).
template <int D>
struct DqPerm {
  using Tr = BwdFusedTraits<D>;
  static constexpr int kMT = Tr::kQMT, kNT = Tr::kQNT, kCW = D / Tr::kDqChunks;
  __host__ __device__ static constexpr int warp_off(int ch, int warp) {
    return (ch * Tr::kWarps + warp) * (kMT * kNT * 2 * 64);
  }
  __host__ __device__ static constexpr int slot(int mt, int nt, int r) {
    return (mt * kNT + nt) * 2 + r;
  }
  /// Offset in the tile of row ri, columns c..c + 7 (c % 8 == 0).
  __host__ __device__ static constexpr int off(int ri, int c) {
    const int ch = c / kCW, cc = c % kCW;
    const int warp = (ri / (16 * kMT)) * Tr::kDqWC + cc / (8 * kNT);
    const int rr = ri % (16 * kMT), cl = cc % (8 * kNT);
    return warp_off(ch, warp) + slot(rr / 16, cl / 8, (rr % 16) / 8) * 64 +
           ((rr % 8) * 4 + (cl % 8) / 2) * 2;
  }
};

/// Rows of one (batch, q head) slot of dQ_accum: seqlen_q, padded to whole kBM tiles with
/// DQ_PERM (a tile's permuted floats span the whole tile).
template <int D>
__host__ __device__ __forceinline__ int64_t dq_rows(const Params& p) {
  if constexpr (BwdFusedTraits<D>::kDqPerm) {
    constexpr int kBM = BwdFusedTraits<D>::kBM;
    return (p.seqlen_q + kBM - 1) / kBM * kBM;
  } else {
    return p.seqlen_q;
  }
}

/// red_c_global_split into a DqPerm tile: warp `warp`'s chunk ch, rows row0.. of the tile (the
/// warp's origin), rows >= valid_rows skipped as there.
template <int D, int MT, int NT>
__device__ __forceinline__ void red_c_perm(float* tile, const float (&c)[MT][NT][4], int ch,
                                           int warp, int row0, int valid_rows) {
  static_assert(MT == DqPerm<D>::kMT && NT == DqPerm<D>::kNT, "the fused kernel's dQ warp tile");
  const int lane = threadIdx.x % 32;
  float* gt = tile + DqPerm<D>::warp_off(ch, warp) + lane * 2;
  if (valid_rows - row0 >= MT * 16) {
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
#pragma unroll
        for (int r = 0; r < 2; ++r)
          red_add2(gt + DqPerm<D>::slot(mt, nt, r) * 64, c[mt][nt][r * 2], c[mt][nt][r * 2 + 1]);
    return;
  }
  const int left = valid_rows - row0 - lane / 4;
#pragma unroll
  for (int mt = 0; mt < MT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      if (mt * 16 + r * 8 >= left) continue;
#pragma unroll
      for (int nt = 0; nt < NT; ++nt)
        red_add2(gt + DqPerm<D>::slot(mt, nt, r) * 64, c[mt][nt][r * 2], c[mt][nt][r * 2 + 1]);
    }
}

/// kIts 16-byte cp.async along one thread's column of a 64-wide panel (rows 128 bytes apart):
/// chunk it to smem s + it * kR rows, from the running byte pointer t (advanced by step per chunk:
/// one 64-bit add); chunks with it * kR >= left read 0 bytes from `zero`, the tensor's base (a
/// kernel parameter, valid whatever the item). ptxas rebuilt each address from 64-bit row
/// products when this was written as a select of the item's pointer or as t + it * step (static
/// SASS +20-60). Used by load_q_do (LOAD_CHAIN) and load_kv_fast (EARLY_KV bit 2).
template <int kIts, int kR>
__device__ __forceinline__ void cp_async_chain(uint32_t s, const char* t, int64_t step,
                                               const char* zero, int left) {
#pragma unroll
  for (int it = 0; it < kIts; ++it) {
    const bool ok = it * kR < left;
    ptx::cp_async_16(s + it * kR * 64 * 2, ok ? t : zero, ok);
    t += step;
  }
}

/// dQ_accum layout: (B, Hq, dq_rows, D) fp32, D the kernel head dim (columns >= head_dim stay
/// 0); varlen sequence b uses rows [0, its length) of slot b (seqlen_q is the maximum). With
/// DQ_PERM each kBM-row tile is in DqPerm's order.
template <int D>
__device__ __forceinline__ float* dq_accum_ptr(float* base, const Params& p, int64_t b, int64_t h) {
  return base + ((b * p.heads_q + h) * dq_rows<D>(p)) * D;
}

/// The part the fused and the deterministic dK / dV kernels share: one CTA per (key block of
/// kBN keys at n0, kv head g, batch b) loads the block's K and V tiles once, then walks the work
/// items t = hh * m_blocks + mb over (q head of the GQA group, query block mb of kBM rows; hh
/// outer, mb ascending; ATTNKIT_FLASH_BWD_ITEM_RANGE: t = (hh << shift) | mb), skipping
/// items whose query rows cannot see these keys, and loads each item's Q and dO tiles.
/// kDeferRange (ATTNKIT_FLASH_BWD_EARLY_KV): the constructor leaves the visible query-block range
/// (ITEM_RANGE's mb_lo / mb_hi, HOIST's full_lo / full_hi) to find_range(), so that the caller
/// can issue the K / V loads first.
template <int kBM, int kBN, int D, int kThreads, typename T, bool kDeferRange = false>
struct BwdKeyBlock {
  using LQ = SmemLayout<kBM, D>;
  using LK = SmemLayout<kBN, D>;
  const Params& p;
  SeqSpan sp;
  int64_t b, g, n0, n_last;
  int keys, m_blocks, items, dvalid;
#if ATTNKIT_FLASH_BWD_HOIST
  // Q / dO at (batch b, first q head of the group, the sequence's first row): an item adds
  // its relative head and first row only. D <= 128 only: at D = 256 the bases kept live
  // across the loop made ptxas spill (16 B) and added ~90 instructions per item.
  static constexpr bool kBases = D <= 128;
  const T* q_b;
  const T* do_b;
#endif
#if ATTNKIT_FLASH_BWD_ITEM_RANGE
  // Item t = (hh << shift) | mb (no division per item); the visible query blocks are one range
  // [mb_lo, mb_hi] for every head: a row's key range [lo(i), hi(i)] (core/score_policy.hpp) has
  // both ends non-decreasing in i, so "last row's hi >= n0" turns true and "first row's lo <=
  // n_last" turns false once as mb grows. Same items in the same order as the walk below.
  int shift, mb_lo, mb_hi;
#if ATTNKIT_FLASH_BWD_HOIST
  // Query blocks whose every row sees every key of [n0, n0 + kBN) (no element check): the
  // per-item test "first row's hi >= n0 + kBN - 1 && last row's lo <= n0" of the loop below,
  // monotone in mb for the same reason (false -> true, true -> false), so one range
  // [full_lo, full_hi], found by bisection once per CTA.
  int full_lo, full_hi;
#endif
#endif

  __device__ __forceinline__ BwdKeyBlock(const Params& prm, int64_t b_, int64_t g_, int64_t n0_)
      : p(prm), sp(seq_span(prm, b_)), b(b_), g(g_), n0(n0_) {
    keys = static_cast<int>(sp.sk - n0 < kBN ? sp.sk - n0 : kBN);
    n_last = n0 + keys - 1;
    m_blocks = static_cast<int>((sp.sq + kBM - 1) / kBM);
    dvalid = static_cast<int>(p.head_dim);
#if ATTNKIT_FLASH_BWD_HOIST
    {
      const int64_t h0 = g * p.group;
      q_b = static_cast<const T*>(p.q) + b * p.q_st.b + sp.q_start * p.q_st.s + h0 * p.q_st.h;
      do_b = static_cast<const T*>(p.dout) + b * p.dout_st.b + sp.q_start * p.dout_st.s +
             h0 * p.dout_st.h;
    }
#endif
#if ATTNKIT_FLASH_BWD_ITEM_RANGE
    shift = m_blocks > 1 ? 32 - __clz(m_blocks - 1) : 0;
    items = static_cast<int>(p.group) << shift;
    if constexpr (!kDeferRange) find_range();
#else
    items = static_cast<int>(p.group) * m_blocks;
#endif
  }
  /// The visible query blocks [mb_lo, mb_hi] and (HOIST) the full ones [full_lo, full_hi]; in
  /// the constructor unless kDeferRange. No-op without ITEM_RANGE.
  __device__ __forceinline__ void find_range() {
#if ATTNKIT_FLASH_BWD_ITEM_RANGE
    mb_lo = 0;
    mb_hi = m_blocks - 1;
    if (!empty()) {
      while (mb_lo < m_blocks && !visible_block(mb_lo))
        ++mb_lo;
      while (mb_hi >= mb_lo && !visible_block(mb_hi))
        --mb_hi;
    }
#if ATTNKIT_FLASH_BWD_HOIST
    {
      int lo = mb_lo, hi = mb_hi + 1;  // first mb in [mb_lo, mb_hi] with first.hi >= n0 + kBN - 1
      while (lo < hi) {
        const int mid = (lo + hi) / 2;
        const int64_t m0 = static_cast<int64_t>(mid) * kBM;
        if (row_range(p, m0, sp.sq, sp.sk).hi >= n0 + kBN - 1)
          hi = mid;
        else
          lo = mid + 1;
      }
      full_lo = lo;
      lo = mb_lo - 1;  // last mb in [mb_lo, mb_hi] with last.lo <= n0
      hi = mb_hi;
      while (lo < hi) {
        const int mid = (lo + hi + 1) / 2;
        const int64_t m0 = static_cast<int64_t>(mid) * kBM;
        if (row_range(p, m0 + block_rows(mid) - 1, sp.sq, sp.sk).lo <= n0)
          lo = mid;
        else
          hi = mid - 1;
      }
      full_hi = lo;
    }
#endif
#endif
  }
  /// True when the block starts past this sequence's keys (the CTA has nothing to do).
  __device__ __forceinline__ bool empty() const {
    return n0 >= sp.sk;
  }
  /// cp.async of K and V (kBN, D) into sK / sV (not committed).
  __device__ __forceinline__ void load_kv(T* sK, T* sV) const {
    const T* k_ptr =
        static_cast<const T*>(p.k) + b * p.k_st.b + (sp.k_start + n0) * p.k_st.s + g * p.k_st.h;
    const T* v_ptr =
        static_cast<const T*>(p.v) + b * p.v_st.b + (sp.k_start + n0) * p.v_st.s + g * p.v_st.h;
    load_tile_async<LK, kThreads>(sK, k_ptr, p.k_st.s, keys, dvalid);
    load_tile_async<LK, kThreads>(sV, v_ptr, p.v_st.s, keys, dvalid);
  }
  /// load_kv with the thread's chunk fixed (row r0 + it * kR, column c0), as load_q_do's
  /// hoisted form (ATTNKIT_FLASH_BWD_EARLY_KV bit 2): smem rows as immediate offsets, one 64-bit
  /// add per chunk and a select of the tensor's base pointer for chunks past the keys (read 0
  /// bytes), instead of load_tile_async's per-chunk 64-bit row product (~20 SASS per chunk, all
  /// before the first LDGSTS). Same chunks, same zero fill. 64-wide panels only (D = 96 / 192:
  /// load_kv).
  __device__ __forceinline__ void load_kv_fast(T* sK, T* sV) const {
    constexpr int kCpr = D / 8;  // 16-byte chunks per row
    if constexpr (kThreads % kCpr == 0 && !LK::kHasHalfPanel) {
      constexpr int kR = kThreads / kCpr, kIts = kBN / kR;
      static_assert(kBN % kR == 0 && kR % 8 == 0, "whole rows per pass");
      const int tid = static_cast<int>(threadIdx.x);
      const int r0 = tid / kCpr, c0 = (tid % kCpr) * 8;
      const int left = c0 < dvalid ? keys - r0 : 0;  // keys of this thread's column left
      const uint32_t s0 = ptx::smem_addr(sK + LK::off(r0, c0));
      const uint32_t s1 = ptx::smem_addr(sV + LK::off(r0, c0));
      const char* kt =
          reinterpret_cast<const char*>(static_cast<const T*>(p.k) + b * p.k_st.b +
                                        (sp.k_start + n0 + r0) * p.k_st.s + g * p.k_st.h + c0);
      const char* vt =
          reinterpret_cast<const char*>(static_cast<const T*>(p.v) + b * p.v_st.b +
                                        (sp.k_start + n0 + r0) * p.v_st.s + g * p.v_st.h + c0);
      const int64_t kstep = kR * p.k_st.s * static_cast<int64_t>(sizeof(T));
      const int64_t vstep = kR * p.v_st.s * static_cast<int64_t>(sizeof(T));
      cp_async_chain<kIts, kR>(s0, kt, kstep, static_cast<const char*>(p.k), left);
      cp_async_chain<kIts, kR>(s1, vt, vstep, static_cast<const char*>(p.v), left);
    } else {
      load_kv(sK, sV);
    }
  }
  /// Query rows of block mb inside the sequence (<= kBM).
  __device__ __forceinline__ int64_t block_rows(int mb) const {
    const int64_t m0 = static_cast<int64_t>(mb) * kBM;
    return sp.sq - m0 < kBM ? sp.sq - m0 : kBM;
  }
  __device__ __forceinline__ bool visible_block(int mb) const {
    const int64_t m0 = static_cast<int64_t>(mb) * kBM;
    const Range32 first = row_range(p, m0, sp.sq, sp.sk);
    const Range32 last = row_range(p, m0 + block_rows(mb) - 1, sp.sq, sp.sk);
    return !(last.hi < n0 || first.lo > n_last);
  }
#if ATTNKIT_FLASH_BWD_ITEM_RANGE
  __device__ __forceinline__ int block_of(int t) const {
    return t & ((1 << shift) - 1);
  }
#if ATTNKIT_FLASH_BWD_HOIST
  /// Item t's query block needs the element check (as `check` in the kernels' old form).
  __device__ __forceinline__ bool needs_check(int t) const {
    const int mb = block_of(t);
    return mb < full_lo || mb > full_hi;
  }
#endif
  __device__ __forceinline__ int64_t head(int t) const {
    return g * p.group + (t >> shift);
  }
  /// Item t's q head relative to the group's first.
  __device__ __forceinline__ int rel_head(int t) const {
    return t >> shift;
  }
  /// The next visible item after t (items when none is left); next(-1) is the first.
  __device__ __forceinline__ int next(int t) const {
    if (mb_lo > mb_hi) return items;
    if (t < 0) return mb_lo;
    if (block_of(t) < mb_hi) return t + 1;
    const int hh = (t >> shift) + 1;
    return hh < static_cast<int>(p.group) ? (hh << shift) | mb_lo : items;
  }
#else
  __device__ __forceinline__ int block_of(int t) const {
    return t % m_blocks;
  }
  __device__ __forceinline__ int64_t head(int t) const {
    return g * p.group + t / m_blocks;
  }
  __device__ __forceinline__ int rel_head(int t) const {
    return t / m_blocks;
  }
  /// The next visible item after t (items when none is left); next(-1) is the first.
  __device__ __forceinline__ int next(int t) const {
    ++t;
    while (t < items && !visible_block(block_of(t)))
      ++t;
    return t;
  }
#endif
  __device__ __forceinline__ int64_t m0(int t) const {
    return static_cast<int64_t>(block_of(t)) * kBM;
  }
  /// Query rows of item t inside the sequence (<= kBM).
  __device__ __forceinline__ int64_t rows(int t) const {
    return block_rows(block_of(t));
  }
  /// cp.async of item t's Q and dO (kBM, D) into sq and sq + LQ::kSize (not committed).
  __device__ __forceinline__ void load_q_do(int t, T* sq) const {
    const int64_t q0 = m0(t);
    const int r = static_cast<int>(rows(t));
#if ATTNKIT_FLASH_BWD_HOIST
    const T* q_ptr;
    const T* do_ptr;
    if constexpr (kBases) {
      const int64_t hh = rel_head(t);
      q_ptr = q_b + q0 * p.q_st.s + hh * p.q_st.h;
      do_ptr = do_b + q0 * p.dout_st.s + hh * p.dout_st.h;
    } else {
      const int64_t h = head(t);
      q_ptr =
          static_cast<const T*>(p.q) + b * p.q_st.b + (sp.q_start + q0) * p.q_st.s + h * p.q_st.h;
      do_ptr = static_cast<const T*>(p.dout) + b * p.dout_st.b + (sp.q_start + q0) * p.dout_st.s +
               h * p.dout_st.h;
    }
#else
    const int64_t h = head(t);
    const T* q_ptr =
        static_cast<const T*>(p.q) + b * p.q_st.b + (sp.q_start + q0) * p.q_st.s + h * p.q_st.h;
    const T* do_ptr = static_cast<const T*>(p.dout) + b * p.dout_st.b +
                      (sp.q_start + q0) * p.dout_st.s + h * p.dout_st.h;
#endif
#if ATTNKIT_FLASH_BWD_HOIST
    constexpr int kCpr = D / 8;  // 16-byte chunks per row
    // LOAD_CHAIN 2 (default): not at D = 128, where ptxas kept the running pointers in local
    // memory (16 B spill, 3 LDL per item) and the session-4 A/B measured it 1-2 % slower.
    constexpr bool kLoadChain =
        ATTNKIT_FLASH_BWD_LOAD_CHAIN == 1 || (ATTNKIT_FLASH_BWD_LOAD_CHAIN == 2 && D != 128);
    // LOAD_PRED 2 (default): D = 128 only; at D = 64 / 256 LOAD_CHAIN's form is as short
    // (static SASS 1246 vs 1254 / 1191 vs 1194 per item with STATS_WS and LATE_LOAD 2).
    constexpr bool kLoadPred =
        ATTNKIT_FLASH_BWD_LOAD_PRED == 1 || (ATTNKIT_FLASH_BWD_LOAD_PRED == 2 && D == 128);
    if constexpr (kThreads % kCpr == 0 && !LQ::kHasHalfPanel) {
      // load_tile_async with the thread's chunk fixed: row r0 + it * kR, column c0; smem rows
      // kR apart are kR * 64 elements apart in a 64-wide panel (kR % 8 == 0 keeps the swizzle).
      constexpr int kR = kThreads / kCpr;
      constexpr int kIts = kBM / kR;
      static_assert(kBM % kR == 0 && kR % 8 == 0, "whole rows per pass");
      const int tid = static_cast<int>(threadIdx.x);
      const int r0 = tid / kCpr, c0 = (tid % kCpr) * 8;
      const int left = c0 < dvalid ? r - r0 : 0;  // rows of this thread's column still inside
      const uint32_t s0 = ptx::smem_addr(sq + LQ::off(r0, c0));
      // Byte addresses: row steps of kR rows are one 64-bit add each (no shift per chunk).
      const char* qt = reinterpret_cast<const char*>(q_ptr + (r0 * p.q_st.s + c0));
      const char* dt = reinterpret_cast<const char*>(do_ptr + (r0 * p.dout_st.s + c0));
      const int64_t qstep = kR * p.q_st.s * static_cast<int64_t>(sizeof(T));
      const int64_t dstep = kR * p.dout_st.s * static_cast<int64_t>(sizeof(T));
      if constexpr (kLoadPred) {
        // One running pointer per tensor, advanced by a predicated 64-bit add while the next
        // row is inside the sequence (row validity is monotone in it), so it stays on the last
        // valid row; chunk 0 starts from the tensor's base (a kernel parameter) when the
        // thread has no valid row. Zero-filled chunks thus read 0 bytes from a valid address,
        // with no per-chunk 64-bit select (LOAD_CHAIN) or row product (the form below).
        const bool ok0 = 0 < left;
        const char* qa = ok0 ? qt : static_cast<const char*>(p.q);
        const char* da = ok0 ? dt : static_cast<const char*>(p.dout);
#pragma unroll
        for (int it = 0; it < kIts; ++it) {
          const bool ok = it * kR < left;
          if (it > 0 && ok) {
            qa += qstep;
            da += dstep;
          }
          ptx::cp_async_16(s0 + it * kR * 64 * 2, qa, ok);
          ptx::cp_async_16(s0 + (LQ::kSize + it * kR * 64) * 2, da, ok);
        }
      } else if constexpr (kLoadChain) {
        // One running byte pointer per tensor (cp_async_chain says why).
        cp_async_chain<kIts, kR>(s0, qt, qstep, static_cast<const char*>(p.q), left);
        cp_async_chain<kIts, kR>(s0 + LQ::kSize * 2, dt, dstep, static_cast<const char*>(p.dout),
                                 left);
      } else {
#pragma unroll
        for (int it = 0; it < kIts; ++it) {
          const bool ok = it * kR < left;
          ptx::cp_async_16(s0 + it * kR * 64 * 2,
                           ok ? qt + it * qstep : reinterpret_cast<const char*>(q_ptr), ok);
        }
#pragma unroll
        for (int it = 0; it < kIts; ++it) {
          const bool ok = it * kR < left;
          ptx::cp_async_16(s0 + (LQ::kSize + it * kR * 64) * 2,
                           ok ? dt + it * dstep : reinterpret_cast<const char*>(do_ptr), ok);
        }
      }
      return;
    }
#endif
    load_tile_async<LQ, kThreads>(sq, q_ptr, p.q_st.s, r, dvalid);
    load_tile_async<LQ, kThreads>(sq + LQ::kSize, do_ptr, p.dout_st.s, r, dvalid);
  }
};

/// kDqMid: the dK GEMM after the dQ chunks (ATTNKIT_FLASH_BWD_DQ_MID, traits.hpp); the launch
/// picks it per call on the fast path (ATTNKIT_FLASH_BWD_DQ_MID_MIN_SK).
template <int D, typename T, bool kGeneral, bool kDqMid = kDqMidClass<D>>
__global__ void __launch_bounds__(BwdFusedTraits<D>::kThreads)
    bwd_fused_kernel(const Params p, const float* delta, float* dq_accum) {
  using Tr = BwdFusedTraits<D>;
  using LQ = SmemLayout<Tr::kBM, D>;
  using LK = SmemLayout<Tr::kBN, D>;
  using LP = SmemLayout<Tr::kBM, Tr::kBN>;
  constexpr int kBM = Tr::kBM, kBN = Tr::kBN, kStages = Tr::kStages;
  // Warp origins folded into the GEMMs' lane addresses (warp_gemm_ss_wo): D <= 128, and
  // D > 128 with ATTNKIT_FLASH_BWD_WO_WIDE (session 3: 24 / 68 B spill at D = 192 / 256).
  constexpr bool kWo = ATTNKIT_FLASH_BWD_HOIST && (D <= 128 || ATTNKIT_FLASH_BWD_WO_WIDE);
  // The fast path's element check from one band of diagonals (mask_band) instead of bwd_p_ds's
  // per-row ranges.
  constexpr bool kBand = ATTNKIT_FLASH_BWD_CHECK_LIMITS && !kGeneral;
  // P / dS stored with stmatrix (ATTNKIT_FLASH_BWD_STSM; fast path only: on the general path it
  // doubled ptxas's spill at D = 128, 36 -> 72 B).
  constexpr bool kStsm =
      !kGeneral && (ATTNKIT_FLASH_BWD_STSM == 1 || (ATTNKIT_FLASH_BWD_STSM == 2 && D != 128));
  // dQ GEMM's k-loop unroll (ATTNKIT_FLASH_BWD_DQ_UNROLL_128; fast path only: on the general
  // path unroll 4 raised ptxas's spill at D = 128, 36 -> 40 B).
  constexpr int kDqUnroll = kGeneral ? Tr::kKUnroll : Tr::kKUnrollDq;
  // dQ GEMM's ldmatrix fence (ATTNKIT_FLASH_BWD_DQ_FENCE_128; fast path, D = 128, full unroll).
  constexpr int kDqFence =
      !kGeneral && D == 128 && kWo && kDqUnroll >= kBN / 16 ? ATTNKIT_FLASH_BWD_DQ_FENCE_128 : 0;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);  // (kBN, D)
  T* sV = sK + LK::kSize;                  // (kBN, D)
  T* sP = sV + LK::kSize;                  // (kBM, kBN)
  T* sdS = sP + LP::kSize;                 // (kBM, kBN)
  T* sQ0 = sdS + LP::kSize;                // kStages x [Q (kBM, D), dO (kBM, D)]
  // kStages x [lse (kBM), delta (kBM)] fp32, loaded with Q / dO (kBwdStatsSmem)
  float* sL0 = reinterpret_cast<float*>(sQ0 + kStages * 2 * LQ::kSize);

  // ATTNKIT_FLASH_BWD_EARLY_KV: K / V loads issued before the item-range search (bit 1), from
  // per-thread chunk pointers (bit 2).
  constexpr bool kEarlyKv = (ATTNKIT_FLASH_BWD_EARLY_KV & 1) != 0;
  constexpr bool kFastKv = (ATTNKIT_FLASH_BWD_EARLY_KV & 2) != 0;
  auto load_kv = [&](const auto& kbr) {
    if constexpr (kFastKv)
      kbr.load_kv_fast(sK, sV);
    else
      kbr.load_kv(sK, sV);
  };
  BwdKeyBlock<kBM, kBN, D, Tr::kThreads, T, kEarlyKv> kb(p, blockIdx.z, blockIdx.y,
                                                         static_cast<int64_t>(blockIdx.x) * kBN);
  if (kb.empty()) return;
  if constexpr (kEarlyKv) {
    load_kv(kb);
    kb.find_range();
  }
  const SeqSpan& sp = kb.sp;
  const int64_t b = kb.b, g = kb.g, n0 = kb.n0;
  const int keys = kb.keys, items = kb.items, dvalid = kb.dvalid;
  const int warp = threadIdx.x / 32;
  // Warp tile origins of the three output tiles (rows, cols).
  const int s_m0 = (warp / Tr::kSdpWC) * 16 * Tr::kSMT, s_n0 = (warp % Tr::kSdpWC) * 8 * Tr::kSNT;
  const int k_m0 = (warp / Tr::kKvWC) * 16 * Tr::kKMT, k_n0 = (warp % Tr::kKvWC) * 8 * Tr::kKNT;
  const int q_m0 = (warp / Tr::kDqWC) * 16 * Tr::kQMT, q_n0 = (warp % Tr::kDqWC) * 8 * Tr::kQNT;

  if constexpr (!kEarlyKv) load_kv(kb);
  auto next_item = [&](int t) { return kb.next(t); };
#if ATTNKIT_FLASH_BWD_HOIST
  // Per-CTA bases: this thread's lse (threads < kBM) or delta (< 2 kBM) row of the group's
  // first head, and dQ_accum of that head; an item adds its relative head and first row.
  const int64_t h0 = g * p.group;
  const int st_r = static_cast<int>(threadIdx.x) % kBM;
  const float* st_t =
      static_cast<int>(threadIdx.x) < kBM
          ? p.lse + b * p.lse_st.b + h0 * p.lse_st.h + (sp.q_start + st_r) * p.lse_st.s
          : delta + (b * p.heads_q + h0) * p.seqlen_q + st_r;
  float* const dq_b = dq_accum_ptr<D>(dq_accum, p, b, h0);
  // Packed stats (Tr::kStatsWs; `delta` is the workspace bwd_delta_kernel<T, kBM> wrote): the
  // group's first head's blocks, and one head's stride in them.
  const int64_t st_nb = stats_blocks<kBM>(p);
  const float* const st_b = delta + (b * p.heads_q + h0) * st_nb * (2 * kBM);
#endif
  auto load_item = [&](int t, int stage) {
    kb.load_q_do(t, sQ0 + stage * 2 * LQ::kSize);
#if ATTNKIT_FLASH_BWD_HOIST
    if constexpr (Tr::kStatsWs) {
      // One 2 kBM-float block (lse2, delta) per item: kBM / 2 threads (whole warps: kBM >= 64)
      // copy 16 bytes each, no bounds (the block is padded with +inf / 0).
      const int tid = static_cast<int>(threadIdx.x);
      if (tid < kBM / 2) {
        const float* src = st_b + (kb.rel_head(t) * st_nb + kb.block_of(t)) * (2 * kBM) + tid * 4;
        ptx::cp_async_16(ptx::smem_addr(sL0 + stage * 2 * kBM + tid * 4), src, true);
      }
    } else if constexpr (Tr::kStatsSmem) {
      const int tid = static_cast<int>(threadIdx.x);
      if (tid < 2 * kBM) {
        const int64_t hh = kb.rel_head(t), m0 = kb.m0(t);
        const bool ok = st_r < kb.rows(t);
        const float* src;
        if constexpr (decltype(kb)::kBases) {
          src =
              tid < kBM ? st_t + hh * p.lse_st.h + m0 * p.lse_st.s : st_t + (hh * p.seqlen_q + m0);
        } else {
          const int64_t h = h0 + hh;
          src = tid < kBM ? p.lse + b * p.lse_st.b + h * p.lse_st.h +
                                (sp.q_start + m0 + st_r) * p.lse_st.s
                          : delta + (b * p.heads_q + h) * p.seqlen_q + m0 + st_r;
        }
        float* dst = sL0 + stage * 2 * kBM + tid;
        // Rows past the sequence: lse = +inf (P = 0 there), delta = 0 (cp.async zero fill).
        if (!ok && tid < kBM)
          *dst = INFINITY;
        else
          ptx::cp_async_4(ptx::smem_addr(dst), ok ? src : delta, ok);
      }
    }
#else
    if constexpr (Tr::kStatsSmem) {
      const int64_t h = kb.head(t), m0 = kb.m0(t);
      const int rows = static_cast<int>(kb.rows(t));
      // Row statistics of the block: threads [0, kBM) copy lse, [kBM, 2 kBM) delta (4 bytes
      // each; rows past the sequence zero-filled, bwd_p_ds masks them by row index).
      const int tid = static_cast<int>(threadIdx.x);
      if (tid < 2 * kBM) {
        const int r = tid % kBM;
        const bool ok = r < rows;
        const float* src =
            tid < kBM ? p.lse + b * p.lse_st.b + h * p.lse_st.h + (sp.q_start + m0 + r) * p.lse_st.s
                      : delta + (b * p.heads_q + h) * p.seqlen_q + m0 + r;
        ptx::cp_async_4(ptx::smem_addr(sL0 + stage * 2 * kBM + tid), ok ? src : delta, ok);
      }
    }
#endif
  };

  float dk[Tr::kKMT][Tr::kKNT][4], dv[Tr::kKMT][Tr::kKNT][4];  // (kBN, D) over 8 warps
  zero(dk);
  zero(dv);
  int t = next_item(-1);
  if (t < items) load_item(t, 0);
  ptx::cp_async_commit();
  int stage = 0;
  while (t < items) {
    const int tn = next_item(t);
    ptx::cp_async_wait<0>();
    __syncthreads();  // item t landed; every warp is done with the other stage and sP / sdS
    // The next item's Q / dO / stats into the other stage (free since the barrier above),
    // overlapping this item's compute; where in the item: ATTNKIT_FLASH_BWD_LATE_LOAD.
    auto issue_next = [&](int at) {
      constexpr int kLate =
          D == 128 ? ATTNKIT_FLASH_BWD_LATE_LOAD : ATTNKIT_FLASH_BWD_LATE_LOAD_OTHER;
      if (at == kLate && kStages > 1 && tn < items) {
        load_item(tn, stage ^ 1);
        ptx::cp_async_commit();
      }
    };
    issue_next(0);
    const T* sQ = sQ0 + stage * 2 * LQ::kSize;  // (kBM, D)
    const T* sdO = sQ + LQ::kSize;              // (kBM, D)
    const int64_t h = kb.head(t);
    const int64_t m0 = kb.m0(t);
    const int64_t rows = sp.sq - m0 < kBM ? sp.sq - m0 : kBM;
    {
      ScoreCtx ctx;
      ctx.init(p, b, h, sp.sq, sp.sk);
      const float* delta_bh = delta + (b * p.heads_q + h) * p.seqlen_q;
#if !(ATTNKIT_FLASH_BWD_HOIST && ATTNKIT_FLASH_BWD_ITEM_RANGE)
      const Range32 first = row_range(p, m0, sp.sq, sp.sk);
      const Range32 last = row_range(p, m0 + rows - 1, sp.sq, sp.sk);
#endif
      float s[Tr::kSMT][Tr::kSNT][4], dp[Tr::kSMT][Tr::kSNT][4];  // (kBM, kBN) over 8 warps
      zero(s);
      zero(dp);
      warp_gemm_ss_wo<kWo, Tr::kSMT, Tr::kSNT, D, false, false, LQ, LK, Tr::kKUnrollSdp>(
          s, sQ, sK, s_m0, s_n0);
      issue_next(1);
      warp_gemm_ss_wo<kWo, Tr::kSMT, Tr::kSNT, D, false, false, LQ, LK, Tr::kKUnrollSdp>(
          dp, sdO, sV, s_m0, s_n0);
      issue_next(2);
#if ATTNKIT_FLASH_BWD_HOIST && ATTNKIT_FLASH_BWD_ITEM_RANGE
      const bool check = kb.needs_check(t);
#else
      const bool check = !(last.lo <= n0 && first.hi >= n0 + kBN - 1);
#endif
      const float* s_lse = sL0 + stage * 2 * kBM;
      if constexpr (kBand) {
        if (check) {
          // The lane's offsets from a thread index read here (tid_volatile), not hoisted: kept
          // live across the item loop they made ptxas spill (40 B at D = 128).
          const int tid = tid_volatile(), w = tid / 32;
          const int io = (w / Tr::kSdpWC) * 16 * Tr::kSMT + (tid % 32) / 4;
          const int jo = (w % Tr::kSdpWC) * 8 * Tr::kSNT + (tid % 4) * 2;
          mask_band(s, band_limits(diag_band(p, sp.sq, sp.sk), m0, n0, sp.sk, io, jo));
        }
      }
      bwd_p_ds<kGeneral, Tr::kStatsSmem, ATTNKIT_FLASH_BWD_HOIST != 0, !kBand, Tr::kStatsWs>(
          p, ctx, s, dp, static_cast<int>(m0) + s_m0, static_cast<int>(n0) + s_n0, delta_bh,
          sp.q_start, check, s_lse, s_lse + kBM, static_cast<int>(m0));
#if ATTNKIT_FLASH_BWD_HOIST
      if constexpr (kStsm) {
        store_c_smem_stsm<LP>(sP, s, s_m0, s_n0);
        store_c_smem_stsm<LP>(sdS, dp, s_m0, s_n0);
      } else {
        store_c_smem_split<LP>(sP, s, s_m0, s_n0);
        store_c_smem_split<LP>(sdS, dp, s_m0, s_n0);
      }
      issue_next(3);
#else
      store_c_smem<LP>(sP, s, s_m0, s_n0);
      store_c_smem<LP>(sdS, dp, s_m0, s_n0);
#endif
    }
    __syncthreads();
    // dV (kBN, D) += P^T (kBN, kBM) dO (kBM, D);  dK += dS^T Q.
    warp_gemm_ss_wo<kWo, Tr::kKMT, Tr::kKNT, kBM, true, true, LP, LQ, Tr::kKUnroll>(dv, sP, sdO,
                                                                                    k_m0, k_n0);
    if constexpr (!kDqMid) {  // else dK after dQ (ATTNKIT_FLASH_BWD_DQ_MID)
      warp_gemm_ss_wo<kWo, Tr::kKMT, Tr::kKNT, kBM, true, true, LP, LQ, Tr::kKUnroll>(dk, sdS, sQ,
                                                                                      k_m0, k_n0);
    }
    // dQ (kBM, D) += dS (kBM, kBN) K (kBN, D), in kDqChunks column chunks, into the workspace.
#if ATTNKIT_FLASH_BWD_HOIST
    float* dqa = decltype(kb)::kBases ? dq_b + (kb.rel_head(t) * dq_rows<D>(p) + m0) * D
                                      : dq_accum_ptr<D>(dq_accum, p, b, h) + m0 * D;
#else
    float* dqa = dq_accum_ptr<D>(dq_accum, p, b, h) + m0 * D;
#endif
#pragma unroll
    for (int ch = 0; ch < Tr::kDqChunks; ++ch) {
      const int c0 = ch * (D / Tr::kDqChunks) + q_n0;
      float dq[Tr::kQMT][Tr::kQNT][4];
      zero(dq);
      warp_gemm_ss_wo<kWo, Tr::kQMT, Tr::kQNT, kBN, false, true, LP, LK, kDqUnroll, kDqFence>(
          dq, sdS, sK, q_m0, c0);
#if ATTNKIT_FLASH_BWD_HOIST
      if constexpr (Tr::kDqPerm)
        red_c_perm<D>(dqa, dq, ch, warp, q_m0, static_cast<int>(rows));
      else
        red_c_global_split<D>(dqa, dq, q_m0, c0, static_cast<int>(rows));
#else
      red_c_global(dqa, D, dq, q_m0, c0, static_cast<int>(rows));
#endif
    }
    if constexpr (kDqMid) {
      warp_gemm_ss_wo<kWo, Tr::kKMT, Tr::kKNT, kBM, true, true, LP, LQ, Tr::kKUnroll>(dk, sdS, sQ,
                                                                                      k_m0, k_n0);
    }
    if (kStages == 1 && tn < items) {
      __syncthreads();  // single stage: reload only after every warp is done with it
      load_item(tn, 0);
      ptx::cp_async_commit();
    }
    if (kStages > 1) stage ^= 1;
    t = tn;
  }
  ptx::cp_async_wait<0>();  // K/V were never waited for when no query block was visited
  if constexpr (ATTNKIT_FLASH_BWD_SMEM_EPILOGUE != 0) {
    __syncthreads();  // every warp is past its last GEMM reading sK / sV (the dQ GEMM reads sK)
    store_dk_dv_smem<T, LK, Tr::kThreads, kStsm>(p, b, g, sp, n0, dk, dv, k_m0, k_n0, keys, dvalid,
                                                 sK, sV);
  } else {
    store_dk_dv<T>(p, b, g, sp, n0, dk, dv, k_m0, k_n0, keys, dvalid);
  }
}

/// dQ = scale * dQ_accum, cast to T, written with dq's strides: 8 columns (one 16-byte store)
/// per thread; grid (ceil(seqlen_q * D / 8 / 256), Hq, B).
template <int D, typename T>
__global__ void bwd_dq_convert_kernel(const Params p, const float* dq_accum) {
  const int64_t b = blockIdx.z, h = blockIdx.y;
  const int64_t e = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) * 8;
  const int64_t i = e / D;
  const int c = static_cast<int>(e % D);
  const SeqSpan sp = seq_span(p, b);
  if (i >= sp.sq || c >= p.head_dim) return;
  const float* src = dq_accum_ptr<D>(const_cast<float*>(dq_accum), p, b, h);
  if constexpr (BwdFusedTraits<D>::kDqPerm) {
    constexpr int kBM = BwdFusedTraits<D>::kBM;
    src += (i / kBM) * kBM * D + DqPerm<D>::off(static_cast<int>(i % kBM), c);
  } else {
    src += i * D + c;
  }
  const float4 lo = *reinterpret_cast<const float4*>(src);
  const float4 hi = *reinterpret_cast<const float4*>(src + 4);
  const float s = p.scale;
  uint4 out;
  out.x = ptx::pack2<T>(lo.x * s, lo.y * s);
  out.y = ptx::pack2<T>(lo.z * s, lo.w * s);
  out.z = ptx::pack2<T>(hi.x * s, hi.y * s);
  out.w = ptx::pack2<T>(hi.z * s, hi.w * s);
  T* dst = static_cast<T*>(p.dq) + b * p.dq_st.b + (sp.q_start + i) * p.dq_st.s + h * p.dq_st.h + c;
  *reinterpret_cast<uint4*>(dst) = out;
}

template <int D, typename T, bool kGeneral>
__global__ void __launch_bounds__(BwdKVTraits<D>::kThreads)
    bwd_dkdv_kernel(const Params p, const float* delta) {
  using Tr = BwdKVTraits<D>;
  using LQ = SmemLayout<Tr::kBM, D>;
  using LK = SmemLayout<Tr::kBN, D>;
  using LP = SmemLayout<Tr::kBM, Tr::kBN>;
  constexpr int kBM = Tr::kBM, kBN = Tr::kBN, kStages = Tr::kStages;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);  // (kBN, D)
  T* sV = sK + LK::kSize;                  // (kBN, D)
  T* sP = sV + LK::kSize;                  // (kBM, kBN)
  T* sdS = sP + LP::kSize;                 // (kBM, kBN)
  T* sQ0 = sdS + LP::kSize;                // kStages x [Q (kBM, D), dO (kBM, D)]

  const BwdKeyBlock<kBM, kBN, D, Tr::kThreads, T> kb(p, blockIdx.z, blockIdx.y,
                                                     static_cast<int64_t>(blockIdx.x) * kBN);
  if (kb.empty()) return;
  const SeqSpan& sp = kb.sp;
  const int64_t b = kb.b, g = kb.g, n0 = kb.n0;
  const int keys = kb.keys, items = kb.items, dvalid = kb.dvalid;
  const int warp = threadIdx.x / 32;
  const int wr = warp / Tr::kWC, wc = warp % Tr::kWC;
  const int s_m0 = wr * 16 * Tr::kSMT, s_n0 = wc * 8 * Tr::kSNT;  // S / dP warp tile origin
  const int k_m0 = wr * 16 * Tr::kKMT, k_n0 = wc * 8 * Tr::kKNT;  // dK / dV warp tile origin

  kb.load_kv(sK, sV);
  auto next_item = [&](int t) { return kb.next(t); };
  auto load_item = [&](int t, int stage) { kb.load_q_do(t, sQ0 + stage * 2 * LQ::kSize); };

  float dk[Tr::kKMT][Tr::kKNT][4], dv[Tr::kKMT][Tr::kKNT][4];  // (kBN, D) over 8 warps
  zero(dk);
  zero(dv);
  int t = next_item(-1);
  if (t < items) load_item(t, 0);
  ptx::cp_async_commit();
  int stage = 0;
  while (t < items) {
    const int tn = next_item(t);
    ptx::cp_async_wait<0>();
    __syncthreads();  // item t landed; every warp is done with the other stage and sP / sdS
    if (kStages > 1 && tn < items) {
      load_item(tn, stage ^ 1);  // overlaps this item's compute
      ptx::cp_async_commit();
    }
    const T* sQ = sQ0 + stage * 2 * LQ::kSize;  // (kBM, D)
    const T* sdO = sQ + LQ::kSize;              // (kBM, D)
    const int64_t h = kb.head(t);
    const int64_t m0 = kb.m0(t);
    const int64_t rows = sp.sq - m0 < kBM ? sp.sq - m0 : kBM;
    ScoreCtx ctx;
    ctx.init(p, b, h, sp.sq, sp.sk);
    const float* delta_bh = delta + (b * p.heads_q + h) * p.seqlen_q;
    const Range32 first = row_range(p, m0, sp.sq, sp.sk);
    const Range32 last = row_range(p, m0 + rows - 1, sp.sq, sp.sk);

    float s[Tr::kSMT][Tr::kSNT][4], dp[Tr::kSMT][Tr::kSNT][4];  // (kBM, kBN) over 8 warps
    zero(s);
    zero(dp);
    warp_gemm_ss<Tr::kSMT, Tr::kSNT, D, false, false, LQ, LK, Tr::kKUnroll>(s, sQ, sK, s_m0, s_n0);
    warp_gemm_ss<Tr::kSMT, Tr::kSNT, D, false, false, LQ, LK, Tr::kKUnroll>(dp, sdO, sV, s_m0,
                                                                            s_n0);
    const bool check = !(last.lo <= n0 && first.hi >= n0 + kBN - 1);
    bwd_p_ds<kGeneral>(p, ctx, s, dp, static_cast<int>(m0) + s_m0, static_cast<int>(n0) + s_n0,
                       delta_bh, sp.q_start, check);
    store_c_smem<LP>(sP, s, s_m0, s_n0);
    store_c_smem<LP>(sdS, dp, s_m0, s_n0);
    __syncthreads();
    // dV (kBN, D) += P^T (kBN, kBM) dO (kBM, D);  dK += dS^T Q.
    warp_gemm_ss<Tr::kKMT, Tr::kKNT, kBM, true, true, LP, LQ, Tr::kKUnroll>(dv, sP, sdO, k_m0,
                                                                            k_n0);
    warp_gemm_ss<Tr::kKMT, Tr::kKNT, kBM, true, true, LP, LQ, Tr::kKUnroll>(dk, sdS, sQ, k_m0,
                                                                            k_n0);
    if (kStages == 1 && tn < items) {
      __syncthreads();  // single stage: reload only after every warp is done with it
      load_item(tn, 0);
      ptx::cp_async_commit();
    }
    if (kStages > 1) stage ^= 1;
    t = tn;
  }
  ptx::cp_async_wait<0>();  // K/V were never waited for when no query block was visited
  store_dk_dv<T>(p, b, g, sp, n0, dk, dv, k_m0, k_n0, keys, dvalid);
}

template <int D, typename T, bool kGeneral>
__global__ void __launch_bounds__(BwdQTraits<D>::kThreads)
    bwd_dq_kernel(const Params p, const float* delta) {
  using Tr = BwdQTraits<D>;
  using LQ = SmemLayout<Tr::kBM, D>;
  using LK = SmemLayout<Tr::kBN, D>;
  constexpr int kBM = Tr::kBM, kBN = Tr::kBN, kNT = kBN / 8, kDT = D / 8;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);  // (kBM, D)
  T* sdO = sQ + LQ::kSize;                 // (kBM, D)
  T* sK0 = sdO + LQ::kSize;                // 2 stages x [K (kBN, D), V (kBN, D)]

  const int64_t b = blockIdx.z, h = blockIdx.y;
  const int64_t m0 = static_cast<int64_t>(gridDim.x - 1 - blockIdx.x) * kBM;
  const SeqSpan sp = seq_span(p, b);
  if (m0 >= sp.sq) return;
  const int rows = static_cast<int>(sp.sq - m0 < kBM ? sp.sq - m0 : kBM);
  const int64_t g = h / p.group;
  const int warp = threadIdx.x / 32;
  const int dvalid = static_cast<int>(p.head_dim);

  const T* q_ptr =
      static_cast<const T*>(p.q) + b * p.q_st.b + (sp.q_start + m0) * p.q_st.s + h * p.q_st.h;
  const T* do_ptr = static_cast<const T*>(p.dout) + b * p.dout_st.b +
                    (sp.q_start + m0) * p.dout_st.s + h * p.dout_st.h;
  const T* k_ptr = static_cast<const T*>(p.k) + b * p.k_st.b + sp.k_start * p.k_st.s + g * p.k_st.h;
  const T* v_ptr = static_cast<const T*>(p.v) + b * p.v_st.b + sp.k_start * p.v_st.s + g * p.v_st.h;
  load_tile_async<LQ, Tr::kThreads>(sQ, q_ptr, p.q_st.s, rows, dvalid);
  load_tile_async<LQ, Tr::kThreads>(sdO, do_ptr, p.dout_st.s, rows, dvalid);

  ScoreCtx ctx;
  ctx.init(p, b, h, sp.sq, sp.sk);
  const float* delta_bh = delta + (b * p.heads_q + h) * p.seqlen_q;
  const Range32 first = row_range(p, m0, sp.sq, sp.sk);
  const Range32 last = row_range(p, m0 + rows - 1, sp.sq, sp.sk);
  const int n_begin = first.lo / kBN;
  const int n_end = last.hi >= first.lo ? last.hi / kBN + 1 : n_begin;
  auto load_kv = [&](int n, int stage) {
    const int64_t n0 = static_cast<int64_t>(n) * kBN;
    T* sk = sK0 + stage * 2 * LK::kSize;
    load_tile_async<LK, Tr::kThreads>(sk, k_ptr + n0 * p.k_st.s, p.k_st.s,
                                      static_cast<int>(sp.sk - n0), dvalid);
    load_tile_async<LK, Tr::kThreads>(sk + LK::kSize, v_ptr + n0 * p.v_st.s, p.v_st.s,
                                      static_cast<int>(sp.sk - n0), dvalid);
  };
  if (n_begin < n_end) load_kv(n_begin, 0);
  ptx::cp_async_commit();

  float dq[1][kDT][4];  // (16, D) of this warp
  zero(dq);
  for (int n = n_begin; n < n_end; ++n) {
    const int stage = (n - n_begin) & 1;
    const int64_t n0 = static_cast<int64_t>(n) * kBN;
    ptx::cp_async_wait<0>();
    __syncthreads();  // K_n / V_n landed; every warp is done with the other stage
    if (n + 1 < n_end) {
      load_kv(n + 1, stage ^ 1);  // overlaps this block's compute
      ptx::cp_async_commit();
    }
    const T* sK = sK0 + stage * 2 * LK::kSize;  // (kBN, D)
    const T* sV = sK + LK::kSize;               // (kBN, D)
    float s[1][kNT][4], dp[1][kNT][4];          // (16, kBN)
    zero(s);
    zero(dp);
    warp_gemm_ss<1, kNT, D, false, false, LQ, LK, Tr::kKUnroll>(s, sQ, sK, warp * 16, 0);
    warp_gemm_ss<1, kNT, D, false, false, LQ, LK, Tr::kKUnroll>(dp, sdO, sV, warp * 16, 0);
    const bool check = !(last.lo <= n0 && first.hi >= n0 + kBN - 1);
    bwd_p_ds<kGeneral>(p, ctx, s, dp, static_cast<int>(m0) + warp * 16, static_cast<int>(n0),
                       delta_bh, sp.q_start, check);
    warp_gemm_rs<1, kDT, kBN, true, LK>(dq, dp, sK, 0);
  }
  ptx::cp_async_wait<0>();
  T* dq_ptr = static_cast<T*>(p.dq) + b * p.dq_st.b + (sp.q_start + m0) * p.dq_st.s + h * p.dq_st.h;
  store_c_global(dq_ptr, p.dq_st.s, dq, warp * 16, 0, rows, dvalid, p.scale);
}

}  // namespace attnkit::flash
