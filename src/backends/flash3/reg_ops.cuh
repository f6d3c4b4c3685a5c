// Register-level helpers shared by the flash3 forward and backward kernels.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "cuda/ptx_sm90.hpp"

namespace attnkit::flash3 {

/// x (the same in every lane) through REDUX, whose result is a uniform register: ptxas then
/// keeps what is derived from it (ring slot addresses, wgmma descriptors) in the uniform
/// datapath instead of rebuilding each descriptor in vector registers and moving it with R2UR
/// per wgmma (its own analysis does not prove loop-carried ring positions uniform). All 32 lanes
/// must be active.
__device__ __forceinline__ int warp_uniform(int x) {
  return static_cast<int>(__reduce_min_sync(0xffffffffu, static_cast<unsigned>(x)));
}

/// Descriptor `d` moved `bytes` further in shared memory: only the 14-bit start-address field
/// (bits 0-13, address >> 4) changes, and it cannot carry out since every shared address here
/// is < 256 KB. Adding to the low word alone keeps the high word (strides, swizzle mode) a loop
/// invariant: per wgmma one integer add instead of rebuilding the descriptor (5-6 vector
/// instructions + 2 R2UR per wgmma in the SASS of v5; run 1 of session 3 counted 682 issued
/// instructions per warp and K/V block at D = 128 vs cuDNN's 621).
__device__ __forceinline__ uint64_t desc_add(uint64_t d, uint32_t bytes) {
  const uint32_t lo = static_cast<uint32_t>(d) + (bytes >> 4);
  return (d & 0xFFFFFFFF00000000ull) | lo;
}

/// d with its low word (address, LBO) through REDUX (warp_uniform; all 32 lanes active), so
/// ptxas keeps a stage-dependent descriptor in uniform registers.
__device__ __forceinline__ uint64_t uniform_lo(uint64_t d) {
  return (d & 0xFFFFFFFF00000000ull) |
         static_cast<uint32_t>(warp_uniform(static_cast<int>(static_cast<uint32_t>(d))));
}

/// Two fp32 values rounded to one packed 16-bit pair (bf16 or f16), low half = a.
template <bool BF16>
__device__ __forceinline__ uint32_t pack2(float a, float b) {
  if constexpr (BF16) {
    __nv_bfloat162 v = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<uint32_t*>(&v);
  } else {
    __half2 v = __floats2half2_rn(a, b);
    return *reinterpret_cast<uint32_t*>(&v);
  }
}

/// Ties registers written asynchronously by wgmma to this point in program order, so the
/// compiler cannot hoist their reads above a wgmma_wait (or sink writes below an issue).
template <int N>
__device__ __forceinline__ void fence_regs(float (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    attnkit::cuda::sm90::reg_fence(x[i]);
}
template <int N>
__device__ __forceinline__ void fence_regs(uint32_t (&x)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
    attnkit::cuda::sm90::reg_fence(x[i]);
}

/// The 16 x kCols rows of a warp's m64 accumulator, as 16-bit pairs (reg(i) = the pair of
/// accumulator elements 2 i, 2 i + 1: row lane / 4 + 8 (i % 2), columns 8 (i / 2) + 2 (lane % 4),
/// + 1), by stmatrix.x4 from the warp's first row at `stage` (1024-aligned chunks of 128-byte
/// rows, 128B swizzle, kChunkBytes apart): stmatrix_acc_rows, stmatrix_packed_rows.
template <int kCols, int kChunkBytes, class Reg>
__device__ __forceinline__ void stmatrix_rows(int lane, uint32_t stage, Reg reg) {
  const int l7 = lane & 7, hi = (lane >> 4) & 1;
  // Row of the warp's 16 that this lane addresses: matrix (lane / 8) & 1 is the upper / lower 8.
  const uint32_t row_addr = stage + static_cast<uint32_t>((l7 + 8 * ((lane >> 3) & 1)) * 128);
#pragma unroll
  for (int j = 0; j < kCols / 16; ++j) {
    // Matrices 0 / 1: rows 0-7 / 8-15 of columns 16 j .. + 7 (16-byte group 2 j of its chunk);
    // 2 / 3: the same rows of columns 16 j + 8 .. + 15. 128B swizzle: group g of row r at unit
    // (g % 8) ^ (r % 8), r % 8 = l7 (stage is 1024-aligned).
    const int g = 2 * (j % 4) + hi;
    const uint32_t addr = row_addr + (j / 4) * kChunkBytes + static_cast<uint32_t>((g ^ l7) << 4);
    attnkit::cuda::sm90::stmatrix_x4(addr, reg(4 * j), reg(4 * j + 1), reg(4 * j + 2),
                                     reg(4 * j + 3));
  }
}

/// One warp's 16 rows x kD columns of an m64nkD accumulator (acc[4 j + 2 r + e] = row lane / 4 +
/// 8 r, column 8 j + 2 (lane % 4) + e), value(i) = the fp32 to store for accumulator index i,
/// rounded by pack2, go with kD / 16 stmatrix.x4 into `stage`: the shared address of the warp's
/// first row in column chunk 0 of a 128B-swizzled [rows][64] chunk layout, chunks kChunkBytes
/// apart, 1024-aligned (the layout a TMA store with a 128B-swizzle map reads). The forward's O
/// epilogue (epilogue.cuh store_output_tma) and the backward's dK / dV one (kTmaKV) use it.
template <int kD, int kChunkBytes, bool BF16, class Value>
__device__ __forceinline__ void stmatrix_acc_rows(int lane, uint32_t stage, Value value) {
  stmatrix_rows<kD, kChunkBytes>(
      lane, stage, [&](int i) { return pack2<BF16>(value(2 * i), value(2 * i + 1)); });
}

/// stmatrix_acc_rows for values already packed as the m64 accumulator's 16-bit pairs
/// (packed[2 jj + r] = row lane / 4 + 8 r, columns 8 jj + 2 (lane % 4), + 1: what
/// pack2(acc[4 jj + 2 r], acc[4 jj + 2 r + 1]) gives), kCols columns from the warp's first row
/// at `stage` (1024-aligned chunks of 128-byte rows, 128B swizzle, kChunkBytes apart).
template <int kCols, int kChunkBytes>
__device__ __forceinline__ void stmatrix_packed_rows(int lane, uint32_t stage,
                                                     const uint32_t (&packed)[kCols / 4]) {
  stmatrix_rows<kCols, kChunkBytes>(lane, stage, [&](int i) { return packed[i]; });
}

/// The transpose of stmatrix_packed_rows (the D 128 backward's 80-row blocks, bwd_traits.hpp
/// kDqTrans): packed[2 j + r] = the warp's m64 accumulator pair at row lane / 4 + 8 r (a key),
/// columns 8 j + 2 (lane % 4), + 1 (queries), stored as [query][key] rows of one 128B-swizzled
/// [rows][64] chunk at `chunk` (1024-aligned): query 8 j + i's row gets the warp's 16 keys
/// (16 warp .. + 15 of the chunk's 64) as 16-byte groups 2 warp and 2 warp + 1. kCols / 16
/// stmatrix.x4.trans: lane l addresses row l % 8 of matrix l / 8 = (j = 2 t + (l / 16), r =
/// (l / 8) % 2); the 8 rows of one matrix land in 8 different 16-byte units (group ^ row % 8):
/// no bank conflict.
template <int kCols>
__device__ __forceinline__ void stmatrix_packed_cols(int lane, int warp, uint32_t chunk,
                                                     const uint32_t (&packed)[kCols / 4]) {
  static_assert(kCols % 16 == 0, "whole pairs of 8-column groups");
  const int i = lane & 7, m = lane >> 3;
  const uint32_t unit = static_cast<uint32_t>(((2 * warp + (m & 1)) ^ i) << 4);
  const uint32_t lane_addr = chunk + static_cast<uint32_t>((8 * (m >> 1) + i) * 128) + unit;
#pragma unroll
  for (int t = 0; t < kCols / 16; ++t)
    attnkit::cuda::sm90::stmatrix_x4_trans(lane_addr + static_cast<uint32_t>(t * 16 * 128),
                                           packed[4 * t], packed[4 * t + 1], packed[4 * t + 2],
                                           packed[4 * t + 3]);
}

}  // namespace attnkit::flash3
