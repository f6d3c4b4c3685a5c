// Kernel parameters of the flash3 forward: the tensor maps (TMA descriptors, which must live in
// a __grid_constant__ parameter) plus what the epilogue and the mask need from Params.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "backends/flash3/traits.hpp"
#include "core/tail_ranges.hpp"

namespace attnkit::flash3 {

struct FwdArgs {
  CUtensorMap tma_q;  // dims (D, Sq, Hq, B),  box (64, kBlockM, 1, 1)
  CUtensorMap tma_k;  // dims (D, Sk, Hkv, B), box (64, kBlockN, 1, 1)
  CUtensorMap tma_v;  // dims (D, Sk, Hkv, B), box (64, kBlockN, 1, 1)
  void* out;          // [B, Sq, Hq, D], d-stride 1; strides in elements
  int64_t out_sb, out_ss, out_sh;
  float* lse;  // [B, Hq, Sq] fp32 or null
  int64_t lse_sb, lse_sh, lse_ss;
  int seqlen_q, seqlen_k;
  int group;          // Hq / Hkv
  int causal;         // 0 none, 1 causal (key j visible iff j <= i + causal_offset)
  int causal_offset;  // 0 (top_left) or Sk - Sq (bottom_right)
  int num_m_blocks;
  int heads_q;
  int num_tiles;      // num_m_blocks * heads_q * batch
  int pingpong;       // 1: consumer warpgroups alternate their GEMM issue (default)
  int overlap;        // 1: tile t's last P V shares a turn with tile t+1's first QK^T
  int q_bufs;         // Q buffers in use: 1, or 2 (= FwdTraits::kQStages) to prefetch the next Q
  int* tile_counter;  // dynamic scheduler: zeroed int in the workspace; null = static schedule
  float scale;        // softmax scale (natural units), for lse
  float scale_log2;   // scale * log2(e): exp(s*scale - m) = exp2(s*scale_log2 - m')
  // Session 7 (mainloop.cuh kVarTileDiet; tile_scheduler.cuh FastDiv): n / num_m_blocks and
  // n / heads_q as (umulhi(n, mul) + n) >> shift, precomputed by the launch (kernels without
  // kVarTileDiet do not read these), and the static schedule's rounds (ceil(num_tiles / grid);
  // a split tail's launch 1: the full rounds only), read by every static schedule since session
  // 20. (Appended: the other fields keep their offsets.)
  uint32_t m_div_mul, h_div_mul;
  int m_div_shift, h_div_shift;
  int num_rounds;
  // Session 7 (helper f3fwd17; mainloop.cuh kVarTmaEpi): O as a TMA store target, dims (D, Sq,
  // Hq, B) with the out_* strides, box (64, 16, 1, 1) (one consumer warp's rows), 128B swizzle.
  // Appended (64-byte aligned): the fields above keep their offsets; only kVarTmaEpi kernels
  // read it.
  CUtensorMap tma_o;
  // Session 13 (tile_scheduler.cuh tile_of_round): 1 = the static schedule's CTA -> tile
  // assignment rotates by one CTA per round (non-causal launches whose last m block is partial);
  // g_div_*: FastDiv of gridDim.x for that rotation.
  int rotate;
  uint32_t g_div_mul;
  int g_div_shift;
  // Kernels built with ATTNKIT_FLASH3_TRACE only (measurement builds, bench/gpu/flash3_shim_only.sh
  // F3_TRACE=1): per CTA, tile k < 64 and consumer warpgroup w < 3, kTraceWords (12) words at
  // ((cta * 64 + k) * 3 + w) * 12: clock64 when the warpgroup starts the tile (before its flush
  // turn, if any), after the flush turn, when the tile call returns, and m_block | n_blocks << 16.
  // The tile-at-a-time consumer (D = 256) instead: tile call starts, its Q landed, tile call
  // returns, its epilogue starts (mainloop.cuh trace_stamp), then words 4-10: the mainloop's
  // cycles by part (mainloop.cuh WaitClock). Null: nothing recorded.
  // (Tuning::trace.)
  unsigned long long* trace;
  // Session 14 (mainloop.cuh produce_tile, Tuning::q_prefetch): the producer prefetches the
  // CTA's next tile's Q box into L2 when q_prefetch K/V blocks of the current tile are left to
  // issue (0 = off); kv_prefetch = 1: the next tile's first K and V blocks too. Static schedule
  // only (the dynamic one does not know the next tile in time).
  int q_prefetch;
  int kv_prefetch;
  // Session 14 (epilogue.cuh store_output, Tuning::epi_wide): 1 / 2 = O stored 8 / 16 bytes per
  // lane (pairs swapped within each quad first); the launch sets it only when out and its
  // strides keep every such store aligned. 0 = 4 bytes.
  int epi_wide;
  // Session 19 (tail.cuh, launch.cuh launch_forward's split tail): read only by the tail kernel
  // (kVarTail), the second launch. Its CTA c runs key blocks [tail.begin(c), tail.begin(c + 1))
  // of tiles tail_first .. tail_first + tail.tiles - 1 (tail.n_blocks blocks each), a piece per
  // tile its range touches; a tile cut by range boundaries is finished by the last of its
  // pieces to arrive. tail_ws: [2 * tail.ctas][consumer warps][kTailWords][32] fp32 (the
  // pieces' slots, TailRanges::slot); tail_counters: [tail.tiles][consumer warps], 0 before and
  // after every launch (cuda::zeroed_counters).
  int tail_first;
  TailRanges tail;
  float* tail_ws;
  int* tail_counters;
  // Session 23 (mainloop.cuh kVarScoreMod; launch.cuh set_score_mod): softcap, ALiBi and the
  // sliding window. A window's right edge is folded into causal / causal_offset above (key j
  // visible iff j <= i + causal_offset: the smaller of the causal and the window bound); its left
  // edge is window_lo / lo_offset. Read only by kVarScoreMod kernels.
  //   softcap_k: 2 log2(e) scale / softcap (0 = off): the kernel's score becomes
  //              tanh(scale s / softcap) = 1 - 2 / (1 + 2^(s softcap_k)), and the launch sets
  //              scale = softcap, scale_log2 = softcap log2(e), so that softmax and lse see
  //              softcap tanh(scale s / softcap) in natural units;
  //   window_lo: 1 = key j hidden when j < i + lo_offset (lo_offset = Sk - Sq - window_left);
  //   alibi: slopes, element (b, h) at alibi + b alibi_sb + h alibi_sh (null = off);
  //          alibi_mul = -1 / scale (in the kernel's score units), diag_offset = Sk - Sq:
  //          s += slope alibi_mul |i + diag_offset - j|.
  float softcap_k;
  int window_lo;
  int lo_offset;
  int diag_offset;
  const float* alibi;
  int64_t alibi_sb, alibi_sh;
  float alibi_mul;
  // Session 24 (kVarVarlen; launch.cuh launch_forward_score_mod<D, BF16, true>): packed
  // sequences. cu_q / cu_k: [batch + 1] int32 row offsets on the device; the tensor maps are over
  // [1, total, H, D] (TMA coordinate b = 0, rows cu_q[b] + ... / cu_k[b] + ...); seqlen_q / k
  // above are the maxima (they size the tile grid); each tile takes its own sequence's lengths,
  // and its causal / window bounds from causal_kind (0 none, 1 top-left, 2 bottom-right) and
  // win_left / win_right (-1 = unbounded) through seq_bounds.hpp, as the host does for a dense
  // call. Read only by kVarVarlen kernels.
  const int* cu_q;
  const int* cu_k;
  int causal_kind;
  int win_left, win_right;
  // Session 24 (kVarScoreMod; score_mod.cuh apply_mask_tile): a bool or additive mask, element
  // (b, h, i, j) at mask + (b mask_sb + h mask_sh + i mask_si + j mask_sj) x its size in bytes
  // (broadcast dims: stride 0); mask_kind 0 none, 1 bool (b8, keep where nonzero), 2 / 3 / 4
  // additive f32 / f16 / bf16, added to the kernel's score units times mask_mul (1 / scale, or
  // 1 / softcap with a softcap: the units the softmax multiplies by scale_log2). Not with varlen
  // (the resolver refuses a mask there).
  const uint8_t* mask;
  int64_t mask_sb, mask_sh, mask_si, mask_sj;
  int mask_kind;
  float mask_mul;
  // Session 25 (mainloop.cuh kVarNarrow): the call's head dim (96 / 192) on a 128 / 256 kernel.
  int d_cols;
  // Session 39 (mainloop.cuh kVarDropout; dropout.cuh): Params' dropout, core/philox.hpp's rule.
  // drop_threshold 0 = none; drop_rescale = 1 / (1 - p).
  uint64_t drop_seed, drop_offset;
  uint32_t drop_threshold;
  float drop_rescale;
  // Session 46 (Tuning::lpt_schedule; lpt_schedule.hpp, tile_scheduler.cuh static_tile): the
  // static schedule as a table, [num_rounds][grid] tile indices (-1: none), in device memory the
  // launch keeps for the shape; null = the zig-zag / rotated rounds.
  const int* sched_table;
#if ATTNKIT_FLASH3_FWD_D256_TMA_EPI
  // (traits.hpp ATTNKIT_FLASH3_FWD_D256_TMA_EPI; mainloop.cuh kD256TmaEpi) The epilogue of the D
  // 256 kernels with O's staging region (traits.hpp lists them per value): 0 = STG
  // (store_output); 1 / 2 = O through tma_o, which the launch encoded as a rank-3 map in form 1
  // (D, Sq, Hq x B) or 2 (D, Hq, B x Sq) (launch.cuh o_map_d256). Present unless the switch is 0.
  int o_tma;
#endif
};

}  // namespace attnkit::flash3
