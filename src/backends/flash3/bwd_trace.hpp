// Per-item clock64 stamps of the flash3 D 256 backward (session 27), in measurement builds only
// (ATTNKIT_FLASH3_BWD_TRACE defined for every translation unit; bench/gpu/flash3_bwd_trace_run.sh).
// Question: where do the ~2460 clocks per item go that the kernel spends beyond its GEMMs alone
// (call 1: 5860 against 3401 of wgmma_rate_probe's bwd256)?
// Layout: uint64 [kTraceCtas][kTraceItems][2 consumer warpgroups][kTraceStamps], CTA index
// blockIdx.x + gridDim.x (blockIdx.y + gridDim.y blockIdx.z); stamps taken by each warpgroup's
// thread 0 (0 = not reached): see TraceStamp. The launcher writes the last call's buffer to the
// file named by ATTNKIT_FLASH3_BWD_TRACE_OUT (raw little-endian uint64, nothing else).
#pragma once

namespace attnkit::flash3::bwd {

inline constexpr int kTraceCtas = 264;  // two waves of 132 SMs
inline constexpr int kTraceItems = 64;
inline constexpr int kTraceStamps = 9;
inline constexpr long long kTraceWords =
    static_cast<long long>(kTraceCtas) * kTraceItems * 2 * kTraceStamps;

// The descriptions are the split layout's; the RS layout (bwd_d256_rs.cuh) stamps the points it
// shares with them and says which in its own comment.
enum TraceStamp : int {
  kStampTop = 0,     // item start
  kStampIssued = 1,  // Q / dO landed (full wait) and S^T / dP^T issued
  kStampSdp = 2,     // S^T / dP^T complete (wgmma wait)
  kStampSoft = 3,    // P^T / dS^T computed and stored, before the item's 256-thread barrier
  kStampBar = 4,     // barrier passed
  kStampDq = 5,      // dQ / dV / dK issued and complete, dQ's second half stored (under dK)
  kStampRed = 6,     // dQ's first half stored and the proxy fence passed (session 27: atomics)
  kStampDone = 7,    // dV / dK complete, stage released
  kStampLanded = 8,  // (session 28) Q / dO landed: the full-barrier wait passed, nothing issued
};

#if defined(__CUDACC__)
/// Stamp k of item `it` by consumer warpgroup w (its thread tid 0 writes; the first kTraceCtas
/// CTAs and kTraceItems items only). Measurement builds only: otherwise nothing, and Args (the
/// kernels' BwdArgs) has no trace pointer.
template <typename Args>
__device__ __forceinline__ void trace_stamp([[maybe_unused]] const Args& a,
                                            [[maybe_unused]] int tid, [[maybe_unused]] int w,
                                            [[maybe_unused]] int it, [[maybe_unused]] int k) {
#if defined(ATTNKIT_FLASH3_BWD_TRACE)
  const long long cta = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  if (a.trace != nullptr && tid == 0 && cta < kTraceCtas && it < kTraceItems)
    a.trace[((cta * kTraceItems + it) * 2 + w) * kTraceStamps + k] = clock64();
#endif
}
#endif

}  // namespace attnkit::flash3::bwd
