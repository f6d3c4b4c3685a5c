// Host side of the flash3 forward: tensor maps from Params, grid, shared-memory opt-in, launch.
// Included only by the instantiation files (one per head dim and dtype).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "attnkit/error.hpp"
#include "backends/flash3/fwd_args.hpp"
#include "backends/flash3/kernel.cuh"
#include "backends/flash3/launch.hpp"
#include "backends/flash3/lpt_schedule.hpp"
#include "backends/flash3/seq_bounds.hpp"
#include "backends/flash3/smem_opt_in.hpp"
#include "backends/flash3/tensor_map.hpp"
#include "backends/flash3/traits.hpp"
#include "core/env.hpp"
#include "core/params.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/pdl.hpp"
#include "cuda/ptx_sm90.hpp"
#include "cuda/workspace.hpp"

namespace attnkit::flash3 {

/// Kernels that have a 2-CTA-cluster variant (cluster.cuh): K/V blocks of >= 2 column chunks,
/// the default tiles and 2 consumer warpgroups.
template <int D, int BN, int WGs>
inline constexpr bool kClusterCapable = D >= 128 && BN == 0 && WGs == 2;

/// Causal launches use persistent CTAs only up to this many m blocks (see run_forward).
inline constexpr int kCausalPersistentMaxMBlocks = 32;

/// Multiprocessors of the current device (the persistent grid size), read once per device.
inline int sm_count() {
  static std::atomic<int> cached[kMaxDevices] = {};
  const int dev = current_device();
  int n = cached[dev].load(std::memory_order_relaxed);
  if (n == 0) {
    ATTNKIT_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
    cached[dev].store(n, std::memory_order_relaxed);
  }
  return n;
}

/// The split tail (tail.cuh) of a static persistent launch of `kernel` on `ctas` CTAs (a, as
/// launch_forward filled it): true when it ran the forward as two launches, false when the
/// caller launches as usual. `eligible`: the launch is one the tail kernel can continue (a
/// static schedule (FwdArgs::num_rounds), persistent, no cluster (but the multicast twin with
/// cluster_cfg, below), more tiles than CTAs; D = 128:
/// the diet kernels, D = 256 (session 20): any 64-key kernel). Non-causal only (every
/// tile has the same blocks). Auto (Tuning::tail_split = -1): when the last round holds at most
/// 80 % of the CTAs (68 of 132 at every BENCHMARKS.md shape) and each tile has at least
/// kTailMinKeys<D> keys (in whole K/V blocks). Session 19, H100, D 128 non-causal, interleaved A/B
/// against the tail off (bench/results/2026-11-23-h100-flash3-s19-tail-ab2.json, 2 rounds, 2 copies
/// each): S 1k 0.92-0.95, 2k 0.98, 4k 1.004-1.007, 8k 1.005-1.015, 16k 1.023-1.024. Launch 2 has
/// fixed costs beyond its work (its CTAs start only as launch 1's leave, a pipeline fill per piece,
/// the merge: 1 + 10.5 us in the trace of its first version, bench/gpu/flash3_tail_trace.py; the
/// second was not traced), and at 1k the partial last round costs launch 1 only ~6 us (launch 1
/// alone saved 6 of 233 us): it pays from 32 blocks (4096 keys). D = 256 (64-key blocks, 1024
/// tiles of 128 rows at every BENCHMARKS.md shape: 7.76 rounds, 100 tiles in the last; session
/// 20, same method, bench/results/2026-11-23-h100-flash3-s20-tail256.md): 4k 0.997-1.007 (no
/// gain), 8k 1.017-1.019, 16k 1.022-1.027: from 8192 keys (128 blocks).
template <int D>
inline constexpr int kTailMinKeys = D == 256 ? 8192 : 4096;
/// `cluster_cfg` (session 57, Tuning::multicast_tail; null otherwise): launch 1 is the 2-CTA
/// multicast twin, launched with this config (launch_forward's cfg: the cluster attribute, its
/// smem and stream; gridDim set here to `ctas`). Its static pair schedule stays whole: ctas is
/// even (2 x the clusters that fit) and so is num_tiles (an even m-block count), hence
/// rest = num_tiles % ctas and tail_first = num_tiles - rest are even, and the full rounds give
/// every CTA pair (2c, 2c + 1) tiles (r ctas + 2c, r ctas + 2c + 1) = (m, m + 1) of one head with
/// m even, as without the tail; the partial round, which the twin would run on rest / 2 pairs,
/// goes to launch 2's plain (non-cluster) tail kernel instead.
template <int D, bool BF16, int BN, int WGs, int VS, int kDietVar>
bool launch_split_tail(const Params& p, FwdArgs& a, void (*kernel)(FwdArgs), int kernel_smem,
                       bool eligible, int ctas, cudaStream_t stream,
                       const cudaLaunchConfig_t* cluster_cfg = nullptr) {
  using Tr = FwdTraits<D, BN, WGs, VS>;
  const int rest = a.num_tiles % ctas;
  const int64_t n_blocks = (p.seqlen_k + Tr::kBlockN - 1) / Tr::kBlockN;
  if (!eligible || a.causal || rest == 0 || n_blocks <= 0 || tuning().tail_split == 0) return false;
  const int min_blocks =
      tuning().tail_min_blocks >= 0 ? tuning().tail_min_blocks : kTailMinKeys<D> / Tr::kBlockN;
  if (tuning().tail_split < 0 && !(5 * rest <= 4 * ctas && n_blocks >= min_blocks)) return false;
  // Launch 2 (whatever slot launch 1 runs; it runs less than one round): D = 128 the unordered
  // diet kernel with the STG epilogue, ping-pong as that kernel's auto; D = 256 the ordered
  // slot-11 kernel (launch 1's past Sk 4096 until session 46, when launch 1 took the diet at every
  // Sk), ping-pong as launch 1's (off until session 53). Not the D = 256 diet: with it the tail
  // kernel spilled 464 B, all from the merge (128 values per lane; 40 B without the merge), without
  // it 32 B (ptxas, sm_90a). Likely the diet's O, which lives from tile to tile (the first P V
  // names it with scale-d 0); zeroing it before the merge did not help.
  constexpr int kTailVar =
      D == 256 ? kVarUniformDesc | kVarLazyRescale | kVarOrdered | kVarTail : kDietVar | kVarTail;
  constexpr auto tail_kernel = &fwd_kernel<D, BF16, BN, WGs, VS, kTailVar>;
  // (its own traits' size: at ATTNKIT_FLASH3_FWD_D256_TMA_EPI 3 the base traits Tr hold O's
  // staging region, which the tail kernel, never a TMA-store one, does not have)
  constexpr int kTailSmem = FwdTraitsOf<D, BN, WGs, VS, kTailVar>::kSmemBytes;
  opt_in_smem<tail_kernel>(kTailSmem);
  FwdArgs a2 = a;  // (ping-pong as launch 1's: its knob, or at D 256 its auto, session 53)
  if (D != 256 && tuning().pingpong < 0) a2.pingpong = 1;
  a2.tail_first = a.num_tiles - rest;
  a2.tail.tiles = rest;
  a2.tail.n_blocks = n_blocks;
  // (At least one block per CTA: TailRanges needs blocks() >= ctas. W * ctas < 2^31: the
  // kernel's range arithmetic is 32-bit, tail.cuh tail_begin32.)
  a2.tail.ctas = std::min<int64_t>(ctas, a2.tail.blocks());
  if (a2.tail.blocks() * a2.tail.ctas >= INT32_MAX) return false;
  // Every allocation before launch 1: nothing may come between the two kernels.
  constexpr int kWarps = Tr::kConsumerWGs * 4;
  const size_t ws_bytes =
      static_cast<size_t>(2 * a2.tail.ctas) * kWarps * kTailWords<Tr::kD> * 32 * sizeof(float);
  a2.tail_ws = static_cast<float*>(cuda::workspace(ws_bytes, p.device.index, stream));
  a2.tail_counters =
      cuda::zeroed_counters(static_cast<size_t>(rest) * kWarps, p.device.index, stream);
  a.num_rounds = a.num_tiles / ctas;  // launch 1: the full rounds (static_tile)
  const int probe = tuning().tail_probe;
  if (probe != 2 && cluster_cfg != nullptr) {  // (the twin: kernel_smem is in cluster_cfg)
    cudaLaunchConfig_t cfg1 = *cluster_cfg;
    cfg1.gridDim = dim3(ctas);
    ATTNKIT_CUDA_CHECK(cudaLaunchKernelEx(&cfg1, kernel, a));
  } else if (probe != 2) {
    kernel<<<dim3(ctas), Tr::kThreads, kernel_smem, stream>>>(a);
    ATTNKIT_CUDA_CHECK_LAUNCH();
  }
  set_last_forward_tail_tiles(rest);
  if (probe == 1) return true;
  cuda::launch_dependent(tail_kernel, dim3(static_cast<unsigned>(a2.tail.ctas)), dim3(Tr::kThreads),
                         kTailSmem, stream, probe == 0, a2);
  return true;
}

/// The FwdArgs fields every forward launch of traits Tr fills the same way: tensor maps, output,
/// lse, lengths, causal rule, tile counts, scale.
template <class Tr, bool BF16>
FwdArgs base_args(const Params& p) {
  constexpr int D = Tr::kD;
  FwdArgs a{};
  // Varlen (session 24, kVarVarlen): maps over the packed [1, total, H, D] tensors (TMA
  // zero-fills rows past the packed end; rows of the next sequence are loaded and masked, or
  // computed and not stored).
  // The maps' D is the call's: a 96 / 192 head dim on the 128 / 256 kernel (kVarNarrow) reads
  // zeros past it (TMA's out-of-bounds fill).
  const int64_t mb = p.varlen ? 1 : p.batch;
  const int64_t sq = p.varlen ? p.total_q : p.seqlen_q, sk = p.varlen ? p.total_k : p.seqlen_k;
  const int64_t d = p.head_dim <= D ? p.head_dim : D;
  make_map(&a.tma_q, p.q, p.q_st, mb, sq, p.heads_q, d, Tr::kBlockM, BF16, "q");
  // Sk = 0: the maps are never read (every CTA visits 0 tiles) but must still be encodable.
  make_map(&a.tma_k, sk > 0 ? p.k : p.q, sk > 0 ? p.k_st : p.q_st, mb, sk, p.heads_kv, d,
           Tr::kKBoxRows, BF16, "k");
  make_map(&a.tma_v, sk > 0 ? p.v : p.q, sk > 0 ? p.v_st : p.q_st, mb, sk, p.heads_kv, d,
           Tr::kVBoxRows, BF16, "v");
  a.out = p.out;
  a.out_sb = p.out_st.b;
  a.out_ss = p.out_st.s;
  a.out_sh = p.out_st.h;
  a.lse = p.lse;
  a.lse_sb = p.lse_st.b;
  a.lse_sh = p.lse_st.h;
  a.lse_ss = p.lse_st.s;
  a.seqlen_q = static_cast<int>(p.seqlen_q);
  a.seqlen_k = static_cast<int>(p.seqlen_k);
  a.group = static_cast<int>(p.group);
  a.causal = p.causal != Causal::none;
  a.causal_offset =
      p.causal == Causal::bottom_right ? static_cast<int>(p.seqlen_k - p.seqlen_q) : 0;
  a.num_m_blocks = static_cast<int>((p.seqlen_q + Tr::kBlockM - 1) / Tr::kBlockM);
  a.heads_q = static_cast<int>(p.heads_q);
  const int64_t tiles = a.num_m_blocks * p.heads_q * p.batch;
  if (tiles > INT32_MAX) throw Error(ErrorCode::kUnsupported, "flash3: more than 2^31 tiles");
  a.num_tiles = static_cast<int>(tiles);
  a.scale = p.scale;
  a.scale_log2 = p.scale * static_cast<float>(M_LOG2E);
  return a;
}

/// Scheduler auto (launch_forward says why): dynamic on causal launches of more than
/// kCausalPersistentMaxMBlocks m blocks, unless Tuning::scheduler / persistent say otherwise.
inline bool long_causal_launch(const FwdArgs& a) {
  return a.causal && a.num_m_blocks > kCausalPersistentMaxMBlocks;
}
/// Tuning::lpt_schedule's value for a launch of head dim `d` (the auto resolved). Session 47
/// (H200, flash3_knob_ab.py --blocks 1.0, 3 rounds, against the zig-zag rounds / the dynamic
/// scheduler, bench/results/2026-11-30-h200-flash3-s47.md call 2): under the power cap the table
/// raises the work per cycle by 0.4-4.9 % but draws more power: the clock (8-105 MHz lower) gives
/// most of it back.
/// It still won at D 64 causal 4k (+0.8 / +2.8 / +3.0 %) and 16k (lpt 2: +0.9 / +1.4 / +1.8 %)
/// and at D 256 causal 4k (+0.8 / +0.9 / +1.1 %); it lost at 1k-2k (D 128 / 256 -1.0 %, D 64
/// 2k -0.4 %) and at D 128 causal 16k (lpt 2, -1.5 %; D 128 4k +0.6 %, noise). Auto: D 64 causal
/// from kLptMinSeqlenQ query rows (also the long launches, instead of the dynamic scheduler),
/// D 256 causal from kLptMinSeqlenQ on the static schedule (<= 32 m blocks: S_q <= 4096).
/// Against session 46's defaults (call 5, blocks): D 64 causal +1.9 / +2.0 / +0.9 % at 4k / 8k /
/// 16k, D 256 causal +5.3 / +1.9 % at 3k / 4k (means of 3 rounds).
/// Session 48 (mode 3, the model's auto): every other causal launch on the static schedule
/// asks the model (lpt_schedule.hpp lpt_predicted_gain; mode 3, also Tuning::lpt_schedule = 3):
/// the table where it predicts kLptMinModelGain (lpt_schedule.hpp) or more. The zig-zag rounds are
/// far from balanced at lengths whose m-block count meets the grid badly
/// (bench/causal_balance_model.py
/// --sweep 1024,4096,128 on 132 CTAs: D 256 3712 / 3328 1.59x the mean load, the table 1.01-1.03;
/// D 128 3968 1.37x, 2176 1.32x; D 64 3200 1.21x), where the length rule never looks (S_q < 3072,
/// or D 128). Measured (bench/results/2026-11-30-h200-flash3-s48.md call 1, 1-second blocks, the
/// table against the rounds): D 128 causal 1280 / 2176 / 3200 / 3968 +4.9 / +16.2 / +9.9 / +19.8 %
/// (model +10.4 / 30.1 / 17.7 / 36.0), D 256 1664 / 2560 / 3328 / 3712 +14.5 / +14.6 / +31.0 /
/// +31.9 % (+24.4 / 23.8 / 55.2 / 57.0), D 64 2560 +5.6 % (+16.5): the model's gain per cycle,
/// of which the power cap's lower clock leaves 0.34-0.61.
inline constexpr int64_t kLptMinSeqlenQ = 3072;
/// Session 48 (call 4): mode 3 on the long causal launches too (> 32 m blocks, the
/// dynamic scheduler's auto), the model's baseline there the dynamic scheduler
/// (lpt_schedule.hpp dynamic_max_load): the table where it predicts kLptMinModelGainLong or more,
/// else the dynamic scheduler. Call 3 (1-second blocks, the table forced against the dynamic
/// scheduler): D 256 causal 4224 / 5760 / 6784 +7.9 / +5.6 / +5.7 % (model +17.6 / 11.4 / 12.5),
/// D 128 4224 / 5760 +3.7 / +4.5 % (+8.8 / 8.3); call 4, the auto itself: D 256 causal 8192 +4.7 %
/// (+4.5..+5.0; model +11.3). At the benchmark's 16k the model predicts +0.3 / +0.6 % (D 128 /
/// 256): no table (session 47 measured D 128 -1.5 % with one); D 128 8k +5.6 %: none either (the
/// long launches' bar stays kLptMinModelGainLong = 0.06; the static ones' is 0.035 since session
/// 50).
inline int lpt_mode(const FwdArgs& a, int d) {
  if (tuning().lpt_schedule >= 0) return tuning().lpt_schedule;
  if (!a.causal) return 0;
  if (a.seqlen_q >= kLptMinSeqlenQ && d == 64) return 2;
  if (a.seqlen_q >= kLptMinSeqlenQ && d == 256 && !long_causal_launch(a)) return 1;
  return 3;
}
/// Tuning::round_table (session 70; lpt_schedule.hpp build_round_table): -1 = auto (where the
/// model predicts kRoundTableMinGain or more over the rotated rounds), 0 = off, 1 = on wherever
/// the rounds rotate (any predicted gain). Measured (H200, 1-second
/// blocks, 3 rounds, the auto against rtab:0, rounds 1 / 2; bench/results/2026-12-02-h200-flash3-
/// s70.md calls 3 / 5), D 64 non-causal, B = 16384 / S, 32 heads: S 1024 +1.8 / +2.0 % (model
/// +3.0), 2048 +1.4 / +1.6 (+2.3), 4096 +1.0 / +1.0 (+1.5), 1280 +3.6 / +3.2 (+5.0), 1400
/// +2.3 / +2.2 (+3.2), 2560 +2.7 / +3.1 (+5.0), 3000 +1.0 / +1.4 (+1.7); at 1088 (+0.8, under
/// the bar) forced +0.4..+0.8; 16384 predicts 0 and keeps the rounds.
inline constexpr double kRoundTableMinGain = 0.015;
inline bool round_table_wanted() {
  return tuning().round_table != 0;
}
/// Modes 2 and 3 (launch_forward only): the long causal launches run the static schedule with the
/// table instead of the dynamic scheduler's auto (mode 3: where the model predicts a gain; the
/// dynamic scheduler where the launch gets no table).
inline bool lpt_long_causal(const FwdArgs& a, int lpt) {
  return (lpt == 2 || lpt == 3) && tuning().scheduler < 0 && long_causal_launch(a);
}
/// Tuning::cluster = 3 or its auto (-1: from kMulticast128MinSeqlenK keys at D 128,
/// kMulticast256MinSeqlenK at D 256; launch.hpp). The auto yields to a forced split tail unless
/// the twin takes the tail (Tuning::multicast_tail).
inline bool multicast_wanted(const Params& p, int d) {
  if (tuning().cluster >= 0) return tuning().cluster == 3;
  const bool keys = (d == 128 && p.seqlen_k >= kMulticast128MinSeqlenK) ||
                    (d == 256 && p.seqlen_k >= kMulticast256MinSeqlenK);
  return keys && (tuning().tail_split != 1 || tuning().multicast_tail == 1) &&
         tuning().max_grid <= 0;
}
/// Tuning::multicast_tail or its auto (-1: D 128 from kMulticastTail128MinSeqlenK keys): the
/// multicast twin, where it runs, takes the split tail (launch_split_tail's rule still decides).
inline bool multicast_tail_wanted(const Params& p, int d) {
  if (tuning().multicast_tail >= 0) return tuning().multicast_tail == 1;
  return d == 128 && p.seqlen_k >= kMulticastTail128MinSeqlenK;
}
inline bool dynamic_schedule(const FwdArgs& a) {
  return tuning().persistent &&
         (tuning().scheduler == 1 || (tuning().scheduler < 0 && long_causal_launch(a)));
}

/// Tuning::lpt_partial_pct, or its auto: 67 on the 3-warpgroup D 64 kernel's 192-row tiles (session
/// 61 call 4, H200, 1-second blocks, 3 rounds: D 64 causal 4k +0.5 / +1.0 % in rounds 1 / 2, and
/// +0.5 / +1.1 in a second setup with the same table; 16k +0.2 / +0.3; 50 %: 4k 0.0 / +0.4, 16k
/// -1.2 / -1.0; bench/results/2026-12-01-h200-flash3-s61-call4-ab.*), 100 elsewhere (the model of
/// sessions 46-60; the 2-warpgroup kernels' partial tiles were not measured). (Call 4 also ran the
/// table with these weights on non-causal D 64 instead of the rotated rounds: nc 1k -0.9..-2.6 %,
/// 2k -4.3..-5.7, 4k -3.7..-5.3, 16k -1.5..-2.0; that switch, Tuning::lpt_nc, is in commit
/// 6b18408.)
inline int lpt_partial_pct_auto(int block_m) {
  const int pct = tuning().lpt_partial_pct;
  if (pct >= 1 && pct <= 100) return pct;
  return block_m == 192 ? 67 : 100;
}

/// Session 46 (Tuning::lpt_schedule, lpt_schedule.hpp): the device copy of the balanced static
/// schedule of a causal launch on `ctas` CTAs, built once per shape and device and kept for the
/// process (4 bytes per tile: 16 KB at D 64 causal 1k on 132 CTAs); FwdArgs::num_rounds becomes
/// its rounds. Null (the caller keeps the rounds or the dynamic scheduler) when the model's
/// predicted gain over the zig-zag rounds (long causal launches: the dynamic scheduler) is below
/// min_gain (min_gain < 0: any gain; the gain is kept per shape, and a table nobody ran is never
/// copied), when the stream is capturing a graph and the shape has no device table yet, when the
/// tables would pass kLptCacheBytes, or when the device has no memory for it. Building one costs
/// the host builder (0.19 ms for 4,096 tiles on 132 CTAs: g++ -O2, best of 20, the 2-core dev
/// machine, session 47) and a copy to the device that this call waits for, once per shape (at most
/// kLptCacheShapes shapes per kernel shape class; later ones keep the rounds, or the dynamic
/// scheduler past 32 m blocks). Sections: K and V of
/// 2^k heads within Tuning::lpt_section_mb (the model's balance for 16 and 32 MB:
/// bench/notes/session46.md). Records the predicted gain (set_last_forward_lpt_gain).
/// round_table (session 70, Tuning::round_table): instead, the non-causal launch's rotated rounds
/// rebalanced (lpt_schedule.hpp build_round_table; the gain over rotated_max_load, not recorded).
template <class Tr>
const int* lpt_table_device(const Params& p, FwdArgs& a, int ctas, cudaStream_t stream,
                            double min_gain, bool round_table = false) {
  constexpr size_t kLptCacheBytes = size_t{64} << 20;  // per kernel shape class
  struct Entry {
    int* dev = nullptr;  // (null until a launch runs the table)
    int rounds = 0;
    double gain = 0.0;    // lpt_predicted_gain
    bool failed = false;  // (the device copy failed once: out of memory; never retried)
  };
  static std::mutex mu;
  // (A fixed-size key: no heap allocation on the launches that look a table up every call.)
  static std::map<std::array<int, 13>, Entry> cache;
  static size_t cached_bytes = 0;
  const int bh = a.num_tiles / a.num_m_blocks;
  const int section_mb = tuning().lpt_section_mb > 0 ? tuning().lpt_section_mb : 32;
  const int partial_pct = lpt_partial_pct_auto(Tr::kBlockM);
  const std::array<int, 13> key{current_device(),
                                round_table ? 1 : 0,
                                ctas,
                                bh,
                                Tr::kBlockM,
                                Tr::kBlockN,
                                a.seqlen_q,
                                a.seqlen_k,
                                a.causal_offset,
                                static_cast<int>(p.head_dim),
                                a.group,
                                section_mb,
                                partial_pct};
  // (a tile's model weight by its m block: lpt_partial_weight of the rows it holds)
  const auto rows_weight = [&](int m) {
    return lpt_partial_weight(std::min(Tr::kBlockM, a.seqlen_q - m * Tr::kBlockM), Tr::kBlockM,
                              partial_pct / 100.0);
  };
  auto build = [&] {
    // (non-causal: in-head index i is m block i, and every tile visits the same K/V blocks)
    if (round_table) {
      std::vector<double> weight(a.num_m_blocks);
      for (int i = 0; i < a.num_m_blocks; ++i)
        weight[i] = rows_weight(i);
      LptTable t = build_round_table(weight, bh, ctas);
      const double base = rotated_max_load(weight, bh, ctas);
      return std::make_pair(std::move(t), lpt_predicted_gain(t, base));
    }
    std::vector<int> blocks(a.num_m_blocks);
    std::vector<double> weight;  // (session 61: a head's partial last m block; none at 100 %)
    if (partial_pct < 100) weight.assign(a.num_m_blocks, 1.0);
    for (int i = 0; i < a.num_m_blocks; ++i) {  // (decode_tile: in-head index i, causal m reversed)
      const int m = a.num_m_blocks - 1 - i;     // (only causal launches build a table)
      blocks[i] = num_n_blocks<Tr>(a, m);
      if (!weight.empty()) weight[i] = rows_weight(m);
    }
    const int64_t kv_bytes = 4 * static_cast<int64_t>(p.seqlen_k) * p.head_dim / a.group;
    LptTable t = build_lpt_table(blocks, bh, ctas,
                                 lpt_heads_per_section(kv_bytes, int64_t{section_mb} << 20, bh),
                                 1.0, weight);
    // (The baseline: the schedule the launch runs without a table; session 48.)
    const double base = long_causal_launch(a) ? dynamic_max_load(blocks, bh, ctas, 1.0, weight)
                                              : zigzag_max_load(blocks, bh, ctas, 1.0, weight);
    return std::make_pair(std::move(t), lpt_predicted_gain(t, base));
  };
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(key);
  LptTable host;
  // (Shapes, not bytes, bound the cache too: a decision without a table costs no device memory,
  // but a process that meets many causal shapes must not grow it without end; past
  // kLptCacheShapes new shapes keep the zig-zag rounds, or the dynamic scheduler past 32 m
  // blocks.)
  constexpr size_t kLptCacheShapes = 4096;
  if (it == cache.end() && cache.size() >= kLptCacheShapes) return nullptr;
  if (it == cache.end()) {
    auto [t, gain] = build();
    it = cache.emplace(key, Entry{nullptr, t.rounds, gain}).first;
    host = std::move(t);
  }
  if (!round_table) set_last_forward_lpt_gain(it->second.gain);
  if (it->second.gain < min_gain || it->second.failed) return nullptr;
  if (it->second.dev == nullptr) {
    cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    ATTNKIT_CUDA_CHECK(cudaStreamIsCapturing(stream, &cap));
    if (cap != cudaStreamCaptureStatusNone) return nullptr;
    // (rounds x CTAs entries, known before the table is rebuilt: a shape past the byte budget
    // costs a map lookup per launch, not a build)
    const size_t bytes = static_cast<size_t>(it->second.rounds) * ctas * sizeof(int);
    if (cached_bytes + bytes > kLptCacheBytes) return nullptr;
    if (host.tiles.empty()) host = build().first;  // (the shape's gain was kept, not its table)
    // (Relaxed capture mode for this thread: another thread's global-mode capture must neither
    // fail these calls nor be invalidated by them.)
    cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
    ATTNKIT_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    int* dev = nullptr;
    bool ok = cudaMalloc(&dev, bytes) == cudaSuccess;
    // On the launch's stream, waited for: the table is complete before any stream can read it.
    ok = ok && cudaMemcpyAsync(dev, host.tiles.data(), bytes, cudaMemcpyHostToDevice, stream) ==
                   cudaSuccess;
    ok = ok && cudaStreamSynchronize(stream) == cudaSuccess;
    ATTNKIT_CUDA_CHECK(cudaThreadExchangeStreamCaptureMode(&mode));
    if (!ok) {
      (void)cudaGetLastError();  // (out of memory: the rounds run instead)
      if (dev != nullptr) (void)cudaFree(dev);
      it->second.failed = true;
      return nullptr;
    }
    cached_bytes += bytes;
    it->second.dev = dev;
  }
  a.num_rounds = it->second.rounds;
  return it->second.dev;
}

/// The schedule's precomputed divisors and rounds for a grid of `ctas` CTAs, and the dynamic
/// scheduler's zeroed counter (when `dynamic` and there are more tiles than CTAs).
inline void set_schedule(const Params& p, FwdArgs& a, int ctas, bool dynamic, cudaStream_t stream) {
  {  // (read by kVarTileDiet kernels only: tile_scheduler.cuh FastDiv)
    const FastDiv fm = make_fast_div(a.num_m_blocks), fh = make_fast_div(a.heads_q);
    a.m_div_mul = fm.mul, a.m_div_shift = fm.shift;
    a.h_div_mul = fh.mul, a.h_div_shift = fh.shift;
    a.num_rounds = (a.num_tiles + ctas - 1) / ctas;
    const FastDiv fg = make_fast_div(ctas);
    a.g_div_mul = fg.mul, a.g_div_shift = fg.shift;
  }
  a.tile_counter = nullptr;
  if (dynamic && ctas < a.num_tiles) {
    a.tile_counter = static_cast<int*>(cuda::workspace(sizeof(int), p.device.index, stream));
    ATTNKIT_CUDA_CHECK(cudaMemsetAsync(a.tile_counter, 0, sizeof(int), stream));
  }
}

/// Tuning::q_prefetch, or its auto (launch_forward has the measurements).
inline int q_prefetch_auto(const Params& p, const FwdArgs& a, int D) {
  return tuning().q_prefetch >= 0         ? tuning().q_prefetch
         : D <= 128 && p.seqlen_k <= 4096 ? 2
         : D == 256 && a.causal           ? 4
                                          : 0;
}

/// FwdArgs::epi_wide: Tuning::epi_wide, or its auto (8-byte stores at D >= 128), narrowed to
/// what out's base and strides keep aligned (launch_forward has the measurements). Always 0 at
/// D 64: its kernels keep only the 4-byte path since session 34 (epilogue.cuh store_output).
inline int epi_wide_auto(const Params& p, int D) {
  if (D == 64) return 0;
  auto aligned = [&](int elems) {
    return reinterpret_cast<uintptr_t>(p.out) % (2 * elems) == 0 && p.out_st.b % elems == 0 &&
           p.out_st.s % elems == 0 && p.out_st.h % elems == 0;
  };
  const int want = tuning().epi_wide >= 0 ? tuning().epi_wide : D >= 128 ? 1 : 0;
  return want >= 2 && aligned(8) ? 2 : want >= 1 && aligned(4) ? 1 : 0;
}

#if ATTNKIT_FLASH3_FWD_D256_TMA_EPI
/// (traits.hpp ATTNKIT_FLASH3_FWD_D256_TMA_EPI) O of a D 256 launch as the rank-3 TMA store map of
/// its epilogue (FwdArgs::tma_o; rank 3, not the D 128 path's rank 4: see ptx_sm90.hpp
/// tma_store_3d), box 64 columns x 16 rows (one consumer warp's rows), 128B swizzle. Two of
/// O's [B, Sq, Hq] dims fold into one where the strides allow:
///   1: (D, Sq, Hq x B), strides (s, h): B = 1 or out_sb = Hq out_sh (BHSD); rows >= Sq clipped;
///   2: (D, Hq, B x Sq), strides (h, s): out_sb = Sq out_ss (BSHD); a warp whose rows cross Sq
///      stores with STG (mainloop.cuh consume_tile_simple);
///   0: neither, or the encode failed (the STG epilogue everywhere: never a wrong store).
/// The returned form is FwdArgs::o_tma. (store_map_ok: 16-byte aligned base, d-stride 1, strides
/// of dims with more than one index positive multiples of 8 elements below 2^39.)
inline int o_map_d256(const Params& p, CUtensorMap* map, bool bf16) {
  const int64_t b = p.batch, sq = p.seqlen_q, hq = p.heads_q;
  const Strides4& st = p.out_st;
  if (!store_map_ok(p.out, st, b, sq, hq) || b * sq > INT32_MAX || b * hq > INT32_MAX) return 0;
  // (a size-1 dim's stride is never used; TMA rejects 0 and non-multiples of 16 bytes)
  auto bytes = [&](int64_t n, int64_t stride) {
    return static_cast<uint64_t>(n == 1 ? 256 * 2 * 16 : stride * 2);
  };
  const int form = b == 1 || st.b == hq * st.h ? 1 : st.b == sq * st.s ? 2 : 0;
  if (form == 0) return 0;
  const uint64_t dims[3] = {256, static_cast<uint64_t>(form == 1 ? sq : hq),
                            static_cast<uint64_t>(form == 1 ? hq * b : b * sq)};
  const uint64_t strides[2] = {form == 1 ? bytes(sq, st.s) : bytes(hq, st.h),
                               form == 1 ? bytes(hq * b, st.h) : bytes(b * sq, st.s)};
  const uint32_t box[3] = {64, form == 1 ? 16u : 1u, form == 1 ? 1u : 16u};
  return cuda::sm90::encode_tensor_map_16bit<3>(map, p.out, dims, strides, box, bf16) == 0 ? form
                                                                                           : 0;
}
#endif

/// Session 40: slot 31 with the row sums in P V (kTcSumSlot) unless Tuning::tc_row_sum = 0 or
/// ATTNKIT_FLASH3_FWD_FP32_ROWSUM is set (core/env.hpp flag; read per call): lse from the fp32
/// sum of the unrounded P instead of the tensor core's sum of the 16-bit P (docs/numerics.md).
/// Session 41: D 256's diet kernel (slot 29; the auto at every Sk since session 46) sums on the
/// tensor core from this many keys (it lost 1.1..2.5 % at 1k, gained 1.7..3.5 % at 4k);
/// causal launches at every Sk since session 53 (+1.1..+1.5 % at causal 1k; launch_forward).
inline constexpr int kTc256MinSeqlenK = 2048;
inline bool tc_row_sum_on() {
  return tuning().tc_row_sum != 0 && !env::flag("ATTNKIT_FLASH3_FWD_FP32_ROWSUM");
}

template <int D, bool BF16, int BN, int WGs, int VS = 2, int RS = 0>
void launch_forward(const Params& p) {
  using Tr = FwdTraits<D, BN, WGs, VS, 1, RS>;
  if (p.batch == 0 || p.seqlen_q == 0 || p.heads_q == 0) return;
  FwdArgs a = base_args<Tr, BF16>(p);
  // Read once per launch (a getenv): the ordered auto, the slot 31 -> 37 swap, D 256's sums.
  const bool tc_sums = tc_row_sum_on();

  // Scheduler auto. Static from run 7 (H100, session 2) to session 21: the dynamic hand-over
  // (producer warp -> consumers through one shared int and two named barriers, arrive -> sync)
  // was reported by compute-sanitizer racecheck, and the default path must be sanitizer-clean.
  // Session 22: the hand-over is a slot ring (tile_scheduler.cuh SchedSlot; no report), and
  // dynamic is the auto on causal launches whose static schedule runs one CTA per tile (more
  // than kCausalPersistentMaxMBlocks m blocks: S_q > 6144 for the 192-row D = 64 tiles, > 4096
  // for the 128-row ones). H100 interleaved A/Bs, 2 rounds each, against the same auto twice
  // (bench/results/2026-11-23-h100-flash3-s22.md calls 1-2, 9): D 64 6528 +4.2 %, 8192 +3.5 %,
  // 16384 +1.8 %; D 128 4352-6144 +4.5..+6.5 %, 8192 +4.0..+4.1 %, 16384 +2.2..+2.3 %; D 256
  // +0.6..+1.5 %. Where the static schedule is persistent (causal <= 32 m blocks) dynamic lost:
  // D 64 4096 +-0.4 %, 2048 -1.7 %; D 128 2048 / 4096 -2.8..-3.6 %; D 256 2048 / 4096 -5 %;
  // non-causal D 64 1k-8k -0.1..-2.7 % (run 7's +5 % at 1k did not repeat on today's kernels).
  const bool long_causal = long_causal_launch(a);
  const int lpt = lpt_mode(a, D);  // (the balanced table: lpt_mode, below)
  const bool lpt_long = lpt_long_causal(a, lpt);
  bool dynamic = dynamic_schedule(a) && !lpt_long;  // (lpt 2 / 3 without a table: set below)
  // Cluster of 2 with K/V multicast (cluster.cuh): D >= 128 non-causal, static schedule, an even
  // number of m blocks (the CTA pair (2c, 2c+1) then always holds tiles (m, m+1) of one (b, h)
  // with m even: the static order is m fastest and the grid is even), at least one key.
  // Session-4 code generation (mainloop.cuh kVarUniformDesc / kVarLazyRescale): kernels of
  // their own (slots 9-11), without the other variant bits (those are A/B-only and measured
  // neutral) and without the cluster.
  // Auto (-1): on at D = 256 unless another variant knob asks for its own kernel (those A/Bs
  // keep measuring what they name). Session 5 (helper f3fwd9): uniform descriptors also at
  // D = 128 (128-key tiles, 2 consumer warpgroups) for Sk <= 4096: H100 same-run A/B against
  // the session-4 default +0.5 / +1.9 % (S = 1k non-causal / causal), +0.7 / +1.4 % (4k), every
  // repeat above both old ones (bench/results/2026-11-22-h100-f3fwd9-run1.md). Gated at 4096
  // because the session-4 H200 run lost -2 to -6 % at 16k (16k repeats vary by up to 10 % on
  // the H100, so this run did not settle 16k).
  const bool s4_ok = !tuning().early_rescale && tuning().v_stages == 2 && tuning().cluster != 2;
  const bool s4_auto = D == 256 && s4_ok;
  const bool uni_auto =
      s4_auto || (s4_ok && D == 128 && Tr::kBlockN == 128 && WGs == 2 && p.seqlen_k <= 4096);
  const bool uni = tuning().uniform_desc < 0 ? uni_auto : tuning().uniform_desc != 0;
  const bool lazy = tuning().lazy_rescale < 0 ? s4_auto : tuning().lazy_rescale != 0;
  const int s4 = (uni ? 1 : 0) | (lazy ? 2 : 0);
  // Q from registers in Q K^T (mainloop.cuh kVarQReg; slot 12, with uniform descriptors):
  // D = 128, 128-key tiles only, alone (ignored with legacy_desc; lazy_rescale is not in it).
  constexpr bool kQRegCapable = D == 128 && Tr::kBlockN == 128 && WGs == 2 && !Tr::kFused;
  const bool qreg = kQRegCapable && tuning().q_regs && !tuning().legacy_desc;
  // Session 7 (helper f3fwd15): the per-tile instruction diet (mainloop.cuh kVarTileDiet; slot
  // 13, with uniform descriptors, without the other variant bits): D = 128, 128-key tiles,
  // 2 V stages only (Tuning::tile_diet; q_regs and legacy_desc take precedence). Auto: where
  // the uniform descriptors are on by auto (it runs with them), nothing else forced.
  // Session 7 (helper f3fwd16): also D = 64 (128-key tiles, 2 or 3 consumer warpgroups, 2 V
  // stages; forced by tile_diet = 1, not in the auto): there slot 13 runs the diet without
  // uniform descriptors (as the D = 64 default, which has none), slot 14 with them (uniform_desc
  // forced on with it).
  // D = 256 (64-key tiles, the tile-at-a-time consumer consume_tile_simple; not the 128-key
  // fused / ring ones): slot 13 with the D = 256 default's uniform descriptors + lazy rescale.
  constexpr bool kDietCapable = (kQRegCapable || (D == 64 && Tr::kBlockN == 128 && !Tr::kFused) ||
                                 (D == 256 && Tr::kBlockN == 64 && !Tr::kFused)) &&
                                VS == 2;
  constexpr int kDietVar = kVarTileDiet | (D == 128 ? kVarUniformDesc : 0) |
                           (D == 256 ? kVarUniformDesc | kVarLazyRescale : 0);
  // Auto (session 7, H100 same-process A/Bs, bench/results/2026-11-22-h100-flash3-fwd-s7-f3fwd15.md
  // and -f3fwd16.md): D 128 +2.3..+5.3 % at S 1k-4k; D 64 with uniform descriptors (slot 14)
  // +4.5 / +6.6 % at 1k (non-causal / causal), +2.5 / +3.4 % at 4k (the diet alone, slot 13:
  // -3.4 % at 4k non-causal); D 256 +0.3..+1.5 %. Sk <= 4096 only (then; session 16 below), and
  // only while uniform_desc / lazy_rescale are left at auto (an A/B that forces them gets its
  // kernel).
  //
  // Session 16: the softmax ordered before the warpgroup's own P V wait (mainloop.cuh kVarOrdered,
  // softmax_before_wait; ptxas otherwise hoists that wait above every exp2, so the softmax never
  // overlapped its own P V) in the tuned kernels that have an ordered build (kernels_ord below).
  // Auto: D = 256, and D = 128 for Sk > 2048, where it also runs the diet (+ TMA epilogue) kernel
  // past Sk 4096. H100 same-process A/Bs against ordered_softmax = 0
  // (bench/results/2026-11-23-h100-flash3-s16-ordered.md, call 3): D 256 -0.4..+1.1 % at 1k,
  // +0.5..+1.4 % at 2k, +1..+2 % at 4k, +3..+3.5 % at 8k, +3..+4.4 % at 16k (both causal modes);
  // D 128 +0.7..+2.1 % at 4k, +1.5..+2.7 % at 8k, +2.0..+2.4 % at 16k, but -2..-4 % at 1k and
  // -1..+0.6 % at 2k (call 2); D 64 -5..-12 % everywhere (call 1; off).
  // Session 40: from Sk 2048 when slot 31 then runs with the row sums in P V (kTcSumSlot, below):
  // same process at Sk 2048, against slot 15 (bench/results/2026-11-30-h200-flash3-s40.md call
  // 4) +3.4..+3.6 % non-causal, +0.5..+1.3 % causal; at 1k -2.6..+1.5 % (not there). Without
  // the row sums the ordered kernel lost 1-2 % at 2k.
  // Session 52: below Sk 2048 too (slot 37, the row sums' kernel), with ping-pong on there
  // (kOrdPingPong128MaxSeqlenK, pp_auto below): H200, flash3_knob_ab.py, 1 s blocks, 3 rounds,
  // ordered:1,pingpong:1 against slot 15 (bench/results/2026-11-30-h200-flash3-s52.md calls 1-3):
  // non-causal 1024 +2.1 / +1.9 / +2.2 %, 1536 +3.3 / +3.4 %; causal 1024 +1.2 / +0.9 / +1.0 %,
  // 1536 +1.2 / +1.7 %. The ordered kernel without ping-pong gained less below 2048 (non-causal
  // 1024 +0.0 %, 1536 +1.6 %; causal +0.3..+1.0 %).
  const bool ord_auto = D == 256 || (D == 128 && (p.seqlen_k > 2048 || tc_sums));
  const bool ordered = tuning().ordered_softmax < 0 ? ord_auto : tuning().ordered_softmax != 0;
  // Where the auto runs the diet: D 64 at every Sk (session 16, H100 A/B at 16k, slot 14 vs
  // slot 0: +2.5..+2.7 % both causal modes, bench/results/2026-11-23-h100-flash3-s16-d64-lazy-
  // diet.json); D 256 at every Sk (up to 4096 until session 46: past it the diet kernel with the
  // row sums (slot 39) against slot 38, H200 same process, flash3_knob_ab.py diet:1, 3 rounds,
  // against the second default copy: +2.5 / +2.7 % non-causal at 8k / 16k, +1.0 / +3.4 %
  // causal, bench/results/2026-11-30-h200-flash3-s46.md calls 2 / 3); D 128 (128 keys, 2
  // warpgroups = kQRegCapable) where the uniform descriptors are on by auto (Sk <= 4096) or the
  // ordered softmax runs.
  const bool diet_shape =
      D == 64 || D == 256 || (D == 128 && (uni_auto || (ordered && kQRegCapable)));
  const bool diet_auto =
      tuning().uniform_desc < 0 && tuning().lazy_rescale < 0 && s4_ok && diet_shape;
  const bool diet = kDietCapable && !tuning().legacy_desc && !qreg &&
                    (tuning().tile_diet < 0 ? diet_auto : tuning().tile_diet != 0);
  // D 64: the auto diet runs with uniform descriptors (slot 14); tile_diet = 1 alone is slot 13.
  const bool diet_uni64 = D == 64 && diet && (uni || tuning().tile_diet < 0);
  // Session 7 (helper f3fwd17): the diet kernel with O through shared memory + TMA stores
  // (mainloop.cuh kVarTmaEpi; slot 15): D = 128 and 64, both Q buffers in use, and an O map
  // that encodes (store_map_ok; else the STG epilogue of slot 13 runs, never a wrong store).
  // D = 64 (2 or 3 consumer warpgroups): with the diet's uniform descriptors (slot 14, the auto
  // diet) only; tile_diet = 1 without uniform_desc (slot 13) keeps the STG epilogue.
  constexpr bool kTmaEpiCapable = kDietCapable && (D == 128 || D == 64);
  constexpr int kTmaEpiVar = (D == 64 ? kVarTileDiet | kVarUniformDesc : kDietVar) | kVarTmaEpi;
  // Auto: D = 128 (session 8 A/B: +0.4..+3.8 % over the STG epilogue at S 1k / 4k); D = 64
  // only when forced.
  const bool tma_on = tuning().tma_epilogue < 0 ? D == 128 : tuning().tma_epilogue != 0;
  const bool tma_epi =
      kTmaEpiCapable && diet && (D != 64 || diet_uni64) && tma_on && tuning().q_bufs >= 2 &&
      Tr::kQStages == 2 && store_map_ok(p.out, p.out_st, p.batch, p.seqlen_q, p.heads_q) &&
      make_map_nothrow(&a.tma_o, p.out, p.out_st, p.batch, p.seqlen_q, p.heads_q, D, 16, BF16) == 0;
  const bool cluster = kClusterCapable<D, BN, WGs> && tuning().cluster == 2 &&
                       !tuning().legacy_desc && s4 == 0 && !diet && !a.causal && !dynamic &&
                       a.num_m_blocks % 2 == 0 && p.seqlen_k > 0;
  const int var = (tuning().ordered_softmax > 0 ? kVarOrdered : 0) |
                  (tuning().early_rescale ? kVarEarlyRescale : 0) | (cluster ? 4 : 0);
  void (*kernels[16])(FwdArgs) = {};
  if constexpr (Tr::kFused) {  // D = 256, 128-key tiles: one kernel, no variant bits
    for (auto& k : kernels)
      k = fwd_kernel<D, BF16, BN, WGs, VS, 0, 1, RS>;
  } else {
    kernels[0] = fwd_kernel<D, BF16, BN, WGs, VS, 0>;
    kernels[1] = fwd_kernel<D, BF16, BN, WGs, VS, 1>;
    kernels[2] = fwd_kernel<D, BF16, BN, WGs, VS, 2>;
    kernels[3] = fwd_kernel<D, BF16, BN, WGs, VS, 3>;
    // v5's per-wgmma descriptor rebuild (A/B only; alone, without the other variant bits).
    kernels[8] = fwd_kernel<D, BF16, BN, WGs, VS, kVarLegacyDesc>;
    kernels[9] = fwd_kernel<D, BF16, BN, WGs, VS, kVarUniformDesc>;
    kernels[10] = fwd_kernel<D, BF16, BN, WGs, VS, kVarLazyRescale>;
    kernels[11] = fwd_kernel<D, BF16, BN, WGs, VS, kVarUniformDesc | kVarLazyRescale>;
    if constexpr (kQRegCapable)
      kernels[12] = fwd_kernel<D, BF16, BN, WGs, VS, kVarQReg | kVarUniformDesc>;
    if constexpr (kDietCapable) kernels[13] = fwd_kernel<D, BF16, BN, WGs, VS, kDietVar>;
    if constexpr (kDietCapable && D == 64)
      kernels[14] = fwd_kernel<D, BF16, BN, WGs, VS, kVarTileDiet | kVarUniformDesc>;
    if constexpr (kTmaEpiCapable) kernels[15] = fwd_kernel<D, BF16, BN, WGs, VS, kTmaEpiVar>;
  }
  if constexpr (kClusterCapable<D, BN, WGs>) {
    kernels[4] = fwd_kernel<D, BF16, BN, WGs, VS, 0, 2>;
    kernels[5] = fwd_kernel<D, BF16, BN, WGs, VS, 1, 2>;
    kernels[6] = fwd_kernel<D, BF16, BN, WGs, VS, 2, 2>;
    kernels[7] = fwd_kernel<D, BF16, BN, WGs, VS, 3, 2>;
  }
  // The same slots with kVarOrdered (null: no ordered build; slots 0-3 carry it in `var`).
  void (*kernels_ord[16])(FwdArgs) = {};
  if constexpr (!Tr::kFused && D == 256 && VS == 2)
    kernels_ord[11] =
        fwd_kernel<D, BF16, BN, WGs, VS, kVarUniformDesc | kVarLazyRescale | kVarOrdered>;
  if constexpr (kDietCapable && D != 64)
    kernels_ord[13] = fwd_kernel<D, BF16, BN, WGs, VS, kDietVar | kVarOrdered>;
  if constexpr (kTmaEpiCapable && D == 128)
    kernels_ord[15] = fwd_kernel<D, BF16, BN, WGs, VS, kTmaEpiVar | kVarOrdered>;
  const int slot = tuning().legacy_desc ? 8
                   : qreg               ? 12
                   : diet               ? (tma_epi      ? 15
                                           : diet_uni64 ? 14
                                                        : 13)
                   : s4 != 0            ? 8 + s4
                                        : var;
  const bool run_ord = ordered && kernels_ord[slot] != nullptr;
  auto kernel = run_ord ? kernels_ord[slot] : kernels[slot];
  int slot_id = slot + (run_ord ? 16 : 0);  // (16 + slot: the ordered build of slot)
  int smem = Tr::kSmemBytes;
  // (traits.hpp ATTNKIT_FLASH3_FWD_D256_TMA_EPI) whether the chosen kernel has O's staging region
  // for the D 256 TMA-store epilogue: set with smem where the kernel changes (the skip-turn twins,
  // the row-sum kernels). The A/B slots of v5's descriptors (8) and of the early rescale (slots
  // 0-7 with that bit) are not plain kernels (mainloop.cuh kD256NotPlain): they store O with STG
  // whatever the build (at 3 their shared memory, Tr's, is larger than their own layout needs).
  static_assert(kVarEarlyRescale == 2 && (kVarLegacyDesc & kD256NotPlain) != 0 &&
                    (kVarEarlyRescale & kD256NotPlain) != 0,
                "flash3: slots 8 and 0-7 with bit 2 are the non-plain ones");
  [[maybe_unused]] bool o_staged =
      Tr::kEpiStageBytes > 0 && slot != 8 && !(slot < 8 && (slot & kVarEarlyRescale) != 0);
  // Session 40: slot 31's kernel (D 128, ordered, diet + TMA epilogue: the default past Sk 2048)
  // with the softmax's row sums as 8 more columns of P V (mainloop.cuh kVarTcSum, its own
  // shared-memory layout: 216 KB). Same process against an identical control (bench/results/
  // 2026-11-30-h200-flash3-s40.md): +3.1..+4.9 % at S 4k / 16k (both causal modes); at 1k
  // (slot 15, unordered) it lost 1.1..2.5 %, at D 64 1..4 %: no kernel there. Tuning::tc_row_sum.
  if constexpr (kTmaEpiCapable && D == 128) {
    constexpr int kTcVar = kTmaEpiVar | kVarOrdered | kVarTcSum;
    using TrTc = FwdTraitsOf<D, BN, WGs, VS, kTcVar>;
    static_assert(TrTc::kQStages == 2, "flash3: the TMA epilogue stages O in the 2nd Q buffer");
    if (slot_id == 16 + 15 && tc_sums) {
      kernel = fwd_kernel<D, BF16, BN, WGs, VS, kTcVar>;
      slot_id = kTcSumSlot;
      smem = TrTc::kSmemBytes;
    }
  }
  // Session 41: D 256's ordered 64-key kernels (slot 27, the auto past Sk 4096 until session 46;
  // the diet's slot 29) with the row sums in P V (two P V wgmmas a k-step, traits.hpp; 210 KB).
  // Same process against two copies of the default (bench/results/2026-11-30-h200-flash3-s41.md
  // call 1): slot 27's twin +2.7..+4.4 % at S 16k, slot 29's +1.7..+3.5 % at 4k but -1.1..-2.5 % at
  // 1k (not in cycles: at the board's power cap, call 6, where the D 128 twin's clock dropped 4.5
  // %). Auto: slot 27 always, slot 29 from Sk kTc256MinSeqlenK; Tuning::tc_row_sum = 1 forces both.
  // Session 53: causal slot 29 at every Sk (its skip-turn twin 109 -> 119: 1-second blocks at
  // causal 1024, against the default and a copy, rounds 0-2 +1.5 / +1.1 / +1.3 %; non-causal
  // 1024 +0.5 / +0.1 / +0.2 %, left as it was).
  if constexpr (D == 256 && !Tr::kFused && Tr::kBlockN == 64 && VS == 2) {
    const bool diet13 = slot_id == 16 + 13;
    const bool tc_here = tc_sums && (tuning().tc_row_sum > 0 || !diet13 ||
                                     p.seqlen_k >= kTc256MinSeqlenK || a.causal);
    if ((slot_id == 16 + 11 || diet13) && tc_here) {
      constexpr int kV11 = kVarUniformDesc | kVarLazyRescale | kVarOrdered | kVarTcSum;
      constexpr int kV13 = kDietVar | kVarOrdered | kVarTcSum;
      kernel =
          diet13 ? fwd_kernel<D, BF16, BN, WGs, VS, kV13> : fwd_kernel<D, BF16, BN, WGs, VS, kV11>;
      smem = FwdTraitsOf<D, BN, WGs, VS, kV11>::kSmemBytes;
      // (the row-sum layout, shared by kV11 and kV13: staged at ATTNKIT_FLASH3_FWD_D256_TMA_EPI 2
      // only, so at 3 these keep value 1's layout while the base traits Tr are staged)
      static_assert(FwdTraitsOf<D, BN, WGs, VS, kV11>::kSmemBytes ==
                        FwdTraitsOf<D, BN, WGs, VS, kV13>::kSmemBytes &&
                    FwdTraitsOf<D, BN, WGs, VS, kV11>::kEpiStageBytes ==
                        FwdTraitsOf<D, BN, WGs, VS, kV13>::kEpiStageBytes);
      o_staged = FwdTraitsOf<D, BN, WGs, VS, kV11>::kEpiStageBytes > 0;
      slot_id = diet13 ? kTcSum256DietSlot : kTcSum256Slot;
    }
  }
  // Session 48 (Tuning::skip_masked_turn; mainloop.cuh kVarSkipTurn): D 256 causal launches of
  // slots 29 / 39 run the twin that skips a warpgroup's wholly masked first turn. Session 48 call 1
  // (1-second blocks, 3 rounds, the skip then built into the shared kernels): causal +1.5..+1.9 %
  // at S 1k, +1.4..+2.1 % at 2k, +0.4..+1.4 % at 4k, bitwise; kernels of their own because in the
  // shared ones non-causal lost up to 2.5 %.
  if constexpr (D == 256 && !Tr::kFused && Tr::kBlockN == 64 && VS == 2 && kDietCapable) {
    if (a.causal && tuning().skip_masked_turn != 0) {
      constexpr int kV29 = kDietVar | kVarOrdered | kVarSkipTurn;
      constexpr int kV39 = kDietVar | kVarOrdered | kVarTcSum | kVarSkipTurn;
      // (the twins' own shared memory: O's staging region at ATTNKIT_FLASH3_FWD_D256_TMA_EPI 1)
      if (slot_id == 16 + 13) {
        kernel = fwd_kernel<D, BF16, BN, WGs, VS, kV29>;
        smem = FwdTraitsOf<D, BN, WGs, VS, kV29>::kSmemBytes;
        o_staged = FwdTraitsOf<D, BN, WGs, VS, kV29>::kEpiStageBytes > 0;
        slot_id += kSkipTurnSlotBase;
      } else if (slot_id == kTcSum256DietSlot) {
        kernel = fwd_kernel<D, BF16, BN, WGs, VS, kV39>;
        smem = FwdTraitsOf<D, BN, WGs, VS, kV39>::kSmemBytes;
        o_staged = FwdTraitsOf<D, BN, WGs, VS, kV39>::kEpiStageBytes > 0;
        slot_id += kSkipTurnSlotBase;
      }
    }
  }
#if ATTNKIT_FLASH3_FWD_D256_TMA_EPI
  // (traits.hpp ATTNKIT_FLASH3_FWD_D256_TMA_EPI) D 256, 64-key blocks, 2 V stages: the plain
  // kernels with O's staging region (at 1 the causal skip-turn twins just chosen, slots 109 /
  // 119; at 3 those and the kernels without the row sums, 29 and its multicast twin 69; at 2
  // every one; mainloop.cuh kD256TmaEpi) store O with TMA where its rank-3 map encodes
  // (o_map_d256), else with STG. (Launch 2 of a split tail, kVarTail, keeps STG whatever a2.o_tma
  // says; the multicast twins below stage O as their 1-CTA kernels: at 1 not at all.)
  // Session 65: Tuning::tma_epilogue = 0 keeps the STG stores in these kernels too (their staging
  // region then unused): the A/B that splits a staged kernel's time into its layout's share and
  // its TMA stores' share (bench/notes/session65.md).
  if constexpr (D == 256 && !Tr::kFused && Tr::kBlockN == 64 && VS == 2) {
    if (o_staged && tuning().tma_epilogue != 0) a.o_tma = o_map_d256(p, &a.tma_o, BF16);
  }
  set_last_forward_o_tma(a.o_tma != 0);
#endif
  // Tuning::edge_nc_twin (launch.hpp has the why and the measurements; mainloop.cuh kVarEdgeNc):
  // D 64 non-causal launches of slot 14 (2 or 3 consumer warpgroups) run its twin with every part
  // of the tile-boundary diet (ATTNKIT_FLASH3_FWD_EDGE_PARTS_NC); slot 14 keeps
  // ATTNKIT_FLASH3_FWD_EDGE_PARTS for the causal ones. Same traits and shared memory as slot 14.
  if constexpr (D == 64 && kDietCapable) {
    if (slot_id == 14 && !a.causal && tuning().edge_nc_twin != 0) {
      kernel = fwd_kernel<D, BF16, BN, WGs, VS, kVarTileDiet | kVarUniformDesc | kVarEdgeNc>;
      slot_id += kEdgeNcSlotBase;
    }
  }
  // Session 46 (Tuning::cluster = 3; the auto since session 47 at D 128, since session 59 at D
  // 256 from 1024 keys (2048 in session 59): multicast_wanted): the default non-causal kernel's
  // 2-CTA twin with K/V multicast (cluster.cuh; the pair (2c, 2c + 1) holds tiles (m, m + 1) of one
  // head in every round: static rounds without rotation, an even grid and m-block count). D 128:
  // the diet + TMA epilogue kernel (15), its ordered build (31) and that with the row sums (37); D
  // 256: the ordered diet (29) and its row-sum twin (39). Why: call 7, the stripped cluster kernel
  // drew less energy per FLOP (+1.1 / +2.1 % at D 256 nc 4k / 16k under the power cap).
  bool multicast = false;
  if constexpr (kClusterCapable<D, BN, WGs> && !Tr::kFused && VS == 2 && kDietCapable) {
    if (multicast_wanted(p, D) && !a.causal && !dynamic && a.num_m_blocks % 2 == 0 &&
        p.seqlen_k > 0) {
      auto twin = [&](auto k2, int smem2) {
        kernel = k2;
        smem = smem2;
        slot_id += kMulticastSlotBase;
        multicast = true;
      };
      if constexpr (D == 128) {
        constexpr int kTcVar = kTmaEpiVar | kVarOrdered | kVarTcSum;
        if (slot_id == 15)
          twin(fwd_kernel<D, BF16, BN, WGs, VS, kTmaEpiVar, 2>, Tr::kSmemBytes);
        else if (slot_id == 16 + 15)
          twin(fwd_kernel<D, BF16, BN, WGs, VS, kTmaEpiVar | kVarOrdered, 2>, Tr::kSmemBytes);
        else if (slot_id == kTcSumSlot)
          twin(fwd_kernel<D, BF16, BN, WGs, VS, kTcVar, 2>,
               FwdTraitsOf<D, BN, WGs, VS, kTcVar, 2>::kSmemBytes);
      } else if constexpr (D == 256 && Tr::kBlockN == 64) {
        constexpr int kV13 = kDietVar | kVarOrdered | kVarTcSum;
        // (o_staged and O's map were decided above from the 1-CTA kernel: its twin has the
        // same staging, ATTNKIT_FLASH3_FWD_D256_TMA_EPI 2 and 3 included)
        static_assert(FwdTraitsOf<D, BN, WGs, VS, kDietVar | kVarOrdered, 2>::kEpiStageBytes ==
                              Tr::kEpiStageBytes &&
                          FwdTraitsOf<D, BN, WGs, VS, kV13, 2>::kEpiStageBytes ==
                              FwdTraitsOf<D, BN, WGs, VS, kV13>::kEpiStageBytes,
                      "flash3: a D 256 multicast twin stages O as its 1-CTA kernel does");
        if (slot_id == 16 + 13)
          twin(fwd_kernel<D, BF16, BN, WGs, VS, kDietVar | kVarOrdered, 2>, Tr::kSmemBytes);
        else if (slot_id == kTcSum256DietSlot)
          twin(fwd_kernel<D, BF16, BN, WGs, VS, kV13, 2>,
               FwdTraitsOf<D, BN, WGs, VS, kV13, 2>::kSmemBytes);
      }
    }
  }
  const bool cl2 = cluster || multicast;  // (a 2-CTA cluster launch either way)
  // Tuning::smem_pad (session 65, A/B only): the attribute is set on every padded launch (the
  // per-slot cache below holds the unpadded size's opt-in).
  const int smem_pad = tuning().smem_pad > 0 ? tuning().smem_pad : 0;
  smem += smem_pad;
  set_last_forward_slot(slot_id);
  // The shared-memory opt-in is per device and kernel: set it once for each device a kernel
  // meets (idempotent, so a race between two threads only repeats the call). Cluster kernels
  // also cache how many 2-CTA clusters fit on the device at once (the persistent grid).
  // (slot ids: launch.hpp; kEdgeNcSlotBase + 14 the largest)
  static_assert(kSkipTurnSlotBase + kTcSum256DietSlot < kEdgeNcSlotBase + 14,
                "flash3: attr_set covers slot ids up to kEdgeNcSlotBase + 14");
  static std::atomic<int> attr_set[kEdgeNcSlotBase + 14 + 1][kMaxDevices] = {};
  const int dev = current_device();
  const auto stream = static_cast<cudaStream_t>(p.stream);
  cudaLaunchAttribute cl_attr[1];
  cl_attr[0].id = cudaLaunchAttributeClusterDimension;
  cl_attr[0].val.clusterDim.x = 2;
  cl_attr[0].val.clusterDim.y = 1;
  cl_attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t cfg{};
  cfg.blockDim = dim3(Tr::kThreads);
  cfg.dynamicSmemBytes = smem;
  cfg.stream = stream;
  cfg.attrs = cl_attr;
  cfg.numAttrs = 1;
  int max_ctas = attr_set[slot_id][dev].load(std::memory_order_acquire);
  if (max_ctas == 0) {
    ATTNKIT_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    max_ctas = sm_count();
    if (cl2) {
      int clusters = 0;
      cfg.gridDim = dim3(2);
      ATTNKIT_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &cfg));
      if (clusters < 1) throw Error(ErrorCode::kCudaError, "flash3: no 2-CTA cluster fits");
      max_ctas = 2 * clusters;
    }
    attr_set[slot_id][dev].store(max_ctas, std::memory_order_release);
  } else if (smem_pad > 0) {
    ATTNKIT_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  }
  // Ping-pong auto: on for D <= 128 and causal D 256, except where the ordered softmax runs
  // (session 16, H100 same-process A/B, bench/results/2026-11-23-h100-flash3-s16-pingpong.json):
  // with its softmax overlapping its own P V, a warpgroup gains nothing from the forced
  // alternation: off, D 256 causal +0.8..+3.2 % at 4k / 16k (1k +0.1 %), D 128 non-causal
  // +0.4..+0.8 % at 4k / 16k, causal -0.2..+0.5 %.
  // Session 46 (H200, today's D 256 kernels with the row sums in P V, flash3_knob_ab.py
  // pingpong:1 against the second default copy, 3 rounds; -s46.md calls 2 / 3): D 256 causal
  // reversed, on: +1.2 % at 4k, +1.4 % at 8k, +3.6 % at 16k (every round), 1k +0.4 % (noise);
  // with the diet at 8k / 16k +1.5 / +3.9 % (diet alone +1.0 / +3.4 %). D 256 non-causal stays
  // off (-2.8 % at 1k; past 4k it cut the diet's gain from +2.5..+2.7 % to +1.5..+1.7 %), D 128's
  // ordered kernel too (-0.1..-1.0 %).
  // Session 52: D 128's ordered kernels below kOrdPingPong128MaxSeqlenK keys on (the ordered
  // auto's comment above: +1.0..+3.4 % at 1024 / 1536 over the unordered default; the ordered
  // kernel with against without ping-pong, same calls: non-causal 1024 +2.0 / +1.9 %, 1536 +1.7 %,
  // causal 1024 +0.9 / +0.3 %, 1536 +0.2 %;
  // from 2048 keys off: non-causal 2048 / 4096 / 16384 -0.1 / -0.7 / -0.7 %, causal +0.2 / -0.3 /
  // -0.1 %).
  // Session 53: D 256 non-causal on where the ordered diet kernel with the row sums runs (slot
  // 39, from kTc256MinSeqlenK keys), from kPingPong256MinSeqlenK keys (launch.hpp: +0.7..+1.9 % at
  // 2k-16k in 1-second blocks, every round; session 46's losses were slot 29, which still loses).
  const bool pp256_nc =
      D == 256 && slot_id == kTcSum256DietSlot && p.seqlen_k >= kPingPong256MinSeqlenK;
  const bool pp_auto = (D == 256 && a.causal) || pp256_nc || (!run_ord && (D <= 128 || a.causal)) ||
                       (D == 128 && run_ord && p.seqlen_k < kOrdPingPong128MaxSeqlenK);
  a.pingpong = tuning().pingpong >= 0 ? tuning().pingpong : pp_auto ? 1 : 0;
  set_last_forward_pingpong(a.pingpong != 0);
  a.q_bufs = tuning().q_bufs >= 2 ? Tr::kQStages : 1;
  a.overlap = tuning().overlap_tiles ? 1 : 0;
  a.trace = static_cast<unsigned long long*>(tuning().trace);
  // Next tile's Q (and first K/V block) into L2 ahead of its load (Tuning::q_prefetch). Ring
  // variant (produce_tile_ring): not wired, so off there. Auto from session 14's same-process
  // A/B (H100, bench/results/2026-11-22-h100-flash3-fwd-s14-qprefetch.md, 3 rounds, ratio to
  // prefetch off): D 128 with 2 blocks of lead: causal 1k +4.0 %, 4k +0.9 %, 16k +0.6 %,
  // non-causal 1k +1.3 %, 4k +0.1 %, 16k -0.2 % (all 3 rounds); D 256 causal with 4: 1k
  // +1.4 %, 4k +0.7 %, 16k +0.5 %; D 256 non-causal lost at 1k (-1.5 %, 4k / 16k +-0.2 %): off.
  // The next tile's K / V too (kv_prefetch) lost 1-4 % at 1k: off. Second call (2 rounds, -s14-
  // qprefetch-d64.json): D 64 with 2: 1k +1.1 % / +1.6 % (non-causal / causal), 4k +0.2 / +0.6 %,
  // 16k +0.2 / -0.2 %; the 16k rows of D 64 / 128 / 256 moved by at most 0.5 % either way, the
  // spread of two identical configurations in that loop: on up to 4k keys at D <= 128.
  a.q_prefetch = Tr::kRing ? 0 : q_prefetch_auto(p, a, D);
  a.kv_prefetch = tuning().kv_prefetch != 0 ? 1 : 0;
  // 8- / 16-byte O stores (store_output, Tuning::epi_wide): the base and every stride (in
  // 16-bit elements) a multiple of 4 / 8, so each lane's store is aligned; else the widest that
  // is. Auto: 8 bytes at D >= 128, 4 at D = 64 (session 14 A/B, H100, same process, 8-byte
  // stores vs 4: D 256 1k +11.3 % non-causal / +13.5 % causal, 4k +3.6 / +5.9 %, 16k +1.0 /
  // +1.3 %; D 128 16k (its STG epilogue; up to 4k it runs the TMA one) +0.7 / +2.2 %; D 64, whose
  // epilogue overlaps the next tile's GEMMs, -0.8..+0.9 % (causal 1k -0.7 / -1.4 % in two
  // calls); clock64 trace at D 256: the epilogue 11.0k -> 4.9k cycles at 1k: it was bound by
  // store requests. 16 bytes vs 8, next call: D 256 1k -0.1..-0.9 %, 4k / 16k +-0.4 %, its
  // epilogue 4.9k vs 4.7k cycles at 1k, 4.25k vs 3.75k at 4k: the quad transpose's SHFLs cost
  // more than the fewer requests save).
  a.epi_wide = epi_wide_auto(p, D);
  // Scheduler (run 5, H100, same process). Dynamic for the 192-row D = 64 kernel, whose last
  // tile of a head is partly empty (S = 1k: 6 x 192 rows): 418 vs 390 TFLOP/s static
  // (non-causal), 279 vs 254 (causal); equal at S = 4k. Static elsewhere: D = 128 non-causal
  // dynamic = static within noise (537/531 at 1k, 587/574 at 16k), but causal lost with the
  // dynamic order (heaviest rows of a head first): D = 256, S = 4k 466 vs 547 (static
  // zig-zag), D = 128, S = 16k 548 vs 595 (one CTA per tile).
  // Static schedule (scheduler = 0; the auto is dynamic there, see `dynamic`): causal with more
  // than 32 m blocks (long_causal, S > 4k) runs one CTA per tile, since the static zig-zag
  // leaves CTAs unbalanced there (D = 128, S = 16k: 437 persistent vs 575 one CTA per tile,
  // run 4; at S = 1k persistent wins, 395 vs 346). tile_scheduler.cuh has the details.
  const bool persistent = tuning().persistent && (dynamic || !long_causal || lpt_long);
  // (Tuning::max_grid: tests run small shapes on a few CTAs; never the cluster's grid.)
  const int grid_cap =
      tuning().max_grid > 0 && tuning().max_grid < max_ctas && !cl2 ? tuning().max_grid : max_ctas;
  const int ctas = (a.num_tiles < grid_cap || !persistent) ? a.num_tiles : grid_cap;
  // Rotated static rounds (tile_scheduler.cuh tile_of_round): auto = non-causal persistent
  // launches whose last m block is partial (unequal tiles; causal keeps its zig-zag). Never with
  // the 2-CTA cluster, whose CTA pair (2c, 2c+1) must hold tiles (m, m+1) with m even in every
  // round (a rotation by one per round pairs m odd with the next head's m = 0 in odd rounds:
  // wrong K/V multicast, caught by the cluster tests on the GPU, session 13 call 7).
  // Only the 3-warpgroup D = 64 kernel (192-row tiles, where the m-block counts of common S_q
  // divide 132; the 2-warpgroup kernels' partial tiles were not measured). (The D = 256 failure
  // session 13 met with 40000 one-row tiles was not the rotation: an idle warpgroup released
  // its Q buffer early, mainloop.cuh idle_tile_simple; fixed in session 14.)
  a.rotate = WGs == 3 && persistent && !cl2 && !a.causal && tuning().rotate_rounds != 0 &&
             (tuning().rotate_rounds == 1 || p.seqlen_q % Tr::kBlockM != 0);
  set_schedule(p, a, ctas, dynamic, stream);
  set_last_forward_lpt_gain(std::numeric_limits<double>::quiet_NaN());
  // Session 46: the balanced table instead of the zig-zag rounds (Tuning::lpt_schedule; causal,
  // static, persistent, more tiles than CTAs; auto: lpt_mode).
  if (lpt > 0 && a.causal && persistent && !dynamic && !cluster && ctas < a.num_tiles) {
    a.sched_table = lpt_table_device<Tr>(
        p, a, ctas, stream, lpt == 3 ? (lpt_long ? kLptMinModelGainLong : kLptMinModelGain) : -1.0);
    // lpt 2 / 3 without a table: the dynamic scheduler, the auto there, not the zig-zag rounds
    // (1.27-1.79x the mean load on the busiest CTA at causal 16k in the model).
    if (a.sched_table == nullptr && lpt_long) {
      dynamic = true;
      set_schedule(p, a, ctas, dynamic, stream);
    }
  }
  set_last_forward_lpt_rounds(a.sched_table != nullptr ? a.num_rounds : 0);
  // Session 70 (Tuning::round_table): the rotated rounds' tiles, round by round, to the CTAs
  // that balance them (lpt_schedule.hpp build_round_table: the CTAs that run the partial last
  // round take more of the cheap partial m blocks). Session 61's table here (longest first within
  // 32 MB sections) lost 0.9-5.7 %; this one keeps each round's set of tiles, so the CTAs stay
  // on the same heads as with the rounds: D 64 nc 1k +1.8..+2.0 % (round_table_wanted has the
  // measurements). (Never with the split tail: that runs at D 128 / 256 only, 2 warpgroups,
  // whose rounds never rotate.)
  set_last_forward_round_table(0);
  if (a.rotate && !dynamic && a.sched_table == nullptr && ctas < a.num_tiles &&
      round_table_wanted()) {
    a.sched_table = lpt_table_device<Tr>(p, a, ctas, stream,
                                         tuning().round_table == 1 ? -1.0 : kRoundTableMinGain,
                                         /*round_table=*/true);
    if (a.sched_table != nullptr) set_last_forward_round_table(a.num_rounds);
  }
  set_last_forward_dynamic(a.tile_counter != nullptr);
  // D = 128: 128-key tiles, 2 WGs, 2 V stages, after a diet kernel; D = 256: 64-key tiles, 2 V
  // stages, after any slot.
  // Session 57 (Tuning::multicast_tail; +1.1 % at 16k, -0.3 % at 4k; the auto since session 71:
  // D 128 from kMulticastTail128MinSeqlenK keys): after the multicast twin too (D 128 slots 55 /
  // 71 / 77, D 256 69 / 79), launch 1 then its cluster launch (cfg) over the full rounds; not
  // after Tuning::cluster = 2's plain cluster kernels (slots 4-7). (Why: D 128 nc 4k / 16k, 2048
  // tiles on 132 CTAs, the twin's last round runs 68 of 132.)
  if constexpr ((kQRegCapable || D == 256) && kDietCapable) {
    const bool mc_tail = multicast && multicast_tail_wanted(p, D);
    if (launch_split_tail<D, BF16, BN, WGs, VS, kDietVar>(
            p, a, kernel, smem,
            (D == 256 || diet) && persistent && !dynamic && (!cl2 || mc_tail) && ctas < a.num_tiles,
            ctas, stream, mc_tail ? &cfg : nullptr))
      return;
  }
  set_last_forward_tail_tiles(0);
  if (cl2) {  // ctas is even: num_tiles is (even m blocks), and so is max_ctas
    cfg.gridDim = dim3(ctas);
    ATTNKIT_CUDA_CHECK(cudaLaunchKernelEx(&cfg, kernel, a));
    return;
  }
  const dim3 grid(ctas);
  kernel<<<grid, Tr::kThreads, smem, stream>>>(a);
  ATTNKIT_CUDA_CHECK_LAUNCH();
}

/// Session 23: softcap, ALiBi and the sliding window (session 24: and a mask) into FwdArgs
/// (fwd_args.hpp says how each is
/// encoded; kVarScoreMod kernels read them). The window's right edge joins the causal bound
/// (the smaller offset wins), so num_n_blocks, the masks and the causal schedule apply to it as
/// they are; each edge is left out where it hides nothing (seq_bounds.hpp). Varlen (session 24):
/// the bounds of the longest lengths, which set the tile order and the schedule; each tile's
/// own come from causal_kind / win_left / win_right in the kernel.
inline void set_score_mod(const Params& p, FwdArgs& a) {
  const ScoreMod m = score_mod_of(p);
  a.causal_kind = m.causal_kind;
  a.win_left = m.win_left;
  a.win_right = m.win_right;
  set_bounds(a, m.bounds);
  if (p.softcap > 0.f) {  // (softmax and lse in softcap units; base_args set scale otherwise)
    a.softcap_k = m.softcap_k;
    a.scale = m.units;
    a.scale_log2 = static_cast<float>(m.units * M_LOG2E);
  }
  if (p.alibi != nullptr) {
    a.alibi = p.alibi;
    a.alibi_sb = p.alibi_st_b;
    a.alibi_sh = p.alibi_st_h;
    a.alibi_mul = -1.f / m.units;
  }
  set_mask(p, m.units, a);
}

/// ATTNKIT_FLASH3_VARLEN_STATIC=1: varlen launches keep the static schedule (session 24's A/B).
inline bool varlen_static() {
  const char* e = std::getenv("ATTNKIT_FLASH3_VARLEN_STATIC");
  return e != nullptr && e[0] == '1';
}

/// Session 23: a call with softcap, ALiBi or a sliding window (run_forward routes it here) runs one
/// kernel per (D, dtype): 128-row tiles on 2 consumer warpgroups, the default K/V tiles (128
/// keys, 64 at D = 256), the tile-at-a-time consumer with kVarScoreMod (mainloop.cuh), and the
/// code-generation bits of each D's tuned kernels (uniform descriptors + the ordered softmax at
/// D >= 128, lazy rescale at D = 256; ping-pong on only where the softmax is not ordered, as in
/// launch_forward's auto). Static persistent schedule, dynamic past 32 m blocks when the window's
/// right edge or causality makes the tiles unequal (long_causal_launch). No split tail, cluster,
/// diet or TMA epilogue: those are tuned forms of the plain kernels, not measured here.
/// Exposed to the tests and benchmarks as launch slot kScoreModSlot.
/// kVarlen (session 24): a packed call (Params::varlen), with or without score modifications,
/// runs the same kernel built with kVarVarlen (slot kVarlenSlot): tensor maps over the packed
/// [1, total, H, D] tensors, the tile grid sized by the longest sequences, every tile bounded
/// by its own sequence in the kernel (kernel.cuh varlen_args); no Q / K / V prefetch (it would
/// need the next tile's sequence).
/// kMask (session 24): a call with a bool or additive mask runs the kernel built with kVarMask
/// (slot kMaskSlot; score_mod.cuh apply_mask_tile), with or without the other modifications.
/// kNarrow (session 25): head dim 96 / 192 on the D = 128 / 256 kernel built with kVarNarrow
/// (slot kNarrowSlot, whatever else it is built with); with varlen or a mask since session 38.
/// kDropout (session 39; D 64 / 128 / 256): dropout on P (mainloop.cuh kVarDropout, dropout.cuh),
/// slot kDropoutSlot, with kMask (dense: any mask or none) or kVarlen; any score modification.
template <int D, bool BF16, bool kVarlen = false, bool kMask = false, bool kNarrow = false,
          bool kDropout = false>
void launch_forward_score_mod(const Params& p) {
  using Tr = FwdTraits<D, 0, 2, 2>;
  if (p.batch == 0 || p.seqlen_q == 0 || p.heads_q == 0) return;
  FwdArgs a = base_args<Tr, BF16>(p);
  set_score_mod(p, a);
  if constexpr (kVarlen) {  // (base_args made the maps over the packed tensors)
    a.cu_q = p.cu_seqlens_q;
    a.cu_k = p.cu_seqlens_k;
  }
  static_assert(!(kVarlen && kMask), "flash3: no mask with varlen (the resolver refuses it)");
  static_assert(!kNarrow || D >= 128, "flash3 narrow: D 96 / 192 only");
  static_assert(!kDropout || (kMask != kVarlen && (!kNarrow || kMask)),
                "flash3 dropout: the dense mask build or the varlen one");
  a.d_cols = static_cast<int>(p.head_dim);
  if constexpr (kDropout) set_dropout(p, a);
  constexpr int kVar = kVarScoreMod | (kVarlen ? kVarVarlen : 0) | (kMask ? kVarMask : 0) |
                       (kNarrow ? kVarNarrow : 0) | (D >= 128 ? kVarUniformDesc | kVarOrdered : 0) |
                       (D == 256 ? kVarLazyRescale : 0) | (kDropout ? kVarDropout : 0);
  constexpr auto kernel = &fwd_kernel<D, BF16, 0, 2, 2, kVar>;
  // The kernel's own traits for its shared memory and Q buffers (at
  // ATTNKIT_FLASH3_FWD_D256_TMA_EPI 3 the base traits Tr hold O's staging region, which these
  // kernels, never TMA-store ones, do not have; the rest of Tr is the same).
  using TrK = FwdTraitsOf<D, 0, 2, 2, kVar>;
  set_last_forward_slot(kDropout  ? kDropoutSlot
                        : kNarrow ? kNarrowSlot
                        : kVarlen ? kVarlenSlot
                        : kMask   ? kMaskSlot
                                  : kScoreModSlot);
  set_last_forward_tail_tiles(0);
  set_last_forward_lpt_rounds(0);
  set_last_forward_round_table(0);
  set_last_forward_lpt_gain(std::numeric_limits<double>::quiet_NaN());
#if ATTNKIT_FLASH3_FWD_D256_TMA_EPI
  set_last_forward_o_tma(false);  // (the score-mod kernels keep the STG epilogue)
#endif
  opt_in_smem<kernel>(TrK::kSmemBytes);
  const auto stream = static_cast<cudaStream_t>(p.stream);
  a.pingpong = tuning().pingpong >= 0 ? tuning().pingpong : (kVar & kVarOrdered) != 0 ? 0 : 1;
  set_last_forward_pingpong(a.pingpong != 0);
  a.q_bufs = tuning().q_bufs >= 2 ? TrK::kQStages : 1;
  a.overlap = 0;
  a.trace = static_cast<unsigned long long*>(tuning().trace);
  a.q_prefetch = kVarlen ? 0 : q_prefetch_auto(p, a, D);
  a.kv_prefetch = !kVarlen && tuning().kv_prefetch != 0 ? 1 : 0;
  a.epi_wide = epi_wide_auto(p, D);
  a.rotate = 0;
  // Varlen with unequal lengths: the dynamic schedule (tiles cost as their sequence is long, and
  // the tiles past a sequence's end cost nothing, so a static round-robin leaves CTAs unequal).
  // Session 24, call 3 (H200, bench/results/2026-11-28-h200-flash3-varlen.md), dynamic against
  // static in one process: mixed lengths ([S/4, 7S/4], 16k tokens) mean 1k +3..+29 %, mean 4k
  // -1..+8 %; all lengths equal -1..-9 % (causal 1k -6..-9 %), so equal lengths (total = batch x
  // max, known on the host without reading cu_seqlens) keep the dense calls' auto.
  // ATTNKIT_FLASH3_VARLEN_STATIC=1 (read per call, for A/Bs) or Tuning::scheduler = 0: static.
  const bool equal_lengths = p.total_q == p.batch * p.seqlen_q && p.total_k == p.batch * p.seqlen_k;
  const bool dynamic = kVarlen && !equal_lengths
                           ? tuning().persistent && tuning().scheduler != 0 && !varlen_static()
                           : dynamic_schedule(a);
  const bool persistent = tuning().persistent && (dynamic || !long_causal_launch(a));
  const int sms = sm_count();
  const int grid_cap = tuning().max_grid > 0 && tuning().max_grid < sms ? tuning().max_grid : sms;
  const int ctas = (a.num_tiles < grid_cap || !persistent) ? a.num_tiles : grid_cap;
  set_schedule(p, a, ctas, dynamic, stream);
  set_last_forward_dynamic(a.tile_counter != nullptr);
  kernel<<<dim3(ctas), Tr::kThreads, TrK::kSmemBytes, stream>>>(a);
  ATTNKIT_CUDA_CHECK_LAUNCH();
}

/// Tile shape per call: the default per D (traits.hpp); D = 64 with 3 consumer warpgroups
/// (192-row tiles) unless Tuning::consumer_wgs = 2; with Tuning::wide_n FA3's wider K/V tiles
/// (D = 128 non-causal: 176 keys) for A/B measurements. (D = 256 with 80 keys, tried in run 3,
/// spilled 76 B and measured no better; with the zero block it no longer fits in 227 KB.)
template <int D, bool BF16>
void run_forward(const Params& p) {
  if constexpr (D >= 128) {  // (a 96 / 192 head dim: backend.cpp sends it here)
    if (p.head_dim < D) {
      if (p.has_dropout()) {  // (session 40: dense only; the backend declines varlen)
        if (p.varlen)
          throw Error(ErrorCode::kUnsupported, "flash3 head dims 96 / 192: no varlen dropout");
        return launch_forward_score_mod<D, BF16, false, true, true, true>(p);
      }
      if (p.varlen) return launch_forward_score_mod<D, BF16, true, false, true>(p);
      if (p.has_mask()) return launch_forward_score_mod<D, BF16, false, true, true>(p);
      return launch_forward_score_mod<D, BF16, false, false, true>(p);
    }
  }
  // Dropout (session 39): D 64 / 128 / 256 (backend.cpp declines D 96 / 192), dense with or
  // without a mask, or varlen; any score modification.
  if (p.has_dropout()) {
    if (p.varlen) return launch_forward_score_mod<D, BF16, true, false, false, true>(p);
    return launch_forward_score_mod<D, BF16, false, true, false, true>(p);
  }
  if (p.varlen) return launch_forward_score_mod<D, BF16, true>(p);
  if (p.has_mask()) return launch_forward_score_mod<D, BF16, false, true>(p);
  if (has_score_mod(p)) return launch_forward_score_mod<D, BF16>(p);
  if constexpr (D == 64) {
    // Auto: 3 consumer warpgroups, except causal with S_q <= 1024, where the 192-row tiles
    // leave most of a head's last tile empty and the 2-warpgroup kernel measured faster at
    // S = 1k causal in both runs (288.5 vs 271.9 TFLOP/s run 6, 293.5 vs 277.9 run 5; non-causal
    // 1k the other way: 408 vs 377). Applied after run 6: the S = 512/1024 causal rows of the
    // results table were measured with 3 warpgroups.
    // Session 21 (H100, interleaved, 3 rounds x 2 copies, bench/results/2026-11-23-h100-flash3-
    // s21-d64-wgs2k.json): also causal S_q <= 2048 whose 192-row tiling leaves the last (and, in
    // causal, longest) tile partly empty: 2 warpgroups at S 2048 +2.7..+3.1 % (every round and
    // copy); where 192 divides S_q the 3-warpgroup kernel stays ahead (1536: 2 warpgroups
    // -3.2..-4.7 %, 3072: -6..-6.8 %), and at 4096 too (-1.9..-2.4 %, 64 of 192 rows used in
    // the last tile).
    const bool causal2 = p.causal != Causal::none &&
                         (p.seqlen_q <= 1024 || (p.seqlen_q <= 2048 && p.seqlen_q % 192 != 0));
    const bool three = tuning().consumer_wgs == 3 || (tuning().consumer_wgs == 0 && !causal2);
    if (three) {
      if (tuning().v_stages == 3) return launch_forward<D, BF16, 0, 3, 3>(p);
      return launch_forward<D, BF16, 0, 3>(p);
    }
  }
  if constexpr (D == 128) {
    // (176-key tiles have no 3-V-stage variant: 32 + 5 x 44 KB does not fit in 227 KB.)
    if (p.causal == Causal::none && tuning().wide_n) return launch_forward<D, BF16, 176, 2>(p);
  }
  if constexpr (D == 256) {
    // 128-key tiles (one K and one V stage, P packed into S: consume_tile_fused), or the same
    // tiles with K/V streamed through the 16 KB chunk ring (consume_tile_ring); A/B knobs.
    if (tuning().kv_ring_256 != 0) return launch_forward<D, BF16, 128, 2, 2, 10>(p);
    if (tuning().kv_tile_256 == 128) return launch_forward<D, BF16, 128, 2>(p);
  }
  if (tuning().v_stages == 3) return launch_forward<D, BF16, 0, 2, 3>(p);
  launch_forward<D, BF16, 0, 2>(p);
}

}  // namespace attnkit::flash3
