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

/// lse of this thread's rows row0 and row0 + 8 (those < seqlen_q), from lane 0 of each quad.
/// (store_output keeps its own copy inside its row loop: calling this there changed the SASS of
/// the measured default kernels.)
__device__ __forceinline__ void store_lse(const FwdArgs& a, const float (&lse)[2], int b, int h,
                                          int row0, int lane) {
  if (a.lse == nullptr || (lane & 3) != 0) return;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row0 + 8 * r;
    if (i < a.seqlen_q)
      a.lse[b * a.lse_sb + h * a.lse_sh + static_cast<int64_t>(i) * a.lse_ss] = lse[r];
  }
}

/// o: 64 x kD accumulator (kD/2 registers), row0 = global query row of this thread's r = 0.
template <int kD, bool BF16>
__device__ __forceinline__ void store_output(const FwdArgs& a, float (&o)[kD / 2],
                                             const float (&inv)[2], const float (&lse)[2], int b,
                                             int h, int row0, int lane) {
  uint16_t* out = static_cast<uint16_t*>(a.out) + b * a.out_sb + h * a.out_sh;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int i = row0 + 8 * r;
    if (i >= a.seqlen_q) continue;
    uint16_t* row = out + static_cast<int64_t>(i) * a.out_ss + 2 * (lane & 3);
#pragma unroll
    for (int j = 0; j < kD / 8; ++j)
      *reinterpret_cast<uint32_t*>(row + 8 * j) =
          pack2<BF16>(o[4 * j + 2 * r] * inv[r], o[4 * j + 2 * r + 1] * inv[r]);
    if (a.lse != nullptr && (lane & 3) == 0)
      a.lse[b * a.lse_sb + h * a.lse_sh + static_cast<int64_t>(i) * a.lse_ss] = lse[r];
  }
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

}  // namespace attnkit::flash3
