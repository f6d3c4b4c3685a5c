// Tile shapes per head dim, shared by kernels and launchers (host + device). Chosen after FA-2's
// sm80 table, then measured (H100 A/B runs and `nvcc -Xptxas -v` spills in bench/notes/flash.md).
#pragma once

#include <cstdint>

// Tuning knobs, overridable with -D for A/B runs on the GPU (bench/notes/flash.md):
//   ATTNKIT_FLASH_KK_UNROLL_{FWD,FWD_WIDE,BWD}: unroll of the k loop of the shared x shared
//     warp GEMMs (forward D <= 128, forward D > 128, deterministic backward).
//     Forward: with the old per-load swizzle arithmetic a full unroll (64) spilled 212 B at
//     D = 128 (32 rows per warp), so 1 (H100, run 2). With split-form addresses (run 5) the
//     full unroll spills nothing at D = 64 / 128 and the D = 128 key block drops from ~1109 to
//     ~895 SASS instructions (static count): 64 at D <= 128, measured +7-13 % over 1 (H200,
//     S = 4k, run 6); D > 128 keeps 1 (full: 16 B spill at 256, +0-1 %, run 7 A/B).
//     Backward: full unroll measured 1.17-1.39x faster than 1 at S = 4k (H100, run 3).
//   ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED{,_SDP}: the fused backward's unroll for dV / dK / dQ and
//     for S / dP at D <= 128: 4 and 2 spill 24 B at D = 128, full unroll 92 B (ptxas, sm_90a)
//     yet measured +6-8 % at D = 64 / 128 (H200, S = 4k, run 6 A/B): full (64) by default.
//   ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED{,_SDP}_WIDE: the same at D > 128: full unroll (96 B spill
//     at D = 256, 72 B with 4 / 2) measured +5.6 % at D = 256 (H200, S = 4k, run 7 A/B).
//   ATTNKIT_FLASH_FWD_BN_{64,128}: forward key-block width at D = 64 / D = 128. BN = 64 at
//     D = 128 spills 172 B and ran 3 % slower than 32; BN = 128 at D = 64 spills 272 B, 7 %
//     slower than 64 (H100, S = 4k, run 2). BN = 48 at D = 128 (124 B spill): -9 % with early
//     K (H200, run 9 A/B).
#ifndef ATTNKIT_FLASH_KK_UNROLL_FWD
#define ATTNKIT_FLASH_KK_UNROLL_FWD 64
#endif
#ifndef ATTNKIT_FLASH_KK_UNROLL_FWD_WIDE
#define ATTNKIT_FLASH_KK_UNROLL_FWD_WIDE 1
#endif
//   ATTNKIT_FLASH_FWD_KK_UNROLL_256{,_BM64} (session 5, helper flashfwd9): the forward S GEMM's
//     k-loop unroll at D = 256 in the 128-row kernel / in the 64-row kernel (causal S <= 4k), 16
//     k16 slices of 5 ldmatrix.x4 + 8 MMAs per warp and key block; D = 192 keeps
//     _KK_UNROLL_FWD_WIDE. 1: each slice's MMAs wait for its own 5 ldmatrix; 64 (full): ptxas
//     issues 11 ldmatrix ahead, then one per two MMAs (FA-2's CUTLASS gemm pipelines the same
//     way). ptxas (sm_90a, bf16, fast path, 128-row): 1 -> 0 B spill, 3680 static SASS; 2 -> 0 B,
//     3808; 4 -> 16 B; 64 -> 0 B, 3952. The 64-row kernel spills 72 B with 1 and with 64.
//     Measured (H100, session 5 call 1, same-run A/B 64 vs 1, ours TFLOP/s, S = 512 / 1k / 4k /
//     16k; bench/results/2026-11-22-h100-flashfwd9-run1.md): non-causal (128 rows) +0.7 / +0.1 /
//     -1.0 / -0.4 %, causal (64 rows up to 4k) +4.3 / +2.9 / +2.9 % (16k, 128 rows: -0.2 %);
//     unroll 2 -1.6 / -1.8 % non-causal at 1k / 4k. ncu (D = 256, S = 4k, non-causal): full unroll
//     executes 438 M instructions vs 564 M, same duration (1.84 vs 1.85 ms): the 128-row kernel
//     is bound by the shared-memory pipe (309 M wavefronts in both and in FA-2's), not by issue.
//     Hence 1 for the 128-row kernel, 64 for the 64-row kernel. Call 2 (same-run A/B of the
//     64-row kernel's 64 vs 1): causal +4.8 / +2.9 / +2.3 % at S = 512 / 1k / 4k. Session 8
//     (H100, the spill-free 64-row kernel that now runs every D = 256 fast-path forward, S 512-2k,
//     bench/results/2026-11-22-h100-flash-s8-unroll256.md): 1 -7..-9 %, 4 -1..-3 % against 64.
#ifndef ATTNKIT_FLASH_FWD_KK_UNROLL_256
#define ATTNKIT_FLASH_FWD_KK_UNROLL_256 1
#endif
#ifndef ATTNKIT_FLASH_FWD_KK_UNROLL_256_BM64
#define ATTNKIT_FLASH_FWD_KK_UNROLL_256_BM64 64
#endif
#ifndef ATTNKIT_FLASH_KK_UNROLL_BWD
#define ATTNKIT_FLASH_KK_UNROLL_BWD 64
#endif
#ifndef ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED
#define ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED 64
#endif
#ifndef ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED_SDP
#define ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED_SDP 64
#endif
#ifndef ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED_WIDE
#define ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED_WIDE 64
#endif
#ifndef ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED_SDP_WIDE
#define ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED_SDP_WIDE 64
#endif
//   ATTNKIT_FLASH_BWD_DQ_CHUNKS_256 / _128 / _64: column chunks of the fused backward's dQ GEMM
//     at D = 256 / exactly 128 / exactly 64 (each chunk: GEMM, then its atomics; fewer columns
//     per chunk = fewer accumulator registers and a shorter burst of back-to-back reds, but the
//     dS fragments are loaded once per chunk). Session 8 (H100, S 1k-8k, ours / FA-2 in the same
//     process, bench/results/2026-11-22-h100-flash-s8-dqmid.md): D 256 4 chunks against 2:
//     +1.3..+2.5 % (1.01-1.03 vs 0.99-1.02 of FA-2; ptxas 250 registers, 0 spill, was 255 + 12 B):
//     4 by default. _128 / _64 = 2 (bench/results/2026-11-22-h100-flash-s8-chunks.md): about
//     -1 % at D 128 (0 spill instead of 16 B) and at D 64: 1 by default.
#ifndef ATTNKIT_FLASH_BWD_DQ_CHUNKS_256
#define ATTNKIT_FLASH_BWD_DQ_CHUNKS_256 4
#endif
#ifndef ATTNKIT_FLASH_BWD_DQ_CHUNKS_128
#define ATTNKIT_FLASH_BWD_DQ_CHUNKS_128 1
#endif
#ifndef ATTNKIT_FLASH_BWD_DQ_CHUNKS_64
#define ATTNKIT_FLASH_BWD_DQ_CHUNKS_64 1
#endif
//   ATTNKIT_FLASH_SPLIT_ADDR: fragment loads from per-lane base + XOR (1) or the full swizzle
//     per ldmatrix (0, as before run 5); see SmemLayout.
#ifndef ATTNKIT_FLASH_SPLIT_ADDR
#define ATTNKIT_FLASH_SPLIT_ADDR 1
#endif
//   ATTNKIT_FLASH_BWD_STATS_SMEM: fused backward stages lse / delta in smem (1) or reads them
//     from global memory after the S / dP GEMMs (0): 1 measured +16-19 % (H200, S = 4k, run 6).
//   ATTNKIT_FLASH_BWD_BM_64: fused backward query block at D = 64; 128 measured +16 % over 64
//     (H200, S = 4k, run 6 A/B; spills 48 B, 684 B on the general path): 128 by default.
//   ATTNKIT_FLASH_BWD_STAGES_256: Q / dO buffers of the fused backward at D = 256; 2 measured
//     +4-5 % over 1 (H200, S = 4k, run 6).
//   ATTNKIT_FLASH_BWD_ITEM_RANGE: the dK / dV kernels walk their (q head, query block) items
//     as one precomputed block range per head with shift / mask indices (1) instead of testing
//     every item for visibility with a division per item (0). ncu (run 8, D = 128, S = 4k): the
//     fused kernel issued 1476 instructions per warp and item vs FA-2's 1016 for the same 320
//     MMAs and 144 ldmatrix; ~250 of ours in the uniform datapath (per-item index math).
//     1 measured +1-5 % (H200, S = 4k, run 9 A/B; correct vs torch there); default since the
//     lead's merged session-3 run (test_flash on it: bench/notes/flash.md).
#ifndef ATTNKIT_FLASH_BWD_ITEM_RANGE
#define ATTNKIT_FLASH_BWD_ITEM_RANGE 1
#endif
//   ATTNKIT_FLASH_BWD_HOIST: per-item address and range math of the dK / dV kernels taken out
//     of the item loop (1) or as before (0): the element-check flag from a precomputed range of
//     full query blocks (no 64-bit row ranges per item; needs ITEM_RANGE), Q / dO cp.async
//     from a per-thread row / chunk fixed per CTA (row steps as immediate smem offsets, global
//     rows by a constant stride; D = 64 / 128 / 256), P / dS smem stores and the dQ atomics
//     from one per-thread address plus immediates, the atomics predicated instead of branched.
//     Same arithmetic, same results; static SASS in bench/notes/flash.md (helper flashbwd5).
//     Measured (session 4, H200, same-run A/B builds, TRIM off in both): +1-4 % at D = 64,
//     +4-7 % at D = 128, +5-8 % at D = 256; test_flash + sanitizer passed with it on.
#ifndef ATTNKIT_FLASH_BWD_HOIST
#define ATTNKIT_FLASH_BWD_HOIST 1
#endif
//   ATTNKIT_FLASH_BWD_TRIM: session 3 round 3's per-item trims of the fused backward (helper
//     flashbwd6), each also its own knob for bisection; same results. Session 4 (H200, on top
//     of HOIST, main build vs A/B build): +3 % at D = 64, +2-3 % at D = 256, -1 to -2 % at
//     D = 128 (LOAD_CHAIN's 16 B spill there), hence LOAD_CHAIN 2 by default.
//   ATTNKIT_FLASH_BWD_CHECK_LIMITS: the element check on diagonal / partial items of the fast
//     path (no score mod) from three per-lane limits of one band of diagonals (DiagBand,
//     bwd_kernel.cuh: two compares with immediates and a select per element) instead of a
//     64-bit row_range per row and two compares per element.
//   ATTNKIT_FLASH_BWD_LOAD_CHAIN (with HOIST, D = 64 / 128 / 256): the Q / dO cp.async of an
//     item from one running byte pointer per tensor, chunks past the sequence zero-filled
//     from the tensor's base pointer (a one-select form; ptxas kept the old form's per-chunk
//     64-bit row products). 1 = every such D, 2 = all but D = 128, 0 = off.
#ifndef ATTNKIT_FLASH_BWD_TRIM
#define ATTNKIT_FLASH_BWD_TRIM 1
#endif
#ifndef ATTNKIT_FLASH_BWD_CHECK_LIMITS
#define ATTNKIT_FLASH_BWD_CHECK_LIMITS ATTNKIT_FLASH_BWD_TRIM
#endif
#ifndef ATTNKIT_FLASH_BWD_LOAD_CHAIN
#define ATTNKIT_FLASH_BWD_LOAD_CHAIN (ATTNKIT_FLASH_BWD_TRIM ? 2 : 0)
#endif
//   ATTNKIT_FLASH_BWD_STATS_WS (with STATS_SMEM and HOIST; helper flashbwd7, session 4): the
//     delta kernel writes the fused kernel's row statistics as one packed block per (batch,
//     q head, query block of kBM): [lse in log2 units (+inf for rows past the sequence or with
//     lse = -inf) x kBM, delta (0 past the sequence) x kBM] fp32, so an item's stats are one
//     unpredicated 16-byte cp.async by kBM / 2 threads and bwd_p_ds reads lse2 as is (1),
//     instead of a 4-byte cp.async per row from lse and delta with per-row 64-bit strides, a
//     bounds select and an +inf store, and the -inf map + log2e multiply per row (0). Static
//     SASS of the fused bf16 item loop (sm_90a): see bench/notes/flash.md (session 4).
//     Measured with DELTA_LANES (session 4 run 2, H200, S = 1k / 4k, both causal, main build vs
//     same-run A/B with both 0): D = 64 +2.8-7.8 %, D = 128 +1.6-3.0 %, D = 256 +1.2-2.3 %. Alone
//     (run 1, delta kernel's lse load after O / dO): D = 64 -2-3 %, D = 128 -0.4-1.1 %.
//   ATTNKIT_FLASH_BWD_LOAD_PRED (with HOIST, D = 64 / 128 / 256): the Q / dO cp.async of an
//     item from one running pointer per tensor advanced by a predicated add while the row is
//     inside the sequence (so it stays on the last valid row; the first chunk starts from the
//     tensor base when none is valid): no per-chunk 64-bit select. Overrides LOAD_CHAIN.
//     1 = every such D, 2 = D = 128 only (where LOAD_CHAIN is off), 0 = off. Static SASS at
//     D = 128 1098 -> 1071 per item, 0 spill; measured only together with STATS_WS (run 1 A/B 1
//     vs 0 at D = 128: -0.4..-1.1 % with the delta kernel's extra latency, run 2's bundle A/B 1
//     vs 0: +3-4 %), not on its own.
//   ATTNKIT_FLASH_BWD_LATE_LOAD: where the fused kernel issues the next item's Q / dO / stats
//     cp.async (~60-110 SASS instructions per warp): 0 right after the item's first barrier,
//     i.e. before the S GEMM's first MMA (every warp at once); 1 after the S GEMM, 2 after the
//     dP GEMM, 3 after the P / dS stores (before the second barrier; HOIST only). FA-2 issues
//     its next Q after the dP GEMM and its next dO after the dV GEMM. D = 128 only;
//     ATTNKIT_FLASH_BWD_LATE_LOAD_OTHER is the same for the other head dims. Session 4 run 1
//     (H200, same-run A/B against 0, with STATS_WS): 2 measured +2-3.4 % at D = 128 (1k / 4k,
//     causal and not), -0..-1.6 % at D = 64 and -0.8..-1.7 % at D = 256: 2 / 0 by default.
//     ptxas (session 5, sm_90a, fast path, D = 128, STSM 1): 2 spills 12 B (LDL.64 + LDL per item,
//     the next item's Q chunk pointer and a predicate word, reloaded in the load itself); 3 0 B,
//     item loop 1169 -> 1191 static SASS (+19 IMAD: the load's address math redone after the
//     P / dS stores); 1 16 B. 3 is unmeasured (helper flashbwd9, bench/notes/flash.md).
//   ATTNKIT_FLASH_BWD_WO_WIDE: the fused kernel's warp origins folded into the GEMM lane
//     addresses (warp_gemm_ss_wo, HOIST) also at D = 192 / 256 (1) or at D <= 128 only (0).
//     Session 3: 24 / 68 B spill there; with STATS_WS and LATE_LOAD 2 (session 4, sm_90a
//     bf16): D = 256 item loop 1191 -> 1145 static SASS, 28 B spill (3 LDL in the check pass,
//     diagonal items only); D = 192 1026 -> 1018, 0 spill. Measured +0.5-0.8 % at D = 256
//     (session 4 run 1, S = 1k / 4k, both causal): marginal, kept.
//   ATTNKIT_FLASH_BWD_DQ_PERM: the fused kernel's dQ_accum workspace in the dQ MMA's register
//     order per (kBM, D) tile (DqPerm, bwd_kernel.cuh; bwd_dq_convert_kernel reads it back), so
//     each red.v2 adds to 256 contiguous bytes; 0 = row-major (8 rows x 32 B per instruction).
//     ncu (D = 128, S = 4k): L2 red requests 134 M -> 33.5 M (FA-2 33.5 M), lg_throttle stall
//     0.44 -> 0.12 and barrier 0.62 -> 0.45 cycles per instruction, kernel cycles -10 %.
//     Measured (session 4 run 2, H200, main build vs same-run A/B with 0, S = 1k / 4k, causal
//     and not): D = 64 +7-10 %, D = 128 +7.6-10.3 %, D = 256 +10-15 %.
//   ATTNKIT_FLASH_BWD_DELTA_LANES: the delta kernel's lanes per row, D / 8 capped to 8..32 (1:
//     D = 64 4 rows per warp, D = 128 2) or 32 (0: at D = 64 24 of 32 lanes idle; the kernel
//     is latency-bound, one row's loads per warp). Measured with STATS_WS (above).
//   ATTNKIT_FLASH_BWD_STSM (session 4 round 2, helper flashbwd8; on since session 5): the
//     fused kernel's P / dS stores as stmatrix.x4 (sm90) instead of 32-bit STS (store_c_smem_stsm,
//     bwd_kernel.cuh; HOIST only): 4x fewer shared-store instructions for the same conflict-free
//     wavefronts. The host model of every shared access of the fused kernel
//     (tests/backends/flash/bwd_bank_model_test.cu) finds no bank conflict at D = 64 / 128 / 256
//     with or without it: ncu's 4.2 M "shared ld bank conflicts" (D = 128, S = 4k) are not
//     instruction-level (its memory_l1_wavefronts_shared equals the ideal). Fast path (no score
//     mod) only. 1 = every D, 2 = all but D = 128 (where ptxas then spills 12 B, 2 LDL per item), 0
//     = off. Static SASS per item (fast path, sm_90a): D = 64 1232 -> 1180, D = 128 1057 -> 1039, D
//     = 256 1096 -> 1089 (spill 28 -> 8 B). Measured (H100, session 5, same-run A/B against =0,
//     bench/results/2026-11-22-h100-flash-s5-run1.md): backward D = 64 +1.9..+2.3 % at S = 1k / 4k,
//     D = 128 -0.3..+0.5 %, D = 256 +0.3..+1.6 %; 1 (not 2) because D = 128 did not lose with its
//     12 B spill.
#ifndef ATTNKIT_FLASH_BWD_STSM
#define ATTNKIT_FLASH_BWD_STSM 1
#endif
//   ATTNKIT_FLASH_BWD_DQ_UNROLL_128 (session 5 round 3, helper flashbwd9, compile-only; 0 = off,
//     the default): the k-loop unroll of the fused kernel's dQ GEMM (dS (64, 128) K (128, 128),
//     8 k16 slices of 8 HMMA + 4 ldmatrix.x4 per warp) at D = 128; 0 keeps
//     ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED (64: full). The full unroll's ldmatrix run-ahead over
//     the dQ GEMM is this kernel's register peak (dK + dV 128 + dQ 32 fp32 live): ptxas (sm_90a,
//     fast path, bf16 and f16) keeps 12 B of loop invariants in local memory, the next item's
//     per-thread Q chunk pointer (LDL.64) and a predicate word (LDL) reloaded per item before the
//     LATE_LOAD 2 cp.async (the only default fused kernel with a spill inside its item loop;
//     D = 64 0 B, D = 256 8 B reloaded after the loop only). 4: a 2-trip loop of 4 slices, 0 B
//     spill, no LDL / STL, but the loop costs ~+56 executed SASS per item (1169 -> ~1225: address
//     math per trip, dQ zeroed by 16 CS2R instead of RZ-accumulator HMMAs). LATE_LOAD 3 is the
//     other spill-free form at D = 128 (0 B, +22 static SASS). Static SASS and the measurement
//     plan: bench/notes/flash.md, "Session 5, round 3 (helper flashbwd9, compile-only)".
//     Unmeasured; fast path only (general path 36 -> 40 B with it).
#ifndef ATTNKIT_FLASH_BWD_DQ_UNROLL_128
#define ATTNKIT_FLASH_BWD_DQ_UNROLL_128 0
#endif
//   ATTNKIT_FLASH_BWD_DQ_FENCE_128 (helper flashbwd9, compile-only; 0 = off, the default): the
//     fully unrolled dQ GEMM at D = 128 (fast path) with its ldmatrix of k slices >= this value
//     made to wait for slice (value - 1)'s first MMA (warp_gemm_ss_wo's kFence): the same bound
//     on run-ahead as DQ_UNROLL_128 without its loop. ptxas (sm_90a, bf16 / f16): 2, 4, 5, 6 0 B
//     spill (item loop 1167-1169 static SASS, = default's 1169 less its 2 LDL plus ISETP + 2
//     SEL), 7 8 B; with LATE_LOAD 3 28 B (do not combine). Session 6 (H100, 6 vs 0, same call):
//     -0.4..+0.3 % (bench/results/2026-11-22-h100-flash-s6-ab.md): off. Static SASS:
//     bench/notes/flash.md (session 5, round 3).
#ifndef ATTNKIT_FLASH_BWD_DQ_FENCE_128
#define ATTNKIT_FLASH_BWD_DQ_FENCE_128 0
#endif
//   ATTNKIT_FLASH_BWD_SMEM_EPILOGUE (session 6, helper flashbwd10, compile-only; 0 = off, the
//     default): the fused kernel's dK / dV leave through shared memory (sK / sV, free after the
//     item loop: one barrier), then as 16-byte row chunks (a warp store = 512 contiguous bytes,
//     4 whole 128-byte lines), instead of one 4-byte store per element pair straight from the
//     accumulator fragments (store_dk_dv: each warp store touches 8 rows, 16 bytes each: 8 lines
//     per 128 bytes). FA-2 stages dK / dV through its sK the same way. Per CTA (one CTA per SM,
//     so nothing overlaps it): 64 KiB at D = 128 / 256 (4096 line requests -> 512), 32 KiB at
//     D = 64 (2048 -> 256). The forward's SMEM_EPILOGUE (the same change for O) measured +7 / +9 %
//     at D = 256, S = 512 (H200, session 4). 1 = fast and general path, 0 = off. The
//     deterministic dK / dV kernel keeps store_dk_dv. Static SASS, prediction and the A/B plan:
//     bench/notes/flash.md ("Session 6 (helper flashbwd10, compile-only)").
//     Session 6 (H100, same call, the three bwd knobs together vs off, TFLOP/s on / off): D 64
//     +3.3 / +2.5 / +0.4 % non-causal, +7.5 / +3.8 / +1.8 % causal at S = 512 / 1k / 4k; D 128
//     +7.0 / +5.1 / +1.5 %, +11.2 / +7.0 / +2.8 %; D 256 +7.7 / +4.8 / +0.6 %, +9.0 / +5.6 /
//     +2.2 %; 16k within +-1 %. SMEM_EPILOGUE alone gave most of it (bench/results/
//     2026-11-22-h100-flash-s6-ab2.md). All three on by default since then.
#ifndef ATTNKIT_FLASH_BWD_SMEM_EPILOGUE
#define ATTNKIT_FLASH_BWD_SMEM_EPILOGUE 1
#endif
//   ATTNKIT_FLASH_BWD_EARLY_KV (session 6, helper flashbwd10, compile-only; 0 = off, the
//     default; a bit set, fused kernel only): the start of the CTA, exposed once per CTA (one CTA
//     per SM): by default its first LDGSTS (K) comes after the visible / full query-block range
//     search (ITEM_RANGE's scans, HOIST's two bisections: loops of dependent scalar 64-bit
//     math) and after all 16 K / V chunk addresses (load_tile_async: ~20 SASS per chunk);
//     static SASS, sm_90a, bf16 fast path: instruction 545 / 664 / 630 at D = 64 / 128 / 256.
//       1 K / V issued right after the CTA's coordinates (BwdKeyBlock<..., kDeferRange>), the
//         range search after them, under the K / V flight;
//       2 K / V from per-thread chunk pointers (BwdKeyBlock::load_kv_fast, load_q_do's form).
//     Same loads, same items, same results. 3 recommended. Notes: "Session 6 (helper flashbwd10,
//     compile-only)".
#ifndef ATTNKIT_FLASH_BWD_EARLY_KV
#define ATTNKIT_FLASH_BWD_EARLY_KV 3
#endif
//   ATTNKIT_FLASH_BWD_DELTA_ZERO (session 6, helper flashbwd10, compile-only; 0 = off, the
//     default): bwd_delta_kernel also zeroes the fused kernel's dQ_accum (each block its rows;
//     with STATS_WS and DQ_PERM, whose slot rows are the packed stats rows) instead of
//     launch_bwd's cudaMemsetAsync: FA-2's dot_do_o kernel clears its dQ accumulator likewise.
//     Same bytes written (B Hq Sq D fp32: 134 MB at every BENCHMARKS.md shape), one launch and
//     one kernel boundary fewer per backward.
#ifndef ATTNKIT_FLASH_BWD_DELTA_ZERO
#define ATTNKIT_FLASH_BWD_DELTA_ZERO 1
#endif
#ifndef ATTNKIT_FLASH_BWD_STATS_SMEM
#define ATTNKIT_FLASH_BWD_STATS_SMEM 1
#endif
#ifndef ATTNKIT_FLASH_BWD_DQ_PERM
#define ATTNKIT_FLASH_BWD_DQ_PERM 1
#endif
#ifndef ATTNKIT_FLASH_BWD_DELTA_LANES
#define ATTNKIT_FLASH_BWD_DELTA_LANES 1
#endif
#ifndef ATTNKIT_FLASH_BWD_WO_WIDE
#define ATTNKIT_FLASH_BWD_WO_WIDE 1
#endif
#ifndef ATTNKIT_FLASH_BWD_LATE_LOAD
#define ATTNKIT_FLASH_BWD_LATE_LOAD 2
#endif
#ifndef ATTNKIT_FLASH_BWD_LATE_LOAD_OTHER
#define ATTNKIT_FLASH_BWD_LATE_LOAD_OTHER 0
#endif
//   ATTNKIT_FLASH_BWD_DQ_MID (session 8; bits, 0 = off; default 1): the fused kernel's GEMM
//     order dV, dQ (+ its atomics), dK instead of dV, dK, dQ, so the last dQ chunk's atomics
//     drain under the dK GEMM rather than at the next item's barrier (FA-2's order). Bit 1:
//     D <= 64, bit 2: D 65..128, bit 4: D > 128. Why (ncu source view, H100, S 4k, D 256,
//     non-causal, bench/notes/flash.md session 8): 16 back-to-back REDG.F32x2 per dQ chunk stall
//     on the LSU queue (lg 5.5 % of samples; FA-2 0), the instruction after each burst waits on
//     the reds' operand reads (long_sb 3.6 + 1.8 %), and the next item's barrier waits 4.5 %
//     (FA-2 2.4 %); ours 5.23 ms vs FA-2 5.10 ms there. Session 8 A/B (H100, S 1k-8k, against
//     0, bench/results/2026-11-22-h100-flash-s8-dqmid.md): D 64 +1.0..+2.5 % (ours / FA-2 1.02
//     / 1.03-1.04 vs 1.00-1.01 / 1.01-1.02), D 128 -0.9..-2.3 %, D 256 -0..-1.3 % (2 dQ chunks)
//     and -1.5..-2.4 % (4 chunks): 1 (D <= 64 only) by default.
#ifndef ATTNKIT_FLASH_BWD_DQ_MID
#define ATTNKIT_FLASH_BWD_DQ_MID 1
#endif
//   ATTNKIT_FLASH_BWD_DQ_MID_MIN_SK: where DQ_MID's head-dim bit is set, the fast path runs the
//     dQ-before-dK kernel from this seqlen_k on (the other order below it; the general path keeps
//     the other order). Session 8 (H100): D 64 non-causal at S 512 measured 0.98 of FA-2 with
//     DQ_MID (194.6 vs 198.1 TFLOP/s) against 1.00 without it in session 7, while 1k-16k gained:
//     513 by default, so S 512 keeps the old order (and the tests' S_k <= 512 / > 512 cases run
//     both kernels).
#ifndef ATTNKIT_FLASH_BWD_DQ_MID_MIN_SK
#define ATTNKIT_FLASH_BWD_DQ_MID_MIN_SK 513
#endif
#ifndef ATTNKIT_FLASH_BWD_STATS_WS
#define ATTNKIT_FLASH_BWD_STATS_WS 1
#endif
#ifndef ATTNKIT_FLASH_BWD_LOAD_PRED
#define ATTNKIT_FLASH_BWD_LOAD_PRED 2
#endif
#ifndef ATTNKIT_FLASH_BWD_BM_64
#define ATTNKIT_FLASH_BWD_BM_64 128
#endif
#ifndef ATTNKIT_FLASH_BWD_STAGES_256
#define ATTNKIT_FLASH_BWD_STAGES_256 2
#endif
//   ATTNKIT_FLASH_FWD_EARLY_K: forward waits for V_n and issues K_{n-1} before the softmax (1,
//     FA-2's order) or after it (0): K's load then overlaps softmax + P V instead of P V alone,
//     V's only the S GEMM instead of S + softmax. 1 measured +8-9 % (D = 64), +13-14 % (128),
//     +9 % (256) at S = 4k (H200, run 9 A/B; ncu D = 128: issue slots busy 33 -> 39 %).
#ifndef ATTNKIT_FLASH_FWD_EARLY_K
#define ATTNKIT_FLASH_FWD_EARLY_K 1
#endif
//   ATTNKIT_FLASH_FWD_BM_256: forward query block at D = 256, 64 (4 warps, two CTAs per SM) or
//     128 (8 warps, one CTA per SM; the default before run 8).
#ifndef ATTNKIT_FLASH_FWD_BM_256
#define ATTNKIT_FLASH_FWD_BM_256 128
#endif
//   ATTNKIT_FLASH_FWD_FAST_LOAD: the forward's full K / V / Q tiles go through TileLoader
//     (smem_layout.hpp: per-thread addresses computed once per CTA, no predicates) instead of
//     load_tile_async (per-chunk 64-bit row offset, swizzle and bounds predicate on every call:
//     ~18 SASS instructions per 16-byte chunk in the key loop, 16 chunks per thread per key
//     block at D = 256, 32 with 64-row blocks). Partial tiles (sequence end, head_dim < D) keep
//     load_tile_async. 0 off, 1 every D, 2 (default) D > 128 only: with the panel prologue
//     +4-5 % at D = 256, S = 512-4k (H200, session 3 round 2 A/B); at D = 128 it ran in that
//     run's tested default only, 1-2 % below run 9 (between runs, no same-run A/B).
//   ATTNKIT_FLASH_FWD_PANEL_PROLOGUE: at D = 256 the CTA's first Q and K tiles load as four
//     64-column panels (one cp.async group each) and the first S GEMM starts on panel 0 while
//     panels 1-3 land (3 extra barriers in the first key block only), instead of waiting for the
//     whole 96 KiB. One CTA per SM at D = 256: nothing else hides that load (short S: 8 key
//     blocks per CTA at S = 512).
//   ATTNKIT_FLASH_FWD_PERSIST: D = 256 forward (fast path) as a persistent kernel: resident
//     CTAs (one per SM) run query tiles in the 3-D grid's order, the first two per CTA static,
//     then one ahead from an atomic counter, and the next tile's Q and first K load during the
//     last key block's softmax, P V and epilogue. Measured slower (H200, session 3 round 2, on
//     top of FAST_LOAD + PANEL_PROLOGUE): -5 / -7 / -7 % non-causal, -13 / -16 / -18 % causal at
//     S = 512 / 1k / 4k (16k causal 228 TFLOP/s vs run 9's 295): 0 by default (notes).
#ifndef ATTNKIT_FLASH_FWD_PERSIST
#define ATTNKIT_FLASH_FWD_PERSIST 0
#endif
#ifndef ATTNKIT_FLASH_FWD_FAST_LOAD
#define ATTNKIT_FLASH_FWD_FAST_LOAD 2
#endif
#ifndef ATTNKIT_FLASH_FWD_PANEL_PROLOGUE
#define ATTNKIT_FLASH_FWD_PANEL_PROLOGUE 1
#endif
//   ATTNKIT_FLASH_FWD_SMEM_EPILOGUE (session 4, helper flashfwd6): the forward's O tile leaves
//     through shared memory (each warp's own rows of sQ, free after its last S GEMM) as 16-byte
//     coalesced row chunks (1), instead of one 4-byte store per element pair straight from the
//     accumulator fragments (0: each warp store touches 8 rows, 16 B each). O is 16-64 KiB per
//     CTA, stored once per CTA: a fixed per-CTA cost, which is what short S pays for (notes:
//     "Session 4: forward"). Not with PERSIST (the next tile's Q prefetch lands in sQ).
//     Measured (H200, session 4, same-run A/B): D = 256 +7 / +3 / +0.5 % non-causal, +9 / +4 /
//     +0.5 % causal at S = 512 / 1k / 4k; D = 128 +1.2 / +1.4 / -0.7 % non-causal, +3.4 / +1.9 /
//     +0.9 % causal; D = 64 -2 / +1 / +2 % non-causal (the -2 % at 512 in both calls), +0 / +1 /
//     +2 % causal. Tests + sanitizer ran with it on.
//   ATTNKIT_FLASH_FWD_PANEL_PROLOGUE_128: PANEL_PROLOGUE's split at D = 128 (two 64-column
//     panels of the first Q and K tiles, one cp.async group each; 20 instead of 40 KiB before
//     the first MMA). Measured -4 to -5 % at S = 512-4k, causal and not (H200, session 4,
//     same-run A/B with SMEM_EPILOGUE on; predicted 0 to +1 %): 0 by default.
//   ATTNKIT_FLASH_FWD_KV2_256 (session 5, helper flashfwd9; off): the 128-row D = 256 forward
//     (fast path, not PERSIST) with two K and two V buffers (Q 64 + 2 x 2 x 32 = 192 KiB, one CTA
//     per SM as before; launch_fwd falls back to the one-buffer kernel where the device's opt-in
//     smem limit is lower, e.g. an A100's 163 KiB). Each key block starts with one wait + barrier
//     (K_n and V_n were issued a whole key block earlier) and issues K_{n-1} and V_{n-1} at once;
//     no barrier between the S GEMM and P V. Why tried (ncu, H100, S = 4k non-causal): ours and
//     FA-2 move the same 309 M shared wavefronts, FA-2 at 76.9 % of the pipe's peak vs ours 70.2 %
//     (the duration ratio); ours stalls more on long scoreboard (cp.async waits) and barriers.
//     Measured (H100, session 5 call 2, same-run A/B against 0,
//     bench/results/2026-11-22-h100-flashfwd9-run2.md): -4.9 / -4.4 / -5.0 / -5.9 % non-causal
//     at S = 512 / 1k / 4k / 16k, -5.9 % causal 16k. ncu: long scoreboard 0.28 -> 0.21 cycles per
//     issue, but mio throttle 0.07 -> 0.35 and barrier 0.19 -> 0.26, shared pipe 70.4 -> 65.9 %:
//     both tiles' 32 cp.async per thread at the block start queue behind / ahead of the S GEMM's
//     ldmatrix in the MIO queue. Tests + sanitizer passed with it on. Off by default.
#ifndef ATTNKIT_FLASH_FWD_KV2_256
#define ATTNKIT_FLASH_FWD_KV2_256 0
#endif
//   ATTNKIT_FLASH_FWD_KV2_64_MAX_S (session 5 round 5, helper flashfwd12; 0 = off):
//     D = 64 fast-path launches with seqlen_k <= this take KV2_256's two-pair kernel (Q 16 +
//     2 x 2 x 8 = 48 KiB; still two CTAs per SM, registers bound it): K_n and V_n are issued a
//     whole key block ahead instead of V_n at the start of block n (hidden by one 64-key S GEMM
//     only). Why (bench/notes/flash.md, "Session 5, round 5 (helper flashfwd12)"): at constant
//     tokens every S has 4096 CTAs (4 / 8 / ... m blocks x 32 heads x 32 / 16 / ... batch), so
//     the grid tail is the same at every S; a fit of the H100 merged numbers gives ours a fixed
//     ~4.5 us per CTA generation vs FA-2's ~2 us, and at S = 512 each head's K / V is shared by 4
//     CTAs only (32 at 4k), so most K / V tiles come from DRAM (0.66 TB/s average while the key
//     loop runs) and V_n's latency is exposed once per 64 keys (FA-2: 128-key blocks, half the
//     exposures, each hidden by twice the S GEMM); not with D = 256's MIO problem (4 cp.async per
//     thread per tile here, 32 there).
//     Session 6 (H100, same call, knob at 1 << 30 vs 0, ours / FA-2): non-causal 0.96 / 0.97 /
//     0.98 / 0.99 vs 0.91 / 0.99 / 1.03 / 1.05 at S = 512 / 1k / 4k / 16k (ours +5.9 % at 512,
//     -2..-5 % above); causal 1.07 / 0.98 / 0.95 / 0.99 vs 1.08 / 1.01 / 0.99 / 1.04. Hence
//     512 would take the short-S rows where V's exposed latency dominates. Not the default:
//     racecheck reports 8 hazards (warnings, 1984 instances each) in this kernel only
//     (fwd_tile<64, bf16, false, 128, kKV2 = true>): ldmatrix reads against the epilogue's O
//     stores into sQ (fwd_kernel.cuh, the kSmemEpilogue loop), in both session-6 calls that ran
//     it (with and without DIET_64); the one-pair D = 64 kernel is clean in the same runs. Tests
//     pass with it (bench/results/2026-11-22-h100-flash-s6-ab.md, -s6-merged.md). Cause (helper
//     kv2race, from the SASS): the KV2 key loop has no CTA barrier after its last S GEMM, so the
//     A ldmatrix of that GEMM and other lanes' O stores into the same sQ words were ordered by
//     data dependence only (no hazard on the hardware, one in the programming model); fixed by a
//     __syncwarp before the epilogue (fwd_kernel.cuh).
//     Session 7 (H100, bench/results/2026-11-22-h100-flash-s7-merged.md): racecheck 0 hazards and
//     memcheck 0 errors on 9 D = 64 / 48 cases that take this kernel; 512 with DIET_64_KV2 1824
//     vs off (the one-pair kernel), same call: +9.3 % non-causal, +7.8 % causal at S = 512 (ours
//     / FA-2 1.01 / 1.17); 512 without the diet +5.5 / -0.8 %. With helper flashfwd14's bits
//     (DIET_64_KV2 7968, below: 576 executed SASS per steady block vs the one-pair kernel's 645)
//     KV2 wins at every length (H100, same call, bench/results/2026-11-22-h100-flash-s7-kv2all.md,
//     vs the one-pair kernel): +6.6 / +5.3 / +2.4 / +3.2 % non-causal at S = 1k / 2k / 4k / 16k,
//     +8.1 / +7.9 / +3.5 / +2.8 % causal; racecheck 0 hazards. Hence every length (1 << 30).
#ifndef ATTNKIT_FLASH_FWD_KV2_64_MAX_S
#define ATTNKIT_FLASH_FWD_KV2_64_MAX_S 1073741824
#endif
#ifndef ATTNKIT_FLASH_FWD_SMEM_EPILOGUE
#define ATTNKIT_FLASH_FWD_SMEM_EPILOGUE 1
#endif
//   ATTNKIT_FLASH_FWD_EPI_ROWPTR (session 9; bits, 0 = off, default 3): SMEM_EPILOGUE's global
//     stores on the fast path, for a warp whose rows all lie inside the sequence with every
//     column valid, from one running row pointer per lane (64-bit add per 16-byte chunk) and a
//     shared address in FragAddr's split form (one XOR per chunk), instead of a row bound check, a
//     64-bit row product and the full swizzle per chunk (~21 SASS instructions per chunk, each in
//     its own BSSY / BSYNC region: 16 chunks per lane at D = 256, ~340 instructions per warp and
//     CTA). Bit 1: D <= 64, bit 2: D 65..128, bit 4: D > 128 (only where 32 lanes cover whole rows
//     or a row covers whole warps: D 64 / 128 / 256; 96 and 192 keep the checked loop).
//     Why (ncu, H100, D 256 S 512 non-causal, session 8 profile): ours and FA-2 take the same
//     cycles (435.4 k vs 435.0 k) with 16 % more warp instructions (7.81e7 vs 6.75e7), the
//     per-CTA (8 key blocks) region 13.2 M of them; at the 700 W limit the row sits at 0.995.
//     Session 9 (H100, one call, four interleaved processes 0 / 7 / 7 / 0 of two rounds each, S
//     512-2k, bench/results/2026-11-22-h100-flash-s9-epirowptr.md): D 64 +0.5..+1.1 %, D 128
//     +0.3..+0.7 % (every row of both causal modes up), D 256 -0.7..+1.2 % (its noise): 3.
#ifndef ATTNKIT_FLASH_FWD_EPI_ROWPTR
#define ATTNKIT_FLASH_FWD_EPI_ROWPTR 3
#endif
#ifndef ATTNKIT_FLASH_FWD_PANEL_PROLOGUE_128
#define ATTNKIT_FLASH_FWD_PANEL_PROLOGUE_128 0
#endif
//   ATTNKIT_FLASH_FWD_CAUSAL_BM64_MAX_S: D = 256 causal forward (fast path) with seqlen_q <= this
//     runs 64-row query blocks (4 warps, two CTAs per SM; FwdTraits<256, 64>), everything else
//     the 128-row default; 0 = never. Session 4 (H200, same-run A/B, with SMEM_EPILOGUE): 64 rows
//     +8.6 / +4.4 / +1.1 / +0.9 % causal at S = 512 / 1k / 2k / 4k, -0.8 % at 8k, -5.8 % at 16k,
//     hence 4096; non-causal -2 / -2 / -4 % at 512 / 1k / 4k, so never there (half the wasted
//     diagonal work and finer causal tiles vs the 72 B spill in its key loop). Tests + sanitizer
//     ran with 4096 (every causal D = 256 fast-path test case takes the 64-row kernel).
//     Session 6 (H100, same call, with BM64_DIET_256 = 32, the spill-free 64-row kernel): 1 << 30
//     vs 4096 at S = 16k causal +7.0 % (337 vs 315 TFLOP/s; ours / FA-2 1.14 vs 1.06), so every
//     length since then (the 4096 cap was the spilling kernel's).
#ifndef ATTNKIT_FLASH_FWD_CAUSAL_BM64_MAX_S
#define ATTNKIT_FLASH_FWD_CAUSAL_BM64_MAX_S 1073741824
#endif
//   ATTNKIT_FLASH_FWD_NONCAUSAL_BM64_MAX_S (session 5, helper flashfwd10; 1 << 30 = every length
//     since session 5, 0 = off): the same for non-causal launches (windowed ones included):
//     seqlen_q <= this runs the 64-row kernel, FA-2's H100 D = 256 tile (64 x 64, 4 warps, two
//     CTAs per SM where 2 x 96 KiB of shared memory fit: sm90; one on A100 / sm86, unmeasured
//     there). Needs ATTNKIT_FLASH_FWD_BM64_DIET_256 = 32 (the 64-row kernel without its spill):
//     without the diet it lost 1-3 % (A/B 2 below).
//     Measured (H100, session 5, one call, bench/results/2026-11-22-h100-flashfwd10-run1.md),
//     ours TFLOP/s, both knobs on vs both off (today's 128-row kernel): non-causal S = 512 / 1k /
//     4k / 16k 283.8 / 315.1 / 325.0 / 337.6 vs 252.1 / 278.0 / 302.8 / 313.9 (+7..+13 %); ours /
//     FA-2 0.99 / 1.01 / 1.03 / 1.03 (was 0.88 / 0.90 / 0.96 / 0.96). Tests (test_flash 758 +
//     36 skipped) and memcheck / racecheck on 7 D = 256 cases ran with both on.
//   ATTNKIT_FLASH_FWD_BM64_DIET_256 (session 5, helper flashfwd10; 32 since session 5, 0 = off):
//     register diet of the
//     64-row D = 256 forward (FwdTraits<256, 64>), BN64_DIET's bits plus
//       32 every K / V / first-Q tile through TileLoader::load_tid: offsets recomputed from
//          %tid.x per tile, per-chunk predicates, no full / partial branch (implies the fast
//          path; without bit 2 no TileLoader state is kept).
//     ptxas (sm_90a, bf16, fast path, 255-register cap at 128 threads): 0 (today's kernel)
//     255 registers, 72 B spill (n_begin, n_end and the 64-bit K / V base offsets reloaded per
//     key block, one row sum kept in local memory: 10 LDL + 2 STL per 64 keys); 8 (tree sums,
//     the checked loader) 12 B; 2 / 26 / 30 72 / 72 / 44 B (the TileLoader's full-tile branch
//     keeps both paths' invariants live); 32, 40, 56: 248 registers, 0 B. Measured (same call,
//     diet alone, causal, where the 64-row kernel already ran): S = 512 / 1k / 4k +6.7 / +8.9 /
//     +13.6 % (205.5 / 249.6 / 300.5 vs 192.6 / 229.2 / 264.5 TFLOP/s); 16k (128-row kernel)
//     unchanged. Causal above CAUSAL_BM64_MAX_S still takes the 128-row kernel (not re-measured).
#ifndef ATTNKIT_FLASH_FWD_NONCAUSAL_BM64_MAX_S
#define ATTNKIT_FLASH_FWD_NONCAUSAL_BM64_MAX_S 1073741824
#endif
//   ATTNKIT_FLASH_FWD_BN_128 / ATTNKIT_FLASH_FWD_BN64_DIET: keys per block of the D = 128
//     forward (64 since session 5, was 32) and, with 64, its register diet (26 since session 5).
//     Measured (H100, session 5, same-run A/B of BN 64 + diet 26 against BN 32,
//     bench/results/2026-11-22-h100-flash-s5-run1.md): D = 128 forward +7.4 / +4.2 / +0.4 %
//     non-causal, +7.0 / +5.2 / +0.5 % causal at S = 512 / 1k / 4k; tests + sanitizer ran with it.
//   ATTNKIT_FLASH_FWD_BN64_DIET (session 4 round 3, helper flashfwd8): register diet for
//     ATTNKIT_FLASH_FWD_BN_128=64 (FA-2's 128 x 64 tile at D = 128, run_mha_fwd_hdim128), fast
//     path only; a bit set, used only when
//     BN_128 = 64 (BN_128 = 32 compiles the same SASS whatever this is):
//       2  FAST_LOAD's TileLoader for the full K / V / first-Q tiles at D = 128;
//       8  each row's sum of P as a tree over its n8 tiles instead of one serial chain;
//       16 P V's last k16 slice waits for the row sums (dep_fence): ptxas otherwise schedules
//          the sums after P V, keeping fp32 P values live over it (those were the spills);
//       1  P packed to 16-bit pairs right after exp2 (warp_gemm_rp);
//       4  per-thread K / V pointers (TileLoader::load_full_thr);
//       32 (session 5 round 4, helper flashfwd11) every K / V / first-Q tile through
//          TileLoader::load_tid, as BM64_DIET_256's 32 does at D = 256 (implies the fast loads;
//          with it bit 2 changes nothing);
//       64 (same) the fast path's S GEMM k loop fully unrolled (ATTNKIT_FLASH_KK_UNROLL_FWD, 8
//          k16 steps at D = 128) instead of ATTNKIT_FLASH_KK_UNROLL_FWD_BN64; the general path
//          keeps the latter (full unroll there: 284 -> 448 B spill).
//     With any bit set the S GEMM's k loop unrolls ATTNKIT_FLASH_KK_UNROLL_FWD_BN64 (4; the
//     full unroll's ldmatrix run-ahead costs 24-40 B more spill). ptxas (sm_90a, bf16, fast
//     path, 255 registers): BN 64 as is 200 B spill stores; 2 64 B (unroll 4: 24 B); 2+8+16 =
//     26 16 B (4 loop-invariant registers, 4 STL + 4 LDL per 64 keys); 1 and 4 add spill (1:
//     204 B alone, 100 B with 2; 4: 32 B on top of 26). Recommended on-value: 26. Static SASS
//     per 64 keys and the A/B plan: bench/notes/flash.md ("Session 4, round 3").
//     What 26's 16 B are (cuobjdump, fast path): the K / V TileLoaders' state for the partial-
//     tile branch (row, column, 64-bit row offset: 4 registers), stored during P V and reloaded
//     before the next block's loads. Session 5 round 4 (flashfwd11, ptxas as above): 58 (26 +
//     32) 4 B (one 64-bit base's high word, 1 LDL per 64 keys ahead of the first barrier); 96
//     (32 + 64), 120, 122 (26 + 32 + 64): 255 registers, 0 B; 123 (+1) 56 B. Candidate: 122.
//     Session 6 (H100, same call, 122 vs 26, ours / FA-2): non-causal 1.05 / 1.04 / 1.04 / 1.08
//     vs 0.96 / 0.95 / 1.00 / 1.00 at S = 512 / 1k / 4k / 16k, causal 1.14 / 1.05 / 1.06 / 1.10
//     vs 1.05 / 0.98 / 0.98 / 1.02 (+6..+10 % TFLOP/s). Default 122 on sm_90 and up; 26 below
//     (sm_80's ptxas spills 60 B with 122). The bits change device code only (no shared-memory
//     size, no launch decision), so host and device passes may differ.
#ifndef ATTNKIT_FLASH_FWD_BN64_DIET
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
#define ATTNKIT_FLASH_FWD_BN64_DIET 26
#else
#define ATTNKIT_FLASH_FWD_BN64_DIET 122
#endif
#endif
//     Session 6 (helper flashfwd13, compile-only), four more bits for every diet (BN64_DIET,
//     BM64_DIET_256, DIET_64), off by default and exact (same results bit for bit):
//       128 (with 32) load_tid with a full-tile branch (TileLoader::load_tid's kFull): a tile
//           with every row and column valid takes no predicate, 3 SASS instructions per
//           16-byte chunk instead of 6; partial tiles as before;
//       256 each row's max over the key block starts from its first score pair instead of
//           -inf (one FMNMX less per row: fmaxf(-inf, x) is not x for a NaN x, so ptxas keeps
//           it; the running max's fmaxf with m_run absorbs a NaN either way);
//       512 the per-block "needs the element rule" test as two 32-bit compares of the block
//           index with precomputed bounds instead of 64-bit key offsets against the row ranges;
//       1024 the S GEMM through warp_gemm_ss_wo (one lane base per operand with the warp's rows
//           and the tile base folded in, WarpFragAddr) instead of warp_gemm_ss (FragAddr).
//     256 / 512 / 1024: fast path only. ptxas (sm_90a, nvcc 13.0, bf16, fast path), executed SASS
//     per steady full 64-key block (no rescale, no element rule): the 64-row D = 256 kernel 32
//     (default) 913, 416 (32 + 128 + 256) 821, 1952 (+ 512 + 1024) 792, 249 / 250 registers,
//     0 B spill (sm_80 too; HMMA 256 / LDSM 144 / LDGSTS 32 per block in all). D = 128: 128 and
//     1024 add instructions there (ptxas rematerializes the S GEMM's lane addresses; 1914 spills
//     8 B); 890 (122 + 256 + 512) 874 -> 867. Candidate for D = 256: 1952. Details:
//     bench/notes/flash.md ("Session 6 (helper flashfwd13, compile-only)").
#ifndef ATTNKIT_FLASH_FWD_BM64_DIET_256
#define ATTNKIT_FLASH_FWD_BM64_DIET_256 32  // session 6: 1952 -6..-10 %, 416 -5..-13 % (H100)
#endif
//   ATTNKIT_FLASH_FWD_TAIL_MIN_BLOCKS (session 18): the split tail's auto rule (fwd_tail.cuh,
//     launch.cuh launch_fwd_split_tail) splits only launches with at least this many 64-key
//     blocks per tile. H100, D = 256 non-causal, tail (auto) / off interleaved in one process
//     (`...-flash-s18-tail-ab*.json`): S 512 0.922, 1k 0.969, 2k 0.992, 4k 1.003, 16k 1.011.
//     The pieces' fixed costs (a prologue each, their fp32 slots written and read back: ~30-60
//     MB in the last wave) exceed the saved 0.24 tile time below ~4k keys. 0: every length.
#ifndef ATTNKIT_FLASH_FWD_TAIL_MIN_BLOCKS
#define ATTNKIT_FLASH_FWD_TAIL_MIN_BLOCKS 64
#endif
//   ATTNKIT_FLASH_FWD_DIET_64 (session 6, helper flashfwd13, compile-only; 0 = off, the
//     default): BN64_DIET's bits for the D = 64 forward's fast path, the one-pair kernel and the
//     KV2 kernel (ATTNKIT_FLASH_FWD_KV2_64_MAX_S) alike: 32 K / V / first-Q tiles through
//     TileLoader::load_tid (today: load_tile_async in the one-pair kernel, TileLoader's full /
//     partial branch in the KV2 one), 128 / 256 / 512 / 1024 as above. Executed SASS per steady
//     64-key block, one-pair / KV2 kernel (sm_90a, bf16): 0 645 / 689; 288 (32 + 256) 639 / 688;
//     416 659 / 680; 1824 (288 + 512 + 1024) 636 / 669; 1952 (1824 + 128) 641 / 661; 0 B spill,
//     <= 241 registers in all (sm_80 1952: 0 B). Candidate then: 1952 (the KV2 kernel runs
//     the S <= 512 rows, the one D = 64 row below FA-2).
//     Session 6 (H100, same call, vs 0, TFLOP/s): 1824 +5.7 / -0.3 / -2.1 % non-causal, +9.6 /
//     +2.8 / -0.6 % causal at S = 512 / 1k / 4k; 1952 +0.4 / -0.8 / -1.5 / -1.2 %, +5.8 / +4.2 /
//     0 / 0 % at 512 / 1k / 4k / 16k (bit 128 costs at 512; D = 256 lost with it too). The 512
//     rows ran the KV2 kernel (KV2_64_MAX_S was 512 then); on the one-pair kernel, the one every
//     D = 64 call takes while KV2_64_MAX_S is 0, 1824 measured -0.3 / -2.1 % non-causal and
//     +2.8 / -0.6 % causal at 1k / 4k: no gain, so 0 (the kernel every session-6 D = 64 row
//     outside KV2 was measured with in the "off" builds). Revisit with KV2 back on.
#ifndef ATTNKIT_FLASH_FWD_DIET_64
#define ATTNKIT_FLASH_FWD_DIET_64 0
#endif
//   ATTNKIT_FLASH_FWD_DIET_64_KV2 (session 7): DIET_64's bits for the D = 64 KV2 kernel alone
//     (the instance launched for seqlen_k <= KV2_64_MAX_S), 0 = none. Why: 1824 measured +5.7 /
//     +9.6 % on the KV2 kernel at S = 512 but -2.1 % non-causal on the one-pair kernel at 4k
//     (session 6, above); session 7 (H100, same call): KV2 + 1824 vs KV2 alone +3.6 / +8.6 %
//     non-causal / causal at S = 512 (265.2 vs 255.9, 178.7 vs 164.5 TFLOP/s). sm_80: 0 B spill,
//     not timed.
//     Bit 2048 (session 7, helper flashfwd14, compile-only; off in the default 1824): the KV2
//     key loop's K / V loads (tile n - 1, issued in block n) as one running per-thread byte
//     pointer per tensor, walked down one row group (TileLoader::kRowStep rows) per 16-byte
//     chunk by a 64-bit subtract, into a per-thread shared address toggled between the two
//     pairs: no row predicate (every tile the loop loads is full: n - 1 < n_end - 1, and
//     row_range clips last.hi to seqlen_k - 1), the column predicate (head_dim < D) per thread,
//     fixed before the loop; no %tid / swizzle / 64-bit row product per block. The prologue's
//     first K / V tile (the only partial one in rows) keeps fwd_load_tile. Same chunks, same
//     zero fill: same results. FwdTraits::kKV2Chain; D = 64 KV2 kernel only.
//     Bit 4096 (same session; off): the KV2 key loop's S GEMM (Q, K) and P V (V) lane bases
//     (WarpFragAddr, warp origin and tile folded in, as bit 1024 builds them) computed once
//     before the loop, the K / V ones toggled between the pairs by base_sum - base at the end of
//     each block: loop-carried, so ptxas cannot re-derive them from %tid and the pair select per
//     block (it did: ~30 SASS per block). Same addresses, same MMA order. FwdTraits::kKV2Lanes.
//     Measured (session 7, H100, same call): 7968 (1824 + 2048 + 4096) vs 1824, both KV2 at
//     S <= 2048: +6.2 / +4.7 % non-causal, +3.9 / +5.4 % causal at 1k / 2k; the default since.
#ifndef ATTNKIT_FLASH_FWD_DIET_64_KV2
#define ATTNKIT_FLASH_FWD_DIET_64_KV2 7968
#endif
#ifndef ATTNKIT_FLASH_KK_UNROLL_FWD_BN64
#define ATTNKIT_FLASH_KK_UNROLL_FWD_BN64 4
#endif
#ifndef ATTNKIT_FLASH_FWD_BN_64
#define ATTNKIT_FLASH_FWD_BN_64 64
#endif
#ifndef ATTNKIT_FLASH_FWD_BN_128
#define ATTNKIT_FLASH_FWD_BN_128 64
#endif

namespace attnkit::flash {

/// Forward: CTA tile (kBM query rows, kBN keys), kWarps warps each owning 16 * kMT rows.
/// BM256: the query block at D > 192 (64 or 128); launch_fwd picks 64 for causal launches up to
/// kCausalBm64MaxS query rows (ATTNKIT_FLASH_FWD_CAUSAL_BM64_MAX_S). KV2Inst: the traits as seen
/// by fwd_tile's kKV2 = true instance (only the diet bits differ: ATTNKIT_FLASH_FWD_DIET_64_KV2).
template <int D, int BM256 = ATTNKIT_FLASH_FWD_BM_256, bool KV2Inst = false>
struct FwdTraits {
  static constexpr int kHeadDim = D;
  static constexpr int kBN =
      D == 64 ? ATTNKIT_FLASH_FWD_BN_64 : (D == 128 ? ATTNKIT_FLASH_FWD_BN_128 : 64);
  // BN_128 = 64 with its register diet (ATTNKIT_FLASH_FWD_BN64_DIET).
  static constexpr bool kDiet128 = D == 128 && kBN == 64 && ATTNKIT_FLASH_FWD_BN64_DIET != 0;
  static constexpr int kKUnroll =
      kDiet128 ? ATTNKIT_FLASH_KK_UNROLL_FWD_BN64
               : (D <= 128 ? ATTNKIT_FLASH_KK_UNROLL_FWD
                           : (D == 256 ? (BM256 == 64 ? ATTNKIT_FLASH_FWD_KK_UNROLL_256_BM64
                                                      : ATTNKIT_FLASH_FWD_KK_UNROLL_256)
                                       : ATTNKIT_FLASH_KK_UNROLL_FWD_WIDE));
  // D <= 128: 4 warps x 32 rows (2 m16 tiles: K/V fragments reused twice per ldmatrix);
  // D > 128: 16 rows per warp, to keep the (16*kMT, D) fp32 output accumulator in registers:
  // D = 192 8 warps (kBM 128); D = 256 8 warps (kBM 128, 128 KiB smem, one CTA per SM) or, with
  // BM256 = 64, 4 warps (96 KiB and 128 x 255 registers: two CTAs per SM, FA-2's choice on H100,
  // flash_fwd_launch_template.h), which spills 72 B and measured 2-4 % slower non-causal but up
  // to 8.6 % faster causal at S <= 4k (session 4): causal launches pick it (kCausalBm64MaxS).
  static constexpr int kWarps = D <= 128 ? 4 : (D > 192 && BM256 == 64 ? 4 : 8);
  static constexpr int kMT = D <= 128 ? 2 : 1;
  static constexpr int kBM = kWarps * 16 * kMT;  // 128 (D = 256: BM256)
  static constexpr int kThreads = kWarps * 32;
  static constexpr bool kEarlyK = ATTNKIT_FLASH_FWD_EARLY_K != 0;
  // The 64-row D = 256 kernel's diet (ATTNKIT_FLASH_FWD_BM64_DIET_256): BN64_DIET's bits.
  static constexpr bool kDiet256 = D == 256 && BM256 == 64 && ATTNKIT_FLASH_FWD_BM64_DIET_256 != 0;
  // The D = 64 forward's diet (ATTNKIT_FLASH_FWD_DIET_64): BN64_DIET's bits.
  static constexpr int kDiet64Bits =
      KV2Inst ? ATTNKIT_FLASH_FWD_DIET_64_KV2 : ATTNKIT_FLASH_FWD_DIET_64;
  static constexpr bool kDiet64 = D == 64 && kDiet64Bits != 0;
  static constexpr int kDietBits =
      kDiet128 ? ATTNKIT_FLASH_FWD_BN64_DIET
               : (kDiet256 ? ATTNKIT_FLASH_FWD_BM64_DIET_256 : (kDiet64 ? kDiet64Bits : 0));
  static constexpr bool kPackP = (kDietBits & 1) != 0;
  static constexpr bool kFastLoad =
      kDiet256 ? (kDietBits & 34) != 0
               : (ATTNKIT_FLASH_FWD_FAST_LOAD == 1 ||
                  (ATTNKIT_FLASH_FWD_FAST_LOAD == 2 && D > 128) || (kDietBits & 34) != 0);
  static constexpr bool kThrPtr = (kDietBits & 4) != 0;
  static constexpr bool kTreeSum = (kDietBits & 8) != 0;
  static constexpr bool kSumFence = (kDietBits & 16) != 0;
  static constexpr bool kTidLoad = (kDiet128 || kDiet256 || kDiet64) && (kDietBits & 32) != 0;
  // load_tid's full-tile branch (bit 128); row maxima from the first score pair (bit 256).
  static constexpr bool kTidFull = kTidLoad && (kDietBits & 128) != 0;
  static constexpr bool kMaxPair = (kDietBits & 256) != 0;
  // The element-rule test per key block from two block indices (bit 512); the S GEMM through
  // warp_gemm_ss_wo's warp-origin lane bases (bit 1024). Fast path only.
  static constexpr bool kBlockCheck = (kDietBits & 512) != 0;
  static constexpr bool kWarpOrigin = (kDietBits & 1024) != 0;
  // The D = 64 KV2 key loop's K / V loads from running per-thread pointers (bit 2048).
  static constexpr bool kKV2Chain = KV2Inst && kDiet64 && (kDietBits & 2048) != 0;
  // ... and its S GEMM / P V lane bases kept across key blocks, K / V toggled per pair (4096).
  static constexpr bool kKV2Lanes = KV2Inst && kDiet64 && (kDietBits & 4096) != 0;
  // The fast path's S GEMM unroll: BN64_DIET bit 64 fully unrolls it at D = 128 (0 B spill with
  // bit 32); the general path keeps kKUnroll.
  static constexpr int kKUnrollFast =
      kDiet128 && (kDietBits & 64) != 0 ? ATTNKIT_FLASH_KK_UNROLL_FWD : kKUnroll;
  static constexpr bool kPersist = ATTNKIT_FLASH_FWD_PERSIST != 0 && D == 256;
  // First Q / K tiles in 64-column panels, S GEMM started per panel (D = 256; D = 128 by knob).
  static constexpr int kProloguePanels =
      (ATTNKIT_FLASH_FWD_PANEL_PROLOGUE != 0 && D == 256)
          ? 4
          : ((ATTNKIT_FLASH_FWD_PANEL_PROLOGUE_128 != 0 && D == 128) ? 2 : 1);
  // O through shared memory (sQ) in the epilogue; the persistent kernel prefetches into sQ.
  static constexpr bool kSmemEpilogue = ATTNKIT_FLASH_FWD_SMEM_EPILOGUE != 0 && !kPersist;
  // Its stores from running row pointers (ATTNKIT_FLASH_FWD_EPI_ROWPTR, this D's class bit).
  static constexpr bool kEpiRowPtr = kSmemEpilogue &&
                                     (ATTNKIT_FLASH_FWD_EPI_ROWPTR & (D <= 64    ? 1
                                                                      : D <= 128 ? 2
                                                                                 : 4)) != 0 &&
                                     (32 % (D / 8) == 0 || (D / 8) % 32 == 0);
  // Causal fast-path launches with seqlen_q <= this run FwdTraits<D, 64> (0: never; only where
  // this is the 128-row, non-persistent D = 256 kernel).
  static constexpr int kCausalBm64MaxS =
      (D == 256 && kBM == 128 && !kPersist) ? ATTNKIT_FLASH_FWD_CAUSAL_BM64_MAX_S : 0;
  // The same for non-causal launches (ATTNKIT_FLASH_FWD_NONCAUSAL_BM64_MAX_S, 0 = never).
  static constexpr int kNonCausalBm64MaxS =
      (D == 256 && kBM == 128 && !kPersist) ? ATTNKIT_FLASH_FWD_NONCAUSAL_BM64_MAX_S : 0;
  // Two K and two V buffers (ATTNKIT_FLASH_FWD_KV2_256): the 128-row D = 256 fast path only;
  // fwd_kernel's kKV2 = true instance, launched where kSmemBytesKV2 fits the device.
  // D = 64 by ATTNKIT_FLASH_FWD_KV2_64_MAX_S (launch_fwd: seqlen_k <= kKV2MaxS only).
  static constexpr bool kKV2 =
      (ATTNKIT_FLASH_FWD_KV2_256 != 0 && D == 256 && kBM == 128 && !kPersist) ||
      (ATTNKIT_FLASH_FWD_KV2_64_MAX_S > 0 && D == 64);
  static constexpr int64_t kKV2MaxS =
      D == 64 ? static_cast<int64_t>(ATTNKIT_FLASH_FWD_KV2_64_MAX_S) : (int64_t{1} << 62);
  // Q (kBM, D) + K (kBN, D) + V (kBN, D), 2-byte elements; KV2: + K (kBN, D) + V (kBN, D).
  static constexpr int kSmemBytes = (kBM + 2 * kBN) * D * 2;
  static constexpr int kSmemBytesKV2 = (kBM + 4 * kBN) * D * 2;
};

/// Backward, FA-2 schedule (the default when `deterministic` is false): one CTA per (key block of
/// kBN, kv head, batch) loops over the (q head of the group, query block of kBM) items and runs
/// 5 GEMMs per item: S = Q K^T, dP = dO V^T (kBM, kBN); dV += P^T dO, dK += dS^T Q (kBN, D) in
/// registers; dQ (kBM, D) = dS K added to an fp32 workspace with atomics. 8 warps; each GEMM has
/// its own warp grid (rows x cols of warps over its output tile):
///   S / dP  (kBM, kBN):  kSdpWR x kSdpWC,   dK / dV (kBN, D): kKvWR x kKvWC,
///   dQ      (kBM, D):    kDqWR x kDqWC (computed in kDqChunks column chunks to bound registers).
/// D <= 128: (64, 128) tiles with 32-row warp tiles (32 x 32 for S / dP, 32 x D/2 for dK / dV):
/// every ldmatrix.x4 feeds 2 MMAs (16-row tiles: 1.33) -> ~256 B of smem reads per MMA instead
/// of 384. Registers at D = 128: dK + dV 2 x 64, S + dP 2 x 32 fp32 per thread.
/// D = 64: (128, 128) tiles (S / dP 32 x 64 warp tiles, dQ 32 x 32): half the items per key
/// block, so half the per-item barriers / stats loads / atomics per MMA; +16 % at S = 4k
/// (H200, run 6 A/B). Smem 162 KiB (A100: 163 KiB).
/// D > 128: (64, 64) tiles; dK + dV (64, D) take 2 x D/4 registers (128 at D = 256).
/// Shared memory: K, V (kBN, D); kStages x Q, dO (kBM, D); P, dS (kBM, kBN); lse / delta.
/// D <= 192: <= 161 KiB, under an A100's 163 KiB. D = 256 double-buffers Q / dO like D <= 192
/// (209 KiB: H100 / H200; run 5 measured single-buffered D = 256 no faster than the 7-GEMM
/// kernels); where that does not fit (A100: 163 KiB) the deterministic kernels run instead.
/// The head-dim class bit of ATTNKIT_FLASH_BWD_DQ_MID is set for D (1: D <= 64, 2: D 65..128,
/// 4: D > 128).
template <int D>
inline constexpr bool kDqMidClass = (ATTNKIT_FLASH_BWD_DQ_MID & (D <= 64    ? 1
                                                                 : D <= 128 ? 2
                                                                            : 4)) != 0;

template <int D>
struct BwdFusedTraits {
  static constexpr int kHeadDim = D;
  static constexpr int kKUnroll =
      D <= 128 ? ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED : ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED_WIDE;
  static constexpr int kKUnrollSdp =
      D <= 128 ? ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED_SDP : ATTNKIT_FLASH_KK_UNROLL_BWD_FUSED_SDP_WIDE;
  // dQ GEMM's unroll: kKUnroll but at D = 128 with ATTNKIT_FLASH_BWD_DQ_UNROLL_128 set.
  static constexpr int kKUnrollDq =
      D == 128 && ATTNKIT_FLASH_BWD_DQ_UNROLL_128 > 0 ? ATTNKIT_FLASH_BWD_DQ_UNROLL_128 : kKUnroll;
  static constexpr int kWarps = 8, kThreads = 256;
  static constexpr int kBM = D <= 64 ? ATTNKIT_FLASH_BWD_BM_64 : 64;
  static constexpr int kBN = D <= 128 ? 128 : 64;
  static constexpr int kSdpWR = kBM / 32, kSdpWC = 8 / kSdpWR;
  // dK / dV: 32-row warp tiles (kBN / 32 warp rows): each B fragment (dO, Q) feeds 2 MMAs.
  static constexpr int kKvWR = kBN / 32, kKvWC = 8 / kKvWR;
  static constexpr int kDqChunks = D > 192    ? ATTNKIT_FLASH_BWD_DQ_CHUNKS_256
                                   : D > 128  ? 2
                                   : D == 128 ? ATTNKIT_FLASH_BWD_DQ_CHUNKS_128
                                   : D == 64  ? ATTNKIT_FLASH_BWD_DQ_CHUNKS_64
                                              : 1;
  // dQ: 2 x 4 (32-row tiles) where a chunk's quarter is a multiple of 16 columns, else 4 x 2.
  static constexpr int kDqWR = kBM == 128 ? 4 : ((D / kDqChunks / 4) % 16 == 0 ? 2 : 4);
  static constexpr int kDqWC = 8 / kDqWR;
  static constexpr int kStages = D <= 192 ? 2 : ATTNKIT_FLASH_BWD_STAGES_256;
  static constexpr int kSMT = kBM / kSdpWR / 16, kSNT = kBN / kSdpWC / 8;
  static constexpr int kKMT = kBN / kKvWR / 16, kKNT = D / kKvWC / 8;
  static constexpr int kQMT = kBM / kDqWR / 16, kQNT = D / kDqWC / kDqChunks / 8;
  static_assert(kSMT >= 1 && kKMT >= 1 && kQMT >= 1, "warp tiles at least 16 rows");
  static_assert(kSNT % 2 == 0 && kKNT % 2 == 0 && kQNT % 2 == 0, "warp tiles: even n8 counts");
  // lse / delta of the query block staged in smem with Q / dO (cp.async), so the P / dS pass
  // after the S and dP GEMMs reads no global memory (a global load there stalls every warp of
  // the CTA at once: they all reach it together).
  static constexpr bool kStatsSmem = ATTNKIT_FLASH_BWD_STATS_SMEM != 0;
  // dQ_accum tiles in the dQ MMA's order (ATTNKIT_FLASH_BWD_DQ_PERM; needs HOIST's dQ path).
  static constexpr bool kDqPerm = ATTNKIT_FLASH_BWD_DQ_PERM != 0 && ATTNKIT_FLASH_BWD_HOIST != 0;
  // Stats from the packed workspace block of the item's query block (ATTNKIT_FLASH_BWD_STATS_WS).
  static constexpr bool kStatsWs =
      kStatsSmem && ATTNKIT_FLASH_BWD_STATS_WS != 0 && ATTNKIT_FLASH_BWD_HOIST != 0;
  // K, V (kBN, D); kStages x Q, dO (kBM, D); P, dS (kBM, kBN): bf16 / f16; kStages x lse, delta
  // (kBM) fp32. D = 128: 160 KiB + 1 KiB.
  static constexpr int kSmemBytes = (2 * kBN * D + kStages * 2 * kBM * D + 2 * kBM * kBN) * 2 +
                                    (kStatsSmem ? kStages * 2 * kBM * 4 : 0);
};

/// Backward dK/dV kernel: one CTA per (key block of kBN, kv head, batch), looping over query
/// blocks of kBM rows of every q head of the group. 8 warps as 4 (rows) x 2 (cols) for the
/// (kBM, kBN) S / dP tiles and for the (kBN, D) dK / dV tiles.
template <int D>
struct BwdKVTraits {
  static constexpr int kHeadDim = D;
  static constexpr int kKUnroll = ATTNKIT_FLASH_KK_UNROLL_BWD;
  static constexpr int kBM = 64, kBN = 64;
  static constexpr int kWarps = 8, kThreads = 256;
  static constexpr int kWR = 4, kWC = 2;
  static constexpr int kSMT = kBM / kWR / 16, kSNT = kBN / kWC / 8;  // S / dP warp tile
  static constexpr int kKMT = kBN / kWR / 16, kKNT = D / kWC / 8;    // dK / dV warp tile
  // Q / dO double-buffered (next query block loads during this one's 4 GEMMs) where it fits
  // an A100's 163 KiB; D = 256 keeps one stage (144 KiB).
  static constexpr int kStages = D <= 192 ? 2 : 1;
  // K, V (kBN, D); kStages x Q, dO (kBM, D); P, dS (kBM, kBN).
  static constexpr int kSmemBytes = (2 * kBN * D + kStages * 2 * kBM * D + 2 * kBM * kBN) * 2;
};

/// Backward dQ kernel: one CTA per (query block, q head, batch), looping over key blocks; each
/// warp owns 16 rows so dS stays in registers as the A operand of dQ += dS K.
template <int D>
struct BwdQTraits {
  static constexpr int kHeadDim = D;
  static constexpr int kKUnroll = ATTNKIT_FLASH_KK_UNROLL_BWD;
  static constexpr int kWarps = 4, kThreads = 128, kMT = 1;
  static constexpr int kBM = 64;
  static constexpr int kBN = D <= 128 ? 64 : 32;  // S + dP + dQ accumulators <= ~200 registers
  // Q, dO (kBM, D); 2 stages x K, V (kBN, D).
  static constexpr int kSmemBytes = (2 * kBM * D + 2 * 2 * kBN * D) * 2;
};

}  // namespace attnkit::flash
