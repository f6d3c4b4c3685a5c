// Thread-block-cluster helpers of the flash3 forward (sm_90): cluster barrier, rank, remote
// mbarrier arrival and the multicast TMA load. Used only by kernels with FwdTraits::kCluster = 2
// (launch.cuh: D >= 128 non-causal, an even number of m blocks).
//
// Protocol (mainloop.cuh): both CTAs of a cluster run tiles (m, h, b) and (m + 1, h, b) in
// lockstep over the same K/V blocks. For each K (or V) block, CTA r issues the 64-column chunks
// c with c % 2 == r, multicast into the same offset of both CTAs' shared memory, completing on
// the same-offset "full" mbarrier of each; each CTA's producer expects the whole block's bytes
// on its own "full" barrier. A stage may be overwritten only when both CTAs' consumers have
// released it, so "empty" counts the consumer warps of both CTAs and every release arrives on
// both CTAs' barriers. The kernel starts with a cluster barrier (barrier inits visible before
// any remote arrival or multicast) and ends with one (no CTA exits while its peer may still
// arrive on its barriers).
#pragma once

#include <cuda.h>

#include <cstdint>

#include "cuda/ptx_sm90.hpp"

namespace attnkit::flash3::cl {

#if defined(__CUDACC__)
__device__ __forceinline__ uint32_t ctarank() {
  uint32_t r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
/// ctarank without `volatile`: the rank is fixed for the kernel's life, so the compiler may read
/// it once and keep it (mainloop.cuh kD128RingRank: the volatile read put an S2R SR_CgaCtaId +
/// LOP3 into each of the two remote releases of the D 128 multicast twin's steady turn).
__device__ __forceinline__ uint32_t ctarank_pure() {
  uint32_t r;
  asm("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
/// Every thread of every CTA of the cluster (aligned: whole warps).
__device__ __forceinline__ void sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::
                   : "memory");
}
/// One arrival on the mbarrier at the same shared-memory offset in cluster CTA `cta`, with the
/// default (release, CTA scope) semantics, as CUTLASS's ClusterBarrier::arrive(cta_id) does: the
/// reads it orders are this CTA's wgmma operand reads, already complete (wgmma wait) before it.
/// (The first version, .release.cluster, made ptxas put a cluster-scope fence before every
/// arrival: ERRBAR/CGAERRBAR took ~17 % of the stall samples and the cluster kernel ran at
/// 0.70x of the plain one, run 1 of session 3.)
__device__ __forceinline__ void mbar_arrive_remote(uint64_t* bar, uint32_t cta) {
  uint32_t remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;"
               : "=r"(remote)
               : "r"(attnkit::cuda::sm90::smem_u32(bar)), "r"(cta));
  asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" ::"r"(remote) : "memory");
}
/// 4-D tile load multicast to the CTAs in `mask` (same dst / mbarrier offsets in each).
__device__ __forceinline__ void tma_load_4d_multicast(void* dst, const CUtensorMap* map,
                                                      uint64_t* bar, int32_t c0, int32_t c1,
                                                      int32_t c2, int32_t c3, uint16_t mask) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%3, %4, %5, %6}], [%2], %7;" ::"r"(
          attnkit::cuda::sm90::smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(attnkit::cuda::sm90::smem_u32(bar)), "r"(c0),
      "r"(c1), "r"(c2), "r"(c3), "h"(mask)
      : "memory");
}
#endif

}  // namespace attnkit::flash3::cl
