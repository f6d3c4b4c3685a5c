// Hopper (sm_90a) PTX wrappers: mbarrier, TMA (cp.async.bulk.tensor), wgmma descriptors and
// fences, setmaxnreg, plus the host-side tensor-map encoder (cuTensorMapEncodeTiled reached
// through cudaGetDriverEntryPointByVersion, so nothing links -lcuda).
//
// Device functions compile only for __CUDA_ARCH__ >= 900; wgmma and setmaxnreg additionally need
// the arch-specific target (compute_90a / sm_90a). Every wrapper is a single instruction (or a
// retry loop around one) — no hidden synchronisation.
#pragma once

#include <cuda.h>          // CUtensorMap and its enums (types only; no driver symbols are linked)
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include <cuda_runtime.h>

#include <cstdint>

namespace attnkit::cuda::sm90 {

// ---------------------------------------------------------------------------------------------
// Shared-memory addresses
// ---------------------------------------------------------------------------------------------
#if defined(__CUDACC__)
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---------------------------------------------------------------------------------------------
// Global-memory flags between CTAs (the flash3 deterministic backward's turn counters)
// ---------------------------------------------------------------------------------------------
/// Load with acquire semantics at GPU scope: later accesses of this thread are ordered after it.
__device__ __forceinline__ int ld_acquire_gpu(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
/// Store with release semantics at GPU scope: earlier accesses (and, through a barrier, the
/// CTA's) are visible to whoever acquires the value.
__device__ __forceinline__ void st_release_gpu(int* p, int v) {
  asm volatile("st.release.gpu.global.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
/// Reduction add with release semantics at GPU scope (no return value: RED, not ATOM): as
/// st_release_gpu, for a counter that several CTAs bump (the flash3 backward's early dQ
/// conversion, ATTNKIT_FLASH3_BWD_EARLY_CONV).
__device__ __forceinline__ void red_release_gpu_add(int* p, int v) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}

// ---------------------------------------------------------------------------------------------
// mbarrier (64-bit barrier object in shared memory)
// ---------------------------------------------------------------------------------------------
/// Initialise with the number of arrivals that complete one phase.
__device__ __forceinline__ void mbar_init(uint64_t* bar, uint32_t count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_u32(bar)), "r"(count));
}
/// Makes mbarrier.init visible to the async proxy (TMA) and to other threads after a barrier.
__device__ __forceinline__ void fence_mbar_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
/// One arrival plus `bytes` of expected transaction count (TMA completes the bytes).
__device__ __forceinline__ void mbar_arrive_expect_tx(uint64_t* bar, uint32_t bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
               "r"(bytes)
               : "memory");
}
/// One plain arrival; `addr` is the barrier's 32-bit shared-memory address (kernels that keep
/// every address as one 32-bit base + constants use this form: 64-bit pointers spill first).
__device__ __forceinline__ void mbar_arrive(uint32_t addr) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(addr) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t* bar) {
  mbar_arrive(smem_u32(bar));
}
/// Blocks until the phase with parity `parity` (0/1) has completed. A fresh barrier counts its
/// (virtual) previous phase, parity 1, as complete: producers start waiting on "empty" with 1.
/// `addr`: the barrier's 32-bit shared-memory address (see mbar_arrive).
__device__ __forceinline__ void mbar_wait(uint32_t addr, uint32_t parity) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(addr),
      "r"(parity)
      : "memory");
}
__device__ __forceinline__ void mbar_wait(uint64_t* bar, uint32_t parity) {
  mbar_wait(smem_u32(bar), parity);
}
/// mbar_wait with try_wait's suspendTimeHint (ns, PTX ISA 7.8): the thread may stay suspended
/// until the phase completes or the hint elapses, instead of the system-defined limit (the
/// flash3 backward producer re-polled every ~11 cycles without it: bwd_kernel.cuh).
__device__ __forceinline__ void mbar_wait_hint(uint32_t addr, uint32_t parity, uint32_t ns) {
  asm volatile(
      "{\n"
      ".reg .pred done;\n"
      "WAIT_%=:\n"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1, %2;\n"
      "@!done bra WAIT_%=;\n"
      "}\n" ::"r"(addr),
      "r"(parity), "r"(ns)
      : "memory");
}

// ---------------------------------------------------------------------------------------------
// TMA: bulk tensor copies global -> shared, completing on an mbarrier
// ---------------------------------------------------------------------------------------------
/// Prefetches the tensor map (a __grid_constant__ kernel parameter) into the descriptor cache.
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
}
/// 4-D tile load: box at element coordinates (c0 innermost .. c3) into `dst` (1024-byte aligned
/// for 128B swizzle). Out-of-bounds elements are zero-filled; the bytes of the full box count
/// toward the barrier's transaction total.
__device__ __forceinline__ void tma_load_4d(void* dst, const CUtensorMap* map, uint64_t* bar,
                                            int32_t c0, int32_t c1, int32_t c2, int32_t c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4, %5, %6}], [%2];" ::"r"(smem_u32(dst)),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(smem_u32(bar)), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
/// 4-D tile prefetch global -> L2 (the box a tma_load_4d with the same map and coordinates
/// would read; no shared memory, no barrier, nothing to wait for: a hint the memory system may
/// drop). Out-of-bounds parts of the box are not fetched.
__device__ __forceinline__ void tma_prefetch_l2_4d(const CUtensorMap* map, int32_t c0, int32_t c1,
                                                   int32_t c2, int32_t c3) {
  asm volatile("cp.async.bulk.prefetch.tensor.4d.L2.global.tile [%0, {%1, %2, %3, %4}];" ::"l"(
                   reinterpret_cast<uint64_t>(map)),
               "r"(c0), "r"(c1), "r"(c2), "r"(c3)
               : "memory");
}
/// 4-D tile store shared -> global (box at element coordinates c0 .. c3, from `src`, the shared
/// address of a box laid out as the map's swizzle expects), joining the issuing thread's current
/// bulk async-group (bulk_commit, then bulk_wait_read before `src` is overwritten). Elements
/// outside the map's extents are not written.
__device__ __forceinline__ void tma_store_4d(const CUtensorMap* map, uint32_t src, int32_t c0,
                                             int32_t c1, int32_t c2, int32_t c3) {
  asm volatile(
      "cp.async.bulk.tensor.4d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4, %5}], [%1];" ::
          "l"(reinterpret_cast<uint64_t>(map)),
      "r"(src), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
}
/// tma_store_4d for a rank-3 map (c0 .. c2). Its operands fit a quad of uniform registers (the
/// 4-D store's five did not: in the D 256 forward, ptxas then moved every wgmma descriptor of the
/// mainloop's turns through one quad, +26 UMOV a turn; flash3 traits.hpp
/// ATTNKIT_FLASH3_FWD_D256_TMA_EPI).
__device__ __forceinline__ void tma_store_3d(const CUtensorMap* map, uint32_t src, int32_t c0,
                                             int32_t c1, int32_t c2) {
  asm volatile(
      "cp.async.bulk.tensor.3d.global.shared::cta.tile.bulk_group [%0, {%2, %3, %4}], [%1];" ::"l"(
          reinterpret_cast<uint64_t>(map)),
      "r"(src), "r"(c0), "r"(c1), "r"(c2)
      : "memory");
}
/// stmatrix .x4: four 8x8 16-bit matrices; lane l gives the shared address of row l % 8 of
/// matrix l / 8, and r[m] holds this lane's pair of matrix m in the mma accumulator layout
/// (row l / 4, columns 2 (l % 4) .. +1).
__device__ __forceinline__ void stmatrix_x4(uint32_t addr, uint32_t r0, uint32_t r1, uint32_t r2,
                                            uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}
/// stmatrix .x4 .trans: as stmatrix_x4, each 8x8 matrix stored transposed: the row lane l
/// addresses (row l % 8 of matrix l / 8) receives column l % 8 of the fragment, i.e. the 8
/// fragment rows' elements at that column, in fragment-row order.
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t addr, uint32_t r0, uint32_t r1,
                                                  uint32_t r2, uint32_t r3) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1, %2, %3, %4};" ::"r"(addr),
               "r"(r0), "r"(r1), "r"(r2), "r"(r3)
               : "memory");
}

// ---------------------------------------------------------------------------------------------
// Named barriers (bar.sync / bar.arrive on ids 1..15; id 0 is __syncthreads). `threads` counts
// every participating thread (syncing + arriving), a multiple of 32.
// ---------------------------------------------------------------------------------------------
__device__ __forceinline__ void named_bar_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_bar_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

/// Orders this thread's generic-proxy shared-memory writes before later async-proxy accesses
/// (wgmma operand reads, TMA stores).
__device__ __forceinline__ void fence_proxy_async_smem() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}
/// Orders this thread's async-proxy global accesses (completed bulk reduce-adds) with its
/// generic-proxy ones (a release store after them; or, after an acquire, later bulk operations).
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

// ---------------------------------------------------------------------------------------------
// wgmma: fences and groups (the instructions themselves live with their users; see
// src/backends/flash3/wgmma_ops.hpp)
// ---------------------------------------------------------------------------------------------
#if defined(__CUDA_ARCH_FEAT_SM90_ALL) || !defined(__CUDA_ARCH__)
/// Orders register/shared accesses before the next wgmma.mma_async of this warpgroup.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}
/// Waits until at most N committed wgmma groups of this warpgroup are pending.
template <int N>
__device__ __forceinline__ void wgmma_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// setmaxnreg: per-warpgroup register reallocation. Needs a register cap at kernel entry
// (__launch_bounds__(threads, 1)); every warp of the warpgroup must execute it.
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
  static_assert(R % 8 == 0 && R >= 24 && R <= 256, "setmaxnreg range");
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
  static_assert(R % 8 == 0 && R >= 24 && R <= 256, "setmaxnreg range");
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}
#endif

/// Keeps the compiler from moving accesses of `x` across this point (wgmma accumulators are
/// written asynchronously behind the compiler's back).
__device__ __forceinline__ void reg_fence(float& x) {
  asm volatile("" : "+f"(x)::"memory");
}
__device__ __forceinline__ void reg_fence(uint32_t& x) {
  asm volatile("" : "+r"(x)::"memory");
}
#endif  // __CUDACC__

/// wgmma shared-memory matrix descriptor for the 128-byte swizzle mode (bits: [0,14) start
/// address >> 4, [16,30) leading byte offset >> 4, [32,46) stride byte offset >> 4, [62,64)
/// layout = 1 for SWIZZLE_128B). Swizzle atoms are 8 rows x 128 bytes = 1024 bytes and must be
/// 1024-byte aligned (base offset 0).
///   K-major (A or B not transposed): rows of 128 B (64 x 16-bit), SBO = 1024 (next 8 rows),
///     LBO unused (1). Advancing K by 16 elements adds 32 bytes to the start address.
///   MN-major (B transposed): LBO = bytes between 64-element MN blocks, SBO = 1024 (next 8 K
///     rows). Advancing K by 16 rows adds 2048 bytes.
struct Sw128Desc {
#if defined(__CUDACC__)
  __host__ __device__
#endif
      static constexpr uint64_t
      make(uint32_t smem_addr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
    return (static_cast<uint64_t>((smem_addr & 0x3FFFF) >> 4)) |
           (static_cast<uint64_t>((lbo_bytes >> 4) & 0x3FFF) << 16) |
           (static_cast<uint64_t>((sbo_bytes >> 4) & 0x3FFF) << 32) | (uint64_t{1} << 62);
  }
};

// ---------------------------------------------------------------------------------------------
// Host: tensor maps
// ---------------------------------------------------------------------------------------------
/// The driver's cuTensorMapEncodeTiled, looked up once. Returns null when the driver lacks it.
inline PFN_cuTensorMapEncodeTiled_v12000 tensor_map_encoder() {
  static PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* p = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess)
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(p);
  }();
  return fn;
}

/// Rank-R 16-bit tensor map (R = 3 or 4): dims[0] innermost (contiguous), strides in BYTES for
/// dims 1..R-1 (each a multiple of 16, < 2^40), box[i] elements per dim (box[0] * 2 <= 128 for
/// SWIZZLE_128B). Returns the CUresult (CUDA_SUCCESS = 0; -1 without the driver's encoder).
template <int R>
inline int encode_tensor_map_16bit(CUtensorMap* map, const void* base, const uint64_t (&dims)[R],
                                   const uint64_t (&byte_strides)[R - 1], const uint32_t (&box)[R],
                                   bool bf16) {
  static_assert(R == 3 || R == 4, "encode_tensor_map_16bit: rank 3 or 4");
  auto fn = tensor_map_encoder();
  if (!fn) return -1;
  cuuint64_t d[R], s[R - 1];
  cuuint32_t b[R], elem_strides[R];
  for (int i = 0; i < R; ++i) {
    d[i] = dims[i];
    b[i] = box[i];
    elem_strides[i] = 1;
    if (i < R - 1) s[i] = byte_strides[i];
  }
  return static_cast<int>(
      fn(map, bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, R,
         const_cast<void*>(base), d, s, b, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
         CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
         CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE));
}

}  // namespace attnkit::cuda::sm90

// --- backward additions ---
// Bulk (non-tensor) TMA reduction from shared to global memory, used by the flash3 backward to
// add a warpgroup's fp32 dQ tile into the workspace in L2 with one instruction instead of
// 2048 vector atomics. Needs sm_90; tested in tests/backends/flash3/ptx_sm90_bwd_test.cu.
namespace attnkit::cuda::sm90 {
#if defined(__CUDACC__)
/// gdst[0 .. bytes/4) += ssrc[0 .. bytes/4) element-wise as fp32 (performed at L2, atomic per
/// element). gdst and ssrc 16-byte aligned, bytes a multiple of 16. Joins the issuing thread's
/// current bulk async-group: follow with bulk_commit(), then bulk_wait_read<N>() before the
/// shared source is overwritten.
__device__ __forceinline__ void bulk_reduce_add_f32(float* gdst, const void* ssrc, uint32_t bytes) {
  asm volatile(
      "cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" ::"l"(gdst),
      "r"(smem_u32(ssrc)), "r"(bytes)
      : "memory");
}
/// Bulk copy global -> shared (no tensor map): `bytes` (multiple of 16, both addresses 16-byte
/// aligned) complete as transaction bytes on `bar` (count them in mbar_arrive_expect_tx).
__device__ __forceinline__ void bulk_load_g2s(void* sdst, const void* gsrc, uint32_t bytes,
                                              uint64_t* bar) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
          "r"(smem_u32(sdst)),
      "l"(gsrc), "r"(bytes), "r"(smem_u32(bar))
      : "memory");
}
/// Closes the issuing thread's current bulk async-group.
__device__ __forceinline__ void bulk_commit() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
/// Waits until at most N of this thread's bulk groups still READ their shared source.
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
/// Waits until at most N of this thread's bulk groups are pending (writes done, visible).
template <int N>
__device__ __forceinline__ void bulk_wait() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}
#endif  // __CUDACC__
}  // namespace attnkit::cuda::sm90
