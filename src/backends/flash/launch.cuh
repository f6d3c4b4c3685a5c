// Launchers and the run_fwd / run_bwd templates: grid, shared memory and the fast/general variant
// choice. Included only by the generated instantiation files.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "backends/flash/bwd_kernel.cuh"
#include "backends/flash/fwd_kernel.cuh"
#include "backends/flash/launch.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/device_info.hpp"
#include "cuda/pdl.hpp"
#include "cuda/workspace.hpp"

namespace attnkit::flash {

/// Softcap, ALiBi, masks and dropout need the general score path; causal/window do not.
inline bool needs_general(const Params& p) {
  return p.softcap > 0.f || p.alibi != nullptr || p.mask_kind != MaskKind::none ||
         p.dropout_threshold != 0;
}

template <typename Kernel>
void set_smem(Kernel kernel, int bytes) {
  if (bytes > 48 * 1024)
    ATTNKIT_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
}

/// CTAs of `kernel` (threads, smem bytes per CTA) that device `dev` holds at once: blocks per SM
/// (at least 1) x SMs. The occupancy query (after set_smem) runs once per device; `cache` is the
/// calling kernel's own (per device index, 0 = not asked yet).
template <typename Kernel>
int64_t resident_ctas(int (&cache)[64], Kernel kernel, int threads, int smem, int dev) {
  int per_sm = dev >= 0 && dev < 64 ? cache[dev] : 0;
  if (per_sm == 0) {
    set_smem(kernel, smem);
    ATTNKIT_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, threads, smem));
    if (dev >= 0 && dev < 64) cache[dev] = per_sm;
  }
  return static_cast<int64_t>(per_sm > 0 ? per_sm : 1) * cuda::device_info(dev).sm_count;
}

/// The forward's split tail (fwd_tail.cuh) for a launch of the 64-row D = 256 kernel: true when
/// it ran the forward (two launches), false when the caller launches as usual. Non-causal, no
/// window, no varlen (every tile the same key blocks), sm_90+ (programmatic dependent launch).
/// Auto (FwdTailKnob mode -1): when the last wave is partial and holds at most 80 % of the
/// slots (every BENCHMARKS.md shape at D = 256: 2048 tiles on 264 slots, 200 in the last wave)
/// and each tile has at least ATTNKIT_FLASH_FWD_TAIL_MIN_BLOCKS key blocks (shorter ones lost).
template <int D, typename T>
bool launch_fwd_split_tail(const Params& p) {
  using Tr = FwdTraits<D, 64>;
  const FwdTailKnob knob = fwd_tail_knob();
  const int dev = p.device.index;
  if (knob.mode == 0 || p.causal != Causal::none || p.window_left >= 0 || p.window_right >= 0 ||
      p.varlen || p.seqlen_k <= 0 || cuda::device_info(dev).arch < 90)
    return false;
  auto first = fwd_kernel<D, T, false, 64, false, true>;
  auto second = fwd_tail_kernel<D, T>;
  int slots = knob.slots;
  if (slots <= 0) {
    static int per_sm_cache[64] = {};
    slots = static_cast<int>(resident_ctas(per_sm_cache, first, Tr::kThreads, Tr::kSmemBytes, dev));
  }
  const int64_t num_m = (p.seqlen_q + Tr::kBM - 1) / Tr::kBM;
  const int64_t per_batch = num_m * p.heads_q, tiles = per_batch * p.batch;
  const int64_t n_blocks = (p.seqlen_k + Tr::kBN - 1) / Tr::kBN;
  const int64_t rest = tiles % slots;
  // (rest * n_blocks >= slots: every CTA of the tail gets at least one key block; < 2^40:
  // TailRanges::begin's c * W stays far inside int64.)
  const bool can =
      tiles > slots && rest > 0 && rest * n_blocks >= slots && rest * n_blocks < (int64_t{1} << 40);
  const bool want = knob.mode == 1 || (5 * rest <= 4 * static_cast<int64_t>(slots) &&
                                       n_blocks >= ATTNKIT_FLASH_FWD_TAIL_MIN_BLOCKS);
  if (!can || !want) return false;
  // The first launch: whole batches of tiles of the full waves; the second: the tiles left of
  // the full waves (fewer than one batch's), then the tail's `rest` tiles in block ranges.
  const int64_t batches = knob.single ? 0 : (tiles - rest) / per_batch;
  FwdTailArgs ta;
  ta.first_tile = batches * per_batch;
  ta.whole = static_cast<int>(tiles - rest - ta.first_tile);
  ta.ranges.tiles = rest;
  ta.ranges.n_blocks = n_blocks;
  ta.ranges.ctas = slots;
  // Every allocation before the first launch: nothing may come between the two kernels.
  auto stream = static_cast<cudaStream_t>(p.stream);
  constexpr int kWords = kPieceWords<Tr::kMT, D / 8>;
  const size_t ws_bytes = static_cast<size_t>(2) * slots * Tr::kWarps * kWords * 32 * sizeof(float);
  ta.ws = static_cast<float*>(cuda::workspace(ws_bytes, dev, stream));
  ta.counters = cuda::zeroed_counters(static_cast<size_t>(rest), dev, stream);
  set_smem(first, Tr::kSmemBytes);
  set_smem(second, Tr::kSmemBytes);
  if (batches > 0) {
    const dim3 grid(static_cast<unsigned>(num_m), static_cast<unsigned>(p.heads_q),
                    static_cast<unsigned>(batches));
    first<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p, nullptr);
    ATTNKIT_CUDA_CHECK_LAUNCH();
  }
  // (Without the first launch: plain.)
  cuda::launch_dependent(second, dim3(static_cast<unsigned>(ta.whole + slots)), dim3(Tr::kThreads),
                         Tr::kSmemBytes, stream, batches > 0 && !knob.plain, p, ta);
  set_last_fwd_tail_tiles(static_cast<int>(rest));
  return true;
}

template <int D, typename T>
void launch_fwd(const Params& p) {
  using Tr = FwdTraits<D>;
  set_last_fwd_tail_tiles(0);
  if (p.batch == 0 || p.seqlen_q == 0 || p.heads_q == 0) return;
  cuda::DeviceGuard guard(p.device.index);
  if constexpr (Tr::kCausalBm64MaxS > 0 || Tr::kNonCausalBm64MaxS > 0) {
    // D = 256, short queries: 64-row blocks (FwdTraits::kCausalBm64MaxS, kNonCausalBm64MaxS).
    const int64_t bm64_max_s =
        p.causal != Causal::none ? Tr::kCausalBm64MaxS : Tr::kNonCausalBm64MaxS;
    if (!needs_general(p) && p.seqlen_q <= bm64_max_s) {
      if constexpr (D == 256) {
        if (launch_fwd_split_tail<D, T>(p)) return;
      }
      using Tr64 = FwdTraits<D, 64>;
      const dim3 grid(static_cast<unsigned>((p.seqlen_q + Tr64::kBM - 1) / Tr64::kBM),
                      static_cast<unsigned>(p.heads_q), static_cast<unsigned>(p.batch));
      auto kernel = fwd_kernel<D, T, false, 64>;
      set_smem(kernel, Tr64::kSmemBytes);
      kernel<<<grid, Tr64::kThreads, Tr64::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(
          p, nullptr);
      ATTNKIT_CUDA_CHECK_LAUNCH();
      return;
    }
  }
  const int64_t num_m = (p.seqlen_q + Tr::kBM - 1) / Tr::kBM;
  dim3 grid(static_cast<unsigned>(num_m), static_cast<unsigned>(p.heads_q),
            static_cast<unsigned>(p.batch));
  if constexpr (Tr::kKV2) {
    // Two K / V buffers (FwdTraits::kKV2, 192 KiB at D = 256, 48 KiB at D = 64) where the
    // device allows it; D = 64 only up to kKV2MaxS keys.
    if (!needs_general(p) && p.seqlen_k <= Tr::kKV2MaxS &&
        static_cast<size_t>(Tr::kSmemBytesKV2) <=
            cuda::device_info(p.device.index).smem_per_block_optin) {
      auto kernel = fwd_kernel<D, T, false, ATTNKIT_FLASH_FWD_BM_256, true>;
      set_smem(kernel, Tr::kSmemBytesKV2);
      kernel<<<grid, Tr::kThreads, Tr::kSmemBytesKV2, static_cast<cudaStream_t>(p.stream)>>>(
          p, nullptr);
      ATTNKIT_CUDA_CHECK_LAUNCH();
      return;
    }
  }
  auto kernel = needs_general(p) ? fwd_kernel<D, T, true> : fwd_kernel<D, T, false>;
  set_smem(kernel, Tr::kSmemBytes);
  int* tile_ctr = nullptr;
  if constexpr (Tr::kPersist) {
    // Fast path: 1-D grid of resident CTAs taking tiles from a zeroed counter (fwd_kernel).
    if (!needs_general(p)) {
      static int per_sm_cache[64] = {};
      const int dev = p.device.index;
      const int64_t total = num_m * p.heads_q * p.batch;
      const int64_t resident =
          resident_ctas(per_sm_cache, kernel, Tr::kThreads, Tr::kSmemBytes, dev);
      grid = dim3(static_cast<unsigned>(total < resident ? total : resident));
      auto stream = static_cast<cudaStream_t>(p.stream);
      tile_ctr = static_cast<int*>(cuda::workspace(sizeof(int), dev, stream));
      ATTNKIT_CUDA_CHECK(cudaMemsetAsync(tile_ctr, 0, sizeof(int), stream));
    }
  }
  kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, static_cast<cudaStream_t>(p.stream)>>>(p, tile_ctr);
  ATTNKIT_CUDA_CHECK_LAUNCH();
}

/// True when the FA-2 schedule (fused kernel + dQ atomics) runs this backward: not asked to be
/// deterministic, and its shared memory fits the device (else the deterministic kernels run,
/// which need less at D = 96 / 128 on 99 KiB sm86 / sm89 parts).
template <int D>
bool use_fused_bwd(const Params& p) {
  return !p.deterministic && static_cast<size_t>(BwdFusedTraits<D>::kSmemBytes) <=
                                 cuda::device_info(p.device.index).smem_per_block_optin;
}

template <int D, typename T>
void launch_bwd(const Params& p) {
  if (p.batch == 0 || p.heads_q == 0) return;
  auto stream = static_cast<cudaStream_t>(p.stream);
  const bool general = needs_general(p);
  const bool fused = use_fused_bwd<D>(p);
  cuda::DeviceGuard guard(p.device.index);
  const size_t rows = static_cast<size_t>(p.batch) * p.heads_q * (p.seqlen_q > 0 ? p.seqlen_q : 1);
  // One stream-ordered scratch block: delta (B, Hq, seqlen_q) fp32, then (fused only)
  // dQ_accum (B, Hq, seqlen_q, D) fp32 at the next 256-byte boundary.
  // Fused with BwdFusedTraits::kStatsWs: the packed stats (B, Hq, stats_blocks, 2, kBM) fp32
  // (bwd_delta_kernel<T, kBM>) in delta's place.
  constexpr bool kStatsWs = BwdFusedTraits<D>::kStatsWs;
  constexpr int kStatsBM = BwdFusedTraits<D>::kBM;
  const bool packed = fused && kStatsWs;
  const size_t stat_rows = packed
                               ? static_cast<size_t>(p.batch) * p.heads_q *
                                     (p.seqlen_q > 0 ? stats_blocks<kStatsBM>(p) * 2 * kStatsBM : 1)
                               : rows;
  const size_t delta_bytes = (stat_rows * sizeof(float) + 255) / 256 * 256;
  const size_t accum_bytes = fused ? static_cast<size_t>(p.batch) * p.heads_q *
                                         (p.seqlen_q > 0 ? dq_rows<D>(p) : 1) * D * sizeof(float)
                                   : 0;
  auto* ws =
      static_cast<uint8_t*>(cuda::workspace(delta_bytes + accum_bytes, p.device.index, stream));
  float* delta = reinterpret_cast<float*>(ws);
  float* dq_accum = fused ? reinterpret_cast<float*>(ws + delta_bytes) : nullptr;
  // ATTNKIT_FLASH_BWD_DELTA_ZERO: the delta kernel zeroes dQ_accum (its slot rows are the packed
  // stats rows with DQ_PERM) instead of a memset.
  constexpr bool kDeltaZero =
      ATTNKIT_FLASH_BWD_DELTA_ZERO != 0 && kStatsWs && BwdFusedTraits<D>::kDqPerm;
  const bool zero_in_delta = kDeltaZero && packed && p.seqlen_q > 0;
  if (fused && !zero_in_delta)
    ATTNKIT_CUDA_CHECK(cudaMemsetAsync(dq_accum, 0, accum_bytes, stream));
  if (p.seqlen_q > 0) {
    // ATTNKIT_FLASH_BWD_DELTA_LANES: D / 8 lanes per row (8..32), 256 / kLanes rows per block.
    constexpr int kLanes =
        ATTNKIT_FLASH_BWD_DELTA_LANES == 0 ? 32 : (D <= 64 ? 8 : (D <= 128 ? 16 : 32));
    constexpr int kRowsPerBlock = 8 * (32 / kLanes);
    const int64_t delta_rows = packed ? stats_blocks<kStatsBM>(p) * kStatsBM : p.seqlen_q;
    const dim3 grid(static_cast<unsigned>((delta_rows + kRowsPerBlock - 1) / kRowsPerBlock),
                    static_cast<unsigned>(p.heads_q), static_cast<unsigned>(p.batch));
    if (zero_in_delta) {
      if constexpr (kDeltaZero)
        bwd_delta_zero_kernel<T, kStatsBM, kLanes, D><<<grid, 256, 0, stream>>>(p, delta, dq_accum);
    } else if (packed) {
      bwd_delta_kernel<T, kStatsBM, kLanes><<<grid, 256, 0, stream>>>(p, delta);
    } else {
      bwd_delta_kernel<T, 0, kLanes><<<grid, 256, 0, stream>>>(p, delta);
    }
    ATTNKIT_CUDA_CHECK_LAUNCH();
  }
  if (fused) {
    if (p.seqlen_k > 0) {
      using Tr = BwdFusedTraits<D>;
      const dim3 grid(static_cast<unsigned>((p.seqlen_k + Tr::kBN - 1) / Tr::kBN),
                      static_cast<unsigned>(p.heads_kv), static_cast<unsigned>(p.batch));
      auto kernel = general ? bwd_fused_kernel<D, T, true> : bwd_fused_kernel<D, T, false>;
      // DQ_MID's order from ATTNKIT_FLASH_BWD_DQ_MID_MIN_SK keys on (traits.hpp), the other
      // below; the general path keeps its compile-time order.
      if constexpr (kDqMidClass<D>) {
        if (!general && p.seqlen_k < ATTNKIT_FLASH_BWD_DQ_MID_MIN_SK)
          kernel = bwd_fused_kernel<D, T, false, false>;
      }
      set_smem(kernel, Tr::kSmemBytes);
      kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p, delta, dq_accum);
      ATTNKIT_CUDA_CHECK_LAUNCH();
    }
    if (p.seqlen_q > 0) {  // also when seqlen_k == 0: dQ = 0 from the zeroed accumulator
      const int64_t threads = (p.seqlen_q * D / 8 + 255) / 256;
      const dim3 grid(static_cast<unsigned>(threads), static_cast<unsigned>(p.heads_q),
                      static_cast<unsigned>(p.batch));
      bwd_dq_convert_kernel<D, T><<<grid, 256, 0, stream>>>(p, dq_accum);
      ATTNKIT_CUDA_CHECK_LAUNCH();
    }
    return;
  }
  if (p.seqlen_k > 0) {
    using Tr = BwdKVTraits<D>;
    const dim3 grid(static_cast<unsigned>((p.seqlen_k + Tr::kBN - 1) / Tr::kBN),
                    static_cast<unsigned>(p.heads_kv), static_cast<unsigned>(p.batch));
    auto kernel = general ? bwd_dkdv_kernel<D, T, true> : bwd_dkdv_kernel<D, T, false>;
    set_smem(kernel, Tr::kSmemBytes);
    kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p, delta);
    ATTNKIT_CUDA_CHECK_LAUNCH();
  }
  if (p.seqlen_q > 0) {
    using Tr = BwdQTraits<D>;
    const dim3 grid(static_cast<unsigned>((p.seqlen_q + Tr::kBM - 1) / Tr::kBM),
                    static_cast<unsigned>(p.heads_q), static_cast<unsigned>(p.batch));
    auto kernel = general ? bwd_dq_kernel<D, T, true> : bwd_dq_kernel<D, T, false>;
    set_smem(kernel, Tr::kSmemBytes);
    kernel<<<grid, Tr::kThreads, Tr::kSmemBytes, stream>>>(p, delta);
    ATTNKIT_CUDA_CHECK_LAUNCH();
  }
}

template <int D, bool kBf16>
using Elem = std::conditional_t<kBf16, __nv_bfloat16, __half>;

template <int D, bool kBf16>
void run_fwd(const Params& p) {
  launch_fwd<D, Elem<D, kBf16>>(p);
}
template <int D, bool kBf16>
void run_bwd(const Params& p) {
  launch_bwd<D, Elem<D, kBf16>>(p);
}

}  // namespace attnkit::flash
