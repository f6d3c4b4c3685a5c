// ATTNKIT_FLASH3_BWD_EARLY_CONV (bwd_traits.hpp; session 53 helper, compile-checked only): the
// device side of the early dQ conversion of D 128's default structures, next to the plain kernels
// it reuses (bwd_kernel.cuh 1v, 3t, 3w). bench/notes/bwd-early-conv-s53.md has the design and why
// it is correct; in short:
//   - done counters, int [B * Hq] after the dQ workspace: (b, kv head g)'s at b Hq + g group.
//     bwd_preprocess_vec_ec_kernel zeroes them (a plain launch: it cannot start before the
//     previous call's conversion has completed, so it never zeroes what that one still reads).
//   - the main kernel (bwd_kernel.cuh kEarlyConv) triggers its dependents right after its barrier
//     init and, per CTA, each consumer WG bumps (b, g)'s counter once after a WG barrier past its
//     last dQ RED (red.release.gpu). (b, g) is done at kConsumerWGs x N bumps (N key blocks: the
//     CTAs of (b, g), whatever their item counts or order).
//   - the conversions here are launched dependent on the main kernel; a CTA's thread 0 spins on
//     its head's counter (ld.acquire.gpu + nanosleep), a CTA barrier passes that on, and the
//     workspace is then read with plain loads (no ld.global.nc: the main kernel still writes other
//     tiles while this grid runs). The grid's last CTA also runs griddepcontrol.wait, so the
//     conversion grid never completes before the main grid (dK / dV) has: the stream's next work
//     waits for both.
#pragma once

#include <cstdint>
#include <cstdio>

#include "backends/flash3/bwd_kernel.cuh"
#include "core/params.hpp"
#include "cuda/pdl.hpp"
#include "cuda/ptx_sm90.hpp"

// ATTNKIT_FLASH3_BWD_EC_WATCHDOG_S (seconds, default 0 = off): the conversion's spin traps after
// that long, and on a counter past `expected` (ec_wait_head). For the GPU test runs only.
#ifndef ATTNKIT_FLASH3_BWD_EC_WATCHDOG_S
#define ATTNKIT_FLASH3_BWD_EC_WATCHDOG_S 0
#endif

namespace attnkit::flash3::bwd {

/// 1v, plus (b, h)'s done counter zeroed by block (0, h, b). grid / block as 1v's.
template <int D, bool BF16>
__global__ void __launch_bounds__(256)
    bwd_preprocess_vec_ec_kernel(const Params p, int sq_pad, float* __restrict__ lse2,
                                 float* __restrict__ delta, float* __restrict__ dq_acc,
                                 int* __restrict__ done) {
  if (blockIdx.x == 0 && threadIdx.x == 0) done[blockIdx.z * p.heads_q + blockIdx.y] = 0;
  preprocess_vec_rows<D, BF16, false>(p, sq_pad, lse2, delta, dq_acc);
}

/// The conversion CTA of q head blockIdx.y, batch blockIdx.z: waits until its kv head's counter
/// has reached `expected` (the acquire by thread 0, then the CTA barrier: every thread's later
/// loads happen after every counted release, hence after every dQ RED of the head's tiles), and,
/// in the grid's last CTA (the last one dispatched), for the main grid's completion.
__device__ __forceinline__ void ec_wait_head(const Params& p, const int* done, int expected) {
  namespace ptx = attnkit::cuda::sm90;
  if (threadIdx.x == 0) {
    const int h = static_cast<int>(blockIdx.y), group = static_cast<int>(p.group);
    const int* c =
        done + static_cast<int>(blockIdx.z) * static_cast<int>(p.heads_q) + h - h % group;
    // (Heads converted in the main kernel's order: only the last wave's heads ever spin.)
#if ATTNKIT_FLASH3_BWD_EC_WATCHDOG_S > 0
    // Test builds (bench/notes/bwd-early-conv-s53.md): a counter that never fills (a bump lost
    // or sent to another (b, g)) traps after the limit instead of hanging the device, and one
    // past `expected` (a bump counted twice or misrouted) traps at once.
    uint64_t t0;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    int v;
    while ((v = ptx::ld_acquire_gpu(c)) < expected) {
      __nanosleep(256);
      uint64_t t;
      asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
      if (t - t0 > static_cast<uint64_t>(ATTNKIT_FLASH3_BWD_EC_WATCHDOG_S) * 1000000000ull) {
        printf("attnkit ec: b %d h %d counter %d < %d after %d s\n", static_cast<int>(blockIdx.z),
               h, v, expected, ATTNKIT_FLASH3_BWD_EC_WATCHDOG_S);
        __trap();
      }
    }
    if (v != expected) {
      printf("attnkit ec: b %d h %d counter %d > %d\n", static_cast<int>(blockIdx.z), h, v,
             expected);
      __trap();
    }
#else
    while (ptx::ld_acquire_gpu(c) < expected)
      __nanosleep(256);
#endif
    if (blockIdx.x == gridDim.x - 1 && blockIdx.y == gridDim.y - 1 && blockIdx.z == gridDim.z - 1)
      attnkit::cuda::pdl_wait_previous();
  }
  __syncthreads();
}

/// 3t with the wait (grid / block as 3t's).
template <int D, bool BF16>
__global__ void __launch_bounds__(256)
    bwd_dq_convert_m80_ec_kernel(const Params p, int sq_pad, const float* dq_acc, int vec,
                                 const int* done, int expected) {
  ec_wait_head(p, done, expected);
  convert_m80_tile<D, BF16, false>(p, sq_pad, dq_acc, vec);
}

/// 3w with the wait (grid / block as 3w's; dense only).
template <int D, int kDqN, bool BF16>
__global__ void __launch_bounds__(256)
    bwd_dq_convert_rows_ec_kernel(const Params p, int sq_pad, const float* dq_acc, const int* done,
                                  int expected) {
  ec_wait_head(p, done, expected);
  convert_rows_block<D, kDqN, BF16, false, false>(p, sq_pad, dq_acc);
}

}  // namespace attnkit::flash3::bwd
