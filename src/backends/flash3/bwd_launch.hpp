// Entry points of the flash3 backward instantiations (instantiations/bwd_d*_*.cu).
#pragma once

#include <cstdint>

#include "core/params.hpp"

namespace attnkit::flash3 {

/// Measurement knobs of the backward (benchmarks and tests only; defaults are the tuned choice).
struct BwdTuning {
  // dQ accumulation: 1 = per-warpgroup bulk TMA reduce-add of the smem-staged tile, 0 = float2
  // atomics straight from registers, -1 = the variant's default (bwd_launch.cuh).
  int dq_mode = -1;
  // Warpgroup coupling (bwd_traits.hpp): 1 = decoupled (dQ split by keys), 0 = coupled (lockstep;
  // D = 128 splits dQ by columns), -1 = default.
  int decoupled = -1;
  // Query rows per iteration: 128 (D = 64 only, implies coupled; bwd_traits.hpp), 80 (D = 128
  // only; bwd_traits.hpp kDqTrans: runs only where the other knobs leave the coupled dQ-first
  // structure with atomics, the float4 layout, stat_mode 3 and the item diet, else 64 rows),
  // 64, or -1 = default (D 128: 80 non-causal and causal from 8k keys, session 44).
  int block_m = -1;
  // GEMM order after dS^T: 1 = dQ before dK (FA3 order, bwd_kernel.cuh kDqFirst), 0 = dV, dK
  // then dQ, -1 = default. Ignored for decoupled D = 128.
  int dq_first = -1;
  // lse2 / delta source (bwd_kernel.cuh kStat): 0 direct, 1 shuffles (block_m 128), 2 loaded
  // one item ahead and staged through smem, 3 = 2 with the refill issued after the dS^T fence
  // (coupled 64- or 80-row dQ-first only; 2 elsewhere); -1 = default.
  int stat_mode = -1;
  // K / V rows as register A fragments for S^T / dP^T (RS instead of SS; bwd_kernel.cuh
  // kKVRegs): 1 / 0 / -1 = default. Only decoupled D = 64 with 64-row blocks and stat_mode 0.
  int kv_regs = -1;
  // dQ workspace layout (bwd_traits.hpp kDqVec4): 1 = float4 runs (float4 atomics / smem
  // stores), 0 = float2 runs, -1 = default.
  int dq_vec4 = -1;
  // Item order (bwd_traits.hpp kItemRotate): 1 = each CTA starts at its own offset, 0 = every
  // CTA from its first visible query block, -1 = default.
  int item_rot = -1;
  // Producer's try_wait suspend hint in ns (bwd_traits.hpp kProducerWaitNs): 0 = plain
  // try_wait loop, > 0 = that hint, -1 = default.
  int wait_ns = -1;
  // dV GEMM issued right after P^T, before the dS^T code (bwd_kernel.cuh kDvEarly; coupled dQ-
  // first kernels only, ignored otherwise): 1 / 0 / -1 = default.
  int dv_early = -1;
  // Preprocess (bwd_kernel.cuh 1v, variant "+vpp") and dQ conversion (3v, "+vcv") with 16-byte
  // accesses (session 6): 1 / 0 / -1 = default. Apply where bwd::prep_vec_ok / convert_vec_ok
  // hold (d-stride 1, 16-byte aligned rows; the conversion also needs the float4 dQ layout), the
  // scalar kernels 1 / 3 otherwise. (The 80-row kernel's workspace has a conversion of its own,
  // bwd_dq_convert_m80_kernel, which conv_vec does not select.)
  int prep_vec = -1;
  int conv_vec = -1;
  // Per-item diet of the item loop (bwd_kernel.cuh kIdiet, variant "+idiet", session 7): the
  // (q head, query block) walk and workspace row carried from item to item instead of decoded
  // with divisions, the mask test hoisted. Coupled dQ-first kernels without dv_early at 64- or
  // 80-row blocks (D 128) or 128-row blocks (D 64) only (ignored otherwise): 1 / 0 / -1 = default.
  int idiet = -1;
  // dK / dV epilogue through shared memory (stmatrix) and TMA stores instead of 32-bit STG from
  // the accumulators (bwd_kernel.cuh kTmaKV, variant "+tmakv", session 9; the forward's
  // tma_epilogue). The defaults' structures only (coupled dQ-first without dv_early, D 128 with
  // idiet, D 64 128-row without it or, at kStat 2, with it; ignored otherwise), and only where
  // dK / dV are TMA store targets (16-byte aligned, strides multiples of 8 elements; else the STG
  // epilogue runs). Exact (same bits). 1 / 0 / -1 = default (bwd_traits.hpp: on at D 64 and 128,
  // with the item diet).
  int tmakv = -1;
  // Measurement only (session 11): the dQ accumulator starts this many bytes (a multiple of
  // 256) after its usual place in the workspace, which grows by as much. Lets one process time
  // the same kernel on other dQ addresses (the D 128 per-process spread of session 10). 0 = off.
  int64_t dq_ws_shift = 0;
  // The D 256 backward's consumer layout (session 28): 1 = by GEMM with RS dV / dK
  // (bwd_d256_rs.cuh; plain calls only: score mods and masks run the split kernel), 0 = split by
  // queries (bwd_kernel_d256.cuh), -1 = ATTNKIT_FLASH3_BWD_D256_LAYOUT (split or 0: 0), else 1.
  // Any value other than 0 selects the RS layout.
  int d256_layout = -1;
  // CTA dispatch order (session 49, bwd_order.cuh bwd_cta; D 256, and D 128 since session 50,
  // below): 0 = the hardware's
  // (linear blockIdx, key block fastest, one (kv head, batch) pair after another); k > 0 = causal
  // calls dispatch their CTAs x-major within sections of k (kv head, batch) pairs, so that short
  // and long key blocks mix across the SMs (greedy dispatch model, bench/bwd_causal_order_model.py:
  // busiest SM 6-8 % above the mean at D 256 causal 1k-4k in the hardware's order); -1 = the auto
  // (bwd_order_rule.hpp, D 256: sections of 4 at causal from 3072 keys while a section's Q / dO /
  // dQ fit 32 MiB; measured +2.1 / +4.9 % at 4096 / 3328). At D 256 only dense (non-varlen),
  // non-deterministic, causal launches of the plain kernels use it (both layouts; the score-mod
  // kernels keep the hardware's). D 128 (session 50, bwd_kernel.cuh kOrd twins of the default
  // structures, the TMA dK / dV epilogue with the item diet; not score mods, varlen,
  // deterministic): causal launches honour a request k > 0 as sections of 2^sh kv heads within a
  // batch, 2^sh the largest power of two <= k dividing Hkv (bwd_order_rule.hpp bwd_order_shift);
  // the auto (kBwdOrderAutoD128) in sections of 8 from 1280 keys (session 52; 2048 in session
  // 51) while they fit 28 MiB, else of 4 within the 32 MiB bound (+2.8 / +2.4 % at causal 4k /
  // 8k). D 64 keeps the hardware's order.
  int order_sections = -1;
};
inline BwdTuning& bwd_tuning() {
  static BwdTuning t;
  return t;
}
/// The sections of the CTA order the last backward launch on this thread ran (0 = the hardware's
/// order; bwd_order_rule.hpp; D 128: 2^sh after the rounding; D 64: always 0). Tests read it.
inline int& last_backward_order_sections() {
  static thread_local int sections = 0;
  return sections;
}
/// 1 when the last backward launch on this thread ran the early dQ conversion
/// (ATTNKIT_FLASH3_BWD_EARLY_CONV, bwd_launch.cuh `early`), else 0. Tests read it.
inline int& last_backward_early_conv() {
  static thread_local int early = 0;
  return early;
}

/// Runs the backward for head dim D (64, 128 or 256), bf16 (BF16 = true) or f16: dq, dk, dv from
/// (dout, q, k, v, out, lse). Params must satisfy backend.cpp's capability table and
/// extra_reasons (is_backward). Uses the stream-ordered workspace (cuda/workspace.hpp):
/// B * Hq * Sq rounded up to the query block (64, or 128 for bm128) * (D + 2) * 4 bytes.
template <int D, bool BF16>
void run_backward(const Params& p);

extern template void run_backward<64, true>(const Params&);
extern template void run_backward<64, false>(const Params&);
extern template void run_backward<128, true>(const Params&);
extern template void run_backward<128, false>(const Params&);
// D = 256 (session 26): its own kernel (bwd_kernel_d256.cuh), plain calls only.
template <>
void run_backward<256, true>(const Params&);
template <>
void run_backward<256, false>(const Params&);

}  // namespace attnkit::flash3
