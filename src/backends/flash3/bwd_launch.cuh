// Host side of the flash3 backward: workspace, tensor maps, the three launches.
// Included only by the backward instantiation files (one per head dim and dtype).
#pragma once

#include <cuda_runtime.h>

#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "attnkit/error.hpp"
#include "backends/flash3/bwd_args.hpp"
#include "backends/flash3/bwd_kernel.cuh"
#include "backends/flash3/bwd_launch.hpp"
#include "backends/flash3/bwd_traits.hpp"
#include "core/params.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/ptx_sm90.hpp"
#include "cuda/workspace.hpp"

namespace attnkit::flash3 {
namespace bwd {

/// Tensor map over a logical [B, S, H, D] 16-bit tensor with element strides st (d-stride 1),
/// box (64, box_rows, 1, 1), 128B swizzle. Size-1 dims get a harmless valid stride (TMA rejects
/// 0 and non-multiples of 16 bytes). Same encoding as the forward's maps.
inline void make_map(CUtensorMap* map, const void* base, const Strides4& st, int64_t b, int64_t s,
                     int64_t h, int64_t d, uint32_t box_rows, bool bf16, const char* what) {
  const uint64_t dims[4] = {static_cast<uint64_t>(d), static_cast<uint64_t>(s < 1 ? 1 : s),
                            static_cast<uint64_t>(h), static_cast<uint64_t>(b)};
  const int64_t raw[3] = {st.s, st.h, st.b};
  uint64_t bytes[3];
  for (int i = 0; i < 3; ++i)
    bytes[i] =
        dims[i + 1] == 1 ? static_cast<uint64_t>(d) * 2 * 16 : static_cast<uint64_t>(raw[i]) * 2;
  const uint32_t box[4] = {64, box_rows, 1, 1};
  const int r = cuda::sm90::encode_tensor_map_4d_16bit(map, base, dims, bytes, box, bf16);
  if (r != 0)
    throw Error(ErrorCode::kCudaError,
                std::string("flash3 backward: cuTensorMapEncodeTiled failed for ") + what +
                    " (CUresult " + std::to_string(r) + ")");
}

inline constexpr int kMaxDevices = 64;

/// Reads a measurement / fallback switch from the environment once per process: a comma list
/// of head dims ("64,128"), "1" or "all" for every D; returns whether D is listed. Unset: false.
inline bool env_lists_head_dim(const char* name, int d) {
  const char* e = std::getenv(name);
  if (e == nullptr) return false;
  const std::string v(e);
  size_t pos = 0;
  while (pos <= v.size()) {
    const size_t end = v.find(',', pos) == std::string::npos ? v.size() : v.find(',', pos);
    const std::string tok = v.substr(pos, end - pos);
    if (tok == "1" || tok == "all" || tok == std::to_string(d)) return true;
    pos = end + 1;
  }
  return false;
}

}  // namespace bwd

namespace bwd {
template <int D, bool BF16, bool kDecoupled, int BM, bool kDqFirst, bool kStatShfl = false>
void launch_backward(const Params& p) {
  using Tr = bwd::BwdTraits<D, kDecoupled, BM>;
  if (p.batch == 0 || p.heads_q == 0) return;
  auto stream = static_cast<cudaStream_t>(p.stream);
  // Query rows padded to whole kBlockM-row blocks (at least one), so the kernel's lse2 / delta /
  // dQ-workspace accesses need no bounds checks.
  const int64_t m_blocks = p.seqlen_q > 0 ? (p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM : 1;
  const int64_t sq_pad = m_blocks * Tr::kBlockM;
  const int64_t bh = p.batch * p.heads_q;
  // Workspace (fp32): lse2 [bh, sq_pad] | delta [bh, sq_pad] | dq_acc [bh, sq_pad, D].
  const size_t rows = static_cast<size_t>(bh) * static_cast<size_t>(sq_pad);
  float* ws = static_cast<float*>(
      cuda::workspace(rows * (2 + static_cast<size_t>(D)) * sizeof(float), p.device.index, stream));
  float* lse2 = ws;
  float* delta = ws + rows;
  float* dq_acc = ws + 2 * rows;

  {
    const dim3 grid(static_cast<unsigned>(sq_pad / 8), static_cast<unsigned>(p.heads_q),
                    static_cast<unsigned>(p.batch));
    bwd::bwd_preprocess_kernel<BF16>
        <<<grid, 256, 0, stream>>>(p, static_cast<int>(sq_pad), lse2, delta, dq_acc);
    ATTNKIT_CUDA_CHECK_LAUNCH();
  }

  if (p.seqlen_k > 0) {
    bwd::BwdArgs a{};
    // Sq = 0: the Q/dO maps are never read (no CTA has an item) but must be encodable.
    const bool has_q = p.seqlen_q > 0;
    bwd::make_map(&a.tma_q, has_q ? p.q : p.k, has_q ? p.q_st : p.k_st, p.batch,
                  has_q ? p.seqlen_q : p.seqlen_k, has_q ? p.heads_q : p.heads_kv, D, Tr::kBlockM,
                  BF16, "q");
    bwd::make_map(&a.tma_do, has_q ? p.dout : p.k, has_q ? p.dout_st : p.k_st, p.batch,
                  has_q ? p.seqlen_q : p.seqlen_k, has_q ? p.heads_q : p.heads_kv, D, Tr::kBlockM,
                  BF16, "dout");
    bwd::make_map(&a.tma_k, p.k, p.k_st, p.batch, p.seqlen_k, p.heads_kv, D, Tr::kBlockN, BF16,
                  "k");
    bwd::make_map(&a.tma_v, p.v, p.v_st, p.batch, p.seqlen_k, p.heads_kv, D, Tr::kBlockN, BF16,
                  "v");
    a.lse2 = lse2;
    a.delta = delta;
    a.dq_acc = dq_acc;
    a.dk = p.dk;
    a.dk_sb = p.dk_st.b;
    a.dk_ss = p.dk_st.s;
    a.dk_sh = p.dk_st.h;
    a.dv = p.dv;
    a.dv_sb = p.dv_st.b;
    a.dv_ss = p.dv_st.s;
    a.dv_sh = p.dv_st.h;
    a.seqlen_q = static_cast<int>(p.seqlen_q);
    a.seqlen_k = static_cast<int>(p.seqlen_k);
    a.sq_pad = static_cast<int>(sq_pad);
    a.heads_q = static_cast<int>(p.heads_q);
    a.group = static_cast<int>(p.group);
    a.causal = p.causal != Causal::none;
    a.causal_offset =
        p.causal == Causal::bottom_right ? static_cast<int>(p.seqlen_k - p.seqlen_q) : 0;
    a.num_m_blocks = static_cast<int>((p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM);
    a.scale = p.scale;
    a.scale_log2 = p.scale * static_cast<float>(M_LOG2E);
    // dQ path: bulk reduce-add for D = 128, float2 atomics for D = 64 (run 2, H200, same-process
    // A/B, decoupled kernel): D = 64 atomics 274 vs bulk 254 TFLOP/s at S = 4k, 291 vs 271 at
    // 16k (staging 16 KB through smem costs smem bandwidth, which the m64n64 SS GEMMs already
    // saturate); D = 128 bulk 399 vs atomics 358 at 4k, 434 vs 356 at 16k (its decoupled dQ
    // tile is 64 x 128 per warpgroup: twice the atomics).
    // Env ATTNKIT_FLASH3_BWD_DQBULK / _DQATOMIC (lists of D, read once) override the default.
    static const bool env_bulk = bwd::env_lists_head_dim("ATTNKIT_FLASH3_BWD_DQBULK", D);
    static const bool env_atomic = env_lists_head_dim("ATTNKIT_FLASH3_BWD_DQATOMIC", D);
    const int mode = bwd_tuning().dq_mode;
    a.dq_bulk = mode >= 0 ? mode : env_bulk ? 1 : env_atomic ? 0 : (D >= 128 ? 1 : 0);

    auto kernel = bwd::bwd_kernel<D, BF16, kDecoupled, BM, kDqFirst, kStatShfl>;
    // The shared-memory opt-in is per device (idempotent: a race only repeats the call).
    static std::atomic<bool> attr_set[bwd::kMaxDevices] = {};
    int dev = 0;
    ATTNKIT_CUDA_CHECK(cudaGetDevice(&dev));
    if (dev < 0 || dev >= bwd::kMaxDevices) dev = 0;
    if (!attr_set[dev].load(std::memory_order_acquire)) {
      ATTNKIT_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                              Tr::kSmemBytes));
      attr_set[dev].store(true, std::memory_order_release);
    }
    const dim3 grid(static_cast<unsigned>((p.seqlen_k + Tr::kBlockN - 1) / Tr::kBlockN),
                    static_cast<unsigned>(p.heads_kv), static_cast<unsigned>(p.batch));
    kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(a);
    ATTNKIT_CUDA_CHECK_LAUNCH();
  }

  if (p.seqlen_q > 0) {
    const dim3 grid(static_cast<unsigned>((p.seqlen_q + 7) / 8), static_cast<unsigned>(p.heads_q),
                    static_cast<unsigned>(p.batch));
    bwd::bwd_dq_convert_kernel<D, Tr::kDqN, BF16>
        <<<grid, 256, 0, stream>>>(p, static_cast<int>(sq_pad), dq_acc);
    ATTNKIT_CUDA_CHECK_LAUNCH();
  }
}

}  // namespace bwd

/// Variant per call, from bwd_tuning() where a knob is set (>= 0), else the environment (read
/// once; measurement and fallback switches), else the measured default:
///   block_m 128 (D = 64 only; always coupled): env ATTNKIT_FLASH3_BWD_BM128 lists D;
///   decoupled warpgroups (default) or coupled (run 1's kernel): env ATTNKIT_FLASH3_BWD_COUPLED;
///   dQ-first GEMM order (kDqFirst in bwd_kernel.cuh; not for decoupled D = 128): env
///   ATTNKIT_FLASH3_BWD_DQFIRST; block_m 128: lse2 / delta by shuffles (kStatShfl): env
///   ATTNKIT_FLASH3_BWD_STATSHFL.
template <int D, bool BF16>
void run_backward(const Params& p) {
  static const bool env_coupled = bwd::env_lists_head_dim("ATTNKIT_FLASH3_BWD_COUPLED", D);
  static const bool env_bm128 = bwd::env_lists_head_dim("ATTNKIT_FLASH3_BWD_BM128", D);
  static const bool env_dq_first = bwd::env_lists_head_dim("ATTNKIT_FLASH3_BWD_DQFIRST", D);
  static const bool env_stat_shfl = bwd::env_lists_head_dim("ATTNKIT_FLASH3_BWD_STATSHFL", D);
  const BwdTuning& t = bwd_tuning();
  const bool bm128 = D == 64 && (t.block_m > 0 ? t.block_m == 128 : env_bm128);
  const bool decoupled = !bm128 && (t.decoupled >= 0 ? t.decoupled != 0 : !env_coupled);
  const bool dq_first =
      !(decoupled && D >= 128) && (t.dq_first >= 0 ? t.dq_first != 0 : env_dq_first);
  if constexpr (D == 64) {
    if (bm128) {
      const bool shfl = t.stat_shfl >= 0 ? t.stat_shfl != 0 : env_stat_shfl;
      if (dq_first && shfl)
        bwd::launch_backward<D, BF16, false, 128, true, true>(p);
      else if (dq_first)
        bwd::launch_backward<D, BF16, false, 128, true, false>(p);
      else if (shfl)
        bwd::launch_backward<D, BF16, false, 128, false, true>(p);
      else
        bwd::launch_backward<D, BF16, false, 128, false, false>(p);
      return;
    }
  }
  if (decoupled) {
    if constexpr (D < 128) {
      if (dq_first) {
        bwd::launch_backward<D, BF16, true, 64, true>(p);
        return;
      }
    }
    bwd::launch_backward<D, BF16, true, 64, false>(p);
  } else if (dq_first) {
    bwd::launch_backward<D, BF16, false, 64, true>(p);
  } else {
    bwd::launch_backward<D, BF16, false, 64, false>(p);
  }
}

}  // namespace attnkit::flash3
