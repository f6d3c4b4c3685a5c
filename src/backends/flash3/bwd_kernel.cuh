// flash3 backward kernels (sm_90a). Three launches per call (bwd_launch.cuh):
//   1. bwd_preprocess_kernel: delta = rowsum(dO o O), lse2 = lse * log2(e) (+inf for rows with
//      no visible key and for padding rows, so P = exp2(x - lse2) = 0 there, never NaN), and
//      zeroes the fp32 dQ workspace rows.
//   2. bwd_kernel: one CTA per (key block, kv head, batch), warp-specialised, wgmma throughout
//      (layout and roles in bwd_traits.hpp). dK/dV are complete per CTA (the CTA loops over the
//      q heads of its GQA group, so no atomics); dQ partial sums go to the workspace with
//      bulk TMA reduce-adds (or atomicAdd(float2)), hence not deterministic (the backend
//      declares deterministic = false).
//   3. bwd_dq_convert_kernel: dQ = scale * workspace, to the output dtype and strides (3v / 3w:
//      its vectorised forms; 3t, bwd_dq_convert_m80_kernel: the 80-row kernel's workspace order).
// Head dims 96 / 192 (session 38) run on the D = 128 / 256 kernels, plus (except with the TMA
// dK / dV epilogue) a 4th launch, bwd_narrow_kv_copy_kernel, that copies dK / dV out of scratch.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <climits>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "backends/flash3/bwd_args.hpp"
#include "backends/flash3/bwd_traits.hpp"
#include "backends/flash3/bwd_wgmma_ops.hpp"
#include "backends/flash3/dropout.cuh"
#include "backends/flash3/mask_elem.cuh"
#include "backends/flash3/reg_ops.cuh"
#include "backends/flash3/seq_bounds.hpp"
#include "core/params.hpp"
#include "cuda/pdl.hpp"
#include "cuda/ptx_sm80.hpp"
#include "cuda/ptx_sm90.hpp"
#include "cuda/sfu_math.cuh"

namespace attnkit::flash3::bwd {

template <bool BF16>
using Elem = std::conditional_t<BF16, __nv_bfloat16, __half>;

inline constexpr float kLog2e = 1.4426950408889634f;

/// One workspace row's statistics (one thread per row, both preprocess kernels): delta = the row's
/// dot(dO, O) (acc), lse2 = lse * log2(e), +inf for padding rows past the sequence's len rows and
/// for fully masked rows (lse = -inf), so that exp2(S * scale_log2 - lse2) is 0 there. q0: the
/// sequence's first row in lse (varlen; 0 otherwise).
__device__ __forceinline__ void store_row_stats(const Params& p, int64_t b, int64_t h, int i,
                                                int len, int64_t q0, int64_t row, float acc,
                                                float* lse2, float* delta) {
  delta[row] = acc;
  float l2 = INFINITY;
  if (i < len) {
    const float l = p.lse[b * p.lse_st.b + h * p.lse_st.h + (q0 + i) * p.lse_st.s];
    l2 = l == -INFINITY ? INFINITY : l * kLog2e;
  }
  lse2[row] = l2;
}

/// Varlen (kVarlen, session 25): every q head's sq_pad workspace rows hold the sequences one after
/// another, each from a multiple of kVarlenPadRows (the largest kBlockM), so that a query block
/// never reaches the next sequence's rows: sequence b's start is the multiple of 128 at or below
/// cu_q[b] + 128 b. start(b + 1) > cu_q[b + 1] + 128 b >= start(b) + len(b), hence it is at least
/// start(b) + len(b) rounded up to 128; the last sequence ends below total_q + 128 B.
inline constexpr int kVarlenPadRows = 128;
__host__ __device__ __forceinline__ int64_t varlen_ws_row0(int cu_q_b, int b) {
  return (static_cast<int64_t>(cu_q_b) + int64_t{kVarlenPadRows} * b) / kVarlenPadRows *
         kVarlenPadRows;
}

/// The workspace rows of (b, h) that the pre / post-processing kernels visit: `base` = row of query
/// i = 0, `len` = the queries, `q0` = the first one's row in q / out / dout / dq / lse, `pad` =
/// rows written (len rounded up to the kernel's blocks: dense sq_pad, varlen kVarlenPadRows).
struct WsRows {
  int64_t base, q0;
  int len, pad;
};
template <bool kVarlen>
__device__ __forceinline__ WsRows ws_rows(const Params& p, int64_t b, int64_t h, int sq_pad) {
  if constexpr (kVarlen) {
    const int q0 = p.cu_seqlens_q[b], len = p.cu_seqlens_q[b + 1] - q0;
    return {h * sq_pad + varlen_ws_row0(q0, static_cast<int>(b)), q0, len,
            (len + kVarlenPadRows - 1) / kVarlenPadRows * kVarlenPadRows};
  } else {
    return {(b * p.heads_q + h) * sq_pad, 0, static_cast<int>(p.seqlen_q), sq_pad};
  }
}

// ---------------------------------------------------------------------------------------------
// 1. Preprocess: one warp per (b, h, row) of the padded [B*Hq, sq_pad] workspace rows.
//    grid (sq_pad / 8, Hq, B), block 256 (varlen: the longest sequence's rows rounded up to
//    kVarlenPadRows; a block past its sequence's padded rows writes nothing). ws_d: the dQ
//    workspace's row width, the kernel's D (a head dim of 96 / 192 sums its own columns of
//    O o dO and zeroes the 128 / 256 of the workspace row).
// ---------------------------------------------------------------------------------------------
template <bool BF16, bool kVarlen = false>
__global__ void bwd_preprocess_kernel(const Params p, int sq_pad, float* lse2, float* delta,
                                      float* dq_acc, int ws_d) {
  using T = Elem<BF16>;
  const int64_t b = blockIdx.z, h = blockIdx.y;
  const int i = blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const WsRows w = ws_rows<kVarlen>(p, b, h, sq_pad);
  if (kVarlen && i >= w.pad) return;  // (warp-uniform: one warp per row)
  const int64_t row = w.base + i;
  const int d_len = static_cast<int>(p.head_dim);
  float acc = 0.f;
  if (i < w.len) {
    const int64_t qi = w.q0 + i;
    const T* o = static_cast<const T*>(p.out) + b * p.out_st.b + qi * p.out_st.s + h * p.out_st.h;
    const T* d =
        static_cast<const T*>(p.dout) + b * p.dout_st.b + qi * p.dout_st.s + h * p.dout_st.h;
    for (int c = lane; c < d_len; c += 32)
      acc += static_cast<float>(o[c * p.out_st.d]) * static_cast<float>(d[c * p.dout_st.d]);
#pragma unroll
    for (int s = 16; s > 0; s /= 2)
      acc += __shfl_xor_sync(0xffffffffu, acc, s);
  }
  float* dq_row = dq_acc + row * ws_d;
  for (int c = lane; c < ws_d; c += 32)
    dq_row[c] = 0.f;
  if (lane == 0) store_row_stats(p, b, h, i, w.len, w.q0, row, acc, lse2, delta);
}

// ---------------------------------------------------------------------------------------------
// 3. dQ conversion: dq[b, i, h, d] = scale * (element (i, d) of the tiled dQ workspace).
//    grid (ceil(Sq / 8), Hq, B), block 256: 8 rows per block, a warp per row, 2 columns a lane.
// ---------------------------------------------------------------------------------------------
/// Offset of element (row, col) inside one 64 x D dQ workspace tile (bwd_traits.hpp). v4 = false:
/// thread tid's accumulator pair dq[4 j + 2 r], dq[4 j + 2 r + 1] at ((2 j + r) * 128 + tid) * 2
/// (float2 runs); v4 = true (kDqVec4, session 4): its quad dq[4 j .. 4 j + 3] at (j * 128 + tid) *
/// 4 (float4 runs: half the RED / st.shared instructions, 512 contiguous bytes a warp).
template <int kN>
__host__ __device__ __forceinline__ int dq_tile_offset(int row, int col, bool v4 = false) {
  const int part = col / kN, c = col % kN;
  const int tid = 32 * (row / 16) + 4 * (row % 8) + (c % 8) / 2;
  const int j = c / 8, r = (row % 16) / 8;
  return part * 64 * kN + (v4 ? (j * 128 + tid) * 4 + 2 * r : ((2 * j + r) * 128 + tid) * 2) +
         c % 2;
}

/// Columns c < head_dim only: a head dim of 96 / 192 on the 128 / 256 kernel leaves the rest of
/// each workspace row (zeros) unread.
template <int D, int kDqN, bool BF16, bool kVarlen = false>
__global__ void bwd_dq_convert_kernel(const Params p, int sq_pad, const float* dq_acc, int v4) {
  using T = Elem<BF16>;
  const int64_t b = blockIdx.z, h = blockIdx.y;
  const int i = blockIdx.x * 8 + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  const WsRows w = ws_rows<kVarlen>(p, b, h, sq_pad);
  if (i >= w.len) return;
  const float* tile = dq_acc + (w.base + (i / 64) * 64) * D;
  T* dst = static_cast<T*>(p.dq) + b * p.dq_st.b + (w.q0 + i) * p.dq_st.s + h * p.dq_st.h;
  const int d_len = static_cast<int>(p.head_dim);  // (even: 64, 96, 128, 192 or 256)
#pragma unroll
  for (int c = 2 * lane; c < D; c += 64) {
    if (c >= d_len) break;
    const float2 v =
        *reinterpret_cast<const float2*>(tile + dq_tile_offset<kDqN>(i % 64, c, v4 != 0));
    dst[c * p.dq_st.d] = static_cast<T>(v.x * p.scale);
    dst[(c + 1) * p.dq_st.d] = static_cast<T>(v.y * p.scale);
  }
}

// ---------------------------------------------------------------------------------------------
// 3n (session 38). Head dims 96 / 192 on the D = 128 / 256 kernels, whose register epilogues
//    store dK / dV as D-column rows (the TMA one, kTmaKV, takes maps of the call's D, which clip
//    the columns): the launchers point those stores at contiguous [B, Sk, Hkv, D] scratch
//    (bwd_launch.cuh narrow_kv_params) and this kernel copies each row's first head_dim columns
//    to dk / dv. grid (ceil(B * Sk * Hkv * head_dim / kPerElem / 256), 2), block 256: a thread
//    per Unit (uint4 where dk / dv rows are 16-byte aligned, else uint32: the backend asks dk / dv
//    for d-stride 1 and even strides), blockIdx.y 0 = dK, 1 = dV. Session 38 call 2 measured the
//    first form (a warp per row, 4-byte pairs) at ~150 us a call at 16k tokens (D 96).
// ---------------------------------------------------------------------------------------------
template <int D, typename Unit>
__global__ void __launch_bounds__(256)
    bwd_narrow_kv_copy_kernel(const Params p, const Unit* __restrict__ scratch) {
  constexpr int kPerElem = sizeof(Unit) / 2;  // 16-bit elements a unit
  const int per_row = static_cast<int>(p.head_dim) / kPerElem;
  const int64_t rows = p.batch * p.seqlen_k * p.heads_kv;
  const int64_t idx = static_cast<int64_t>(blockIdx.x) * 256 + threadIdx.x;
  if (idx >= rows * per_row) return;
  const int64_t r = idx / per_row;
  const int c = static_cast<int>(idx - r * per_row);
  const bool is_v = blockIdx.y != 0;
  const int64_t h = r % p.heads_kv, s = (r / p.heads_kv) % p.seqlen_k,
                b = r / (p.heads_kv * p.seqlen_k);
  const Strides4& st = is_v ? p.dv_st : p.dk_st;
  Unit* dst = reinterpret_cast<Unit*>(static_cast<uint16_t*>(is_v ? p.dv : p.dk) + b * st.b +
                                      s * st.s + h * st.h);
  dst[c] = scratch[((is_v ? rows : 0) + r) * (D / kPerElem) + c];
}

// ---------------------------------------------------------------------------------------------
// 3w (session 31). dQ conversion from the float4 workspace layout (v4) with coalesced loads AND
// stores, for dq rows with d-stride 1 and 16-byte alignment (convert_vec_ok). Session 31 call 3
// measured 3 at 69-77 us per call against cuDNN's 56-58 (16k tokens, hidden 2048: 134 MB read,
// 67 MB written): 3 writes 2-byte elements, and 3v (above the main kernel's helpers) writes 16
// bytes per row per warp instruction (half a sector).
// ---------------------------------------------------------------------------------------------
/// One warp pass: rows 16 rb + (0..7) and + 8 of a 64-row tile, columns part * kN + 8 j .. + 7
/// for j = 4 jq + (0..3). In the v4 layout rows R (R % 16 < 8) and R + 8 of one 8-column group
/// are 4 consecutive float4 (.x .y row R, .z .w row R + 8); lane = 8 jj + rr takes rows
/// 16 rb + rr (+ 8) and j = 4 jq + jj: 64 contiguous bytes in (8 lanes: 512), 16 bytes out into
/// each of two rows (4 lanes: 64 contiguous bytes of a row). tile: the 64 x D fp32 tile; dq: its
/// row 0 in the output (16-bit, d-stride 1); rows: valid rows from row 0.
/// Loads are ld.global.nc (session 32): the 4 float4 loads of a lane are 64 B apart across the
/// lanes, so each 32-byte sector is asked for by two of them; through L1 the second finds the
/// first's sector, while ld.global.cg (LDG.STRONG.GPU, session 31) sent both to L2. Session 32
/// call 6 (H200, flash3_bwd_breakdown.py, S 1k non-causal, 16k tokens, hidden 2048): 55.5-56.4 ->
/// 48.7-50.5 us per call at D 64 / 128 / 256, i.e. 201 MB at 4.0-4.1 TB/s (the device copy
/// ceiling: 4.22); cuDNN's conversion 56-58. The workspace is read-only while this kernel runs.
/// kNc = false (ATTNKIT_FLASH3_BWD_EARLY_CONV's 3w, bwd_early_conv.cuh): plain ld.global instead,
/// for a conversion that runs while the main kernel still adds into other tiles.
template <bool BF16, int kN, bool kNc = true>
__device__ __forceinline__ void convert_dq_pass(const float* tile, uint16_t* dq, int64_t row_st,
                                                int rows, int cols, int part, int rb, int jq,
                                                float sc) {
  const int lane = threadIdx.x % 32, rr = lane % 8, jj = lane / 8;
  const int j = 4 * jq + jj;
  const int col = part * kN + 8 * j;
  if (col >= cols) return;  // (head dim 96 / 192 on the 128 / 256 kernel: cols = head_dim)
  const float4* src =
      reinterpret_cast<const float4*>(tile + part * 64 * kN) + j * 128 + 32 * rb + 4 * rr;
  float4 v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k)
    v[k] = kNc ? __ldg(src + k) : src[k];
  const int i = 16 * rb + rr;
  if (i < rows)
    *reinterpret_cast<uint4*>(dq + i * row_st + col) =
        make_uint4(pack2<BF16>(v[0].x * sc, v[0].y * sc), pack2<BF16>(v[1].x * sc, v[1].y * sc),
                   pack2<BF16>(v[2].x * sc, v[2].y * sc), pack2<BF16>(v[3].x * sc, v[3].y * sc));
  if (i + 8 < rows)
    *reinterpret_cast<uint4*>(dq + (i + 8) * row_st + col) =
        make_uint4(pack2<BF16>(v[0].z * sc, v[0].w * sc), pack2<BF16>(v[1].z * sc, v[1].w * sc),
                   pack2<BF16>(v[2].z * sc, v[2].w * sc), pack2<BF16>(v[3].z * sc, v[3].w * sc));
}
/// Passes per 64-row tile: 4 row blocks x (D / kN parts) x (kN / 32 groups of 4 j) = D / 8.
template <int D>
inline constexpr int kConvPasses = D / 8;
/// Pass q of a tile (kConvPasses<D> of them): row block q % 4, then groups of 4 j, part-major.
template <bool BF16, int D, int kN, bool kNc = true>
__device__ __forceinline__ void convert_dq_pass(const float* tile, uint16_t* dq, int64_t row_st,
                                                int rows, int cols, int q, float sc) {
  const int jq = q / 4;
  convert_dq_pass<BF16, kN, kNc>(tile, dq, row_st, rows, cols, jq / (kN / 32), q % 4,
                                 jq % (kN / 32), sc);
}
/// 3w: grid (ceil(Sq / 64) * D / 64, Hq, B), block 256: 8 warps, a pass each (D / 64 blocks per
/// tile).
/// (The body, also of ATTNKIT_FLASH3_BWD_EARLY_CONV's bwd_dq_convert_rows_ec_kernel with kNc =
/// false: plain loads, bwd_early_conv.cuh.)
template <int D, int kDqN, bool BF16, bool kVarlen, bool kNc = true>
__device__ __forceinline__ void convert_rows_block(const Params& p, int sq_pad,
                                                   const float* dq_acc) {
  static_assert(kConvPasses<D> == 8 * (D / 64), "eight passes a block");
  const int64_t b = blockIdx.z, h = blockIdx.y;
  const int t = blockIdx.x / (D / 64);
  const int q = (blockIdx.x % (D / 64)) * 8 + static_cast<int>(threadIdx.x / 32);
  const WsRows w = ws_rows<kVarlen>(p, b, h, sq_pad);
  const int rows = w.len - t * 64;
  if (rows <= 0) return;
  uint16_t* dq =
      static_cast<uint16_t*>(p.dq) + b * p.dq_st.b + (w.q0 + t * 64) * p.dq_st.s + h * p.dq_st.h;
  convert_dq_pass<BF16, D, kDqN, kNc>(dq_acc + (w.base + t * 64) * D, dq, p.dq_st.s, rows,
                                      static_cast<int>(p.head_dim), q, p.scale);
}
template <int D, int kDqN, bool BF16, bool kVarlen = false>
__global__ void __launch_bounds__(256)
    bwd_dq_convert_rows_kernel(const Params p, int sq_pad, const float* __restrict__ dq_acc) {
  convert_rows_block<D, kDqN, BF16, kVarlen>(p, sq_pad, dq_acc);
}

// ---------------------------------------------------------------------------------------------
// 3t (session 44). dQ conversion of the 80-row kernel's workspace (bwd_traits.hpp kDqTrans): tile
// t (80 query rows x D) is D / 64 parts of 64 D columns x 80 queries; part p's float4 (j, tid) at
// (j * 128 + tid) * 4 holds dQ^T rows (D columns) c = 64 p + 16 (tid / 32) + (tid % 32) / 4 (.x
// .y) and c + 8 (.z .w), columns (queries) q = 8 j + 2 (tid % 4) (.x .z) and q + 1 (.y .w).
// grid (ceil(Sq / 80), Hq, B), block 256: the tile read coalesced (10 float4 a thread at D 128),
// scaled, rounded and transposed through shared memory ([80][D + 8] 16-bit: rows 16-byte
// aligned), then written as rows: 16-byte stores where vec (bwd_launch.cuh rows16 of dq), 16-bit
// ones otherwise. Columns >= head_dim (96 on the D 128 kernel) are not written.
// ---------------------------------------------------------------------------------------------
/// The body of 3t for tile (blockIdx.x, h, b) (256 threads); kNc = false (the early conversion,
/// bwd_early_conv.cuh): plain ld.global instead of ld.global.nc.
template <int D, bool BF16, bool kNc = true>
__device__ __forceinline__ void convert_m80_tile(const Params& p, int sq_pad, const float* dq_acc,
                                                 int vec) {
  constexpr int kBM = 80, kLd = D + 8, kPartF4 = kBM / 8 * 128;
  __shared__ __align__(16) uint16_t tile[kBM * kLd];
  const int64_t b = blockIdx.z, h = blockIdx.y;
  const int t = blockIdx.x;
  const int rows = min(kBM, static_cast<int>(p.seqlen_q) - t * kBM);
  const float4* src = reinterpret_cast<const float4*>(
      dq_acc + ((b * p.heads_q + h) * sq_pad + static_cast<int64_t>(t) * kBM) * D);
  const float sc = p.scale;
  auto bits = [](float x) { return static_cast<uint16_t>(pack2<BF16>(x, 0.f) & 0xffffu); };
  for (int f = threadIdx.x; f < kBM * D / 4; f += 256) {
    const int part = f / kPartF4, g = f % kPartF4, j = g / 128, tid = g % 128;
    const float4 v = kNc ? __ldg(src + f) : src[f];
    const int c = 64 * part + 16 * (tid / 32) + (tid % 32) / 4, q = 8 * j + 2 * (tid % 4);
    tile[q * kLd + c] = bits(v.x * sc);
    tile[(q + 1) * kLd + c] = bits(v.y * sc);
    tile[q * kLd + c + 8] = bits(v.z * sc);
    tile[(q + 1) * kLd + c + 8] = bits(v.w * sc);
  }
  __syncthreads();
  uint16_t* dq = static_cast<uint16_t*>(p.dq) + b * p.dq_st.b +
                 static_cast<int64_t>(t) * kBM * p.dq_st.s + h * p.dq_st.h;
  const int cols = static_cast<int>(p.head_dim);
  if (vec) {
    for (int u = threadIdx.x; u < rows * (D / 8); u += 256) {
      const int i = u / (D / 8), c = 8 * (u % (D / 8));
      if (c < cols)
        *reinterpret_cast<uint4*>(dq + i * p.dq_st.s + c) =
            *reinterpret_cast<const uint4*>(tile + i * kLd + c);
    }
  } else {
    for (int u = threadIdx.x; u < rows * cols; u += 256) {
      const int i = u / cols, c = u % cols;
      dq[i * p.dq_st.s + c * p.dq_st.d] = tile[i * kLd + c];
    }
  }
}
template <int D, bool BF16>
__global__ void __launch_bounds__(256)
    bwd_dq_convert_m80_kernel(const Params p, int sq_pad, const float* __restrict__ dq_acc,
                              int vec) {
  convert_m80_tile<D, BF16>(p, sq_pad, dq_acc, vec);
}

// ---------------------------------------------------------------------------------------------
// 2. Main kernel helpers
// ---------------------------------------------------------------------------------------------

__device__ __forceinline__ float exp2_approx(float x) {
  return attnkit::cuda::ex2_approx(x);
}

/// Element e (0: low half, 1: high) of a packed 16-bit pair (pack2's inverse), as fp32.
template <bool BF16>
__device__ __forceinline__ float unpack_half(uint32_t x, int e) {
  if constexpr (BF16) {
    return __uint_as_float(e == 0 ? x << 16 : x & 0xffff0000u);
  } else {
    return __half2float(__ushort_as_half(static_cast<unsigned short>(e == 0 ? x : x >> 16)));
  }
}

// ---------------------------------------------------------------------------------------------
// 1v / 3v. Vectorised pre- and post-processing (session 6, helper f3bwd8; variants "+vpp" /
// "+vcv", BwdTuning::prep_vec / conv_vec; 1v is the default since session 6, 3v is off: slower,
// bwd_traits.hpp kConvVecDefault). Same work as 1 / 3 with 16-byte accesses, for calls whose
// out / dout / dq have d-stride 1 and 16-byte aligned rows (prep_vec_ok in bwd_launch.cuh; the
// others keep 1 / 3). Why (SASS of 1 / 3, CUDA 13.0, D 128): 1 loads O and dO as LDG.E.U16 (64
// bytes a warp instruction) in a runtime-bound loop whose D = 128 trip count (4 per lane) runs the
// one-element remainder loop, i.e. 4 dependent round trips of 2 x 64 B per warp; 3 issues its
// second LDG.E.64 after the first pair of STG.E.U16 (dst may alias the workspace), 2 round trips
// and 2-byte stores. The bytes are fixed by the token count, not S (16k tokens, hidden 2048:
// 1 reads 134 MB and writes 134 MB of zeros, 3 reads 134 MB and writes 67 MB), so at S = 1k
// they weigh most: floor 90 + 67 us of a 0.9 ms call at 3 TB/s.
// ---------------------------------------------------------------------------------------------
/// 1v. kTpr = D / 8 threads per row, each 8 elements (16 B) of O and dO and D / 2 bytes of the
/// zeroed dQ workspace row (float4 stores, a warp's stores contiguous over 32 / kTpr rows).
/// grid (sq_pad / (256 / kTpr), Hq, B), block 256.
/// (The body, also of ATTNKIT_FLASH3_BWD_EARLY_CONV's bwd_preprocess_vec_ec_kernel. Params by
/// value: by reference, ptxas scheduled the inlined body differently, nvcc 13.0.)
template <int D, bool BF16, bool kVarlen>
__device__ __forceinline__ void preprocess_vec_rows(const Params p, int sq_pad,
                                                    float* __restrict__ lse2,
                                                    float* __restrict__ delta,
                                                    float* __restrict__ dq_acc) {
  constexpr int kTpr = D / 8, kRows = 256 / kTpr;
  static_assert(32 % kTpr == 0, "a row's threads inside one warp");
  static_assert(kVarlenPadRows % kRows == 0, "varlen: a block's rows inside one padded run");
  const int64_t b = blockIdx.z, h = blockIdx.y;
  const int i = blockIdx.x * kRows + threadIdx.x / kTpr;
  const int t = threadIdx.x % kTpr;
  const WsRows w = ws_rows<kVarlen>(p, b, h, sq_pad);
  if (kVarlen && i >= w.pad) return;  // (block-uniform: see the static_assert)
  const int64_t row = w.base + i;
  float acc = 0.f;
  // (A head dim of 96 on the 128 kernel: threads t >= 12 have no columns of O / dO.)
  if (i < w.len && t * 8 < p.head_dim) {
    const int64_t qi = w.q0 + i;
    const uint4 o =
        __ldg(reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.out) + b * p.out_st.b +
                                             qi * p.out_st.s + h * p.out_st.h) +
              t);
    const uint4 d =
        __ldg(reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.dout) +
                                             b * p.dout_st.b + qi * p.dout_st.s + h * p.dout_st.h) +
              t);
    const uint32_t ow[4] = {o.x, o.y, o.z, o.w}, dw[4] = {d.x, d.y, d.z, d.w};
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        acc = fmaf(unpack_half<BF16>(ow[k], e), unpack_half<BF16>(dw[k], e), acc);
  }
#pragma unroll
  for (int s = kTpr / 2; s > 0; s /= 2)
    acc += __shfl_xor_sync(0xffffffffu, acc, s);
  float4* dq_row = reinterpret_cast<float4*>(dq_acc + row * D);
#pragma unroll
  for (int k = 0; k < D / 4 / kTpr; ++k)
    dq_row[t + k * kTpr] = make_float4(0.f, 0.f, 0.f, 0.f);
  if (t == 0) store_row_stats(p, b, h, i, w.len, w.q0, row, acc, lse2, delta);
}
template <int D, bool BF16, bool kVarlen = false>
__global__ void __launch_bounds__(256)
    bwd_preprocess_vec_kernel(const Params p, int sq_pad, float* __restrict__ lse2,
                              float* __restrict__ delta, float* __restrict__ dq_acc) {
  preprocess_vec_rows<D, BF16, kVarlen>(p, sq_pad, lse2, delta, dq_acc);
}

/// 3v (float4 workspace layout, kDqVec4, only). Thread = 4 consecutive float4 of a part =
/// threads tid = 4 t4 .. 4 t4 + 3 of one j: rows R = 16 (t4 / 8) + t4 % 8 and R + 8, columns
/// part * kN + 8 j .. + 7 (dq_tile_offset): 64 contiguous bytes in, two 16-byte rows out.
/// grid (ceil(Sq / 64) * D / 64, Hq, B), block 256 (a 64 x D tile = 4 D threads).
template <int D, int kDqN, bool BF16, bool kVarlen = false>
__global__ void __launch_bounds__(256)
    bwd_dq_convert_vec_kernel(const Params p, int sq_pad, const float* __restrict__ dq_acc) {
  constexpr int kBlocksPerTile = D / 64;
  const int64_t b = blockIdx.z, h = blockIdx.y;
  const int tile = blockIdx.x / kBlocksPerTile;
  const int g = (blockIdx.x % kBlocksPerTile) * 256 + threadIdx.x;  // [0, 4 D)
  const int part = g / (4 * kDqN), gg = g % (4 * kDqN);
  const int j = gg / 32, t4 = gg % 32;
  const int r0 = 16 * (t4 / 8) + t4 % 8;
  const int i0 = tile * 64 + r0;
  const WsRows w = ws_rows<kVarlen>(p, b, h, sq_pad);
  if (i0 >= w.len) return;  // rows i0 + 8 >= Sq too
  const float4* src =
      reinterpret_cast<const float4*>(dq_acc + (w.base + tile * 64) * D + part * 64 * kDqN) +
      j * 128 + 4 * t4;
  float4 v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k)
    v[k] = src[k];
  const float sc = p.scale;
  const int col = part * kDqN + 8 * j;
  uint16_t* dst =
      static_cast<uint16_t*>(p.dq) + b * p.dq_st.b + w.q0 * p.dq_st.s + h * p.dq_st.h + col;
  *reinterpret_cast<uint4*>(dst + i0 * p.dq_st.s) =
      make_uint4(pack2<BF16>(v[0].x * sc, v[0].y * sc), pack2<BF16>(v[1].x * sc, v[1].y * sc),
                 pack2<BF16>(v[2].x * sc, v[2].y * sc), pack2<BF16>(v[3].x * sc, v[3].y * sc));
  if (i0 + 8 < w.len)
    *reinterpret_cast<uint4*>(dst + (i0 + 8) * p.dq_st.s) =
        make_uint4(pack2<BF16>(v[0].z * sc, v[0].w * sc), pack2<BF16>(v[1].z * sc, v[1].w * sc),
                   pack2<BF16>(v[2].z * sc, v[2].w * sc), pack2<BF16>(v[3].z * sc, v[3].w * sc));
}

/// The query blocks [begin, begin + count) whose rows can see key block [n0, n0 + kBN) (kBM-row
/// blocks): causal, row i sees key n0 iff i >= n0 - causal_offset, so blocks before `begin` see
/// nothing; kWindow (the score-mod kernels), with the window's left edge (key j hidden from row i
/// when j < i + lo_offset) no row past n0 + kBN - 1 - lo_offset sees a key of the block.
struct MRange {
  int begin, count;
};
template <bool kWindow, int kBM, int kBN>
__device__ __forceinline__ MRange visible_m_blocks(const BwdArgs& a, int n0) {
  int m_begin = 0;
  if (a.causal) {
    const int first_row = n0 - a.causal_offset;
    m_begin = first_row <= 0 ? 0 : first_row / kBM;
  }
  int m_end = a.num_m_blocks;
  if constexpr (kWindow) {
    if (a.window_lo) {
      const int last_row = n0 + kBN - 1 - a.lo_offset;
      const int m_last = last_row < 0 ? 0 : last_row / kBM + 1;
      m_end = m_last < m_end ? m_last : m_end;
    }
  }
  return {m_begin, m_end > m_begin ? m_end - m_begin : 0};
}

/// The backward kernels' mbarrier ring, by thread 0 (the caller __syncthreads() after): full_kv
/// (K / V landed: one producer arrival), full[s] (stage s's Q / dO landed: one), empty[s] (stage s
/// consumed: one arrival per consumer warp).
template <int kStages>
__device__ __forceinline__ void init_bwd_ring(uint64_t* full_kv, uint64_t* full, uint64_t* empty,
                                              uint32_t consumer_warps) {
  namespace ptx = attnkit::cuda::sm90;
  if (threadIdx.x == 0) {
    ptx::mbar_init(full_kv, 1);
    for (int s = 0; s < kStages; ++s) {
      ptx::mbar_init(&full[s], 1);
      ptx::mbar_init(&empty[s], consumer_warps);
    }
    ptx::fence_mbar_init();
  }
}

/// The 128B-swizzle descriptor of shared address addr0 + off (stride byte offset 1024, leading
/// byte offset lbo) from d0 = bwd_desc0(addr0, lbo): kUni (kUniDesc; the D 256 kernels:
/// kUniDesc256) adds off to d0's low word (d0's low word came through REDUX: uniform registers),
/// the old form rebuilds it (bwd_traits.hpp).
template <bool kUni = kUniDesc>
__device__ __forceinline__ uint64_t bwd_desc0(uint32_t addr0, uint32_t lbo) {
  const uint64_t d = attnkit::cuda::sm90::Sw128Desc::make(addr0, lbo, 1024);
  if constexpr (kUni)
    return uniform_lo(d);
  else
    return d;
}
template <bool kUni = kUniDesc>
__device__ __forceinline__ uint64_t bwd_desc_at(uint64_t d0, uint32_t addr0, uint32_t off,
                                                uint32_t lbo) {
  if constexpr (kUni)
    return desc_add(d0, off);
  else
    return attnkit::cuda::sm90::Sw128Desc::make(addr0 + off, lbo, 1024);
}

/// The D 256 backward's dQ part w (both layouts, bwd_kernel_d256.cuh / bwd_d256_rs.cuh): issues
/// dq [64 queries x 128 columns] = dS K[:, 128 w ..] as kBN / 16 SS wgmmas (no fence, no commit).
/// A = the dS^T tile [kBN keys][64 queries] at ds_u (MN-major, 128B swizzle, tile_bytes), B = K's
/// column chunks 2 w, 2 w + 1 at k_u (MN-major, chunk stride chunk_bytes); row_bytes per key row.
template <typename WD, int kBN>
__device__ __forceinline__ void issue_dq_d256(float (&dq)[64], uint32_t ds_u, uint32_t k_u, int w,
                                              int row_bytes, int tile_bytes, int chunk_bytes) {
  const uint32_t kc_u = k_u + 2 * w * chunk_bytes;
  const uint64_t da0 = bwd_desc0<kUniDesc256>(ds_u, tile_bytes);
  const uint64_t db0 = bwd_desc0<kUniDesc256>(kc_u, chunk_bytes);
#pragma unroll
  for (int kk = 0; kk < kBN / 16; ++kk) {
    const uint32_t roff = kk * 16 * row_bytes;
    const uint64_t da = bwd_desc_at<kUniDesc256>(da0, ds_u, roff, tile_bytes);
    const uint64_t db = bwd_desc_at<kUniDesc256>(db0, kc_u, roff, chunk_bytes);
    if (kk == 0)  // (write-only: the previous item's dQ is dead to the compiler)
      WD::template ss_first<1, 1>(dq, da, db);
    else
      WD::template ss<1, 1>(dq, da, db, 1);
  }
}

/// Work item it of a CTA -> (q head, query block): q heads of the group outermost, then the
/// query blocks m_begin .. num_m_blocks-1 (those that can see the CTA's keys).
struct Item {
  int h, m0;
};
__device__ __forceinline__ Item item_of(const BwdArgs& a, int g, int it, int m_begin, int m_count,
                                        int block_m) {
  Item x;
  x.h = g * a.group + it / m_count;
  x.m0 = (m_begin + it % m_count) * block_m;
  return x;
}

/// kIdiet (session 7, helper f3bwd11, variant "+idiet"): item_of's walk carried from one item to
/// the next instead of decoded per item. item_of divides by the CTA's m_count (a run-time value,
/// per CTA under causal masking: no host-precomputed divisor fits), which the default SASS does at
/// the head of every consumer item, between the previous item's last wgmma wait (dK) and the next
/// S^T issue (~50 of the ~90 instructions there, most of them one dependent chain through I2F /
/// MUFU.RCP / F2I / R2UR / UIMAD.WIDE), again for the kStat 2 / 3 refill of item it + 1, and in
/// the producer. The cursor: query block m0 steps by BM; past the last block it restarts at the
/// first visible one (m_lo) of the next q head, and past the group's last head (only reached with
/// item_rot's cyclic order) at the first item. row = the item's workspace row (b * Hq + h) * sq_pad
/// + m0, carried too (the 64-bit multiply-add per item, and the refill's second one, go).
struct ItemCursor {
  int h, m0;
  int64_t row;
};
template <int kBM>
struct ItemWalk {
  int m_lo = 0, m_end = 0;  // first visible query block * kBM, num_m_blocks * kBM
  int h_lo = 0, h_end = 0;  // the group's q heads
  int64_t head_step = 0;    // row jump from past the last block to the next head's first
  int64_t row_lo = 0;       // the group's first item's row
  __device__ __forceinline__ void init(const BwdArgs& a, int g, int b, int m_begin) {
    m_lo = m_begin * kBM;
    m_end = a.num_m_blocks * kBM;
    h_lo = g * a.group;
    h_end = h_lo + a.group;
    head_step = static_cast<int64_t>(a.sq_pad) + m_lo - m_end;
    row_lo = (static_cast<int64_t>(b) * a.heads_q + h_lo) * a.sq_pad + m_lo;
  }
  __device__ __forceinline__ ItemCursor at(const BwdArgs& a, int b, Item x) const {
    return {x.h, x.m0, (static_cast<int64_t>(b) * a.heads_q + x.h) * a.sq_pad + x.m0};
  }
  __device__ __forceinline__ ItemCursor next(ItemCursor c) const {
    c.m0 += kBM;
    c.row += kBM;
    if (c.m0 >= m_end) {
      c.m0 = m_lo;
      c.row += head_step;
      if (++c.h == h_end) {
        c.h = h_lo;
        c.row = row_lo;
      }
    }
    return c;
  }
};

/// kMod kinds (session 25: one kernel per kind, so that neither the mask nor the transform
/// branches per element; session 24 had only the general kernel, which measured 260 TFLOP/s on
/// a plain varlen backward where the tuned D 128 kernel ran 409-437): kModGeneral (softcap and
/// ALiBi each where set), kModWindow (causal / window masks only), kModSoftcap (softcap, no
/// ALiBi; any window). bwd_launch.cuh run_backward picks the kind.
inline constexpr int kModGeneral = 1;
inline constexpr int kModWindow = 2;
inline constexpr int kModSoftcap = 3;
// Session 26: a bool / additive mask (BwdArgs::mask), with causal, windows and ALiBi where set;
// no softcap (declined). Mask elements are loaded per item, 16 in flight from indices clamped into
// the mask (the forward's apply_mask_kind), the element kind switched once per item.
inline constexpr int kModMask = 4;
// Session 39: kModMask with softcap (kModMask itself stays softcap-free, its kernels unchanged).
// dS^T's factor 1 - t^2 cannot come from P^T here, as kModSoftcap's does: an additive mask's value
// would have to be undone. p_from_s keeps it, rounded to f16 (f in [0, 1]: relative error
// <= 2^-11, below dS^T's own 16-bit rounding right after), in shared memory past the barriers:
// each thread's 16-bit pairs at words (pair i, thread) of its WG's block, written and read by the
// same thread (no barrier), conflict-free (bwd_cap_f_bytes / bwd_cap_f_offset; the launcher adds
// the bytes, 16 KB at BM 64: 195 + 16 KB at D 128). In registers instead (kBM / 4 = 16 live across
// the dP^T wait) ptxas spilled 344 bytes at D 128, and reloading the mask's values in the dS^T
// loop instead spilled 248 (CUDA 13.0, -Xptxas -v; kModMask itself spills 12).
inline constexpr int kModMaskSoftcap = 5;
// Session 39: kModGeneral (softcap and ALiBi where set, any window; no mask; dense or varlen) with
// dropout (BwdArgs::drop_*; 64-row blocks). The keep bits of the item's 32 P^T elements are drawn
// while dP^T runs (dropout.cuh bwd_dropout_keep_bits), then, with z = keep / (1 - p): dS^T = P^T (z
// dP^T - delta) (softcap's 1 - t^2 as in kModGeneral, from the undropped P^T) and dV takes (z
// P^T)^T dO. delta = rowsum(dO o O) is unchanged: O is the dropped forward's output.
inline constexpr int kModDropout = 6;
// Session 39: kModMask (no softcap) with dropout, as kModDropout adds it to kModGeneral.
inline constexpr int kModMaskDropout = 7;
/// The kMod kinds that apply dropout (kModDropout, kModMaskDropout).
__host__ __device__ constexpr bool mod_has_dropout(int mod) {
  return mod == kModDropout || mod == kModMaskDropout;
}
/// The kMod kinds that apply softcap / ALiBi per element where set (kModGeneral, kModDropout).
__host__ __device__ constexpr bool mod_is_general(int mod) {
  return mod == kModGeneral || mod == kModDropout;
}
/// The kMod kinds that load a mask (kModMask, kModMaskSoftcap, kModMaskDropout).
__host__ __device__ constexpr bool mod_has_mask(int mod) {
  return mod == kModMask || mod == kModMaskSoftcap || mod == kModMaskDropout;
}
/// kModMaskSoftcap's shared memory (see there): one word per (consumer WG, element pair, thread),
/// 16-byte aligned after Tr's barriers; 0 bytes for the other kinds.
template <class Tr>
__host__ __device__ constexpr int bwd_cap_f_bytes(int mod) {
  return mod == kModMaskSoftcap ? Tr::kConsumerWGs * (Tr::kBlockM / 4) * 128 * 4 : 0;
}
template <class Tr>
__host__ __device__ constexpr int bwd_cap_f_offset() {
  return (Tr::kOffBars + Tr::kNumBars * 8 + 15) / 16 * 16;
}

/// kVarlen: the arguments of sequence b's CTAs (see bwd_kernel's kVarlen): its lengths and bounds
/// (the forward's rule, seq_bounds.hpp), its workspace rows (varlen_ws_row0) and dK / dV rows.
template <int D, int kBM>
__device__ __forceinline__ BwdArgs varlen_bwd_args(const BwdArgs& a, int b, int q0, int k0) {
  BwdArgs v = a;
  v.seqlen_q = a.cu_q[b + 1] - q0;
  v.seqlen_k = a.cu_k[b + 1] - k0;
  v.num_m_blocks = (v.seqlen_q + kBM - 1) / kBM;
  set_bounds(v, seq_bounds(v.seqlen_q, v.seqlen_k, a.causal_kind, a.win_left, a.win_right));
  const int64_t r0 = varlen_ws_row0(q0, b);
  v.lse2 = a.lse2 + r0;
  v.delta = a.delta + r0;
  v.dq_acc = a.dq_acc + r0 * D;
  v.dk = static_cast<uint16_t*>(a.dk) + static_cast<int64_t>(k0) * a.dk_ss;
  v.dv = static_cast<uint16_t*>(a.dv) + static_cast<int64_t>(k0) * a.dv_ss;
  v.dk_sb = v.dv_sb = 0;
  return v;
}

/// kDqFirst (session 3): issue order of the three GEMMs after dS^T, as FlashAttention-3 does:
///   dV (RS) | barrier | dQ (SS) | wait dV | dK (RS) | wait dQ | dQ -> workspace | wait dK
/// so the tensor pipe always has a GEMM queued while a drain is waited for, and the dQ hand-off
/// (smem staging or atomics) overlaps the dK GEMM. false: dV, dK | barrier | dQ | wait all |
/// dQ hand-off (runs 1-2). Decoupled D = 128 cannot (64 dQ registers with dV / dK in flight,
/// see below).
///
/// kStat: where a thread's lse2 / delta values come from (session 3; ncu run 1 put "long
/// scoreboard" — waiting for global loads — first among the stall reasons at D = 64):
///   0 (direct): BM = 64 __ldg of the 2 x 16 values at the iteration's start; BM = 128 each
///     thread loads one row's pair at the start, stages it through the WG's smem rows.
///   1 (shuffle, BM = 128): rows lane + 32 t held 4 per lane, fetched by __shfl_sync where used
///     (128 shuffles a thread per iteration; no spills where 0 spilled 28 B in one build).
///   2 (prefetch): BM = 128's smem staging for both BM, but filled by cp.async for item it + 1
///     during item it, so no L2 latency is waited for in the loop. (Register prefetch instead:
///     ptxas spilled 96-116 bytes at BM = 128.)
///   3 (prefetch, late refill; session 5 round 2, variant "+pfl", coupled 64-row dQ-first only;
///     since session 44 also the 80-row kernel's):
///     kStat 2 with the refill's cp.async issued after the dS^T fence.proxy.async (and the dV
///     issue) instead of before the dS^T stores. ptxas lowers every fence.proxy.async to
///     MEMBAR.ALL.CTA + FENCE.VIEW.ASYNC.S (checked on a 10-line kernel, CUDA 13.0), and in the
///     D = 128 default that MEMBAR comes ~20 instructions after the refill's LDGSTS. If the
///     MEMBAR waits for the LDGSTS (L2 latency, every item, both WGs), kStat 2 moved the lse2 LDG
///     stall (7.4 % of the samples, session 4) to the fence instead of removing it (it gained
///     only +0.7 to +4.3 %); if not, 3 = 2. Not resolvable statically: the A/B decides.
///
/// kKVRegs (D = 64, BM = 64; written after session 3 run 2, NOT yet run on a GPU): this WG's K and
/// V rows held as wgmma A fragments in registers (2 x 16) for the whole CTA, so S^T and dP^T are RS
/// GEMMs: their smem operand traffic drops from 4 KB to 2 KB per m64n64k16 (A no longer read from
/// smem), 16 of the ~68 KB a WG reads per item. FA3 has the same option for V (Mma_dP_is_RS /
/// V_in_regs).
///
/// kDvEarly (session 5 round 2, variant "+dve", needs kDqFirst; off by default): dV = P^T dO is
/// issued as soon as P^T is packed, before the dP^T wait and the dS^T = P^T (dP^T - delta) stretch,
/// so the tensor pipe runs dV under that stretch (cuDNN 9.19's order from its SASS executed counts,
/// session 4: S, wait, dP | P | dV | dS^T | dK | barrier | dQ). Static SASS of the D = 128 default
/// (coupled + atomic + dqf + pf, CUDA 13.0): 257 instructions per warp between the dP^T wait
/// (WARPGROUP.DEPBAR gsb0, 0x0) and the first dV HGMMA, 32 FADD + 32 FMUL + 32 F2FP + 16 LDS +
/// 16 STS + the lse2 / delta prefetch + MEMBAR / FENCE.VIEW.ASYNC, with no wgmma in flight in
/// either (lockstep) WG: >= 514 issue cycles per SMSP against 512 clk of dV for both WGs. Same
/// arithmetic, same accumulation order (dK / dV bitwise equal to the default's) at BM = 64: P^T
/// packed 16-bit (16 registers at D = 128) is live next to the fp32 P^T during dS^T (ptxas -v:
/// 0 spills). BM = 128 (32 packed registers): with the fp32 P^T kept too, ptxas spilled 48 bytes
/// (stat 0, 2) and 68 + C7512 wgmma serialisation (stat 1), so there dS^T = P^T (dP^T - delta)
/// takes P^T from the 16-bit copy (the fp32 one dies at the pack): the rounding FA3 / cuDNN do
/// not add; dS^T is rounded to 16 bits right after anyway (tests: tolerance, not bitwise).
///
/// kTmaKV (session 9, helper f3bwd13, variant "+tmakv", off by default; the session 8 ncu source
/// view put 4.5 % of the D = 128 stall samples on the STG epilogue): dK / dV through shared memory
/// and TMA stores, as the forward's kVarTmaEpi. Each consumer warp stmatrix-es its 16 rows of
/// scale * dK into its WG's dQ staging tile (kOffDQ + w kDqPartBytes, [64 rows][64] chunks, 8 KB
/// apart) and its 16 rows of dV into its WG's own 64 rows of the V tile (the layout V was loaded
/// in), then lane 0 issues the TMA stores (BwdArgs::tma_dk / tma_dv, box 64 x 16; rows >= Sk
/// clipped by the maps' extent) and waits for them to have read shared memory before the CTA
/// exits. Why those regions are free without a CTA-wide barrier: both are private to the WG —
/// V rows [64 w, 64 w + 64) are read only by this WG's dP^T GEMMs (or, kKVRegs, its fragment
/// loads), written only by the producer's one TMA load (waited for: full_kv) — the dQ stage only
/// by this WG's dQ hand-off — and the loop ends with wgmma_wait<0> in every structure, so no
/// wgmma of this WG still reads V; with the bulk dQ path thread 0 of the WG waits for its last
/// reduce (bulk_wait<0> after the loop) and a WG barrier (2 + w) orders that before every warp's
/// stmatrix into the stage. Ordering: stmatrix (generic proxy) -> fence.proxy.async.shared::cta
/// (every lane) -> __syncwarp -> lane 0's cp.async.bulk.tensor (async proxy); commit_group; then
/// cp.async.bulk.wait_group.read 0 before exit (the shared source must outlive the reads; the
/// global writes complete by the kernel boundary, as CUTLASS's / FA3's epilogues rely on). Same
/// values (stmatrix_acc_rows: the STG path's products and pack2), same rows: dK / dV bitwise equal.
/// bwd_launch.cuh runs it only where dK and dV are TMA store targets (16-byte aligned, strides
/// multiples of 8 elements), the STG kernel otherwise.
/// kMod (session 24; session 25: one of the kinds above, 0 = none): softcap, ALiBi and the
/// sliding window (BwdArgs' session-24 fields). The
/// window's right edge is the causal bound; its left edge ends the CTA's query blocks at the last
/// row that sees one of its keys. P^T = exp2((t + alibi) scale_log2 - lse2) with t = tanh(scale
/// s / softcap) (or s), masked by the window's both edges; dS^T = P^T (dP^T - delta) (1 - t^2)
/// with t recovered from P^T itself (t + alibi = (log2 P^T + lse2) / scale_log2, clamped to
/// [-1, 1]: P^T = 0 gives 1 - t^2 = 0, never NaN), so that no register holds t across the dP^T
/// wait. Built only with the coupled dQ-first structure and lse2 / delta in smem (64-row blocks
/// with kStat 2; D = 64 also 128-row blocks with kStat 0, as its tuned kernel), without the other
/// options (bwd_launch.cuh run_backward).
/// kVarlen (session 25; with the tuned structures, or kMod with score modifications): packed
/// sequences (BwdArgs' session-25 fields); the CTA's sequence b = blockIdx.z runs with its own
/// lengths, bounds, workspace rows and dK / dV rows (varlen_bwd_args) and loads rows q0 / k0 onward
/// of the packed maps (TMA coordinate b = 0). Rows past its sequence are loaded (the next
/// sequence's, or TMA's zero fill) and contribute nothing: their lse2 is +inf (P = 0, so dS = 0)
/// and keys past it are masked as keys past Sk.

template <int D, bool BF16, bool kDecoupled, int BM, bool kDqFirst, int kStat = 0,
          bool kKVRegs = false, bool kDvEarly = false, bool kIdiet = false, bool kTmaKV = false,
          int kMod = 0, bool kVarlen = false, bool kDet = false, bool kOrd = false>
__global__ void __launch_bounds__(BwdTraits<D, kDecoupled, BM>::kThreads, 1)
    bwd_kernel(const __grid_constant__ BwdArgs maps) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Tr = BwdTraits<D, kDecoupled, BM>;
  // `a`: the launch's arguments, or (kVarlen) this CTA's sequence's (varlen_bwd_args); the tensor
  // maps are always read from the kernel parameter `maps`. q0 / k0: the sequence's first Q / K
  // rows in the maps; bt: the maps' / workspace's batch coordinate (varlen: 0, packed).
  [[maybe_unused]] BwdArgs va;
  int q0 = 0, k0 = 0;
  if constexpr (kVarlen) {
    const int sb = blockIdx.z;
    q0 = maps.cu_q[sb];
    k0 = maps.cu_k[sb];
    // Key blocks past this sequence's keys: nothing to write (the grid covers the longest).
    if (static_cast<int>(blockIdx.x) * Tr::kBlockN >= maps.cu_k[sb + 1] - k0) return;
    va = varlen_bwd_args<D, Tr::kBlockM>(maps, sb, q0, k0);
  }
  const BwdArgs& a = kVarlen ? va : maps;
  // The score-mod kernels keep kItemHoist's values per item: hoisted, their 4 / 5 / 7 kinds at
  // D 128 spilled 20-72 B a thread (4-8 B without; nvcc 13.0, session 43).
  constexpr bool kHoist = kItemHoist && kMod == 0;
  static_assert(!kVarlen || !kTmaKV, "varlen: dK / dV stores bounded per sequence (no TMA)");
  static_assert(!kDet || (!kDecoupled && kDqFirst && kMod == 0 && !kVarlen),
                "deterministic: the coupled dQ-first kernels without score mods or varlen");
  static_assert(!kDvEarly || kDqFirst, "dV-early: the dQ-first order (dK after dQ)");
  static_assert(!kKVRegs || (D == 64 && BM == 64), "K / V fragments in registers: D 64, BM 64");
  static_assert(!(kDqFirst && kDecoupled && D >= 128), "dQ-first needs the 32-register dQ");
  static_assert(kStat == 0 || kStat == 2 || (kStat == 1 && BM == 128) ||
                    (kStat == 3 && (BM == 64 || BM == 80) && !kDecoupled && kDqFirst),
                "lse2 / delta source");
  static_assert(!Tr::kDqTrans || (kDqFirst && (kStat == 2 || kStat == 3) && !kDvEarly && !kMod &&
                                  !kVarlen && !kDet),
                "80-row blocks: the plain coupled dQ-first kernel with staged lse2 / delta");
  static_assert(!kMod || (!kDecoupled && kDqFirst && !kKVRegs && !kDvEarly && !kIdiet && !kTmaKV &&
                          ((BM == 64 && kStat == 2) || (BM == 128 && kStat == 0 && D == 64))),
                "flash3 backward kMod: the coupled dQ-first kernel with staged lse2 / delta");
  constexpr bool kStatShfl = kStat == 1;
  constexpr bool kStatPf = kStat == 2 || kStat == 3;
  namespace ptx = attnkit::cuda::sm90;
  namespace sm80 = attnkit::ptx;  // cp.async (ptx_sm80.hpp)
  constexpr int kBM = Tr::kBlockM, kBN = Tr::kBlockN, kStages = Tr::kStages;
  extern __shared__ uint8_t smem_raw[];
  // Swizzle-128B atoms need 1024-byte alignment; the dynamic window only promises 16.
  // kSharedBase (session 4): the aligned base is smem_raw + a byte offset, so the compiler still
  // knows every pointer derived from it is shared memory and emits STS / LDS. The integer
  // round-trip (kSharedBase = false, sessions 1-3) made them generic ST.E / LD.E: the session-4
  // ncu source view showed the dS^T stores, the lse2 / delta staging and the dQ staging as ST.E /
  // LD.E.64 (33-36 M executed per launch at D 64, S 4k) with their consumers and the
  // fence.proxy.async after them stalled on the long scoreboard; cuDNN's kernel uses STS / LDS.
  uint8_t* smem;
  if constexpr (kSharedBase) {
    smem = smem_raw + ((1024u - (ptx::smem_u32(smem_raw) & 1023u)) & 1023u);
  } else {
    smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) &
                                      ~uintptr_t{1023});
  }
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem + Tr::kOffBars);
  uint64_t* full_kv = bars;              // K and V landed (TMA bytes)
  uint64_t* full = bars + 1;             // [kStages] Q and dO (TMA bytes)
  uint64_t* empty = bars + 1 + kStages;  // [kStages] 8 consumer warps done with the stage

  // kDet launches the key blocks of a (kv head, batch) in reverse (key block N - 1 first): each
  // waits only on the next higher key block's adds (the turn order below), launched before it.
  // (Unsigned, as blockIdx.x was before kDet: the other kernels' SASS stays identical.)
  // kOrd, the sectioned order (session 50; twins of the plain kernels that the launcher picks
  // only where the order sections, bwd_launch.cuh): maps.order_shift = sh > 0 launches the grid
  // (N << sh, Hkv >> sh, B), and the hardware's linear order then runs, per batch and section of
  // 2^sh kv heads, key block 0 of those heads, key block 1, ... (bwd_order.cuh has why). No
  // division: b stays blockIdx.z, which ptxas re-reads where addresses need it (session 49's
  // division decode held b in a register and cost D 128 7-9 %). Twins, not a runtime shift in
  // every kernel: the shift's decode, though free of divisions, cost D 128's kernels at sh = 0
  // 1.0 / 1.5 % at 16k non-causal / causal (session 50 call 1, main's A/B binary against the
  // branch's, processes ABBA). nkb_u: the true key-block count.
  static_assert(!kOrd || (kMod == 0 && !kVarlen && !kDet), "sectioned order: plain kernels only");
  const unsigned osh = kOrd ? static_cast<unsigned>(maps.order_shift) : 0u;
  const unsigned kblk = kDet ? gridDim.x - 1 - blockIdx.x : kOrd ? blockIdx.x >> osh : blockIdx.x;
  const int nblk = static_cast<int>(kblk);
  const int n0 = kblk * kBN,
            g = kOrd ? static_cast<int>((blockIdx.y << osh) | (blockIdx.x & ((1u << osh) - 1u)))
                     : static_cast<int>(blockIdx.y),
            b = blockIdx.z;
  const unsigned nkb_u = kOrd ? gridDim.x >> osh : gridDim.x;
  const int bt = kVarlen ? 0 : b;  // TMA / workspace batch coordinate (varlen: packed, 0)
  const MRange mr = visible_m_blocks<kMod != 0, kBM, kBN>(a, n0);
  const int m_begin = mr.begin, m_count = mr.count;
  const int items = a.group * m_count;
  // a.item_rot (session 4): CTA x walks its items starting at x * items / N (cyclically),
  // so the key blocks of one head work on different query blocks at any moment. Non-causal,
  // every CTA otherwise starts at query block 0 and they move in near lockstep: 32 (S = 4k) to 128
  // (16k) CTAs add into the same 16-32 KB dQ workspace tile at once (causal starts are already
  // staggered by m_begin: the merged run had D = 64 decoupled+atomic causal 326 TFLOP/s against
  // 270 non-causal at 16k despite the masking).
  const int rot =
      a.item_rot && items > 0
          ? static_cast<int>(static_cast<int64_t>(kblk) * items / static_cast<int>(nkb_u))
          : 0;
  auto item_at = [&](int it) {
    const int i2 = it + rot;
    return item_of(a, g, i2 >= items ? i2 - items : i2, m_begin, m_count, kBM);
  };
  // kIdiet: the walk's per-CTA constants; the first item decoded once (item_at(0): a division only
  // with item_rot), then ItemWalk::next per item.
  // (Built only with kIdiet: unused loads and compares left for DCE changed ptxas's register
  // assignment in two D = 64 kernels without it.)
  ItemWalk<kBM> walk;
  if constexpr (kIdiet) walk.init(a, g, bt, m_begin);

  init_bwd_ring<kStages>(full_kv, full, empty, Tr::kConsumerWGs * 4);
  __syncthreads();
  // ATTNKIT_FLASH3_BWD_EARLY_CONV (bwd_traits.hpp, bwd_early_conv.cuh): the dQ conversion, a
  // dependent launch that never waits for this grid's completion (it waits on the done counters,
  // below the item loop), may start once every CTA of this grid has run this, i.e. once the last
  // CTA is resident: it can never hold an SM that a CTA of this grid still needs. Every thread,
  // items == 0 too; a no-op in a launch without a programmatic dependent.
  constexpr bool kEarlyConv =
      bwd_early_conv_kernel(D, kMod, kVarlen, kDet, kIdiet, kTmaKV, kDecoupled, kDqFirst);
  if constexpr (kEarlyConv) attnkit::cuda::pdl_launch_dependents();

  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    ptx::setmaxnreg_dec<Tr::kProducerRegs>();
    if (items == 0) return;
    if (threadIdx.x == 0) {
      // TMA issue: K and V once, then Q and dO of every item through the ring.
      ptx::tma_prefetch_map(&maps.tma_q);
      ptx::tma_prefetch_map(&maps.tma_do);
      if constexpr (kTmaKV) {  // the consumers' epilogue stores (kTmaKV)
        ptx::tma_prefetch_map(&maps.tma_dk);
        ptx::tma_prefetch_map(&maps.tma_dv);
      }
      ptx::mbar_arrive_expect_tx(full_kv, 2 * Tr::kKBytes);
#pragma unroll
      for (int c = 0; c < Tr::kChunks; ++c) {
        ptx::tma_load_4d(smem + Tr::kOffK + c * Tr::kKChunkBytes, &maps.tma_k, full_kv, c * 64,
                         k0 + n0, g, bt);
        ptx::tma_load_4d(smem + Tr::kOffV + c * Tr::kKChunkBytes, &maps.tma_v, full_kv, c * 64,
                         k0 + n0, g, bt);
      }
      ItemCursor pc{};
      if constexpr (kIdiet) pc = walk.at(a, bt, item_at(0));
      for (int it = 0; it < items; ++it) {
        const int s = it % kStages;
        const uint32_t ph = (it / kStages) & 1;
        Item x;
        if constexpr (kIdiet) {
          x = Item{pc.h, pc.m0};
          pc = walk.next(pc);
        } else {
          x = item_at(it);
        }
        // wait_ns (variant +sl, session 5): ncu (H100, D 128 coupled, S 4k) counted ~490
        // try_wait + branch pairs per item on this wait (64 M of them, one every ~11 cycles on
        // the scheduler that also issues two consumer warps); the hint lets the thread sleep.
        if (a.wait_ns != 0)
          ptx::mbar_wait_hint(ptx::smem_u32(&empty[s]), ph ^ 1, a.wait_ns);
        else
          ptx::mbar_wait(&empty[s], ph ^ 1);
        ptx::mbar_arrive_expect_tx(&full[s], 2 * Tr::kQBytes);
#pragma unroll
        for (int c = 0; c < Tr::kChunks; ++c) {
          ptx::tma_load_4d(smem + Tr::kOffQ + s * Tr::kQBytes + c * Tr::kQChunkBytes, &maps.tma_q,
                           &full[s], c * 64, q0 + x.m0, x.h, bt);
          ptx::tma_load_4d(smem + Tr::kOffDO + s * Tr::kQBytes + c * Tr::kQChunkBytes, &maps.tma_do,
                           &full[s], c * 64, q0 + x.m0, x.h, bt);
        }
      }
    }
    return;
  }

  // ---- consumers ------------------------------------------------------------------------------
  ptx::setmaxnreg_inc<Tr::kConsumerRegs>();
  using WS = BwdWgmma<kBM, BF16>;  // S^T, dP^T: [64 keys x kBM queries]
  using WD = BwdWgmma<D, BF16>;
  using WQ = BwdWgmma<Tr::kDqTrans ? kBM : Tr::kDqN, BF16>;  // dQ, or (kDqTrans) dQ^T
  const int w = wg - 1;  // consumer index: keys [64 w, 64 w + 64) of the block
  const int tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
  const int key_base = n0 + 64 * w;
  const int key_r0 = key_base + 16 * warp + lane / 4;  // key of accumulator row r = 0 (r = 1: +8)
  const int qc = 2 * (lane % 4);                       // query column offset inside 8-col groups
  const uint32_t base = ptx::smem_u32(smem);
  const uint32_t k_w = base + Tr::kOffK + 64 * w * Tr::kRowBytes;  // this WG's 64 key rows
  const uint32_t v_w = base + Tr::kOffV + 64 * w * Tr::kRowBytes;
  const float sl2 = a.scale_log2;
  // kIdiet: need_mask (below) iff m0 < mask_below, hoisted per CTA: every item when this WG's keys
  // reach Sk, causal: key_base + 63 > m0 + causal_offset, else none (|values| < 2^30).
  int mask_below = 0;
  if constexpr (kIdiet)
    mask_below = key_base + 63 >= a.seqlen_k ? INT_MAX
                 : a.causal                  ? key_base + 63 - a.causal_offset
                                             : INT_MIN;

  float dk[D / 2], dv[D / 2];  // [64 keys x D] of this WG, accumulator layout
#pragma unroll
  for (int i = 0; i < D / 2; ++i)
    dk[i] = dv[i] = 0.f;

  // kStatPf: item it2's lse2 / delta rows -> this WG's staging buffer it2 % 2 by cp.async (no
  // registers held across the iteration). BM = 128: thread tid copies rows m0 + tid of lse2 and
  // delta; BM = 64: staging index tid = lse2 row tid for tid < 64, delta row tid - 64 otherwise;
  // BM = 80: staging indices tid and tid + 128 (< 160) of [lse2 80 | delta 80].
  const uint32_t stat_smem = ptx::smem_u32(smem + Tr::kOffStat) + w * 2 * 2 * kBM * 4;
  // kIdiet: cursor of the consumer's current item (the loop advances it to the next item at its
  // head, so the refill of item it + 1 reads cur.row).
  ItemCursor cur{};
  if constexpr (kIdiet) cur = walk.at(a, bt, item_at(0));
  // kItemHoist: the 64-row refill's per-thread source (lse2 or delta by thread) chosen once here,
  // not per item (~20 instructions of 64-bit select and address arithmetic in the D 128 default).
  // Read only by kHoist's 64-row refill below; dead (and removed) in every other kernel.
  const float* stat_src = tid < 64 ? a.lse2 + tid : a.delta + (tid - 64);
  auto prefetch_stats = [&](int it2) {
    int64_t r;
    if constexpr (kIdiet) {
      r = cur.row;
    } else {
      const Item y = item_at(it2);
      r = (static_cast<int64_t>(bt) * a.heads_q + y.h) * a.sq_pad + y.m0;
    }
    const uint32_t dst = stat_smem + (it2 & 1) * 2 * kBM * 4 + tid * 4;
    if constexpr (kBM == 128) {
      sm80::cp_async_4(dst, a.lse2 + r + tid, true);
      sm80::cp_async_4(dst + kBM * 4, a.delta + r + tid, true);
    } else if constexpr (kBM == 80) {
      // Staging index i = tid and tid + 128 (< 160) of [lse2 80 | delta 80].
      sm80::cp_async_4(dst, tid < 80 ? a.lse2 + r + tid : a.delta + r + (tid - 80), true);
      if (tid < 32) sm80::cp_async_4(dst + 128 * 4, a.delta + r + (tid + 48), true);
    } else if constexpr (kHoist) {
      sm80::cp_async_4(dst, stat_src + r, true);
    } else {
      sm80::cp_async_4(dst, tid < 64 ? a.lse2 + r + tid : a.delta + r + tid - 64, true);
    }
    sm80::cp_async_commit();
  };
  if (kStatPf && items > 0) prefetch_stats(0);

  if (items > 0) ptx::mbar_wait(full_kv, 0);
  // kKVRegs: m64k16 A fragments of K_w / V_w for k-step ks: register 4 ks + i holds rows
  // 64 w + 16 warp + lane / 4 (+ 8 for odd i), columns 16 ks + 2 (lane % 4) (+ 8 for i >= 2),
  // read once from the 128B-swizzled tiles (16-byte chunk c of row R at c ^ (R % 8)).
  uint32_t kf[kKVRegs ? 16 : 1], vf[kKVRegs ? 16 : 1];
  if constexpr (kKVRegs) {
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int r = 64 * w + 16 * warp + lane / 4 + 8 * (i & 1);
        const int c = 16 * ks + 8 * (i >> 1) + 2 * (lane % 4);
        const int off = r * Tr::kRowBytes + (((c / 8) ^ (r % 8)) * 16) + (c % 8) * 2;
        kf[4 * ks + i] = *reinterpret_cast<const uint32_t*>(smem + Tr::kOffK + off);
        vf[4 * ks + i] = *reinterpret_cast<const uint32_t*>(smem + Tr::kOffV + off);
      }
  }
  // kDet with a.det_defer: the turn counter this WG still holds (its adds issued, not yet handed
  // on) and the value that hands it on.
  int* held = nullptr;
  int held_next = 0;
  // K's columns this WG's dQ GEMM reads (B). Without the hoist it is rebuilt in the loop: the
  // score-mod kernels spilled more with it live across items.
  auto k_cols_of = [&] { return base + Tr::kOffK + (Tr::kDqSplitD ? w * Tr::kKChunkBytes : 0); };
  // The item-invariant descriptor bases (K_w, V_w for S^T / dP^T, K's dQ columns), through REDUX
  // once here rather than at every item's start (kItemHoist, session 42: ~10 instructions between
  // the full[s] wait and the first S^T wgmma).
  [[maybe_unused]] uint64_t dkw0 = 0, dvw0 = 0, dkc0 = 0;
  if constexpr (kHoist) {
    if constexpr (!kKVRegs) dkw0 = bwd_desc0(k_w, 16), dvw0 = bwd_desc0(v_w, 16);
    dkc0 = bwd_desc0(k_cols_of(), Tr::kKChunkBytes);
  }
  for (int it = 0; it < items; ++it) {
    const int s = it % kStages;
    const uint32_t ph = (it / kStages) & 1;
    const Item x = kIdiet ? Item{cur.h, cur.m0} : item_at(it);
    const uint32_t q_s = base + Tr::kOffQ + s * Tr::kQBytes;
    const uint32_t do_s = base + Tr::kOffDO + s * Tr::kQBytes;
    const int64_t row =
        kIdiet ? cur.row : (static_cast<int64_t>(bt) * a.heads_q + x.h) * a.sq_pad + x.m0;
    // BM = 128: this thread's lse2 / delta row (query m0 + tid), staged through smem below, or
    // (kStatShfl) rows lane + 32 t of this warp's lanes.
    float my_l2[kStatShfl ? 4 : 1], my_dl[kStatShfl ? 4 : 1];
    if constexpr (kBM == 128 && !kStatPf) {
#pragma unroll
      for (int t = 0; t < (kStatShfl ? 4 : 1); ++t) {
        const int r = kStatShfl ? lane + 32 * t : tid;
        my_l2[t] = __ldg(a.lse2 + row + r);
        my_dl[t] = __ldg(a.delta + row + r);
      }
    }
    ptx::mbar_wait(&full[s], ph);

    // S^T [64 keys x kBM queries] = K_w Q^T and dP^T = V_w dO^T: K-major A and B, K = D. One
    // committed group each: acc = W B^T with W the K / V tile at w_s (or its register fragments
    // wf, kKVRegs) and B the Q / dO tile at b_s.
    float st[kBM / 2], dpt[kBM / 2];
    auto gemm_wt = [&](float(&acc)[kBM / 2], const uint32_t(&wf)[kKVRegs ? 16 : 1], uint32_t w_s,
                       uint64_t dw_hoisted, uint32_t b_s) {
      const uint64_t dw0 = kKVRegs ? 0 : kHoist ? dw_hoisted : bwd_desc0(w_s, 16);
      const uint64_t db0 = bwd_desc0(b_s, 16);
#pragma unroll
      for (int ks = 0; ks < D / 16; ++ks) {
        const uint32_t off = (ks / 4) * Tr::kKChunkBytes + (ks % 4) * 32;
        const uint32_t offq = (ks / 4) * Tr::kQChunkBytes + (ks % 4) * 32;
        if constexpr (kKVRegs) {
          const uint32_t af[4] = {wf[4 * ks], wf[4 * ks + 1], wf[4 * ks + 2], wf[4 * ks + 3]};
          WS::template rs<0>(acc, af, bwd_desc_at(db0, b_s, offq, 16), ks > 0 ? 1 : 0);
        } else {
          WS::template ss<0, 0>(acc, bwd_desc_at(dw0, w_s, off, 16),
                                bwd_desc_at(db0, b_s, offq, 16), ks > 0 ? 1 : 0);
        }
      }
      ptx::wgmma_commit();
    };
    ptx::wgmma_fence();
    gemm_wt(st, kf, k_w, dkw0, q_s);
    gemm_wt(dpt, vf, v_w, dvw0, do_s);
    // kIdiet: advance to item it + 1 (the kStat 2 / 3 refill's) under the two GEMMs, not at the
    // loop head (the head's instructions sit between the previous dK wait and the S^T issue).
    if constexpr (kIdiet) cur = walk.next(cur);

    // lse2 / delta of this thread's kBM / 4 query columns (8j + qc + e), index 2j + e.
    // BM = 64: read straight from the padded fp32 workspace (in bounds, 8-byte aligned: sq_pad
    // and qc are even) while the two GEMMs run. They used to be bulk-copied into the stage's
    // shared memory, which compute-sanitizer racecheck reported as 14 hazards between the
    // producer's async-proxy write and these generic reads (mbarrier-ordered, but not proven to
    // it); 128 B per row block from L2 costs nothing next to the 5 GEMMs.
    // BM = 128: 64 more registers would not fit next to S^T / dP^T [64 x 128]; each thread loaded
    // one row's pair above (my_l2, my_dl), the WG stores them to its smem rows (double-buffered
    // by iteration parity: a WG barrier separates a buffer's reads from its rewrite two
    // iterations later) and reads them back as float2 broadcasts where they are used.
    // kStat = 2: the staging of BM = 128 with values loaded one item ahead (see the template).
    constexpr bool kDirect = kBM == 64 && !kStatPf;
    float l2[kDirect ? 16 : 1], dl[kDirect ? 16 : 1];
    const float* stat = nullptr;
    if constexpr (kStatPf) {
      // [lse2 kBM | delta kBM] of this WG, buffer it % 2: this thread's copies landed, the
      // barrier makes every thread's visible (and orders the WG's reads of buffer (it + 1) % 2
      // in item it - 1 before its refill for item it + 1, issued right after).
      sm80::cp_async_wait<0>();
      ptx::named_bar_sync(2 + w, 128);
      stat = reinterpret_cast<const float*>(smem + Tr::kOffStat) + (2 * w + (it & 1)) * 2 * kBM;
    } else if constexpr (kDirect) {
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float2 lv = __ldg(reinterpret_cast<const float2*>(a.lse2 + row + 8 * j + qc));
        const float2 dv2 = __ldg(reinterpret_cast<const float2*>(a.delta + row + 8 * j + qc));
        l2[2 * j] = lv.x;
        l2[2 * j + 1] = lv.y;
        dl[2 * j] = dv2.x;
        dl[2 * j + 1] = dv2.y;
      }
    } else if constexpr (!kStatShfl) {
      float* st_w = reinterpret_cast<float*>(smem + Tr::kOffStat) + (2 * w + (it & 1)) * 2 * kBM;
      st_w[tid] = my_l2[0];
      st_w[kBM + tid] = my_dl[0];
      ptx::named_bar_sync(2 + w, 128);
      stat = st_w;
    }
    // Staged value i + e (i even): both staging forms put a WG's rows at 512-byte (640 at BM 80)
    // multiples and qc is even, so the (e = 0, 1) pair is one 8-byte load (kStatAligned<D>,
    // session 42; the element form compiled to two LDS.32 a pair).
    auto stat_at = [&](int i, int e) {
      if constexpr (kStatAligned<D>) {
        const float2 v = *reinterpret_cast<const float2*>(stat + i);
        return e ? v.y : v.x;
      } else {
        return stat[i + e];
      }
    };
    // Query column 8j + qc + e = row 8 (j % 4) + qc + e + 32 (j / 4) of the block.
    auto lse2_of = [&](int j, int e) {
      if constexpr (kDirect)
        return l2[2 * j + e];
      else if constexpr (kStatShfl)
        return __shfl_sync(0xffffffffu, my_l2[j / 4], 8 * (j % 4) + qc + e);
      else
        return stat_at(8 * j + qc, e);
    };
    auto delta_of = [&](int j, int e) {
      if constexpr (kDirect)
        return dl[2 * j + e];
      else if constexpr (kStatShfl)
        return __shfl_sync(0xffffffffu, my_dl[j / 4], 8 * (j % 4) + qc + e);
      else
        return stat_at(kBM + 8 * j + qc, e);
    };

    // P^T = exp2(S^T scale_log2 - lse2), masked where key >= Sk or (causal) key > row + offset.
    ptx::wgmma_wait<1>();
    fence_regs(st);
    const bool need_mask =
        kIdiet
            ? x.m0 < mask_below
            : key_base + 63 >= a.seqlen_k || (a.causal && key_base + 63 > x.m0 + a.causal_offset) ||
                  (kMod && a.window_lo && x.m0 + kBM - 1 + a.lo_offset > key_base);
    // kMod: ALiBi's slope of this item's query head, in the kernel's score units (0 = none).
    const float alibi_k = (mod_is_general(kMod) || mod_has_mask(kMod)) && a.alibi != nullptr
                              ? a.alibi[b * a.alibi_sb + x.h * a.alibi_sh] * a.alibi_mul
                              : 0.f;
    // kMaskHoist (bwd_traits.hpp): one branch per item around two copies of the loop (the masked
    // copy branch-free: 2 ISETP + FSEL an element) instead of the per-element `if (need_mask)`,
    // which ptxas compiled as BSSY / BRA / BSYNC around each of the kBM / 2 elements (ncu, H100,
    // D 128 coupled, S 4k: 96 of 1112 consumer instructions per item and warp, 9.6 % of the
    // consumer stall samples "branch resolving").
    // kMod: ALiBi's distance |i + Sk - Sq - j| of element (j, r, e) (query column 8j + qc + e,
    // key row r).
    auto alibi_dist = [&](int j, int r, int e) {
      const int key = key_r0 + 8 * r, q = x.m0 + 8 * j + qc + e;
      return static_cast<float>(abs(q + a.diag_offset - key));
    };
    // kMod (session 25: one kernel per kind): softcap, then ALiBi, then the mask with the
    // window's left edge (score_mod.cuh's order); kModSoftcap always applies softcap, kModWindow
    // nothing, kModGeneral softcap and ALiBi each where set, per element.
    // kModMask: mk = std::integral_constant<int, mask_kind> (1 bool, 2-4 additive), the mask's
    // values of this item's 2 key rows x kBM / 4 query columns loaded kMaskJ column groups at a
    // time before use (see kModMask); 0 = no mask.
    // kModMaskSoftcap: 1 - t^2 of elements (4j + 2r, +1) as an f16 pair at cap_f[(2j + r) 128].
    [[maybe_unused]] uint32_t* cap_f =
        reinterpret_cast<uint32_t*>(smem + bwd_cap_f_offset<Tr>()) + (w * (kBM / 4)) * 128 + tid;
    auto p_from_s = [&](auto masked, bool rt_mask, auto mk) {
      constexpr bool kMasked = decltype(masked)::value;
      constexpr int kMk = decltype(mk)::value;
      // (q, key, |offsets| < 2^30: the sentinels make each comparison false where its edge is
      // off; non-causal: key > q + 2^30 is false)
      const int coff = a.causal ? a.causal_offset : (1 << 30);
      const int loff = a.window_lo ? a.lo_offset : -(1 << 30);
      if constexpr (kMk != 0) {
        using E = MaskElem<kMk>;
        constexpr int kMaskJ = 4;  // (BM 128, not launched: 4 spilled 360 bytes, 2 332, 1 484)
        static_assert(kMk == 0 || (kBM / 8) % kMaskJ == 0, "whole groups");  // (dependent)
        const int64_t bytes = sizeof(E);
        const E* mbh = reinterpret_cast<const E*>(
            a.mask + (static_cast<int64_t>(b) * a.mask_sb + x.h * a.mask_sh) * bytes);
        const E* mkey[2];
#pragma unroll
        for (int r = 0; r < 2; ++r)
          mkey[r] = mbh + static_cast<int64_t>(min(key_r0 + 8 * r, a.seqlen_k - 1)) * a.mask_sj;
#pragma unroll
        for (int j0 = 0; j0 < kBM / 8; j0 += kMaskJ) {
          E mv[kMaskJ][2][2];
#pragma unroll
          for (int jj = 0; jj < kMaskJ; ++jj)
#pragma unroll
            for (int r = 0; r < 2; ++r)
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                const int q = min(x.m0 + 8 * (j0 + jj) + qc + e, a.seqlen_q - 1);
                mv[jj][r][e] = mkey[r][static_cast<int64_t>(q) * a.mask_si];
              }
#pragma unroll
          for (int jj = 0; jj < kMaskJ; ++jj)
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              [[maybe_unused]] float fe[2];
#pragma unroll
              for (int e = 0; e < 2; ++e) {
                const int j = j0 + jj;
                float xs = st[4 * j + 2 * r + e];
                if constexpr (kMod == kModMaskSoftcap) {
                  xs = attnkit::cuda::tanh_exp2(xs * a.softcap_k);
                  fe[e] = fmaf(-xs, xs, 1.f);
                }
                if (alibi_k != 0.f) xs = fmaf(alibi_k, alibi_dist(j, r, e), xs);
                xs = masked_score<kMk>(xs, mv[jj][r][e], a.mask_mul);
                float pv = exp2_approx(fmaf(xs, sl2, -lse2_of(j, e)));
                if constexpr (kMasked) {
                  const int key = key_r0 + 8 * r, q = x.m0 + 8 * j + qc + e;
                  pv = (key >= a.seqlen_k || key > q + coff || key < q + loff) ? 0.f : pv;
                }
                st[4 * j + 2 * r + e] = pv;
              }
              if constexpr (kMod == kModMaskSoftcap)
                cap_f[(2 * (j0 + jj) + r) * 128] = pack2<false>(fe[0], fe[1]);
            }
        }
      } else {  // (an else, not a return: nvcc 13 warned #128-D "loop is not reachable" here)
#pragma unroll
        for (int j = 0; j < kBM / 8; ++j) {
#pragma unroll
          for (int r = 0; r < 2; ++r)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              float xs = st[4 * j + 2 * r + e];
              if constexpr (kMod == kModSoftcap) {
                xs = attnkit::cuda::tanh_exp2(xs * a.softcap_k);
              } else if constexpr (mod_is_general(kMod)) {
                if (a.softcap_k != 0.f) xs = attnkit::cuda::tanh_exp2(xs * a.softcap_k);
                if (alibi_k != 0.f) xs = fmaf(alibi_k, alibi_dist(j, r, e), xs);
              }
              float pv = exp2_approx(fmaf(xs, sl2, -lse2_of(j, e)));
              if constexpr (kMasked) {
                const int key = key_r0 + 8 * r, q = x.m0 + 8 * j + qc + e;
                pv = (key >= a.seqlen_k || key > q + coff || (kMod != 0 && key < q + loff)) ? 0.f
                                                                                            : pv;
              } else if (rt_mask) {
                const int key = key_r0 + 8 * r, q = x.m0 + 8 * j + qc + e;
                if (key >= a.seqlen_k || (a.causal && key > q + a.causal_offset)) pv = 0.f;
              }
              st[4 * j + 2 * r + e] = pv;
            }
        }
      }
    };
    using NoMask = std::integral_constant<int, 0>;
    if constexpr (mod_has_mask(kMod)) {
      with_mask_kind(a.mask_kind, [&](auto mk) {
        if (need_mask)
          p_from_s(std::true_type{}, false, mk);
        else
          p_from_s(std::false_type{}, false, mk);
      });
    } else if constexpr (kMod != 0 || Tr::kHoistMask) {
      if (need_mask)
        p_from_s(std::true_type{}, false, NoMask{});
      else
        p_from_s(std::false_type{}, false, NoMask{});
    } else {
      p_from_s(std::false_type{}, need_mask, NoMask{});
    }
    // kModDropout / kModMaskDropout: element (j, r, e)'s keep bit at 8 (2r + e) + j, drawn while
    // dP^T runs; drop_z: keep / (1 - p) or 0.
    [[maybe_unused]] uint32_t drop_keep = 0;
    auto drop_z = [&](int j, int r, int e) {
      return ((drop_keep >> (8 * (2 * r + e) + j)) & 1u) ? a.drop_rescale : 0.f;
    };
    if constexpr (mod_has_dropout(kMod)) {
      static_assert(kBM == 64, "kModDropout: 32 P^T elements a thread");
      drop_keep = bwd_dropout_keep_bits<8>(a.drop_seed, a.drop_offset, a.drop_threshold,
                                           static_cast<uint32_t>(b * a.heads_q + x.h), key_r0,
                                           x.m0 + qc, lane);
    }
    // 16-bit A fragments: the accumulator pairs of query block kk are a0..a3 of m64k16.
    uint32_t pp[kBM / 4], pds[kBM / 4];
    // dV_w += P^T dO, dK_w += dS^T Q: A from registers, B = dO / Q MN-major (K = kBM queries).
    auto issue_dv = [&] {
      const uint64_t d0 = bwd_desc0(do_s, Tr::kQChunkBytes);
#pragma unroll
      for (int kk = 0; kk < kBM / 16; ++kk) {
        const uint32_t af[4] = {pp[4 * kk], pp[4 * kk + 1], pp[4 * kk + 2], pp[4 * kk + 3]};
        WD::template rs<1>(dv, af, bwd_desc_at(d0, do_s, kk * 16 * Tr::kRowBytes, Tr::kQChunkBytes),
                           1);
      }
    };
    auto issue_dk = [&] {
      const uint64_t d0 = bwd_desc0(q_s, Tr::kQChunkBytes);
#pragma unroll
      for (int kk = 0; kk < kBM / 16; ++kk) {
        const uint32_t af[4] = {pds[4 * kk], pds[4 * kk + 1], pds[4 * kk + 2], pds[4 * kk + 3]};
        WD::template rs<1>(dk, af, bwd_desc_at(d0, q_s, kk * 16 * Tr::kRowBytes, Tr::kQChunkBytes),
                           1);
      }
    };
    if constexpr (kDvEarly) {
      // P^T packed and dV issued now (see the template): groups S^T, dP^T, dV in order, so
      // wait<1> = dP^T done with dV still running under the dS^T code below.
#pragma unroll
      for (int i = 0; i < kBM / 4; ++i)
        pp[i] = pack2<BF16>(st[2 * i], st[2 * i + 1]);
      ptx::wgmma_fence();
      issue_dv();
      ptx::wgmma_commit();
      ptx::wgmma_wait<1>();
    } else {
      ptx::wgmma_wait<0>();
    }
    // dS^T = P^T (dP^T - delta); kDvEarly at BM = 128: P^T from its 16-bit copy (see above).
    constexpr bool kDsFromP16 = kDvEarly && kBM == 128;
    fence_regs(dpt);
#pragma unroll
    for (int j = 0; j < kBM / 8; ++j) {
#pragma unroll
      for (int r = 0; r < 2; ++r)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int idx = 4 * j + 2 * r + e;
          const float pv = kDsFromP16 ? unpack_half<BF16>(pp[idx / 2], e) : st[idx];
          // dS^T = P^T (z dP^T - delta) f: f = softcap's 1 - t^2 (1 without softcap), z = dropout's
          // keep / (1 - p) (without dropout: dP^T - delta; with it dV's P^T becomes P^T z).
          float f = 1.f;
          if constexpr (kMod == kModSoftcap || mod_is_general(kMod)) {
            // Softcap: d(softcap tanh(scale s / softcap)) / ds = scale (1 - t^2) (scale: dK's
            // and dQ's factor, as without softcap); t from P^T (see the template).
            if (kMod == kModSoftcap || a.softcap_k != 0.f) {
              float t = (attnkit::cuda::lg2_approx(pv) + lse2_of(j, e)) * a.inv_scale_log2;
              if (mod_is_general(kMod) && alibi_k != 0.f)
                t = fmaf(-alibi_k, alibi_dist(j, r, e), t);
              t = fminf(fmaxf(t, -1.f), 1.f);  // (NaN from an empty row's +inf lse2: -1)
              f = fmaf(-t, t, 1.f);
            }
          } else if constexpr (kMod == kModMaskSoftcap) {
            f = unpack_half<false>(cap_f[(idx / 2) * 128], e);
          }
          if constexpr (mod_has_dropout(kMod)) {  // (P^T stays undropped until here)
            const float z = drop_z(j, r, e);
            dpt[idx] = pv * fmaf(z, dpt[idx], -delta_of(j, e)) * f;
            st[idx] = pv * z;  // (dV's P^T, packed below)
          } else {
            dpt[idx] = pv * (dpt[idx] - delta_of(j, e)) * f;
          }
        }
    }
#pragma unroll
    for (int i = 0; i < kBM / 4; ++i) {
      if constexpr (!kDvEarly) pp[i] = pack2<BF16>(st[2 * i], st[2 * i + 1]);
      pds[i] = pack2<BF16>(dpt[2 * i], dpt[2 * i + 1]);
    }
    // kStatPf: refill the other staging buffer for item it + 1 (after this item's barrier; here,
    // once S^T / dP^T are packed: issued next to the live accumulators ptxas spilled 92 bytes).
    if constexpr (kStat == 2) {
      if (it + 1 < items) prefetch_stats(it + 1);
    }
    // dS^T -> smem [128 keys][kBM queries] as kBM / 64 chunks [128 keys][64 queries] (128B
    // swizzle: 16-byte chunk c of row R at c ^ (R%8)).
    // pds[2j + r] = (key row 16 warp + lane/4 + 8r, query columns 8j + qc, +1).
    const int ds_buffer = Tr::kDSBuffers > 1 ? (it & 1) : 0;
    uint8_t* ds_buf = smem + Tr::kOffDS + ds_buffer * Tr::kDSBytes;
    if constexpr (Tr::kDqTrans) {
      // dS [80 queries][128 keys] (see Tr::kDqTrans): this WG's 64 keys are chunk w, the warp's
      // 16 of them 16-byte groups 2 warp, 2 warp + 1 of every query row.
      stmatrix_packed_cols<kBM>(lane, warp, ptx::smem_u32(ds_buf) + w * Tr::kDSChunkBytes, pds);
    } else if constexpr (kDsStsm) {
      // The warp's 16 key rows (64 w + 16 warp ..) by stmatrix.x4, 16 query columns each: the
      // same bytes as the 32-bit stores below, in kBM / 16 instructions instead of kBM / 4.
      stmatrix_packed_rows<kBM, Tr::kDSChunkBytes>(
          lane, ptx::smem_u32(ds_buf) + (64 * w + 16 * warp) * 128, pds);
    } else {
#pragma unroll
      for (int j = 0; j < kBM / 8; ++j)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int kr = 64 * w + 16 * warp + lane / 4 + 8 * r;
          *reinterpret_cast<uint32_t*>(ds_buf + (j / 8) * Tr::kDSChunkBytes + kr * 128 +
                                       (((j % 8) ^ (kr & 7)) * 16) + 2 * qc) = pds[2 * j + r];
        }
    }
    // Generic-proxy stores -> the dQ wgmma reads (both WGs'), after the barrier below. kLateFence
    // (bwd_traits.hpp): after dV's issue, which reads none of them (see there).
    constexpr bool kFenceAfterDv = kLateFence<D> && !kDvEarly;
    if constexpr (!kFenceAfterDv) ptx::fence_proxy_async_smem();

    if constexpr (!kDvEarly) {
      ptx::wgmma_fence();
      issue_dv();
      if constexpr (!kDqFirst) issue_dk();
      ptx::wgmma_commit();
    }
    if constexpr (kFenceAfterDv) ptx::fence_proxy_async_smem();
    if constexpr (kStat == 3) {  // the refill after this item's fence (see the template)
      if (it + 1 < items) prefetch_stats(it + 1);
    }

    // This WG's previous bulk reduce has finished reading its dQ stage (so after the barrier
    // every thread of the WG may overwrite it).
    if (!Tr::kDqTrans && a.dq_bulk && tid == 0) ptx::bulk_wait_read<0>();
    if constexpr (Tr::kDecoupled && D >= 128) {
      // D = 128 decoupled: dQ needs 64 accumulator registers; with P^T / dS^T still held for
      // the in-flight RS GEMMs ptxas ran out (C7512: every wgmma serialised, plus spills), so
      // let dV / dK finish first (the other WG keeps the tensor cores busy meanwhile).
      ptx::wgmma_wait<0>();
      fence_regs(dk);
      fence_regs(dv);
    }
    if constexpr (Tr::kDecoupled) {
      // This WG's dS^T rows are in smem (written by its 4 warps); the other WG is not waited for.
      ptx::named_bar_sync(2 + w, 128);
    } else {
      // Both halves of dS^T are in smem (and each WG's reads of this buffer two iterations ago
      // are complete: they were waited for before that WG arrived here last iteration).
      ptx::named_bar_sync(1, 2 * 128);
    }

    // dQ [64 queries x kDqN] = dS K: A = dS^T tile (MN-major: queries contiguous), B = K rows
    // (MN-major: D contiguous), K = kDqKeys keys. BM = 128: WG w's 64 queries are dS^T chunk w.
    float dq[Tr::kDqRegs];
    const uint32_t ds_u32 =
        base + Tr::kOffDS + ds_buffer * Tr::kDSBytes + (Tr::kDqSplitM ? w * Tr::kDSChunkBytes : 0);
    const int key_off0 = (Tr::kDqSplitD || Tr::kDqSplitM) ? 0 : 64 * w;
    const uint32_t k_cols = k_cols_of();
    ptx::wgmma_fence();
    if constexpr (Tr::kDqTrans) {
      // dQ^T [64 D columns x 80 queries] = K^T dS: A = K's column chunk w (MN-major: D
      // contiguous, the descriptor the 64-row kernel gives B), B = dS (K-major, as Q in S^T),
      // K = all 128 keys.
      const uint64_t dds0 = bwd_desc0(ds_u32, 16);
      const uint64_t dk0 = kHoist ? dkc0 : bwd_desc0(k_cols, Tr::kKChunkBytes);
#pragma unroll
      for (int kk = 0; kk < Tr::kDqKeys / 16; ++kk) {
        const uint32_t roff = 16 * kk * Tr::kRowBytes;
        const uint32_t boff = (kk / 4) * Tr::kDSChunkBytes + (kk % 4) * 32;
        WQ::template ss<1, 0>(dq, bwd_desc_at(dk0, k_cols, roff, Tr::kKChunkBytes),
                              bwd_desc_at(dds0, ds_u32, boff, 16), kk > 0 ? 1 : 0);
      }
    } else {
      const uint64_t dds0 = bwd_desc0(ds_u32, Tr::kDSChunkBytes);
      const uint64_t dk0 = kHoist ? dkc0 : bwd_desc0(k_cols, Tr::kKChunkBytes);
#pragma unroll
      for (int kk = 0; kk < Tr::kDqKeys / 16; ++kk) {
        const uint32_t roff = (key_off0 + 16 * kk) * Tr::kRowBytes;
        WQ::template ss<1, 1>(dq, bwd_desc_at(dds0, ds_u32, roff, Tr::kDSChunkBytes),
                              bwd_desc_at(dk0, k_cols, roff, Tr::kKChunkBytes), kk > 0 ? 1 : 0);
      }
    }
    ptx::wgmma_commit();
    if constexpr (kDqFirst) {
      // Groups dV, dQ pending (with kDvEarly too: dV was committed before dQ).
      ptx::wgmma_wait<1>();  // dV done: P^T registers free, dK queued behind dQ
      fence_regs(dv);
      ptx::wgmma_fence();
      issue_dk();
      ptx::wgmma_commit();
      ptx::wgmma_wait<1>();  // dQ done; dK still running under the dQ hand-off below
      fence_regs(dq);
    } else {
      ptx::wgmma_wait<0>();
      fence_regs(dq);
      fence_regs(dk);
      fence_regs(dv);
      // Q and dO of stage s consumed (every wgmma reading them has completed: wait<0> above);
      // the warp's lanes converge before lane 0's release-arrive hands the stage back.
      __syncwarp();
      if (lane == 0) ptx::mbar_arrive(&empty[s]);
    }

    // dQ partial sums -> this WG's part of the (bh, query block) workspace tile, thread-major
    // (bwd_traits.hpp, dq_tile_offset): a.dq_vec4 = 0: position ((2 j + r) * 128 + tid) * 2
    // holds dq[4 j + 2 r], dq[4 j + 2 r + 1]; 1: (j * 128 + tid) * 4 holds dq[4 j .. 4 j + 3].
    // (kDqTrans: the float4 form over dQ^T's fragment, j < 10, parts of 64 x 80: Tr::kDqTrans.)
    float* part = a.dq_acc + (row + (Tr::kDqSplitM ? 64 * w : 0)) * D +
                  (Tr::kDqSplitD ? w * Tr::kDqPartFloats : 0);
    // kDet: this WG's part of tile (h, query block) takes the key blocks' sums in a fixed order,
    // descending from the key block `first` and wrapping (turn = (first - n) mod N, N = gridDim.x);
    // whoever is waited for is the next higher key block (launched before this one), except the
    // wrap from key block N - 1 to 0 under item_rot, which the host allows only while every key
    // block of a (kv head, batch) can be resident at once (N <= SMs, one CTA per SM).
    //   causal: `first` = the highest key block that sees the tile (key blocks 0 .. first do, as
    //     m_begin is non-decreasing in n). Each CTA starts at its diagonal, so key block n + 1
    //     reaches the tile one step before key block n: in lockstep nobody waits. (Session 25's
    //     ascending order made key block n wait n steps at its first tile: 0.37-0.42 of the
    //     atomic kernel, session 26 call 1.)
    //   non-causal with item_rot: CTA n starts at item rot(n) = n * items / N, so at item j the
    //     key blocks arrive in the order n_last(j) = max{n : rot(n) <= j}, n_last - 1, ..., 0,
    //     N - 1, ...: `first` = n_last(j) and again nobody waits in lockstep. (Ascending order
    //     without rotation: every CTA at item 0 together, 0.60-0.66 of the atomic kernel.)
    //   non-causal without item_rot (the default since the end of session 26, and always when
    //     N > SMs): first = N - 1, a chain like session 25's, every wait on a CTA launched earlier.
    int* sem = nullptr;
    int turn = 0;
    if constexpr (kDet) {
      const int nkb = static_cast<int>(gridDim.x), mb = x.m0 / kBM;
      int first = nkb - 1;
      if (a.causal) {
        const int q = (mb * kBM + kBM - 1 + a.causal_offset) / kBN;
        first = q < first ? q : first;
      } else if (a.item_rot) {
        const int64_t j = static_cast<int64_t>(x.h - g * a.group) * m_count + mb;
        first = static_cast<int>(((j + 1) * nkb - 1) / items);
      }
      turn = first - nblk;
      if (turn < 0) turn += nkb;
      sem = a.dq_sem + ((static_cast<int64_t>(bt) * a.heads_q + x.h) * a.num_m_blocks + mb) * 2 + w;
      if (held != nullptr) {
        // Deferred hand-over: every thread's adds into the held tile were issued an item ago (the
        // barrier orders them before thread 0's release store, which is cumulative).
        ptx::named_bar_sync(2 + w, 128);
        if (tid == 0) ptx::st_release_gpu(held, held_next);
      }
      if (tid == 0) {
        while (ptx::ld_acquire_gpu(sem) != turn) {
        }
      }
      ptx::named_bar_sync(2 + w, 128);
    }
    if (!Tr::kDqTrans && a.dq_bulk) {  // (kDqTrans: no bulk path, see Tr::kDqPartBytes)
      float* sdq = reinterpret_cast<float*>(smem + Tr::kOffDQ + w * Tr::kDqPartBytes);
      if (a.dq_vec4) {
#pragma unroll
        for (int j = 0; j < Tr::kDqN / 8; ++j)
          *reinterpret_cast<float4*>(sdq + (j * 128 + tid) * 4) =
              make_float4(dq[4 * j], dq[4 * j + 1], dq[4 * j + 2], dq[4 * j + 3]);
      } else {
#pragma unroll
        for (int j = 0; j < Tr::kDqN / 8; ++j)
#pragma unroll
          for (int r = 0; r < 2; ++r)
            *reinterpret_cast<float2*>(sdq + ((2 * j + r) * 128 + tid) * 2) =
                make_float2(dq[4 * j + 2 * r], dq[4 * j + 2 * r + 1]);
      }
      ptx::fence_proxy_async_smem();  // generic stores -> the bulk copy's async-proxy reads
      ptx::named_bar_sync(2 + w, 128);
      if (tid == 0) {
        ptx::bulk_reduce_add_f32(part, sdq, Tr::kDqPartBytes);
        ptx::bulk_commit();
      }
    } else if (kTimingSkipDqAtomics) {
      // TIMING BUILD ONLY (bwd_traits.hpp): no dQ atomics, dQ stays 0. The empty asm reads every
      // dQ register here, so the dQ GEMM and its wait stay as they are; nothing holds the
      // registers after it (the REDs' asynchronous register reads are what the bound removes).
#pragma unroll
      for (int i = 0; i < Tr::kDqRegs; ++i)
        asm volatile("" ::"f"(dq[i]));
    } else if (Tr::kDqTrans || a.dq_vec4) {  // (kDqTrans: float4 runs only)
      // kRedBase: one address per thread, the j-th RED at + 2 KB j (an immediate offset in the
      // REDG). (j * 128 + tid) * 4 in int had ptxas build each of the 8 64-bit addresses on its
      // own: ~40 LEA / IMAD / IADD3 / VIADD for 8 REDs in the D 128 default's SASS.
      float* const mine = part + tid * 4;  // (this thread's float4 of part 0)
#pragma unroll
      for (int j = 0; j < Tr::kDqRegs / 4; ++j)
        atomicAdd(reinterpret_cast<float4*>(kRedBase ? mine + j * 512 : part + (j * 128 + tid) * 4),
                  make_float4(dq[4 * j], dq[4 * j + 1], dq[4 * j + 2], dq[4 * j + 3]));
    } else {
#pragma unroll
      for (int j = 0; j < Tr::kDqN / 8; ++j)
#pragma unroll
        for (int r = 0; r < 2; ++r)
          atomicAdd(reinterpret_cast<float2*>(part + ((2 * j + r) * 128 + tid) * 2),
                    make_float2(dq[4 * j + 2 * r], dq[4 * j + 2 * r + 1]));
    }
    // kDet: every thread's adds, then the next key block's turn. The hand-over is a CTA barrier
    // and thread 0's st.release.gpu, which is cumulative over the adds the barrier ordered before
    // it (CUTLASS's split-K semaphore has the same shape). There is no __threadfence: session 32
    // found that any fence.sc / membar.gl / fence.acq_rel.gpu after the adds makes ptxas issue all
    // 24 of an item's dQ adds as ATOMG (with a return) instead of REDG. The next item's first GEMM
    // then waits for their replies from L2 (dependency barrier SB5 at the loop head); a release
    // store or atom.release leaves them REDG.
    if constexpr (kDet) {
      if (a.det_defer) {
        held = sem;
        held_next = turn + 1;
      } else {
        ptx::named_bar_sync(2 + w, 128);
        if (tid == 0) ptx::st_release_gpu(sem, turn + 1);
      }
    }
    if constexpr (kDqFirst) {
      ptx::wgmma_wait<0>();  // dK done: Q and dO of stage s consumed
      fence_regs(dk);
      fence_regs(dv);
      __syncwarp();
      if (lane == 0) ptx::mbar_arrive(&empty[s]);
    }
  }
  // Every reduce must have read its smem source before the CTA exits (and be complete).
  if (!Tr::kDqTrans && a.dq_bulk && tid == 0) ptx::bulk_wait<0>();
  if constexpr (kDet) {  // the last item's deferred hand-over
    if (held != nullptr) {
      ptx::named_bar_sync(2 + w, 128);
      if (tid == 0) ptx::st_release_gpu(held, held_next);
    }
  }
  // ATTNKIT_FLASH3_BWD_EARLY_CONV: this WG has issued every dQ add of its items (all of them into
  // the tiles of kv head g's q heads, batch b): its barrier orders every thread's REDs before
  // thread 0's red.release.gpu on the (b, g) done counter (cumulative, as kDet's hand-over; no
  // fence, so the REDs stay REDG). One bump per consumer WG and CTA, items == 0 too: the
  // conversion of (b, g) waits for kConsumerWGs x N (key blocks). a.dq_sem = nullptr: the launch
  // has no early conversion.
  if constexpr (kEarlyConv) {
    if (a.dq_sem != nullptr) {
      ptx::named_bar_sync(2 + w, 128);
      if (tid == 0) ptx::red_release_gpu_add(a.dq_sem + b * a.heads_q + g * a.group, 1);
    }
  }

  if constexpr (kTmaKV) {
    // ---- epilogue through smem + TMA stores (see the template): dK = scale * acc -> this WG's
    // dQ stage, dV = acc -> this WG's V rows; warp = key rows key_base + 16 warp .. + 15.
    static_assert(64 * D * 2 <= Tr::kDqPartBytes, "dK of a WG fits its dQ stage");
    constexpr int kStageChunk = 64 * Tr::kRowBytes;  // [64 rows][64] chunks of the dK stage
    // Bulk dQ path: thread 0's last reduce has completed (above) before any warp overwrites it.
    if (!Tr::kDqTrans && a.dq_bulk) ptx::named_bar_sync(2 + w, 128);
    const uint32_t dk_stage =
        base + Tr::kOffDQ + w * Tr::kDqPartBytes + 16 * warp * Tr::kRowBytes;  // 1024-aligned
    const uint32_t dv_stage = base + Tr::kOffV + (64 * w + 16 * warp) * Tr::kRowBytes;
    // (reg_ops.cuh: the STG path's products and pack2, so the same bits.)
    stmatrix_acc_rows<D, kStageChunk, BF16>(lane, dk_stage, [&](int i) { return dk[i] * a.scale; });
    stmatrix_acc_rows<D, Tr::kKChunkBytes, BF16>(lane, dv_stage, [&](int i) { return dv[i]; });
    ptx::fence_proxy_async_smem();  // stmatrix (generic proxy) -> the TMA stores' reads (async)
    __syncwarp();
    const int warp_key0 = key_base + 16 * warp;
    if (lane == 0 && warp_key0 < a.seqlen_k) {
#pragma unroll
      for (int c = 0; c < Tr::kChunks; ++c) {
        ptx::tma_store_4d(&maps.tma_dk, dk_stage + c * kStageChunk, c * 64, warp_key0, g, bt);
        ptx::tma_store_4d(&maps.tma_dv, dv_stage + c * Tr::kKChunkBytes, c * 64, warp_key0, g, bt);
      }
      ptx::bulk_commit();
      ptx::bulk_wait_read<0>();  // shared memory read before the CTA exits
    }
  } else {
    // ---- epilogue: dK = scale * acc, dV = acc, rows < Sk (pairs of 16-bit, d-stride 1) ---------
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int key = key_r0 + 8 * r;
      if (key >= a.seqlen_k) continue;
      uint16_t* dk_row =
          static_cast<uint16_t*>(a.dk) + b * a.dk_sb + key * a.dk_ss + g * a.dk_sh + qc;
      uint16_t* dv_row =
          static_cast<uint16_t*>(a.dv) + b * a.dv_sb + key * a.dv_ss + g * a.dv_sh + qc;
#pragma unroll
      for (int j = 0; j < D / 8; ++j) {
        *reinterpret_cast<uint32_t*>(dk_row + 8 * j) =
            pack2<BF16>(dk[4 * j + 2 * r] * a.scale, dk[4 * j + 2 * r + 1] * a.scale);
        *reinterpret_cast<uint32_t*>(dv_row + 8 * j) =
            pack2<BF16>(dv[4 * j + 2 * r], dv[4 * j + 2 * r + 1]);
      }
    }
  }
#endif
}

}  // namespace attnkit::flash3::bwd
