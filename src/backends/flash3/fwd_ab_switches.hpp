// Forward A/B build switches (session 33; each off by default, so a default build is
// SASS-identical to the one measured before; bench/gpu/flash3_defs_ab.sh builds a shim with one on
// and times it against the default build in the same process). Sources: the static SASS analysis
// of the tile boundary ("turn 0") in bench/notes/fwd-boundary-s33.md: it costs ~1010 instructions
// / ~2440 stall cycles per consumer warp at D 64 against ~473 / ~1046 for a loop turn, ~23 % of a
// tile at S 1k causal, and the other warpgroup cannot hide it (strict ping-pong).
// EPI_DIET and MASK_REL keep the old code beside the new (store_output's 4-byte path and
// store_output_rows, tile_of_round / num_n_blocks and HoistedSchedule, mask_tile's two loops)
// only for the A/B: a switch that wins replaces the old path rather than becoming a third one.
#pragma once

// ATTNKIT_FLASH3_FWD_FAST_FINALIZE=1 (softmax.cuh OnlineSoftmax::finalize): 1 / l by rcp.approx
// and the lse's log by lg2.approx instead of the IEEE reciprocal (its slow-path CALL and four
// BSSY / BSYNC per tile) and __logf. A non-empty row's l is >= 1 (the reference max's own p is
// 2^0; the lazy reference only lags the true max), so ftz and range never apply; 1 / l moves by
// at most 1 ulp before the bf16 rounding. Static estimate: -172 stall cycles per tile at D 64,
// -190 at D 128.
#ifndef ATTNKIT_FLASH3_FWD_FAST_FINALIZE
#define ATTNKIT_FLASH3_FWD_FAST_FINALIZE 0
#endif

// ATTNKIT_FLASH3_FWD_EPI_DIET=1 (D 64 only; the D 128 build moved descriptor constants out of
// uniform registers with it):
// - mainloop.cuh Consumer: the pending tile's O / lse row pointers and store flags are computed
//   once when the tile's last P V is queued, and its 4-byte-store epilogue is branch-free
//   (epilogue.cuh store_output_rows);
// - kernel.cuh: the static schedule without branches from values hoisted out of the tile loop
//   (tile_scheduler.cuh HoistedSchedule).
// Static walk of the production build (bench/notes/fwd-boundary-s33-check.md, D 64 slot 14): the
// boundary -38 instructions / -163 stall cycles per consumer warp (~-188 with the lse select now
// in mainloop.cuh), -67 / -355 with FAST_FINALIZE too; no instruction added to the loop turn.
#ifndef ATTNKIT_FLASH3_FWD_EPI_DIET
#define ATTNKIT_FLASH3_FWD_EPI_DIET 0
#endif

// ATTNKIT_FLASH3_FWD_MASK_REL=1 (softmax.cuh mask_tile, every D): a row's limit taken relative to
// the lane's first column once (rel = limit - col0), then compared with each column's immediate
// offset 8 j + e, instead of adding that offset to col0 per column (helper-11's item 6: the D 64
// causal diagonal block costs 193 instructions / 384 stall cycles against 21 / 88 for a loop
// turn's mask test, 30 of them VIADD; estimate 50-100 cycles per causal tile).
#ifndef ATTNKIT_FLASH3_FWD_MASK_REL
#define ATTNKIT_FLASH3_FWD_MASK_REL 0
#endif

namespace attnkit::flash3 {
inline constexpr bool kFwdFastFinalize = ATTNKIT_FLASH3_FWD_FAST_FINALIZE != 0;
inline constexpr bool kFwdEpiDiet = ATTNKIT_FLASH3_FWD_EPI_DIET != 0;
inline constexpr bool kFwdMaskRel = ATTNKIT_FLASH3_FWD_MASK_REL != 0;
}  // namespace attnkit::flash3
