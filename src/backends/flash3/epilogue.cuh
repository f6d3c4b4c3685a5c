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

namespace attnkit::flash3 {

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

}  // namespace attnkit::flash3
