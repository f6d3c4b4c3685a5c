// Epilogue: normalises the 64 x kD fp32 accumulator of one consumer warpgroup and writes O
// (16-bit, straight from registers: each thread stores 2-element pairs, a quad covers 16
// contiguous bytes of a row) and lse (fp32, one lane per row). Rows >= seqlen_q are padding of
// the last tile and are not written.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "backends/flash3/fwd_args.hpp"
#include "backends/flash3/reg_ops.cuh"
#include "cuda/ptx_sm90.hpp"

namespace attnkit::flash3 {

/// x >= 0 (a batch, head or row index) widened for a product with an int64 stride: zero-extended
/// when kNonNeg (the same value: x >= 0), else as int64's own conversion (sign extension). Why
/// (ATTNKIT_FLASH3_FWD_D256_EDGE): int x int64 costs a sign SHF.R.S32 and an IMAD for the sign
/// word's product per index in the SASS, the zero-extended one neither.
template <bool kNonNeg>
__device__ __forceinline__ int64_t index64(int x) {
  if constexpr (kNonNeg)
    return static_cast<int64_t>(static_cast<uint32_t>(x));
  else
    return x;
}

/// lse of this thread's rows row0 and row0 + 8 (those < seqlen_q), from lane 0 of each quad
/// (every path of store_output calls it). kNonNeg: index64's.
template <bool kNonNeg = false>
__device__ __forceinline__ void store_lse(const FwdArgs& a, const float (&lse)[2], int b, int h,
                                          int row0, int lane) {
  if (a.lse == nullptr || (lane & 3) != 0) return;
  // One row pointer for both rows (session 34, with the rest of the tile-boundary diet below).
  float* const l0 = a.lse + index64<kNonNeg>(b) * a.lse_sb + index64<kNonNeg>(h) * a.lse_sh +
                    index64<kNonNeg>(row0) * a.lse_ss;
#pragma unroll
  for (int r = 0; r < 2; ++r)
    if (row0 + 8 * r < a.seqlen_q) l0[8 * r * a.lse_ss] = lse[r];
}

/// o: 64 x kD accumulator (kD/2 registers), row0 = global query row of this thread's r = 0.
/// FwdArgs::epi_wide (session 14; the launch checks 8-byte alignment): 8-byte stores, each lane
/// pair of a quad swapping one 4-byte pair (SHFL.BFLY 1) so that the even lane holds columns
/// 8j .. +3 of the even group j and the odd lane 8(j+1) + 4 .. of the odd one: a warp store
/// covers 32 contiguous bytes (a full sector) of each of its 8 rows instead of 16, with half the
/// store instructions. All 32 lanes must be active (the shuffle).
/// epi_wide = 2 (16-byte aligned out): a 4 x 4 transpose of 4-byte pairs within each quad (two
/// SHFL.BFLY stages, 1 and 2, each lane swapping the two pairs whose index bit differs from its
/// own lane bit) over four column groups 4g .. 4g + 3, after which lane q holds group 4g + q's
/// 16 contiguous bytes: one 16-byte store per lane, 64 bytes per row and warp store.
/// kNarrow (mainloop.cuh kVarNarrow): only columns < a.d_cols exist (a multiple of 32, checked by
/// the launch); the plain 4-byte stores, epi_wide is 0 there.
/// kNonNeg (ATTNKIT_FLASH3_FWD_D256_EDGE; b, h, row0 >= 0): the indices' int64 products through
/// index64 (zero-extended: same addresses, fewer instructions), the 8- and 4-byte paths.
template <int kD, bool BF16, bool kNarrow = false, bool kNonNeg = false>
__device__ __forceinline__ void store_output(const FwdArgs& a, float (&o)[kD / 2],
                                             const float (&inv)[2], const float (&lse)[2], int b,
                                             int h, int row0, int lane) {
  static_assert(!kNonNeg || !kNarrow, "flash3: kNonNeg is the D 256 plain kernels' epilogue");
  uint16_t* out = static_cast<uint16_t*>(a.out) + index64<kNonNeg>(b) * a.out_sb +
                  index64<kNonNeg>(h) * a.out_sh;
  if constexpr (kNarrow) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int i = row0 + 8 * r;
      if (i >= a.seqlen_q) continue;
      uint16_t* row = out + static_cast<int64_t>(i) * a.out_ss + 2 * (lane & 3);
#pragma unroll
      for (int j = 0; j < kD / 8; ++j)
        if (8 * j < a.d_cols)
          *reinterpret_cast<uint32_t*>(row + 8 * j) =
              pack2<BF16>(o[4 * j + 2 * r] * inv[r], o[4 * j + 2 * r + 1] * inv[r]);
      if (a.lse != nullptr && (lane & 3) == 0)
        a.lse[b * a.lse_sb + h * a.lse_sh + static_cast<int64_t>(i) * a.lse_ss] = lse[r];
    }
    return;
  }
  // D 64 has the 4-byte path only (launch.cuh epi_wide_auto returns 0 there): no load of
  // epi_wide and no two tests at every tile's epilogue (session 34's tile-boundary diet,
  // bench/notes/fwd-hoist-s34.md).
  constexpr bool kNoWide = kD == 64;
  if (!kNoWide && a.epi_wide == 2) {
    const bool odd = (lane & 1) != 0, hi = (lane & 2) != 0;
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int i = row0 + 8 * r;
      uint16_t* row = out + index64<kNonNeg>(i) * a.out_ss + 8 * (lane & 3);
#pragma unroll
      for (int g = 0; g < kD / 32; ++g) {
        uint32_t v[4];  // v[t]: this lane's pair of column group 4g + t
#pragma unroll
        for (int t = 0; t < 4; ++t)
          v[t] = pack2<BF16>(o[4 * (4 * g + t) + 2 * r] * inv[r],
                             o[4 * (4 * g + t) + 2 * r + 1] * inv[r]);
        // Stage 1 (lanes q, q ^ 1): swap the pairs t with (t & 1) != (q & 1).
        uint32_t r0 = __shfl_xor_sync(0xffffffffu, odd ? v[0] : v[1], 1);
        uint32_t r1 = __shfl_xor_sync(0xffffffffu, odd ? v[2] : v[3], 1);
        v[0] = odd ? r0 : v[0];
        v[1] = odd ? v[1] : r0;
        v[2] = odd ? r1 : v[2];
        v[3] = odd ? v[3] : r1;
        // Stage 2 (lanes q, q ^ 2): swap the pairs t with (t & 2) != (q & 2).
        r0 = __shfl_xor_sync(0xffffffffu, hi ? v[0] : v[2], 2);
        r1 = __shfl_xor_sync(0xffffffffu, hi ? v[1] : v[3], 2);
        v[0] = hi ? r0 : v[0];
        v[1] = hi ? r1 : v[1];
        v[2] = hi ? v[2] : r0;
        v[3] = hi ? v[3] : r1;
        if (i < a.seqlen_q)
          *reinterpret_cast<uint4*>(row + 32 * g) = make_uint4(v[0], v[1], v[2], v[3]);
      }
    }
    store_lse<kNonNeg>(a, lse, b, h, row0, lane);
    return;
  }
  if (!kNoWide && a.epi_wide == 1) {
    const bool odd = (lane & 1) != 0;
    // Column of this lane's 8 bytes in each 16-column pair of groups (2m, 2m + 1).
    const int col = odd ? 8 + 2 * (lane & 3) - 2 : 2 * (lane & 3);
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      const int i = row0 + 8 * r;
      uint16_t* row = out + index64<kNonNeg>(i) * a.out_ss + col;
#pragma unroll
      for (int m = 0; m < kD / 16; ++m) {
        const uint32_t p0 = pack2<BF16>(o[8 * m + 2 * r] * inv[r], o[8 * m + 2 * r + 1] * inv[r]);
        const uint32_t p1 =
            pack2<BF16>(o[8 * m + 4 + 2 * r] * inv[r], o[8 * m + 4 + 2 * r + 1] * inv[r]);
        const uint32_t got = __shfl_xor_sync(0xffffffffu, odd ? p0 : p1, 1);
        if (i < a.seqlen_q)
          *reinterpret_cast<uint2*>(row + 16 * m) = odd ? make_uint2(got, p1) : make_uint2(p0, got);
      }
    }
    store_lse<kNonNeg>(a, lse, b, h, row0, lane);
    return;
  }
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row0 + 8 * r;
    if (i >= a.seqlen_q) continue;
    uint16_t* row = out + index64<kNonNeg>(i) * a.out_ss + 2 * (lane & 3);
#pragma unroll
    for (int j = 0; j < kD / 8; ++j)
      *reinterpret_cast<uint32_t*>(row + 8 * j) =
          pack2<BF16>(o[4 * j + 2 * r] * inv[r], o[4 * j + 2 * r + 1] * inv[r]);
  }
  store_lse<kNonNeg>(a, lse, b, h, row0, lane);
}

// ---------------------------------------------------------------------------------------------
// Session 7 (helper f3fwd17; mainloop.cuh kVarTmaEpi): O through shared memory and a TMA store.
// ---------------------------------------------------------------------------------------------

/// The epilogue of one consumer warp through shared memory: its 16 rows x kD columns of O,
/// normalised and rounded as in store_output (same bits), go with 8 (kD = 128) stmatrix.x4 into
/// `stage` (the shared address of the warp's first row in column chunk 0 of a 128B-swizzled
/// [rows][64] chunk layout, chunks kChunkBytes apart, 1024-byte aligned: the layout TMA reads
/// with the O map's 128B swizzle), then lane 0 issues one TMA store per 64-column chunk (box
/// 64 x 16 rows, FwdArgs::tma_o) and commits the bulk group. The caller keeps `stage` unwritten
/// until lane 0's cp.async.bulk.wait_group.read. lse as in store_output (store_lse).
/// warp_row0 = the global query row of the warp's first row (row0 - lane / 4).
template <int kD, int kChunkBytes, bool BF16>
__device__ __forceinline__ void store_output_tma(const FwdArgs& a, const float (&o)[kD / 2],
                                                 const float (&inv)[2], const float (&lse)[2],
                                                 int b, int h, int row0, int warp_row0, int lane,
                                                 uint32_t stage) {
  // Row r = (i / 2) % 2 of this thread's pair is normalised by inv[r].
  stmatrix_acc_rows<kD, kChunkBytes, BF16>(lane, stage,
                                           [&](int i) { return o[i] * inv[(i >> 1) & 1]; });
  attnkit::cuda::sm90::fence_proxy_async_smem();  // stmatrix (generic) -> TMA store (async)
  __syncwarp();
  if (lane == 0 && warp_row0 < a.seqlen_q) {
#pragma unroll
    for (int c = 0; c < kD / 64; ++c)
      attnkit::cuda::sm90::tma_store_4d(&a.tma_o, stage + c * kChunkBytes, c * 64, warp_row0, h, b);
    attnkit::cuda::sm90::bulk_commit();
  }
  store_lse(a, lse, b, h, row0, lane);
}

#if ATTNKIT_FLASH3_FWD_D256_TMA_EPI
/// (traits.hpp ATTNKIT_FLASH3_FWD_D256_TMA_EPI) store_output through kBufs 2 KB chunks of shared
/// memory per consumer warp: `buf` = the warp's first [16 rows][64 columns] chunk (128B swizzle,
/// 1024-aligned, the next 2 KB after it; FwdTraits::kEpiStageBytes), through which its 16 x kD
/// rows pass 64 columns at a time, column chunk c in chunk c % kBufs. Column chunk c =
/// accumulator elements o[32 c .. 32 c + 31] (acc[4 j + 2 r + e] = row lane / 4 + 8 r, column
/// 8 j + 2 (lane % 4) + e, so columns 64 c .. + 63 are j = 8 c .. 8 c + 7), packed as
/// store_output packs them (pack2 of o * inv[r]: the same bits), then per column chunk:
///   lane 0: cp.async.bulk.wait_group.read kBufs - 1: every store but the last kBufs - 1 has
///           read its chunk, so the one written kBufs stores ago (this tile's column chunk
///           c - kBufs or the previous tile's last ones: every call commits kD / 64 stores, a
///           multiple of kBufs) is free; __syncwarp;
///   4 stmatrix.x4; fence.proxy.async (generic writes -> the TMA's read); __syncwarp;
///   lane 0: the TMA store of the box at (64 c, c1, c2) of FwdArgs::tma_o (rank 3: launch.cuh
///           o_map_d256 says which coordinates the caller passes), commit (one group a store).
/// Column chunk c's pairs are packed before that wait, so that only the stmatrix waits on it.
/// Every warp that calls this has rows < seqlen_q (the caller sends the others nowhere): each
/// call stages and commits all kD / 64 chunks, which the round robin above rests on. (Two 8-row
/// boxes in one 2 KB chunk with wait_group.read 1 would keep one store in flight where a second
/// chunk does not fit (kTcSum), but with the same bytes in flight per warp the reads' latency
/// stays serial; not done.) The caller's lane 0 waits for every store before the warp exits
/// (kernel.cuh). kNonNeg: store_lse's.
template <int kD, int kBufs, bool BF16, bool kNonNeg = false>
__device__ __forceinline__ void store_output_tma_warp(const FwdArgs& a, const float (&o)[kD / 2],
                                                      const float (&inv)[2], const float (&lse)[2],
                                                      int b, int h, int row0, int lane,
                                                      uint32_t buf, int c1, int c2) {
  static_assert((kD / 64) % kBufs == 0, "flash3: whole rounds of the staging chunks a call");
  namespace ptx = attnkit::cuda::sm90;
#pragma unroll
  for (int c = 0; c < kD / 64; ++c) {
    uint32_t pk[16];  // pk[2 jj + r]: row lane / 4 + 8 r, columns 64 c + 8 jj + 2 (lane % 4), + 1
#pragma unroll
    for (int i = 0; i < 16; ++i)
      pk[i] = pack2<BF16>(o[32 * c + 2 * i] * inv[i & 1], o[32 * c + 2 * i + 1] * inv[i & 1]);
    const uint32_t chunk = buf + static_cast<uint32_t>((c % kBufs) * 16 * 128);
    if (lane == 0) ptx::bulk_wait_read<kBufs - 1>();
    __syncwarp();
    stmatrix_packed_rows<64, 16 * 128>(lane, chunk, pk);
    ptx::fence_proxy_async_smem();  // stmatrix (generic) -> TMA store (async)
    __syncwarp();
    if (lane == 0) {
      ptx::tma_store_3d(&a.tma_o, chunk, 64 * c, c1, c2);
      ptx::bulk_commit();
    }
  }
  store_lse<kNonNeg>(a, lse, b, h, row0, lane);
}
#endif

}  // namespace attnkit::flash3
