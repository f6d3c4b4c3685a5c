// Entry points of the flash3 forward instantiations (instantiations/fwd_d*_*.cu).
#pragma once

#include "core/params.hpp"

namespace attnkit::flash3 {

/// Measurement knobs (benchmarks only; defaults are the tuned choice). Process-wide.
struct Tuning {
  // Consumer warpgroups alternate GEMM issue: -1 = auto: on, except D = 256 non-causal
  // (570 vs 631 TFLOP/s at S = 4k in run 2; since session 53 on there from
  // kPingPong256MinSeqlenK keys on the kernel with the row sums) and, since session 16, wherever
  // the ordered softmax runs (launch.cuh; off there +0.4..+3.2 %), except D = 128's ordered kernels
  // below kOrdPingPong128MaxSeqlenK keys (session 52, over the ordered kernel without it:
  // non-causal +1.7..+2.0 %, causal +0.2..+0.9 %). Causal 16k, run 3: D = 64 399 vs 373, D = 128
  // 552 vs 506, D = 256 602 vs 586; non-causal D = 64/128 within noise (+-2 %).
  int pingpong = -1;
  bool persistent = true;  // grid = min(#tiles, #SMs); false: one CTA per tile
  // Wider K/V tiles (FA3's): D = 128 non-causal 176 keys. Off: measured no better (S = 4k:
  // 551 vs 621 TFLOP/s; 16k: equal, run 3). (D = 256 with 80 keys was dropped: it spilled and
  // measured no better, run 3.)
  bool wide_n = false;
  // Q buffers: 2 = the producer prefetches the next tile's Q while the current one still runs
  // (where two fit in shared memory: D <= 128); 1 = one buffer (v4 behaviour).
  int q_bufs = 2;
  // Consecutive tiles of a persistent CTA overlap: the last P V of tile t is issued in one
  // ping-pong turn with the first Q K^T of tile t+1, and tile t's epilogue runs under the
  // tensor cores' work (mainloop.cuh, Consumer). false: one PV-only turn + epilogue + one
  // QK-only turn per tile boundary (v4).
  bool overlap_tiles = true;
  // Softmax kept in front of the P V wait in the machine code (mainloop.cuh kVarOrdered,
  // softmax_before_wait): the intra-warpgroup overlap the mainloop is written for, which ptxas
  // otherwise undoes. -1 = auto (session 16, launch.cuh ord_auto): on at D = 256, and at D = 128
  // for Sk > 2048 (which then runs the diet + TMA-epilogue kernel past Sk 4096 too; since
  // session 52 at every Sk while the row sums in P V are on, Tuning::tc_row_sum); off at
  // D = 64 (-5..-12 % there, as in session 2). It runs where the chosen kernel has an ordered
  // build (launch.cuh kernels_ord: D 256 slots 11 / 13, D 128 slots 13 / 15; last slot 16 +
  // slot), or through the variant bit in the plain kernels (slots 0-3) when forced on; other
  // kernels (D 64's tuned ones, q_regs, legacy_desc, the 128-key D 256 ones) run unordered.
  // 0 = off (the unordered kernels, the pre-session-16 default), 1 = on.
  int ordered_softmax = -1;
  // O *= factor between a turn's Q K^T and P V issues (FA3's RescaleOBeforeGemm) instead of after
  // the previous P V's wait (mainloop.cuh, kVarEarlyRescale). Off: within +-2 % in both session-3
  // runs (H200; D = 256 S = 4k +1 %, D = 128 S = 1k -1 %).
  bool early_rescale = false;
  // Stages of the V ring: 2, or 3 (one more iteration of lead for the V loads, which wait for
  // both warpgroups' P V on the stage they overwrite; with one Q buffer at D = 128). 2: session 3
  // run 1 measured 3 stages at -4 % (D = 128 S = 1k, one Q buffer) and +-2 % elsewhere.
  int v_stages = 2;
  // CTAs per cluster: 2 = K/V multicast between the CTAs of tiles (m, m+1) of one head (D >= 128
  // non-causal, even m-block count; cluster.cuh), 0/1 = off. Off: equal to the plain kernel in the
  // final session-3 run (D = 128 S = 1k 538 vs 537 TFLOP/s, D = 256 S = 4k 645 vs 639); L2 is at
  // 28-36 % of its peak without it (ncu), so there is no bandwidth to win.
  // 3 (session 46): the default non-causal kernels' 2-CTA twins (launch_forward: D 128's diet
  // kernels, D 256's ordered diet, with or without the row sums), static persistent schedule, no
  // split tail (but with multicast_tail = 1, below). Session 46 call 7 measured the multicast's
  // energy on the plain kernels: +1.1 / +2.1 % at D 256 non-causal 4k / 16k in 1-second blocks.
  // -1 = auto (launch.cuh multicast_wanted, session 47): the twins at D 128 non-causal from
  // kMulticast128MinSeqlenK keys (4096; 2048 since session 51), and since session 59 at D 256
  // non-causal from kMulticast256MinSeqlenK keys (1024 since session 60: slot 29's twin 69 below
  // 2048 keys, slot 39's twin 79 from there).
  int cluster = -1;
  // v5's code generation (mainloop.cuh kVarLegacyDesc: wgmma descriptors rebuilt per
  // instruction, row max as one dependent chain). A/B only; runs the plain kernel (no other
  // variant knob). The new default measured +3.7 % (D = 64 S = 1k), +2-4 % (D = 128 S = 1k),
  // +0.5-1.5 % (D = 256) against it (session 3 final run, H200).
  bool legacy_desc = false;
  // Session 4 (helper f3fwd7): wgmma descriptors kept in uniform registers (stage and Q offsets
  // through REDUX, mainloop.cuh kVarUniformDesc; static SASS: R2UR per K/V block 72 -> 15 at
  // D = 256) and the O rescale skipped while no row max of the warp grew by more than 2^8
  // (kVarLazyRescale, softmax.cuh; exact). Each runs its own kernel (launch.cuh slots 9-11),
  // which ignores early_rescale / cluster. -1 = auto: both on at D = 256 only.
  // Session-4 merged run (H200, interleaved, 2 repeats each): both together at D = 256 +4.3 to
  // +10.7 % at S = 1k / 4k / 16k, causal and not (every repeat above both default repeats);
  // D = 128 uniform +0.5-2 % at 1k / 4k but -2 to -6 % at 16k, lazy -0.2 to +1 %; D = 64 within
  // +-1 % (lazy -2 %): off there. Session 5 (helper f3fwd9): auto also turns uniform_desc on at
  // D = 128 (128-key tiles) for Sk <= 4096 (launch.cuh; H100 same-run A/B +0.5 to +1.9 % at
  // S = 1k / 4k, both causal modes). 0 / 1 force either off / on at every D.
  int uniform_desc = -1;
  int lazy_rescale = -1;
  // Session 5 (helper f3fwd9): Q K^T with Q in registers (RS wgmma; mainloop.cuh kVarQReg: the
  // SS Q K^T plus the TMA writes would want ~all of the SM's shared-memory bandwidth).
  // D = 128 with 128-key tiles only (elsewhere ignored); runs with uniform descriptors, without
  // the other variant bits. Off: H100 same-run A/B against the default +0.8 % at S = 1k and 4k
  // non-causal, but -2.2 % at 1k causal and +0.2 % at 4k causal (f3fwd9 run 1): shared-memory
  // bandwidth is not what holds D = 128 back (cuDNN's Q K^T is SS too).
  bool q_regs = false;
  // Session 7 (helper f3fwd15): per-tile instruction diet of the overlapped consumer
  // (mainloop.cuh kVarTileDiet): no O = 0 after each epilogue (the tile's first P V is issued
  // with scale-d = 0) and the tile schedule decoded without divisions (tile_scheduler.cuh
  // FastDiv). D = 128, 128-key tiles, 2 V stages; runs with uniform
  // descriptors, without the other variant bits (q_regs / legacy_desc take precedence).
  // Exact. SASS: ~170 of ~1060 per-tile consumer instructions per warp gone, +4 per steady K/V
  // turn (bench/notes/flash3-fwd-s3.md session 7). H100 same-process A/B against the session-6
  // default (bench/results/2026-11-22-h100-flash3-fwd-s7-f3fwd15.md): +5.3 / +4.5 % at S = 1k
  // (non-causal / causal), +3.2 / +3.1 % at 2k, +2.4 / +2.3 % at 4k. Helper f3fwd16 extended it
  // to D = 64 (with uniform descriptors: +4.5 / +6.6 % at 1k, +2.5 / +3.4 % at 4k) and D = 256
  // (+0.3..+1.5 %). -1 = auto: on at D = 64 / 128 / 256 for Sk <= 4096 with uniform_desc and
  // lazy_rescale left at auto (launch.cuh diet_auto); session 16: at D = 64 for every Sk (+2.5 %
  // at 16k) and at D = 128 past 4096 with the ordered softmax; 0 / 1 force it off / on.
  // D = 64 (2 or 3 consumer warpgroups, 2 V stages): the auto runs it with uniform descriptors
  // (slot 14); tile_diet = 1 alone runs it without them (slot 13, as the pre-diet D = 64 default),
  // with them when uniform_desc = 1 too. D = 256 (64-key tiles, the tile-at-a-time consumer
  // consume_tile_simple; slot 13, with the uniform descriptors and lazy rescale of its default):
  // O not zeroed per tile, the schedule without divisions. D = 256 with 128-key tiles
  // (kv_tile_256 / kv_ring_256) ignores it.
  int tile_diet = -1;
  // Session 7 (helper f3fwd17): the diet kernel's epilogue through shared memory and TMA stores
  // (mainloop.cuh kVarTmaEpi; launch slot 15): each consumer warp stmatrix-es its normalised O
  // rows into the finished tile's Q buffer and one lane issues the TMA stores; that Q buffer is
  // released after the stores have read it. D = 128 (128-key tiles, 2 V stages) where the diet
  // kernel (slot 13) runs; needs q_bufs = 2 and an O that a tensor map can describe (16-byte
  // aligned base, strides multiples of 8 elements); otherwise the STG epilogue runs (ignored).
  // -1 = auto (default): on at D = 128, off at D = 64; 0 = off; 1 = on. Exact (same bits).
  // D = 256 (session 65): 0 keeps the STG stores in the kernels that stage O for TMA stores
  // (traits.hpp ATTNKIT_FLASH3_FWD_D256_TMA_EPI: by default the causal skip-turn twins and the
  // plain kernels without the row sums in P V); -1 / 1 leave them as built. Session 8, H100
  // same-process A/B against the D = 128 diet (STG epilogue), two runs each: +3.6 / +3.8 % at S =
  // 1k non-causal, +1.4 / +2.4 % causal, +0.4 / +0.6 % at 4k non-causal, +0.8 / +1.4 % causal
  // (bench/results/2026-11-22-h100-flash3-fwd-s8-tmaepi.md).
  int tma_epilogue = -1;
  // K/V tile of D = 256: 64 (default; 0 = the same) or 128 keys (cuDNN's 64x128x256 shape:
  // one K and one V stage of 64 KB, P packed into the low half of S's registers,
  // mainloop.cuh consume_tile_fused). A/B only until a GPU run shows a gain.
  int kv_tile_256 = 0;
  // D = 256, 128-key tiles with K and V streamed through a ring of 10 chunk slots of 16 KB, each
  // with its own full/empty barrier (FwdTraits::kRing, mainloop.cuh consume_tile_ring): the
  // producer refills a chunk as soon as both warpgroups released it, so the next block's loads
  // overlap this block's GEMMs. 0 = off; nonzero selects it (kv_tile_256 is then ignored).
  // Compiled only (round 3, helper f3fwd6): A/B only until a GPU run shows a gain.
  int kv_ring_256 = 0;
  // Tile scheduler of persistent launches: -1 = auto (static, but dynamic for causal launches
  // of more than 32 m blocks: launch.cuh run_forward says why),
  // 0 = static (tile_scheduler.cuh; causal with > 32 m blocks then runs one CTA per tile),
  // 1 = dynamic (atomic tile counter in the workspace, zeroed on the stream per launch).
  int scheduler = -1;
  // Consumer warpgroups for D = 64: 0 = auto (3, but 2 for causal S_q <= 1024 and for causal
  // S_q <= 2048 not a multiple of 192), 2 or 3
  // (FA3 uses 3 = 192-row tiles).
  int consumer_wgs = 0;
  // Measurement builds only (ATTNKIT_FLASH3_TRACE): device buffer for per-tile clock64 stamps of
  // the forward's consumer warpgroups (FwdArgs::trace has the layout); null = off. Ignored by
  // normal builds.
  void* trace = nullptr;
  // Session 13: the static persistent schedule rotates the CTA -> tile assignment by one CTA
  // per round (tile_scheduler.cuh tile_of_round), so that a head's partial last tiles are spread
  // over all CTAs instead of landing on the same ones whenever the grid (132 on an H100) is a
  // multiple of the m-block count. 3-warpgroup D = 64 kernels only (launch.cuh says why).
  // -1 = auto: non-causal launches whose last m block is partial; 0 = off; 1 = every non-causal
  // persistent launch. (The dynamic scheduler and the 2-CTA cluster ignore it.)
  int rotate_rounds = -1;
  // Session 14: the next tile's Q prefetched into L2 by the producer, this many K/V blocks
  // before the current tile's last block is issued (FwdArgs::q_prefetch; -1 = auto: D <= 128
  // 2 up to S_k 4096, D = 256 causal 4, else 0 (launch.cuh has the measurements); 0 =
  // off). The producer issues a tile's Q load only after that tile's first K block, at most ~2
  // blocks before the consumers need it; short tiles (S 1k, causal) left its latency exposed.
  int q_prefetch = -1;
  // 1: also the next tile's first K and V blocks (FwdArgs::kv_prefetch; with q_prefetch > 0).
  int kv_prefetch = 0;
  // Session 14: the registers -> global epilogue (store_output) with wider stores after swapping
  // pairs within each quad (FwdArgs::epi_wide): 1 = 8 bytes per lane (32 per row and warp store),
  // 2 = 16 bytes (64), each only where out is that aligned (its base and the b / s / h strides;
  // else the next narrower); 0 = 4 bytes (the quad's 16 per row). -1 = auto (launch.cuh: 1 at
  // D >= 128). D = 64 stores 4 bytes whatever this says (session 34: the wider paths' code and
  // per-tile tests cost its kernels more than they gained).
  int epi_wide = -1;
  // Session 19: the static schedule's last, partial round of tiles split along the keys over
  // every CTA, as a second, programmatic dependent launch (tail.cuh). D = 128 diet kernels and
  // (session 20) D = 256 64-key kernels, non-causal, static persistent schedule, no cluster (the
  // multicast twin only with multicast_tail = 1, below).
  // -1 = auto (launch.cuh), 0 = off, 1 = wherever it can run.
  int tail_split = -1;
  // The auto's least K/V blocks per tile (-1: launch.cuh's default: 4096 keys, D = 256 8192).
  int tail_min_blocks = -1;
  // Measurement only (bench/gpu/flash3_knob_ab.py; the output is incomplete for 1 and 2): 1 =
  // the split tail's launch 1 alone, 2 = its launch 2 alone, 3 = launch 2 without programmatic
  // dependent launch; 0 = both launches (default).
  int tail_probe = 0;
  // Session 57 (helper 52): 1 = the 2-CTA multicast twin (cluster = 3 or its auto) takes the split
  // tail where tail_split (its auto's rule in launch.cuh launch_split_tail, or 1) would run it
  // after the plain kernel: launch 1 is the twin's cluster launch over the full rounds (num_tiles /
  // grid), launch 2 the plain tail kernel. With it the twin's auto no longer yields to tail_split =
  // 1. Why: at D 128 non-causal 4k / 16k (2048 tiles of 128 rows on 132 CTAs, 15.52 rounds) the
  // twin's last round runs 68 of 132 CTAs (64 SMs idle for 1 of 16 rounds: ~3 % of the SM time),
  // and session 56 call 4 measured the twin without the tail 1.2-3 % above slot 37 with it
  // (bench/notes/fwd-mc-tail-s56.md predicted +1..+2.5 % over the twin). Measured (H200, same
  // process, session 57 call 2): D 128 nc 16k +1.1 %, nc 4k -0.3 / -0.4 %; the tail tiles' bits
  // differ from the twin's (their keys summed in another order; the mctail tests check the oracle).
  // 0 = off (the twin runs every round itself). -1 = auto (session 71): D 128 from
  // kMulticastTail128MinSeqlenK keys (below), where launch_split_tail's own rule (a last round of
  // at most 80 % of the grid, 4096 keys a tile or more) would split; never at D 256 (session 59:
  // +0.2 % at 16k).
  int multicast_tail = -1;
  // Session 40: the D = 128 default past Sk 2048 (slot 31) with the softmax's row sums as 8 more
  // columns of P V (mainloop.cuh kVarTcSum; launch slot kTcSumSlot): l then sums the 16-bit P
  // that P V multiplies (lse moves by at most log(1 + 2^-8) in bf16 against fp32 sums of the
  // unrounded P). -1 = auto (on wherever slot 31 runs; the ordered softmax's auto then starts at
  // Sk 2048 instead of past it), 0 = off (slot 31 itself). Session 41: also D 256's ordered
  // 64-key kernels (kTcSum256Slot past Sk 4096; kTcSum256DietSlot up to it, from Sk 2048 by
  // auto); 1 = on wherever a kernel has the twin (D 256's diet at any Sk too).
  int tc_row_sum = -1;
  // Session 46 (lpt_schedule.hpp): causal launches on the static schedule read a host-built
  // table of longest-first, least-loaded tile assignments instead of the zig-zag rounds. -1 =
  // auto (launch.cuh lpt_mode, session 47: 2 at D 64 and 1 at D 256 from 3072 causal query
  // rows on the static schedule; session 48: 3 on the other causal launches), 0 = off, 1 =
  // causal launches the static schedule runs (<= 32 m blocks), 2 = also the longer causal
  // launches, on the static schedule with the table instead of the dynamic scheduler
  // (Tuning::scheduler = 1 keeps the dynamic one, 0 one CTA per tile there), 3 = as 2 where the
  // model predicts a gain of kLptMinModelGain (the long causal launches: kLptMinModelGainLong)
  // or more over the schedule the launch would run without (lpt_schedule.hpp lpt_predicted_gain:
  // the zig-zag rounds, or the dynamic scheduler on the long causal launches). Not with varlen,
  // score mods, masks, the cluster or the split tail (non-causal).
  int lpt_schedule = -1;
  // The table's sections (lpt_schedule.hpp): heads whose K and V fit in this many MB (0: 32).
  int lpt_section_mb = 0;
  // Session 61 (lpt_schedule.hpp lpt_partial_weight): the cost of a turn with one warpgroup's rows
  // (a head's last m block when S_q is not a multiple of the tile's rows) in the table's model, in
  // percent of a full turn. -1 = auto (67 on the 192-row D 64 tiles, 100 elsewhere: launch.cuh
  // lpt_partial_pct_auto), 1-100.
  int lpt_partial_pct = -1;
  // Session 70 (lpt_schedule.hpp build_round_table, launch.cuh round_table_wanted): non-causal
  // launches on the rotated rounds (D 64's 3-warpgroup kernel with a partial last m block) read a
  // host-built table that keeps each round's tiles but gives the CTAs of the partial last round
  // more of the cheap partial tiles. -1 = auto (where the model predicts kRoundTableMinGain or
  // more), 0 = off, 1 = on wherever the rounds rotate (D 64 only: the split tail, D 128 / 256,
  // never meets it).
  int round_table = -1;
  // Session 48 (mainloop.cuh kVarSkipTurn): D 256 causal launches of the ordered diet kernels
  // (slots 29 / 39) run their twins, in which a consumer warpgroup skips its tile's first K/V
  // block when the causal mask hides all of it (warpgroup 0 of every full tile at S_q = S_k).
  // Same bits but for the sign of an exact-zero output. -1 = auto (on), 0 = off.
  int skip_masked_turn = -1;
  // Session 58 helper, landed in session 59 (mainloop.cuh kVarEdgeNc): D 64 non-causal launches
  // of slot 14 (the auto diet kernel, 2 or 3 consumer warpgroups; not its TMA-epilogue build, slot
  // 15) run its twin, whose tile-boundary diet runs ATTNKIT_FLASH3_FWD_EDGE_PARTS_NC (15: all four
  // parts) while slot 14, which then serves causal launches only, keeps
  // ATTNKIT_FLASH3_FWD_EDGE_PARTS (1). Why: in the shared kernel all parts read D 64 nc 1k
  // +2.1..+2.4 %, 2k +0.8..+1.1 % but causal 1k -1.7 %, 2k -2.0 % (session 58 call 1). As a twin
  // (session 59 call 1, H200, one process, 1-second blocks, rounds 1 / 2, on against off): nc 1k
  // +2.0 / +2.0 %, 2k +1.1 / +1.3 %, 4k +1.0 / +1.1 %, 16k +0.3 / +0.3 %; causal -0.2..+0.4 %
  // (slot 14 either way); 0 bits differing (bench/results/2026-12-01-h200-flash3-s59.md). Same
  // bits. -1 = auto (on), 0 = off (slot 14 runs both modes), 1 = on.
  int edge_nc_twin = -1;
  // Session 65, A/B only: bytes of dynamic shared memory added to every forward launch of the
  // persistent kernels (0 = none), unused by the kernel: whether a kernel's time depends on its
  // shared-memory size alone (the D 256 staged layout's 16 KB, slot 79: -2..-3.6 % at nc 4k with
  // STG stores in call 2 of bench/notes/session65.md). A size past the device's opt-in limit fails
  // at the launch's attribute call.
  int smem_pad = 0;
  // Tests only: at most this many persistent CTAs (0 = one per SM; never the cluster's grid), so
  // that small shapes have several rounds and a partial last one.
  int max_grid = 0;
};
Tuning& tuning();

/// The launch slot (launch.cuh, kernels[]) of this process's last forward launch, -1 before
/// any: lets the tests check that a Tuning really selected the kernel they mean to cover.
/// 0-15 the kernels[] slots, 16 + s the ordered build of slot s, kScoreModSlot the softcap /
/// ALiBi / window kernel (launch.cuh launch_forward_score_mod), kVarlenSlot its varlen build.
inline constexpr int kScoreModSlot = 32;
inline constexpr int kVarlenSlot = 33;
inline constexpr int kMaskSlot = 34;      // its build with a mask (session 24)
inline constexpr int kNarrowSlot = 35;    // D 96 / 192 on the 128 / 256 build (session 25)
inline constexpr int kDropoutSlot = 36;   // the mask build with dropout (session 39)
inline constexpr int kTcSumSlot = 37;     // slot 31's kernel with the row sums in P V (session 40)
inline constexpr int kTcSum256Slot = 38;  // D 256: slot 27's with them (session 41)
inline constexpr int kTcSum256DietSlot = 39;  // D 256: slot 29's with them (session 41)
// Session 46 (Tuning::cluster = 3, auto at D 128 since session 47): the 2-CTA multicast twin of the
// slot this number minus kMulticastSlotBase runs (15, 31, 37, 29, 39); kMulticastSlotBase + 40 is
// the largest.
inline constexpr int kMulticastSlotBase = 40;
/// Tuning::cluster = 3 or its auto (-1): the default non-causal kernel's 2-CTA multicast twin
/// (launch.cuh multicast_wanted, launch_forward). Session 47 (H200, 1-second blocks under the power
/// cap, 3 rounds, call 2): D 128 non-causal +0.7 / +1.7 / +1.6 % at 4k, +0.7 / +1.2 / +1.1 % at 16k
/// (its clock 45-75 MHz above the plain kernel's at the same power, 2.0-3.5 % less work per cycle);
/// D 256 -0.3 % at 4k, +0.2 % at 16k: off (on from 2048 keys since session 59, from 1024 since
/// session 60: below).
/// (Same-process 30-rep loops, below the cap, read D 128 -1.0 % at 4k, -2.3 % at 16k, where the
/// twin gives up the split tail: the energy is the win.) The auto yields to a forced split tail
/// (Tuning::tail_split = 1) and to Tuning::max_grid (the cluster launch keeps its own grid).
/// Against session 46's defaults (call 5, blocks): +2.0 / +1.4 % at 4k / 16k. Session 51 (calls A /
/// B, blocks, rounds 1-2, the twin against the default and a second copy of it): non-causal 1024
/// -0.3 / -0.4 %, 1536 +1.4 % (the copy +0.5 %), 2048 +2.2 / +2.5 %, 2560 +2.5 %, 3072 +2.4 %: from
/// 2048 keys (4096 before). (Session 57: with Tuning::multicast_tail = 1 it no longer yields to
/// tail_split = 1; the twin takes the tail.)
inline constexpr int64_t kMulticast128MinSeqlenK = 2048;
/// Tuning::multicast_tail's auto (session 71): the D 128 multicast twin takes the split tail from
/// this many keys. Measured (H200, one process, 1-second blocks under the power cap,
/// BENCHMARKS.md's B x H, against multicast_tail = 0; rounds 1 / 2; bench/results/
/// 2026-12-02-h200-flash3-s71-call2-mctail.json): non-causal 8k +1.2 / +1.1 %, 12k +0.6 / +0.4,
/// 16k +1.5 / +1.5 (the twin forced with the tail: 4k -0.4 / -0.5, 6k +0.2 / -1.0 in a row whose
/// identical copies moved +-1 %); the gain is per cycle (the last round's idle SMs), not clock.
/// Session 57: 16k +1.1, 4k -0.3.
inline constexpr int64_t kMulticastTail128MinSeqlenK = 8192;
/// D 256 (session 59, H200, one process, 1-second blocks under the power cap, 3 rounds; rounds 1 /
/// 2 against the default, bench/results/2026-12-01-h200-flash3-s59-call3-ab.json): the twin of
/// slot 39 (79) non-causal 2k +0.5 / +0.9 %, 4k +1.2 / +0.8 %, 16k +0.2 / +0.3 % (there against the
/// split tail, which the twin gives up), at 15-45 MHz less clock; slot 29's twin (69) at 1k -1.8 /
/// -1.0 % (the twins lack kD256Edge's boundary diet, a CL 1 kernel's only). The tile trace (same
/// call, cycles): the twin's turn 2515-2532 vs 2552-2595, WG 0's per-turn K wait 67 vs 630 (slot
/// 39 waits for K from 2k keys, slot 29 and the twin do not), busy max -1.5..-3.1 %. Sessions 47 /
/// 52 (older kernels) read -0.3..+0.6 %: off until now. Session 60: from 1024 keys (2048 before),
/// where slot 29 runs: its twin 69 with the boundary diet (mainloop.cuh
/// ATTNKIT_FLASH3_FWD_D256_EDGE_CL2) against slot 29, rounds 1-4: 1024 +0.5 / +0.6 / +1.1 / +1.1
/// %, 1536 +1.5 / +1.0 / +1.2 / +1.5 % (bench/results/2026-12-01-h200-flash3-s60.md).
inline constexpr int64_t kMulticast256MinSeqlenK = 1024;
/// D 128's ordered kernels (the auto at every Sk with the row sums on, since session 52) run with
/// ping-pong below this many keys (launch.cuh pp_auto; measured at 1024 / 1536, off from 2048:
/// -0.1..-0.7 %).
inline constexpr int64_t kOrdPingPong128MaxSeqlenK = 2048;
/// D 256 non-causal: the ordered diet kernel with the row sums in P V (kTcSum256DietSlot) runs
/// with ping-pong from this many keys (launch.cuh pp_auto; session 53, H200, 1-second blocks,
/// pingpong:1 against the default and a second copy of it, rounds 0-2: 2048 +1.2..+1.9 %, 3072
/// +0.7..+1.2 %, 4096 +1.4..+1.5 %, 8192 +1.3..+1.7 %, 16384 +1.5..+1.7 %; at 1536, where slot 29
/// runs without the sums, -1.1..-1.3 %; session 46's -2.8 % at 1024 was slot 29 too).
inline constexpr int64_t kPingPong256MinSeqlenK = 2048;
// Session 48 (Tuning::skip_masked_turn): the D 256 causal twin of slot this number minus
// kSkipTurnSlotBase (16 + 13 = 29, 39) that skips wholly masked first turns; kSkipTurnSlotBase + 39
// is the largest slot.
inline constexpr int kSkipTurnSlotBase = 80;
// Tuning::edge_nc_twin (session 58 helper): D 64 slot 14's non-causal twin (mainloop.cuh
// kVarEdgeNc) is kEdgeNcSlotBase + 14 = 134, the largest slot id (launch.cuh sizes its per-slot
// arrays by it).
inline constexpr int kEdgeNcSlotBase = 120;
int last_forward_slot();
void set_last_forward_slot(int slot);
/// Tiles of the last forward launch that ran in the split tail (Tuning::tail_split; 0: none).
int last_forward_tail_tiles();
void set_last_forward_tail_tiles(int tiles);
/// Rounds of the balanced table the last forward launch read (Tuning::lpt_schedule; 0: none).
int last_forward_lpt_rounds();
void set_last_forward_lpt_rounds(int rounds);
/// Rounds of Tuning::round_table's table the last forward launch read (0: none; session 70).
int last_forward_round_table();
void set_last_forward_round_table(int rounds);
/// The model's predicted gain of the table over the schedule the last forward launch would run
/// without it (the zig-zag rounds; past 32 causal m blocks the dynamic scheduler;
/// lpt_schedule.hpp lpt_predicted_gain). NaN where no table was considered, and for a new shape
/// once the launch's decision cache is full (launch.cuh lpt_table_device).
double last_forward_lpt_gain();
void set_last_forward_lpt_gain(double gain);
/// Whether the last forward launch ran the dynamic scheduler (tile_scheduler.cuh; FwdArgs::
/// tile_counter set), so that tests can tell it from the static schedules it replaces or falls
/// back to (branch wip/f3lptcache49).
bool last_forward_dynamic();
void set_last_forward_dynamic(bool dynamic);
/// Whether the last forward launch ran with the consumer warpgroups' ping-pong (FwdArgs::pingpong,
/// Tuning::pingpong or its auto), so that tests can check the auto (session 53).
bool last_forward_pingpong();
void set_last_forward_pingpong(bool pingpong);
/// Whether the last forward launch encoded O's map for the D 256 TMA-store epilogue
/// (FwdArgs::o_tma; only in builds with ATTNKIT_FLASH3_FWD_D256_TMA_EPI >= 1, false otherwise):
/// its kernel (at 1 a causal skip-turn one, at 2 any plain 64-key one, at 3 a causal skip-turn one
/// or a plain 64-key one without the row sums in P V) then wrote O with TMA stores, so that tests
/// can tell that path from the STG fallback (session 63 helper).
bool last_forward_o_tma();
void set_last_forward_o_tma(bool o_tma);

/// Runs the forward for head dim D, bf16 (BF16 = true) or f16. Params must already satisfy
/// backend.cpp's capability table and extra_reasons.
template <int D, bool BF16>
void run_forward(const Params& p);

extern template void run_forward<64, true>(const Params&);
extern template void run_forward<64, false>(const Params&);
extern template void run_forward<128, true>(const Params&);
extern template void run_forward<128, false>(const Params&);
extern template void run_forward<256, true>(const Params&);
extern template void run_forward<256, false>(const Params&);

}  // namespace attnkit::flash3
