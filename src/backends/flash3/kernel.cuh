// flash3 forward kernel (sm_90a): shared storage, block -> tile mapping and warp roles.
//
//   grid  = (ceil(Sq / 128), Hq, B); block = 384 threads = 3 warpgroups, 1 CTA per SM.
//   WG0  producer: setmaxnreg down to 24; one thread issues TMA for Q (once) and the K/V ring.
//   WG1, WG2 consumers: setmaxnreg up to 240; each owns 64 query rows and runs
//        S = Q K^T (wgmma, both operands in smem), mask + online softmax in registers,
//        O += P V (wgmma, P from registers), then the epilogue.
// Causal grids run the M blocks in reverse (the longest rows first) for a better tail.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "backends/flash3/epilogue.cuh"
#include "backends/flash3/fwd_args.hpp"
#include "backends/flash3/mainloop.cuh"
#include "backends/flash3/traits.hpp"
#include "cuda/ptx_sm90.hpp"

namespace attnkit::flash3 {

/// Number of K/V tiles a CTA visits (tiles 0 .. n-1; all of them are visited from the last).
template <class Tr>
__device__ __forceinline__ int num_n_blocks(const FwdArgs& a, int m_block) {
  const int total = (a.seqlen_k + Tr::kBlockN - 1) / Tr::kBlockN;
  if (!a.causal) return total;
  int last_row = (m_block + 1) * Tr::kBlockM;
  if (last_row > a.seqlen_q) last_row = a.seqlen_q;
  const int max_key = last_row - 1 + a.causal_offset;  // last visible key of the last row
  if (max_key < 0) return 0;
  const int n = max_key / Tr::kBlockN + 1;
  return n < total ? n : total;
}

template <int D, bool BF16>
__global__ void __launch_bounds__(FwdTraits<D>::kThreads, 1)
    fwd_kernel(const __grid_constant__ FwdArgs args) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Tr = FwdTraits<D>;
  namespace ptx = attnkit::cuda::sm90;
  extern __shared__ uint8_t smem_raw[];
  // Swizzle-128B atoms need 1024-byte alignment; the dynamic window only promises 16.
  uint8_t* smem = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) &
                                             ~uintptr_t{1023});
  SmemLayout<Tr> sm(smem);

  const int m_block = args.causal ? (gridDim.x - 1 - blockIdx.x) : blockIdx.x;
  const int h = blockIdx.y, b = blockIdx.z;
  const int n_blocks = num_n_blocks<Tr>(args, m_block);
  const int wg = threadIdx.x / 128;

  if (threadIdx.x == 0) {
    ptx::mbar_init(sm.bar_q, 1);
    for (int s = 0; s < Tr::kStages; ++s) {
      ptx::mbar_init(&sm.full_k[s], 1);
      ptx::mbar_init(&sm.full_v[s], 1);
      ptx::mbar_init(&sm.empty_k[s], Tr::kConsumerWGs * 4);  // lane 0 of every consumer warp
      ptx::mbar_init(&sm.empty_v[s], Tr::kConsumerWGs * 4);
    }
    ptx::fence_mbar_init();
  }
  __syncthreads();

  if (wg == 0) {
    ptx::setmaxnreg_dec<Tr::kProducerRegs>();
    if (threadIdx.x == 0) producer_loop<Tr>(args, sm, m_block, h, b, n_blocks);
  } else {
    ptx::setmaxnreg_inc<Tr::kConsumerRegs>();
    consumer_loop<Tr, BF16>(args, sm, m_block, h, b, n_blocks, wg - 1, threadIdx.x % 128);
  }
#endif
}

}  // namespace attnkit::flash3
