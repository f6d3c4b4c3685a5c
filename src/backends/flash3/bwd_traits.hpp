// Tile sizes and shared-memory layout of the flash3 backward (FA3-style: one CTA per key block),
// shared by the kernel and the host launcher.
//
// One CTA = (kBlockN = 128 keys, kv head g, batch b), 3 warpgroups (384 threads):
//   WG0 producer: thread 0 issues TMA (K and V once; per query block Q and dO tiles and the
//       lse2 / delta rows (64 fp32 each, bulk copies) into a kStages ring).
//   WG1, WG2 consumers, WG w owning keys [64 w, 64 w + 64) of the block. Per query block of
//       kBlockM = 64 rows (looping over every q head of the GQA group):
//         S^T [64k x 64q] = K_w Q^T,  dP^T = V_w dO^T            wgmma SS (K-major A and B)
//         P^T = exp2(S^T scale_log2 - lse2),  dS^T = P^T (dP^T - delta)     registers
//         dV_w += P^T dO,  dK_w += dS^T Q                          wgmma RS (P^T, dS^T from regs)
//         dS^T -> smem, then dQ = dS K                             wgmma SS (MN-major A and B)
//         dQ -> fp32 workspace: D = 128 staged in smem and added by one bulk TMA reduce-add
//         per WG (cp.reduce.async.bulk .add.f32); D = 64 by atomicAdd(float2) from registers
//         (BwdTuning::dq_mode; measured choice in bwd_launch.cuh)
//       dQ [64q x D] is split between the two consumers one of two ways (kDecoupled):
//         decoupled (default): by keys. WG w sums dS K over its own 64 keys for all D columns,
//           so it needs only its own dS^T rows: the WGs never wait for each other and drift
//           apart, one's softmax overlapping the other's GEMMs; both add into the same dQ tile.
//         coupled: D = 128 by columns (WG w: D/2 columns over all 128 keys, which needs both
//           WGs' dS^T), D = 64 by keys; a 256-thread barrier per iteration, lockstep.
//           Half the dQ reduce traffic and 32 fewer registers. Run 1 (H200, S = 4k): 397
//           TFLOP/s at D = 128; D = 64 (then coupled by the same barrier) 258.
//
// Registers per consumer thread (fp32 accumulators, m64nN layout = N/2 regs): dK, dV = D/2 each;
// S^T, dP^T = 32 each; dQ = kDqN/2; P^T, dS^T packed 16-bit = 16 each.
//   D = 128: 64 + 64 + 32 + 32 (+ dQ 32 once S/dP are packed) -> fits 240 (setmaxnreg).
// Shared memory (16-bit tiles as kD/64 column chunks of [rows][64] with the 128-byte swizzle):
//   K, V      [kBlockN x kD]               once
//   Q, dO     [kStages][kBlockM x kD]      ring; full barrier = TMA bytes of Q, dO, lse2, delta
//   dS^T      [kDSBuffers][kBlockN x kBlockM]   coupled: double-buffered by iteration parity
//   dQ stage  [2 WGs][64 x kDqN] fp32      one per consumer (bulk reduce source)
//   lse2,delta[kStages][kBlockM] fp32
//   D = 128 decoupled: 32 + 32 + 2*2*16 + 16 + 2*32 + 1 KB = 209 KB (coupled 193 KB); D = 64:
//   16 + 16 + 2*2*8 + 16 + 2*16 + 1 = 113 KB.
// 128-row query blocks (BM = 128, D = 64 only, always coupled; session 3): S^T and dP^T become
// m64n128 SS GEMMs (K = 64): 6 KB of operands per 64 clk = 96 B/clk instead of the m64n64 SS
// shape's 128 B/clk, and every per-iteration cost (two stage barriers, the WG barrier, three wgmma
// drains, the lse2/delta loads, the dQ hand-off) is paid once per 128 queries instead of 64. dQ
// [128q x 64] is split by query rows: WG w computes rows [64 w, 64 w + 64) over all 128 keys (both
// WGs' dS^T: the 256-thread barrier, dS^T double-buffered) and adds them into the workspace tile
// of query block (m0 + 64 w) / 64, so the workspace layout and dQ conversion are unchanged.
// Registers: S^T, dP^T 64 each + dK, dV 32 each = 192; lse2 / delta (32 query columns a thread)
// do not fit as registers too: each WG stages them through its own smem rows (ld.global by
// thread tid = query row tid, st.shared, WG barrier, ld.shared.v2 broadcasts).
//   Smem: 16 + 16 + 2*16 + 2*16 + 2*32 (dS^T) + 2*16 (dQ stages) + 2 KB stats = 194 KB.
// dQ workspace layout (fp32): per (b*Hq + h, query block) a contiguous 64 x D tile at
// (bh * sq_pad + m0) * D, made of D / kDqN parts of 64 x kDqN (part = column block), each stored
// thread-major as the wgmma accumulator lies in registers: element (row, col) of a part at
// ((2 * (col / 8) + (row % 16) / 8) * 128 + tid) * 2 + col % 2 with
// tid = 32 * (row / 16) + 4 * (row % 8) + (col % 8) / 2, so each warp's stores (to smem for the
// bulk reduce, or its atomics) are 256 contiguous bytes. bwd_dq_convert_kernel undoes this.
#pragma once

#include <cstdint>

namespace attnkit::flash3::bwd {

// Session-4 knobs (defaults of bwd_launch.cuh default_variant; each overridable per call by
// BwdTuning / env ATTNKIT_FLASH3_BWD_VARIANT "+v4" / "+rot"):
// kDqVec4: dQ workspace tiles in float4 runs (thread tid's dq[4 j .. 4 j + 3] at (j * 128 + tid)
//   * 4 of its part) instead of float2 runs, so the atomics are float4 (RED.E.ADD.F32x4: half the
//   instructions) and the bulk path's smem staging is 16-byte stores. Same bytes. Session-4 run 1
//   (H200, same-process A/B, TFLOP/s S 4k / 16k): D 64 decoupled+atomic 251.9 / 266.4 -> 253.6 /
//   267.7, causal 269.8 / 319.3 -> 271.5 / 325.5; coupled+atomic+dqf +1.3-1.5 % on all four;
//   D 128 coupled+atomic+dqf -1.7 / +1.7 %, causal -3.2 / +2.5 % (that kernel's noise); bulk
//   paths -0.3 %. On.
inline constexpr bool kDqVec4 = true;
// kItemRotate / kItemRotateCausal: CTA x starts its item loop at x * items / N (N key blocks; see
//   bwd_kernel.cuh), spreading the key blocks of a head over different dQ tiles. Session-4 run 1:
//   non-causal +0.3-1.7 % at D 64 (m128+bulk+dqf 309.1 / 328.8 -> 310.4 / 332.0), 0 / -4 % at D
//   128; causal D 64 decoupled+atomic -10 / -14 % (269.8 / 319.3 -> 242.2 / 275.9), D 128 -7 /
//   -9 %. The same-tile dQ contention it was written for is not what slows the non-causal
//   kernels. Off then.
//   Session 10 (H100, bench/gpu/flash3_bwd_modes.sh: one process per variant, 6 rounds ABBA,
//   `...-flash3-bwd-s10-rot.md`), on the session-10 defaults: D 64 non-causal +3.8 / +2.4 / +1.3 %
//   at S 1k / 4k / 16k (at 1k every rotated process above every default one), D 64 causal -0.7 /
//   -2.1 / -0.1 %, D 128 -1.3..+0.4 % non-causal, -3.2..-0.1 % causal: on for D 64 non-causal
//   (kItemRotate64) only.
inline constexpr bool kItemRotate = false;
inline constexpr bool kItemRotate64 = true;
inline constexpr bool kItemRotateCausal = false;
// kSharedBase: derive the 1024-aligned shared-memory base by pointer arithmetic on the extern
//   __shared__ array (STS / LDS for every generic-looking access) instead of an integer round
//   trip (ST.E / LD.E); bwd_kernel.cuh says why. -DATTNKIT_FLASH3_BWD_SHARED_BASE=0 builds the
//   old form (the A/B tool is built both ways in bench/gpu/flash3_bwd_gpu_run.sh).
#ifndef ATTNKIT_FLASH3_BWD_SHARED_BASE
#define ATTNKIT_FLASH3_BWD_SHARED_BASE 1
#endif
inline constexpr bool kSharedBase = ATTNKIT_FLASH3_BWD_SHARED_BASE != 0;
// kMaskHoist (session 5): the causal / Sk mask of P^T = exp2(S^T scale - lse2) tested once per
//   item around two copies of the element loop instead of once per element (bwd_kernel.cuh says
//   why). -DATTNKIT_FLASH3_BWD_MASK_HOIST=0 builds the old form (A/B: flash3_bwd_gpu_run.sh
//   F3B_AB_OLD_DEFS).
#ifndef ATTNKIT_FLASH3_BWD_MASK_HOIST
#define ATTNKIT_FLASH3_BWD_MASK_HOIST 1
#endif
inline constexpr bool kMaskHoist = ATTNKIT_FLASH3_BWD_MASK_HOIST != 0;
// kD64CausalM128 (session 5): D = 64 causal by the 128-row coupled kernel (m128 + atomics + dQ-
//   first), like non-causal, instead of decoupled + atomics + K / V in registers. Run 2 (H100,
//   same process, TFLOP/s S 1k / 4k / 16k): 217.1 / 370.3 / 453.3 vs 171.9 / 283.8 / 332.4
//   (+26 / +30 / +36 %; the 128-row kernel with kMaskHoist); tests + sanitizer ran it. On.
inline constexpr bool kD64CausalM128 = true;
// kProducerWaitNs (session 5, variant "+sl"): suspend-time hint of the producer's empty-slot
//   try_wait (10 ms, CUTLASS's choice: the thread wakes when the phase completes). Off by default
//   until a same-run A/B says otherwise (kProducerWaitDefault).
inline constexpr unsigned kProducerWaitNs = 10000000u;
inline constexpr bool kProducerWaitDefault = false;
// kDvEarlyDefault (session 5 round 2, variant "+dve"): the dV GEMM issued before the dS^T stretch
//   in the coupled dQ-first kernels (bwd_kernel.cuh kDvEarly says why). Compile-only so far: off
//   until a same-run A/B on a GPU says otherwise.
inline constexpr bool kDvEarlyDefault = false;
// kPrepVecDefault / kConvVecDefault (session 6, helper f3bwd8, variants "+vpp" / "+vcv"): the
//   preprocess (bwd_kernel.cuh 1v) and the dQ conversion (3v) with 16-byte loads / stores.
//   H100 per-kernel times (bench/gpu/flash3_bwd_breakdown.py, 16k tokens, hidden 2048; results
//   2026-11-22-h100-flash3-bwd-s6-f3bwd8.md): preprocess 1v 93 / 95 us vs 1's 159-165 at D 64
//   (cuDNN's dot(dO, O) kernel 97-100), 92 vs 96 at D 128: on. Conversion 3v 139-162 us vs 3's
//   83-86 (cuDNN 75): off.
inline constexpr bool kPrepVecDefault = true;
inline constexpr bool kConvVecDefault = false;
// kIdietDefault (session 7, helper f3bwd11, variant "+idiet"): the item loop without per-item
//   divisions (bwd_kernel.cuh kIdiet), the backward analogue of the forward's tile diet.
//   Session 8, H100 same-process A/B (best of 20 each, TFLOP/s; bench/results/
//   2026-11-22-h100-flash3-bwd-s8-f3bwd11.md): D 128 +0.9 / +3.2 % at S 1k (non-causal /
//   causal), +5.4 / +1.6 % at 4k, +2.3 / +7.3 % at 16k: on. D 64 +0.6 / +1.5, +2.6 / -3.1,
//   +0.1 / 0.0 %: mixed, off (kIdietDefault64) until session 45.
//   Session 45 (H200, flash3_bwd_modes.sh, ABBA, one process per variant; bench/results/
//   2026-11-30-h200-flash3-s45-call{4,6}-*.txt), on the session 42-44 item trims: the diet alone
//   (then without the TMA dK / dV epilogue, built with the diet at D 128 only) -1.5 / -6.9 % at 1k
//   (non-causal / causal), +2.2..+4.2 % non-causal from 2k, +3.8 % causal 16k (call 4); the diet
//   with the epilogue, a D 64 128-row kernel of its own since call 6 (kStat 2 only), against the
//   epilogue alone (the 1k default before): +4.2 / +3.1 % at 1k, every process above every default
//   one; against the diet alone +5.7 / +8.4 % at 1k, +3.4 % at 2k, +1.5 / +3.4 % at 4k, -0.3 /
//   -2.0 % at 16k (16k causal: the diet-alone processes spread 492-536). On at every length, with
//   the epilogue.
inline constexpr bool kIdietDefault = true;
inline constexpr bool kIdietDefault64 = true;
// kTmaKvDefault (session 9, helper f3bwd13, variant "+tmakv"): the dK / dV epilogue through shared
//   memory (stmatrix) and TMA stores (bwd_kernel.cuh kTmaKV) instead of 32-bit STG from the
//   accumulators, as the forward's kVarTmaEpi. Session 9, H100 same-process A/B (median of 20
//   calls each, TFLOP/s; bench/results/2026-11-22-h100-flash3-bwd-s9-f3bwd12-13.md): D 64 +5.0 /
//   +7.4 % at S 1k (non-causal / causal), +0.8 / +3.3 % at 4k, +0.6 / +1.3 % at 16k: on
//   (kTmaKvDefault64). D 128 +4.4 / +5.0 % at 1k but -11.7 / -9.1 % at 4k and -3.3 / -3.1 % at
//   16k in that call; session 10 (one process per kernel, 4 rounds ABBA,
//   `...-flash3-bwd-s10-modes.md`) put that at -1.7 / -0.9 % (4k) and -3.1 / -3.0 % (16k): session
//   9's 4k loss was a slow process, the few % at 16k are the kernel (ncu 4k: +3.8 % cycles, same
//   loop code). On per call up to 1k keys from then until session 45.
//   Session 45 (H200, call 4 of kIdietDefault64's runs), on the session 42-44 kernels (64 rows
//   causal below 8k keys, 80 rows otherwise): D 128 +tmakv above 1k keys +5.8 / +1.7 / +0.5 / +0.7
//   % causal at 2k / 4k / 8k / 16k (2k: every +tmakv process above every default one), +2.4 / +1.6
//   % non-causal at 4k / 16k (16k: 7 of 8 above all but one default process): on at every length.
inline constexpr bool kTmaKvDefault = true;
inline constexpr bool kTmaKvDefault64 = true;
// D 128 causal calls take the 80-row blocks (kDqTrans, bwd_launch.cuh default_variant) from this
// many keys: 80 / 64 rows -1.1 % at 2k and at 4k, +4.0 % at 8k, +3.8 % at 16k (session 44 calls
// 2 and 4; non-causal calls take them at every length). Session 46 call 3, both kernels with the
// TMA dK / dV epilogue at every length since session 45: +1.6 % at 4k (5 of 6 80-row processes
// above every 64-row one), +0.5 % at 2k (within the spread): from 4k.
inline constexpr int64_t kM80MinSkCausal = 4096;

/// A per-head-dim build mask (bit 0 = D 64, bit 1 = D 128), as the switches below take.
constexpr bool d_mask_has(int mask, int d) {
  return (mask & (d == 64 ? 1 : 2)) != 0;
}

// kLateFence (ATTNKIT_FLASH3_BWD_LATE_FENCE, a mask: 1 = D 64, 2 = D 128; default 3; session 9
//   helper f3bwd12's "+lfence" as a build switch since session 10, so no kernel is instantiated
//   twice for it): the dS^T proxy fence (fence.proxy.async.shared::cta, MEMBAR + FENCE.VIEW.ASYNC.S
//   in SASS) after the dV GEMM's issue instead of before it, FA3's and cuDNN's order, so dV's
//   HGMMAs do not wait for the dS^T stores to drain. Legal because the fence orders this thread's
//   generic st.shared of dS^T before later async-proxy reads of those bytes, and the only such
//   readers are the dQ wgmmas, issued after the named barrier that follows the fence in every
//   writer's program order (write -> fence -> barrier -> wgmma, unchanged); dV (and dK without
//   dQ-first) read A from registers and B from Q / dO, written only by TMA. The WAR side (dS^T
//   buffer reuse) is ordered by the dQ wgmma's wait before an earlier barrier, in either
//   position. Same wgmmas, same order: dK / dV bitwise equal. Measured (H100, late vs early):
//   session 9 (same process, 20-call medians) D 64 +0.3..+2.7 % on all six rows (1k-16k, both
//   causal modes), D 128 +0.5..+2.5 % except -7.9 % (4k non-causal) and -7.5 % (16k causal);
//   session 10 (bench/gpu/flash3_bwd_modes.sh, one process per binary and variant, 4 rounds
//   ABBA, median of the per-process medians; `...-flash3-bwd-s10-modes.md`) D 64 +0.85 % median
//   over 12 comparisons (10 positive, -1.5..+2.5 %), D 128 -2.4..+3.0 % (4k -1.2 / -2.4 % with the
//   STG epilogue): on at D 64, off at D 128. Session 44 call 5 (H200, the same tool, 6 rounds,
//   mask 3 against 1 with D 128 on 80-row blocks non-causal; dK / dV bitwise equal): D 128 +1.6 %
//   at 1k and +2.0 % at 16k non-causal (80 rows), +2.3 % at 4k causal (64 rows), every late-fence
//   process above every other there; 4k non-causal / 16k causal within their noise (-0.1 / -0.8
//   %, processes spread 582-612 / 588-665): on at D 128 too since.
#ifndef ATTNKIT_FLASH3_BWD_LATE_FENCE
#define ATTNKIT_FLASH3_BWD_LATE_FENCE 3
#endif
template <int D>
inline constexpr bool kLateFence = d_mask_has(ATTNKIT_FLASH3_BWD_LATE_FENCE, D);

// kUniDesc (ATTNKIT_FLASH3_BWD_UNI_DESC, default 1; session 42): the D 64 / 128 kernel's wgmma
//   descriptors as the forward's since session 3 (mainloop.cuh kVarUniformDesc / kDescRedux):
//   each GEMM's k-step 0 descriptor built once, its low word through REDUX (uniform_lo, so a
//   stage-dependent address lives in uniform registers), every later k-step desc_add(d0, offset):
//   one UIADD3 per operand instead of a rebuild. The old form (0) rebuilt both descriptors of
//   every wgmma in vector registers: 12-13 instructions between the S^T / dP^T / dQ HGMMAs (LOP3,
//   SHF, VIADD, R2UR x 2, UMOV, ...; the D 128 default kernel's SASS, nvcc 13.0), ~24 SS wgmmas an
//   item and warp. Same wgmmas, same operands: dK / dV bitwise equal. A build switch, as the
//   late fence, so no kernel is instantiated twice for it (bench/gpu/flash3_bwd_modes.sh
//   FLAVOURS A/Bs it). Session 42 (H200, one process per build and round, 4-6 rounds ABBA;
//   bench/results/2026-11-30-h200-flash3-s42.md calls 3 / 5): D 128 +2.4 / +2.1 % at S 1k
//   (non-causal / causal), +0.6..+1.3 % at 16k, ~0 at 4k; D 64 -0.5..+0.3 %.
#ifndef ATTNKIT_FLASH3_BWD_UNI_DESC
#define ATTNKIT_FLASH3_BWD_UNI_DESC 1
#endif
inline constexpr bool kUniDesc = ATTNKIT_FLASH3_BWD_UNI_DESC != 0;
// kUniDesc256 (ATTNKIT_FLASH3_BWD_D256_UNI_DESC, default 1; session 42, first run in session 43):
//   the same descriptor form in the D 256 backward kernels (bwd_kernel_d256.cuh's split layout,
//   bwd_d256_rs.cuh, issue_dq_d256), whose S^T / dP^T GEMMs take 16 k-steps each: -136..-200 SASS
//   instructions a kernel (the RS default 2,176 -> 1,992). Session 43 call 1 (flash3_bwd_modes.sh,
//   6 rounds, with kStatAligned / kItemHoist, against all three off; dK / dV bitwise): D 256 +1.5
//   / +0.9 % at 1k (non-causal / causal); non-causal only at 4k / 16k: +2.6 / +3.0 %, +3.5 / +3.6
//   % (two copies of the build).
#ifndef ATTNKIT_FLASH3_BWD_D256_UNI_DESC
#define ATTNKIT_FLASH3_BWD_D256_UNI_DESC 1
#endif
inline constexpr bool kUniDesc256 = ATTNKIT_FLASH3_BWD_D256_UNI_DESC != 0;

// kDsStsm (ATTNKIT_FLASH3_BWD_DS_STSM, default 1; session 42): dS^T to shared memory by
//   stmatrix.x4 (reg_ops.cuh stmatrix_packed_rows: kBM / 16 per thread) instead of kBM / 4 32-bit
//   st.shared with their swizzled addresses (16 STS + ~35 LOP3 / IADD3 / IMAD at D 128); cuDNN's
//   kernel writes dS^T with STSM too (session 3's ncu). Same bytes at the same places.
// kRedBase (ATTNKIT_FLASH3_BWD_RED_BASE, default 1; session 42): the float4 dQ REDs from one
//   per-thread address with immediate offsets (bwd_kernel.cuh says why).
// Session 42 call 6 (as kUniDesc's, on top of it), against both off: D 64 +1.8..+2.3 % in every
//   row (each about half), D 128 +3.9 / +3.0 % at 1k (stmatrix alone +3.9 / +3.0), +1.1 / +1.8 %
//   at 4k, +2.5 / +1.7 % at 16k (the REDs alone +1.9 % at 16k non-causal).
#ifndef ATTNKIT_FLASH3_BWD_DS_STSM
#define ATTNKIT_FLASH3_BWD_DS_STSM 1
#endif
inline constexpr bool kDsStsm = ATTNKIT_FLASH3_BWD_DS_STSM != 0;
#ifndef ATTNKIT_FLASH3_BWD_RED_BASE
#define ATTNKIT_FLASH3_BWD_RED_BASE 1
#endif
inline constexpr bool kRedBase = ATTNKIT_FLASH3_BWD_RED_BASE != 0;
// kStatAligned (ATTNKIT_FLASH3_BWD_STAT_ALIGNED, a mask as the late fence's: 1 = D 64, 2 = D 128;
//   default 1; session 42): the staged lse2 / delta pairs read as 8-byte loads (bwd_kernel.cuh
//   says why). Session 42 call 8 (flash3_bwd_modes.sh, 4 rounds, against both off): D 64
//   +0.6..+1.1 % in every row, D 128 -0.3..-0.8 % (with the descriptor hoist: not additive).
//   Session 43 call 1 (D 64 mask, with kItemHoist, against both off, 6 rounds): D 64 +0.4..+1.6 %.
#ifndef ATTNKIT_FLASH3_BWD_STAT_ALIGNED
#define ATTNKIT_FLASH3_BWD_STAT_ALIGNED 1
#endif
template <int D>
inline constexpr bool kStatAligned = d_mask_has(ATTNKIT_FLASH3_BWD_STAT_ALIGNED, D);
// kItemHoist (ATTNKIT_FLASH3_BWD_ITEM_HOIST, default 1; session 42): item-invariant values built
//   once before the item loop (bwd_kernel.cuh): kUniDesc's descriptor bases of K_w, V_w and the
//   dQ K columns (with their REDUX; session 42 call 8, as "hoist": D 128 +1.3 % at 1k, +0.2..+1.4
//   % at 4k, -0.4..-0.8 % at 16k, D 64 +0.1..+0.6 %) and the 64-row stat refill's source pointer
//   (D 128 default 2,176 -> 2,152 instructions). Session 43 call 1 (against off, 6 rounds): D 128
//   +0.3 / 0 % at 1k, +0.9..+1.7 % at 4k, +0.7 % at 16k non-causal, -1 % at 16k causal (its
//   processes spread 562-628 in every flavour: noise). Not in the score-mod kernels (kMod != 0:
//   they spilled more with it, bwd_kernel.cuh).
#ifndef ATTNKIT_FLASH3_BWD_ITEM_HOIST
#define ATTNKIT_FLASH3_BWD_ITEM_HOIST 1
#endif
inline constexpr bool kItemHoist = ATTNKIT_FLASH3_BWD_ITEM_HOIST != 0;

// ATTNKIT_FLASH3_BWD_TIMING_SKIP_DQ_ATOMICS (session 9, helper f3bwd12; on main since session 10):
//   TIMING BUILDS ONLY, dQ IS WRONG. 1 drops the dQ atomics (RED.E.ADD.F32x4 / F32x2) of the
//   consumers' atomic dQ path and keeps everything else (the dQ GEMM, its wait, its registers
//   consumed by an empty asm), so an A/B binary built with it (bench/gpu/flash3_bwd_modes.sh
//   FLAVOURS, flash3_bwd_gpu_run.sh F3B_AB_OLD_DEFS) bounds what any dQ hand-off off the register
//   path or out of L2 could gain. Never a variant token, never set by CMake, never in a library or
//   test build: the workspace keeps the preprocess's zeros, so dQ = 0 and every backward test
//   fails. The bulk path (dq_bulk) is not affected. Default 0.
#ifndef ATTNKIT_FLASH3_BWD_TIMING_SKIP_DQ_ATOMICS
#define ATTNKIT_FLASH3_BWD_TIMING_SKIP_DQ_ATOMICS 0
#endif
#if ATTNKIT_FLASH3_BWD_TIMING_SKIP_DQ_ATOMICS
#warning "ATTNKIT_FLASH3_BWD_TIMING_SKIP_DQ_ATOMICS=1: flash3 backward dQ is WRONG (timing build)"
#endif
inline constexpr bool kTimingSkipDqAtomics = ATTNKIT_FLASH3_BWD_TIMING_SKIP_DQ_ATOMICS != 0;

// ATTNKIT_FLASH3_BWD_EARLY_CONV (default 1 since session 54; written by a session 53 helper,
//   bench/notes/bwd-early-conv-s53.md): the dQ conversion of the D 128 default structures (the
//   80-row kernel + 3t non-causal, the 64-row kernel + 3w causal; dense, no score mods, not
//   deterministic) as a programmatic dependent launch of the main kernel that does NOT wait for
//   it: each conversion CTA spins (ld.acquire.gpu + nanosleep) on its (batch, kv head)'s done
//   counter, which every main CTA's two consumer warpgroups bump (a WG barrier after their last dQ
//   RED, then one red.release.gpu each), so the heads finished before the main kernel's last,
//   partial wave are converted on the SMs that wave leaves idle. The counters (int [B * Hq]) sit
//   after the dQ workspace and are zeroed by the 1v preprocess (bwd_early_conv.cuh). Main kernels
//   trigger (griddepcontrol.launch_dependents) right after their barrier init. No fence: the
//   dQ adds stay REDG (tools/sass_atomics.sh). Measured (H200, same-process ABBA, 6 x 400 calls,
//   session 53 calls 8-9): +1.0 / +1.1 % non-causal 1k, +2.4 / +2.5 % causal 1k, +1.9 % nc 4k,
//   +1.3 % causal 4k, +0.4 % nc 16k; dK / dV bitwise equal. Session 54 ran every flash3 test with
//   it on (and a 20 s spin watchdog), then the backward suites on the default build.
//   0 builds every kernel as before (the plain conversion after the main kernel).
#ifndef ATTNKIT_FLASH3_BWD_EARLY_CONV
#define ATTNKIT_FLASH3_BWD_EARLY_CONV 1
#endif
inline constexpr bool kBwdEarlyConv = ATTNKIT_FLASH3_BWD_EARLY_CONV != 0;
/// The main kernels built with the early conversion's trigger and done-counter bumps (with
/// kBwdEarlyConv): D 128's TMA-epilogue item-diet structures without score mods, varlen or kDet
/// (the defaults, 64 / 80 rows, and their kOrd twins: the structures that have kOrd twins).
/// Coupled warpgroups with the dQ adds first (kDqFirst), as every default structure.
/// Whether a call uses it is the launcher's (bwd_launch.cuh launch_backward: `early`).
__host__ __device__ constexpr bool bwd_early_conv_kernel(int d, int mod, bool varlen, bool det,
                                                         bool idiet, bool tmakv, bool decoupled,
                                                         bool dq_first) {
  return kBwdEarlyConv && d == 128 && mod == 0 && !varlen && !det && idiet && tmakv && !decoupled &&
         dq_first;
}

template <int D, bool kDecoupledWGs = true, int BM = 64>
struct BwdTraits {
  static_assert(D == 64 || D == 128, "flash3 backward: D in {64, 128}");
  static_assert(BM == 64 || (BM == 128 && D == 64 && !kDecoupledWGs) ||
                    (BM == 80 && D == 128 && !kDecoupledWGs),
                "flash3 backward: 128-row query blocks only for D = 64, 80-row only for D = 128, "
                "coupled");
  static constexpr int kD = D;
  static constexpr int kBlockN = 128;  // keys per CTA: 2 consumer warpgroups x 64
  static constexpr int kBlockM = BM;   // query rows per iteration
  static constexpr int kStages = 2;
  static constexpr int kConsumerWGs = 2;
  static constexpr int kThreads = 128 * (1 + kConsumerWGs);
  static constexpr int kChunks = D / 64;
  static constexpr int kRowBytes = 128;                     // one swizzle row: 64 x 16 bit
  static constexpr int kQChunkBytes = kBlockM * kRowBytes;  // [kBlockM rows][64] chunk of Q / dO
  static constexpr int kQBytes = kBlockM * D * 2;           // one Q (or dO) stage
  static constexpr int kKChunkBytes = kBlockN * kRowBytes;  // [128 rows][64] chunk of K / V
  static constexpr int kKBytes = kBlockN * D * 2;
  // 80-row blocks (BM = 80, D = 128 coupled; session 44, FA3's non-causal D 128 tiling):
  // dQ^T [64 D columns of WG w x 80 queries] = K^T dS (wgmma M is always 64, and 80 queries
  // cannot be an MN-major 128B-swizzle extent): A = K's column chunk w (MN-major), B = dS stored
  // [80 queries][128 keys] (K-major: two [80][64] chunks, WG w writing chunk w by
  // stmatrix.trans). Its accumulator (40 registers) leaves in its own fragment order: the
  // workspace part of WG w is 64 x 80 floats, thread tid's float4 j (= dQ^T rows 16 (tid / 32)
  // + (tid % 32) / 4 (+ 8), columns 8 j + 2 (tid % 4) (+ 1)) at (j * 128 + tid) * 4
  // (bwd_kernel.cuh bwd_dq_convert_m80_kernel undoes it).
  static constexpr bool kDqTrans = BM == 80;
  // dS^T [128 keys][kBlockM queries]: kBlockM / 64 chunks of [128 keys][64 queries]; kDqTrans:
  // dS [80 queries][128 keys] as 2 chunks of [80 queries][64 keys].
  static constexpr int kDSChunkBytes = (kDqTrans ? kBlockM : kBlockN) * kRowBytes;
  static constexpr int kDSBytes = kBlockN * kBlockM * 2;
  // dQ split between the consumers (see above).
  static constexpr bool kDecoupled = kDecoupledWGs;
  // Coupled D = 64 keeps the split by keys (N = 32 column halves would need another wgmma
  // shape) and only adds the lockstep barrier: that is run 1's kernel, kept as the fallback.
  static constexpr bool kDqSplitD = !kDecoupled && D >= 128 && (BM == 64 || BM == 80);
  // BM = 128: dQ split by query rows (WG w: rows 64 w .. 64 w + 63, all 128 keys).
  static constexpr bool kDqSplitM = BM == 128;
  // Decoupled: a WG rewrites its dS^T rows only after its own dQ GEMM read them (waited).
  static constexpr int kDSBuffers = kDecoupled ? 1 : 2;
  static constexpr int kDqN = kDqSplitD ? D / 2 : D;                       // dQ columns per WG
  static constexpr int kDqKeys = (kDqSplitD || kDqSplitM) ? kBlockN : 64;  // keys summed per WG
  // kMaskHoist per structure. Session 5 run 1 (H100, same call, TFLOP/s at S 4k / 16k causal):
  // the D = 64 decoupled + kv kernel lost 6 % with it (266.2 / 312.9 vs 283.9 / 333.6), every
  // coupled / 128-row kernel gained 8-35 %: D = 64 decoupled keeps the per-element form.
  static constexpr bool kHoistMask = kMaskHoist && !(D == 64 && kDecoupledWGs);
  // 24*128 + 240*256 = 64512 <= 65536 registers per SM. Consumers at 232 spill 56 bytes
  // (D = 128, ptxas -v); 240 spills nothing.
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = 240;
  // Offsets (bytes) from the 1024-aligned base.
  static constexpr int kOffK = 0;
  static constexpr int kOffV = kOffK + kKBytes;
  static constexpr int kOffQ = kOffV + kKBytes;
  static constexpr int kOffDO = kOffQ + kStages * kQBytes;
  static constexpr int kOffDS = kOffDO + kStages * kQBytes;
  // dQ accumulator registers per thread, and one WG's part of a workspace tile (floats).
  static constexpr int kDqRegs = kDqTrans ? kBlockM / 2 : kDqN / 2;
  static constexpr int kDqPartFloats = kDqRegs * 128;
  // One WG's smem dQ stage (fp32; the bulk path's source, kTmaKV's dK staging). kDqTrans: only
  // kTmaKV's 64 x D 16-bit dK (16 KB; no bulk path there: 227 KB would not hold it).
  static constexpr int kDqPartBytes = 64 * kDqN * 4;
  static constexpr int kOffDQ = kOffDS + kDSBuffers * kDSBytes;
  // lse2 / delta staged per WG (BM = 128, or kStat = 2 prefetch), double-buffered by iteration
  // parity: [2 WGs][2 buffers][lse2, delta][kBlockM] fp32 (4 KB at BM = 128, 2.5 KB at 80, 2 KB
  // at 64).
  static constexpr int kStatBytes = kConsumerWGs * 2 * 2 * kBlockM * 4;
  static constexpr int kOffStat = kOffDQ + kConsumerWGs * kDqPartBytes;
  static constexpr int kOffBars = kOffStat + kStatBytes;
  static constexpr int kNumBars = 1 + 2 * kStages;                   // full_kv, full[s], empty[s]
  static constexpr int kSmemBytes = kOffBars + kNumBars * 8 + 1024;  // + 1 KB base alignment
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");
  static_assert(kQChunkBytes % 1024 == 0 && kKChunkBytes % 1024 == 0 && kOffDS % 1024 == 0,
                "swizzle atoms must stay 1024-aligned");
};

}  // namespace attnkit::flash3::bwd
