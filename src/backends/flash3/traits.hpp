// Tile-size traits of the flash3 forward kernel, shared by the kernel and the host launcher.
//
// One CTA = 1 + WGs warpgroups: WG0 is the producer (one elected thread issues every TMA load),
// WG1 .. WGs are consumers, each owning 64 query rows of the kBlockM = 64 * WGs-row tile.
// WGs = 2 (384 threads) everywhere; WGs = 3 (512 threads, 192 rows, FA3's choice for D = 64)
// gives the softmax-bound D = 64 a third warpgroup whose GEMMs can fill the tensor cores while
// two others are in their softmax.
// Shared memory (all 16-bit tiles stored as kD/64 column chunks of [rows][64] elements, 128-byte
// rows with the 128B swizzle that TMA writes and wgmma reads):
//   Q  [kQStages][kBlockM x kD]     one buffer per tile; two when they fit (D <= 128), so the
//                                   producer loads tile t+1's Q while tile t still reads its own
//   K  [kStagesK][kBlockN x kD]     ring, "full" barriers filled by TMA, "empty" by consumers
//   V  [kStagesV][kBlockN x kD]     same, separate barriers so S = QK^T can start before V lands;
//                                   VS = 3 (Tuning::v_stages, A/B) gives the V loads one more
//                                   iteration of lead (a V stage is freed only after both
//                                   warpgroups' P V on it, a K stage already after their Q K^T)
// kBlockN per head dim keeps the consumers' registers under the 240 setmaxnreg budget:
//   O accumulator 64 x kD fp32 = kD/2 regs/thread, S tile 64 x kBlockN fp32 = kBlockN/2,
//   P (16-bit, packed after the PV wait so one copy is live) = kBlockN/4.
//   D=64: 32+64+32 ; D=128: 64+64+32 (kBlockN 176: 64+88+44) ; D=256 (kBlockN 64): 128+32+16
//   (kBlockN 80: 128+40+20).
// kBlockN = 0 picks the default per D; 176 (D = 128, non-causal) is FA3's choice: fewer
// softmax/barrier rounds per FLOP. Causal keeps 128 (less work wasted on diagonal tiles).
#pragma once

#include <cstdint>

// ATTNKIT_FLASH3_FWD_D256_TMA_EPI (session 63 helper; default 1 in session 64, 3 since 66): the D
// 256 64-key kernels with 2 V stages (consume_tile_simple; not the 128-key fused / ring ones, not
// VS 3) write O through shared memory and TMA stores instead of STG (epilogue.cuh
// store_output_tma_warp): a 32 / 16 KB staging region (FwdTraits::kEpiStageBytes: two / one
// [16 rows][64 columns] 128B-swizzled 2 KB chunks per consumer warp, reused for O's 4 column
// chunks; two where they fit, i.e. without the row sums in P V; the kernel grows to 226 KB),
// FwdArgs::o_tma set by the launch where O's rank-3 map encodes (launch.cuh o_map_d256; else
// STG), only the plain kernels (mainloop.cuh kD256TmaEpi: no score mod / mask / dropout / varlen
// / narrow / split tail).
//   0: STG everywhere (main's code until session 64);
//   1: the causal skip-turn kernels only (mainloop.cuh kVarSkipTurn: slots 109 / 119, every D 256
//      causal launch of the default knobs); the others keep STG and their shared memory;
//   2: every plain kernel (29 / 39 / 109 / 119, multicast twins 69 / 79): session 64's A/B build;
//   3: 1 and the plain kernels without the row sums in P V (29, its multicast twin 69; session
//      66): the row-sum kernels 39 / 79 and the non-plain ones (score mod, mask, dropout, varlen,
//      narrow, split tail) keep value 1's code, layout and size.
// Why (session 63): a clock64 tile trace of slot 69 / 79 against a build whose O stores never
// run: the epilogue 3.7k -> 1.1k cycles a tile at nc 1k, the tile period -5.5 %. Measured
// (session 64 call 1, H200, flash3_knob_ab.py, 1-second blocks, same process, outputs bitwise
// equal; rounds 1 / 2 of 2 against the default build): slot 119 (causal) +3.8 / +3.3 % at 1k,
// +2.3 / +2.2 % at 2k, +1.5 / +1.7 % at 4k, +0.5 / -0.9 % at 16k; slot 69 (nc 1k) +1.1 / +1.2 %;
// slot 79 (nc 2k-16k) -1.2..-2.3 % at every length, even at 16k where one epilogue comes every
// 256 turns (a steady-state loss, not the epilogue's: the traces' mainloops did not show it).
// The epilogue itself shrank only 0.6k cycles a tile in the traces (3.7k -> 3.1k at nc 1k / 4k),
// not the 2.6k the probe removed: most of that time is not the store instructions' issue.
// Session 66 (value 3): slot 69 (nc 1k) gained in three same-process A/Bs (+1.1 / +1.2, +0.9 /
// +0.9, +1.4 / +1.6 %), slot 79 lost in each (-2..-3.6 % at 4k / 16k) with the same steady-loop
// code, shared-memory size, data offsets, barrier offsets and code placement (session 65-66 splits,
// bench/notes/fwd-d256-slot79-staged-s65.md); value 3 keeps the gain without the loss. Measured
// (session 66 call 2, the same method; value 1's throughput against value 3's, rounds 1 / 2 of
// 3): nc 512 (slot 29, no multicast) -2.9 / -2.7 %, nc 1k (69) -1.2 / -1.5 %, nc 2k / 4k (79,
// SASS-identical) and causal 512-4k (119) within -0.5..+0.7 %; bitwise equal.
#ifndef ATTNKIT_FLASH3_FWD_D256_TMA_EPI
#define ATTNKIT_FLASH3_FWD_D256_TMA_EPI 3
#endif
static_assert(ATTNKIT_FLASH3_FWD_D256_TMA_EPI >= 0 && ATTNKIT_FLASH3_FWD_D256_TMA_EPI <= 3,
              "ATTNKIT_FLASH3_FWD_D256_TMA_EPI: 0 (STG), 1 (D 256 causal kernels by TMA stores), "
              "2 (every plain D 256 64-key kernel by TMA stores), 3 (1 and the kernels without "
              "the row sums in P V)");

namespace attnkit::flash3 {

// CL = CTAs per cluster: 2 pairs the CTAs of tiles (m, h, b) and (m + 1, h, b), which read the
// same K/V blocks: each CTA loads half of every K/V block's 64-column chunks and multicasts them
// to both (cluster.cuh), halving the L2 -> SM traffic of K/V (FA3 does this for D >= 128
// non-causal). Needs >= 2 chunks (D >= 128).
// RS = K/V ring slots (0 = stage buffers): D = 256 with 128-key tiles only, RS = 10 slots of
// 16 KB through which K and V stream in consumption order (Tuning::kv_ring_256; see below).
// TC: P V with the softmax's row sums as 8 more columns (session 40; the kernels with
// mainloop.cuh's kVarTcSum bit): the K/V region laid out for it (kTcSum below).
// EPI: O's staging region for the D 256 TMA-store epilogue (kEpiStageBytes below); every kernel
// at ATTNKIT_FLASH3_FWD_D256_TMA_EPI = 2, the plain ones without the row sums (TC) and the causal
// skip-turn ones at 3, only the latter at 1 (mainloop.cuh FwdTraitsOf sets it from the kernel's
// variant bits; the default here is the launches' base traits, those of the plain kernels without
// row sums; a launch of another kernel takes its size from FwdTraitsOf).
template <int D, int BN = 0, int WGs = 2, int VS = 2, int CL = 1, int RS = 0, bool TC = false,
          bool EPI =
              ATTNKIT_FLASH3_FWD_D256_TMA_EPI == 2 || (ATTNKIT_FLASH3_FWD_D256_TMA_EPI == 3 && !TC)>
struct FwdTraits {
  static_assert(D == 64 || D == 128 || D == 256, "flash3 forward: D in {64, 128, 256}");
  static constexpr int kD = D;
  static_assert(WGs == 2 || WGs == 3, "flash3 forward: 2 or 3 consumer warpgroups");
  static constexpr int kBlockM = 64 * WGs;  // consumer warpgroups x 64 rows
  static constexpr int kBlockN = BN != 0 ? BN : (D == 256 ? 64 : 128);
  // D = 256 with 128-key tiles (Tuning::kv_tile_256, cuDNN's 64x128x256): Q 64 KB + one K and
  // one V stage of 64 KB each = 194 KB; a second stage of either does not fit in 227 KB.
  // Its consumer (mainloop.cuh, consume_tile_fused) packs P into the low half of S's registers.
  static constexpr bool kFused = D == 256 && kBlockN == 128;
  // kRing (RS = 10, Tuning::kv_ring_256): the same 128-key tiles, but K and V go through one ring
  // of RS 16 KB chunk slots, each with its own full/empty barrier (bench/notes/flash3-fwd-s3.md,
  // round 3): a K tile = 4 chunks [64 keys x 128 columns] (keys 64-127 first: the Q K^T half
  // issued first), a V tile = 4 chunks [32 keys x 256 columns]; the stream K(n-1), V(n-1),
  // K(n-2), ... is the consumers' order, so the producer refills a slot as soon as both
  // warpgroups are done with it, and 2 slots (32 KB) of the next tile load ahead.
  // Q 64 KB + 10 x 16 KB + barriers = 226 KB. The barrier arrays: full_k/empty_k[RS], no V ones.
  static constexpr bool kRing = RS != 0;
  static_assert(RS == 0 || (kFused && RS == 10 && CL == 1),
                "flash3 forward: the K/V chunk ring is D = 256, 128-key tiles, 10 slots");
  static constexpr int kRingSlots = RS;
  static constexpr int kRingChunkBytes = 16 * 1024;
  static constexpr int kKBoxRows = kRing ? 64 : kBlockN;  // TMA box rows of the K / V maps
  static constexpr int kVBoxRows = kRing ? 32 : kBlockN;
  static constexpr int kStagesK = kRing ? RS : kFused ? 1 : 2;
  static_assert(VS == 2 || VS == 3, "flash3 forward: 2 or 3 V stages");
  static constexpr int kStagesV = kRing ? 0 : kFused ? 1 : VS;
  // kTcSum (TC; mainloop.cuh kVarTcSum): P V is issued as m64n136k16, its B operand = V's two
  // 64-column chunks (MN-major, chunk c at the descriptor's base + c x LBO) and a third chunk of
  // 16-bit ones, so the 8 extra accumulator columns are the row sums of exactly the P that P V
  // multiplies, and the 64 FADDs per thread and turn go (session 40). The ones chunk must sit at
  // base + 2 LBO for both V stages, and the LBO is per descriptor, so each stage gets its own
  // (C = a chunk, 128 keys x 128 B = 16 KB):
  //   K0 [0, 2C) | V1.0 [2C] | K1 [3C, 5C) | V1.1 [5C] | V0.0 [6C] | V0.1 [7C] | ones [8C]
  // V0's chunk stride is C, V1's 3C (both reach 8C), the K stages are 3C apart: 144 KB, 16 KB
  // more than the plain region (216 KB in all with both Q buffers).
  // v_off / v_lbo: V stage s's offset from SmemLayout::v (= k here) and its chunk stride.
  // D = 256 (64-key tiles, C = 8 KB; session 41): P V as two wgmmas per k-step, columns 0-127
  // (m64n128k16) and 128-255 + the sums (m64n136k16). A chunk of ones per V stage (16 KB for
  // both fits at D 256), so a stage is 5 contiguous chunks and every descriptor is the plain
  // kernel's form (base + stage x 5C, LBO C; the second half's = the first's + 2C):
  //   K0 [0, 4C) | K1 [4C, 8C) | V0.0-3 [8C, 12C) | ones [12C] | V1.0-3 [13C, 17C) | ones [17C]
  // (144 KB: 16 KB more than the plain region; 210 KB in all). A first version shared one ones
  // chunk between the stages through per-stage LBOs, as at D 128: its descriptor selects cost
  // ~22 uniform instructions a turn (SASS turn 604 -> 599 against 604 -> 532 for this one).
  static constexpr bool kTcSum = TC;
  // (CL 2, session 46: the multicast producer writes the same offsets in both CTAs, and
  // each CTA fills its own ones chunks.)
  static_assert(!TC || (((D == 128 && kBlockN == 128) || (D == 256 && kBlockN == 64)) && VS == 2 &&
                        RS == 0),
                "flash3 forward: the row sums in P V are D = 128 with 128-key tiles or D = 256 "
                "with 64-key tiles, 2 V stages");
  static constexpr int kTcChunk = kBlockN * 128;
  // Bytes of the K/V region (stage buffers, the ring, or the kTcSum layout).
  static constexpr int kKVRegionBytes = kTcSum  ? (D == 128 ? 9 : 18) * kTcChunk
                                        : kRing ? RS * kRingChunkBytes
                                                : (kStagesK + kStagesV) * kBlockN * D * 2;
  static constexpr int kKStageBytes = kTcSum && D == 128 ? 3 * kTcChunk : kBlockN * D * 2;
  static constexpr int kOnesOff = kTcSum ? (D == 128 ? 8 : 12) * kTcChunk : 0;
  // The ones chunks (kernel.cuh fills them): D = 128 one, D = 256 one after each V stage.
  static constexpr int kTcOnesChunks = kTcSum ? (D == 128 ? 1 : 2) : 0;
  static constexpr int kTcVStageBytes = 5 * kTcChunk;  // D = 256: 4 chunks of V + ones
  // V stage s's offset from SmemLayout::v (= k with kTcSum) and its chunk stride; the producer
  // puts V's chunk c of stage s at v_off(s) + c x v_lbo(s).
  __host__ __device__ static constexpr int v_off(int s) {
    return !kTcSum    ? s * kBlockN * D * 2
           : D == 128 ? (6 - 4 * s) * kTcChunk
                      : 8 * kTcChunk + s * kTcVStageBytes;
  }
  __host__ __device__ static constexpr int v_lbo(int s) {
    return kTcSum && D == 128 ? (1 + 2 * s) * kTcChunk : kTcChunk;
  }
  static_assert(CL == 1 || (CL == 2 && D >= 128), "flash3 forward: cluster of 2 needs D >= 128");
  static constexpr int kCluster = CL;
  static constexpr int kConsumerWGs = WGs;
  static constexpr int kThreads = 128 * (1 + kConsumerWGs);
  static constexpr int kChunks = D / 64;  // 64-element (128-byte) column chunks
  static constexpr int kChunkRowBytes = 128;
  static constexpr int kQBytes = kBlockM * D * 2;
  static constexpr int kKVBytes = kBlockN * D * 2;  // one K (or V) stage
  static constexpr int kQChunkBytes = kBlockM * kChunkRowBytes;
  static constexpr int kKVChunkBytes = kBlockN * kChunkRowBytes;
  // setmaxnreg budgets: the CTA launches with 168 (2 WGs, 384 threads) or 128 (3 WGs, 512
  // threads) registers per thread, and the warpgroups only redistribute that allocation
  // (setmaxnreg.inc waits until the registers exist: the sum must fit, or it hangs):
  //   2 WGs: 32*128 + 232*256 = 63488 (D = 256: 24*128 + 240*256 = 64512) <= 168*384;
  //   3 WGs: 32*128 + 160*384 = 65536 = 128*512.
  // The producer carries the scheduler state (tile, next tile, ring and Q counters): at 24 it
  // spills (a few STL/LDL per tile in one thread, harmless); at 32 nothing. D = 128 consumers
  // fit 232 without spill; D = 256 consumers (O alone is 128 registers) spilled 12 B at 232
  // and run 5 measured D = 256 6-9 % below v4, so D = 256 keeps v4's 24/240 (consumer clean,
  // producer spills 36 B). 160 holds D = 64's O 32 + S 64 + P 32 (one 4 B spill per
  // iteration, L1-resident). The A/B-only wide tiles spill in the consumers (D = 128 176 keys
  // 28 B, D = 256 80 keys 76 B).
  static constexpr int kProducerRegs = WGs == 2 && D == 256 ? 24 : 32;
  static constexpr int kConsumerRegs = WGs == 3 ? 160 : D == 256 ? 240 : 232;
  static_assert(kProducerRegs * 128 + kConsumerRegs * 128 * WGs <=
                    (WGs == 2 ? 168 : 128) * kThreads,
                "setmaxnreg budgets exceed the launch allocation");
  // Everything 1024-aligned (128B-swizzle atoms), plus barriers, plus 1 KB to align the base.
  // kZeroBytes: a zeroed 16-key V block [16][kD] (MN-major chunks of 16 x 128 B) that the
  // overlapped consumer's P V reads (with P = 0) in turns where it has no pending P V, so the
  // wgmma issue is not inside a data-dependent branch (ptxas serialises those: C7518).
  // D = 256 never overlaps tiles (Consumer::kCanOverlap), so it needs no zero block; that is
  // what lets its 3-V-stage variant fit (64 + 5 x 32 + 2 KB = 226 KB).
  // kTcSum: one more zero chunk, the 8 extra columns' B of the P = 0 wgmma (third chunk).
  static constexpr int kZeroBytes = D == 256 ? 0 : 16 * (kTcSum ? D + 64 : D) * 2;
  // ATTNKIT_FLASH3_FWD_D256_TMA_EPI: O's staging for the TMA-store epilogue of the D 256 64-key
  // kernels with 2 V stages, after the K/V region (and the zero block, none at D 256),
  // 1024-aligned: per consumer warp kEpiStageBufs chunks of [16 rows][64 columns] (2 KB, 128B
  // swizzle), through which its 4 column chunks of O go round robin. The plain layout (194 KB)
  // takes two a warp (32 KB: 226 KB), so that a chunk's stmatrix waits only for the store of the
  // chunk before the last (wait_group.read 1); the row sums' (kTcSum, 210 KB) one (16 KB: 226 KB),
  // each chunk waiting for the previous chunk's store to have read it. One Q buffer either way.
  static constexpr int kEpiStageBufs = kTcSum ? 1 : 2;
  static constexpr int kEpiStageWarpBytes = kEpiStageBufs * 16 * kChunkRowBytes;
  static constexpr int kEpiStageBytes =
      EPI && D == 256 && kBlockN == 64 && VS == 2 && !kRing && !kFused
          ? 4 * WGs * kEpiStageWarpBytes
          : 0;
  // The mbarriers and the dynamic scheduler's slot ring (mainloop.cuh SmemLayout).
  static constexpr int kBarrierRegionBytes = 1024;
  static constexpr int kFixedBytes =
      kKVRegionBytes + kZeroBytes + kEpiStageBytes + kBarrierRegionBytes + 1024;
  static constexpr int kQStages = 2 * kQBytes + kFixedBytes <= 227 * 1024 ? 2 : 1;
  static constexpr int kSmemBytes = kQStages * kQBytes + kFixedBytes;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");
  static_assert(kBlockN % 16 == 0 && kBlockN <= 256, "wgmma N");
  static_assert(kKVChunkBytes % 1024 == 0, "K/V chunks must stay 1024-aligned (swizzle atoms)");
  static_assert(kEpiStageBytes == 0 ||
                    (kQStages == 1 && (kQBytes + kKVRegionBytes + kZeroBytes) % 1024 == 0),
                "flash3: the D 256 O staging is 1024-aligned, with one Q buffer");
};

}  // namespace attnkit::flash3
