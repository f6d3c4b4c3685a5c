// A C entry point to the flash3 backend for bench/gpu/flash3_vs_peers.py (ctypes on torch
// tensors), so attnkit:flash3 and torch's SDPA peers run in one process. Builds Params by hand
// (no dispatcher): [B, S, H, D] views with element strides, d-stride 1.
#include <cstdint>
#include <cstdio>
#include <exception>

#include "backends/flash3/launch.hpp"
#include "core/params.hpp"
#include "dispatch/backend.hpp"

namespace attnkit {
Backend& backend_flash3();
}

extern "C" int flash3_forward(const void* q, const void* k, const void* v, void* out, float* lse,
                              const int64_t* q_st, const int64_t* k_st, const int64_t* v_st,
                              const int64_t* o_st, int64_t b, int64_t sq, int64_t sk, int64_t hq,
                              int64_t hkv, int64_t d, int bf16, int causal, double scale,
                              void* stream, char* err, int err_len) {
  using namespace attnkit;
  Params p;
  p.batch = b, p.seqlen_q = sq, p.seqlen_k = sk, p.heads_q = hq, p.heads_kv = hkv;
  p.group = hq / hkv, p.head_dim = d, p.head_dim_v = d;
  p.dtype = bf16 ? DType::bf16 : DType::f16;
  p.device = Device::cuda(0);
  p.q = q, p.k = k, p.v = v, p.out = out, p.lse = lse;
  p.q_st = {q_st[0], q_st[1], q_st[2], q_st[3]};
  p.k_st = {k_st[0], k_st[1], k_st[2], k_st[3]};
  p.v_st = {v_st[0], v_st[1], v_st[2], v_st[3]};
  p.out_st = {o_st[0], o_st[1], o_st[2], o_st[3]};
  p.lse_st.b = hq * sq, p.lse_st.h = sq, p.lse_st.s = 1;
  p.scale = static_cast<float>(scale);
  p.causal = causal == 0 ? Causal::none : causal == 1 ? Causal::top_left : Causal::bottom_right;
  p.stream = stream;
  try {
    backend_flash3().forward(p);
  } catch (const std::exception& e) {
    std::snprintf(err, err_len, "%s", e.what());
    return 1;
  }
  return 0;
}

/// A/B knobs for measurements (see flash3::Tuning): pingpong (-1 auto, 0, 1), persistent,
/// wide_n (0/1).
extern "C" void flash3_set_tuning(int pingpong, int persistent, int wide_n) {
  attnkit::flash3::tuning().pingpong = pingpong;
  attnkit::flash3::tuning().persistent = persistent != 0;
  attnkit::flash3::tuning().wide_n = wide_n != 0;
}

/// More A/B knobs (flash3::Tuning): q_bufs (1/2), scheduler (-1 auto, 0 static, 1 dynamic),
/// consumer_wgs for D = 64 (0 auto, 2, 3), overlap_tiles (0/1), ordered_softmax (-1 auto, 0, 1;
/// session 16: 0/1 before).
extern "C" void flash3_set_knobs(int q_bufs, int scheduler, int consumer_wgs, int overlap,
                                 int ordered) {
  attnkit::flash3::tuning().ordered_softmax = ordered;
  attnkit::flash3::tuning().overlap_tiles = overlap != 0;
  attnkit::flash3::tuning().q_bufs = q_bufs;
  attnkit::flash3::tuning().scheduler = scheduler;
  attnkit::flash3::tuning().consumer_wgs = consumer_wgs;
}

/// Session-3 A/B knobs (flash3::Tuning): early_rescale (0/1), v_stages (2/3), cluster (0/2),
/// legacy_desc (0/1).
extern "C" void flash3_set_knobs2(int early_rescale, int v_stages, int cluster, int legacy_desc) {
  attnkit::flash3::tuning().legacy_desc = legacy_desc != 0;
  attnkit::flash3::tuning().early_rescale = early_rescale != 0;
  attnkit::flash3::tuning().v_stages = v_stages;
  attnkit::flash3::tuning().cluster = cluster;
}

/// Round-2 A/B knob (flash3::Tuning): kv_tile_256 (0 = default 64-key tiles, 128).
extern "C" void flash3_set_knobs3(int kv_tile_256) {
  attnkit::flash3::tuning().kv_tile_256 = kv_tile_256;
}

/// Round-3 A/B knob (flash3::Tuning): kv_ring_256 (0 = off, 1 = D = 256 128-key tiles with the
/// K/V chunk ring).
extern "C" void flash3_set_knobs4(int kv_ring_256) {
  attnkit::flash3::tuning().kv_ring_256 = kv_ring_256;
}

/// Session-4 A/B knobs (flash3::Tuning): uniform_desc, lazy_rescale (0/1; -1 = the compiled
/// default, so a reset never overrides a default that a later commit turns on).
extern "C" void flash3_set_knobs5(int uniform_desc, int lazy_rescale) {
  const attnkit::flash3::Tuning d{};
  attnkit::flash3::tuning().uniform_desc = uniform_desc < 0 ? d.uniform_desc : uniform_desc != 0;
  attnkit::flash3::tuning().lazy_rescale = lazy_rescale < 0 ? d.lazy_rescale : lazy_rescale != 0;
  // (d's -1 is "auto": on at D = 256 only; 0 / 1 force off / on.)
}
// Session 5 (helper f3fwd9): Tuning::q_regs (0 / 1).
extern "C" void flash3_set_knobs_qreg(int q_regs) {
  attnkit::flash3::tuning().q_regs = q_regs != 0;
}
// Session 7 (helper f3fwd15): Tuning::tile_diet (-1 auto, the default / 0 / 1).
extern "C" void flash3_set_knobs_diet(int tile_diet) {
  attnkit::flash3::tuning().tile_diet = tile_diet;
}
// Session 7 (helper f3fwd17): Tuning::tma_epilogue (-1 = auto, the default / 0 = off / 1 = on).
extern "C" void flash3_set_knobs_tmaepi(int tma_epilogue) {
  attnkit::flash3::tuning().tma_epilogue = tma_epilogue;
}
// Session 13: Tuning::rotate_rounds (-1 = auto, the default / 0 = off / 1 = on).
extern "C" void flash3_set_knobs_rotate(int rotate_rounds) {
  attnkit::flash3::tuning().rotate_rounds = rotate_rounds;
}
// Session 14: Tuning::q_prefetch (-1 = auto / 0 = off / L = K/V blocks before the tile's end),
// Tuning::kv_prefetch (0 / 1).
extern "C" void flash3_set_knobs_prefetch(int q_prefetch, int kv_prefetch) {
  attnkit::flash3::tuning().q_prefetch = q_prefetch;
  attnkit::flash3::tuning().kv_prefetch = kv_prefetch;
}
// Session 14: Tuning::epi_wide (-1 = auto / 0 = 4-byte O stores / 1 = 8-byte where aligned).
extern "C" void flash3_set_knobs_epi(int epi_wide) {
  attnkit::flash3::tuning().epi_wide = epi_wide;
}
// Session 46: Tuning::lpt_schedule (-1 = auto, the default / 0 = off / 1 = the balanced table on
// static causal launches / 2 = also on the long causal ones instead of the dynamic scheduler)
// and Tuning::lpt_section_mb (0 = the default, 32).
extern "C" void flash3_set_knobs_lpt(int lpt_schedule, int lpt_section_mb) {
  attnkit::flash3::tuning().lpt_schedule = lpt_schedule;
  attnkit::flash3::tuning().lpt_section_mb = lpt_section_mb;
}
// Session 61: Tuning::lpt_partial_pct (-1 = auto / 1-100: a one-warpgroup turn's cost in the
// table's model, percent of a full one). (Session 61 call 4's second argument, Tuning::lpt_nc, the
// table on non-causal D 64, lost 1-6 % and was removed: commit 6b18408 has it.)
extern "C" void flash3_set_knobs_lpt_partial(int lpt_partial_pct) {
  attnkit::flash3::tuning().lpt_partial_pct = lpt_partial_pct;
}
// Session 70: Tuning::round_table (-1 = auto / 0 = off / 1 = on wherever the rounds rotate: the
// non-causal rotated rounds rebalanced round by round, lpt_schedule.hpp build_round_table), and
// the rounds of the table the last forward read (0: none).
extern "C" void flash3_set_knobs_round_table(int round_table) {
  attnkit::flash3::tuning().round_table = round_table;
}
extern "C" int flash3_last_round_table() {
  return attnkit::flash3::last_forward_round_table();
}
// Session 48: Tuning::skip_masked_turn (-1 = auto, the default: D 256 causal runs the twins that
// skip a wholly masked first turn / 0 = off).
extern "C" void flash3_set_knobs_skip(int skip_masked_turn) {
  attnkit::flash3::tuning().skip_masked_turn = skip_masked_turn;
}
// Session 19: Tuning::tail_split (-1 auto / 0 / 1), tail_min_blocks (-1 = the default) and
// max_grid (0 = one CTA per SM).
extern "C" void flash3_set_knobs_tail(int tail_split, int tail_min_blocks, int max_grid) {
  attnkit::flash3::tuning().tail_split = tail_split;
  attnkit::flash3::tuning().tail_min_blocks = tail_min_blocks;
  attnkit::flash3::tuning().max_grid = max_grid;
}
// Session 19: Tuning::tail_probe (measurement: 1 / 2 = launch 1 / 2 of the split tail alone,
// 3 = launch 2 without programmatic dependent launch).
extern "C" void flash3_set_knobs_tail_probe(int tail_probe) {
  attnkit::flash3::tuning().tail_probe = tail_probe;
}
// Session 40: Tuning::tc_row_sum (-1 = auto, the default / 0 = off: slot 31 without the row
// sums in P V).
extern "C" void flash3_set_knobs_tc(int tc_row_sum) {
  attnkit::flash3::tuning().tc_row_sum = tc_row_sum;
}
// Session 57 (helper 52): Tuning::multicast_tail (0 = off / 1 = the 2-CTA multicast twin takes the
// split tail where Tuning::tail_split's rule, or tail_split = 1, runs it / -1 = auto, the default
// since session 71: D 128 from kMulticastTail128MinSeqlenK keys).
extern "C" void flash3_set_knobs_mctail(int multicast_tail) {
  attnkit::flash3::tuning().multicast_tail = multicast_tail;
}
// Session 58 helper: Tuning::edge_nc_twin (-1 = auto, the default: D 64 non-causal launches of
// slot 14 run its twin with all parts of the tile-boundary diet, slot kEdgeNcSlotBase + 14 = 134 /
// 0 = off: slot 14 / 1 = on).
extern "C" void flash3_set_knobs_edge_nc(int edge_nc_twin) {
  attnkit::flash3::tuning().edge_nc_twin = edge_nc_twin;
}
// Session 65: Tuning::smem_pad (bytes of unused dynamic shared memory added to each forward
// launch; 0 = none, the default; A/B only).
extern "C" void flash3_set_knobs_smem_pad(int smem_pad) {
  attnkit::flash3::tuning().smem_pad = smem_pad;
}
// Session 19: the tiles of the last forward that ran in the split tail (0: none).
extern "C" int flash3_last_tail_tiles() {
  return attnkit::flash3::last_forward_tail_tiles();
}
// Session 46: the rounds of the balanced table the last forward read (Tuning::lpt_schedule; 0:
// none).
extern "C" int flash3_last_lpt_rounds() {
  return attnkit::flash3::last_forward_lpt_rounds();
}
// Session 48: the model's predicted gain of the table over the zig-zag rounds (past 32 causal
// m blocks: the dynamic scheduler) for the
// last forward (NaN where no table was considered; lpt_schedule.hpp lpt_predicted_gain).
extern "C" double flash3_last_lpt_gain() {
  return attnkit::flash3::last_forward_lpt_gain();
}
// Session 13: Tuning::trace (a device buffer, or null): per-tile clock64 stamps, recorded only
// by a shim built with ATTNKIT_FLASH3_TRACE (flash3_shim_only.sh F3_TRACE=1).
extern "C" void flash3_set_trace(void* buffer) {
  attnkit::flash3::tuning().trace = buffer;
}
// Session 11: the launch slot of the last forward (launch.cuh kernels[]; the A/B prints it, so
// a variant that fell back to another kernel is visible).
extern "C" int flash3_last_slot() {
  return attnkit::flash3::last_forward_slot();
}
