// A balanced static schedule for the causal forward (session 46; Tuning::lpt_schedule): which
// tile each persistent CTA runs in each round, computed on the host and read by the kernels'
// static_tile (tile_scheduler.cuh) instead of the zig-zag rounds. Session 70 (Tuning::
// round_table): the same kind of table for non-causal launches on the rotated rounds,
// build_round_table at the end of this file.
//
// Why (bench/notes/fwd-d64-causal-1k-s47.md section 3): causal tiles are unequal (a tile at m
// block m visits m + 1 K/V blocks of 128 keys at D 64 / 128), and the zig-zag rounds leave the
// busiest CTA 3.1 % above the mean at every static causal row of the benchmark (D 64 causal 1k:
// 4,096 tiles on 132 CTAs; the 4 CTAs of the partial last round each run a 32nd tile on top of
// an average load). Greedy assignment of the tiles in longest-first order to the least-loaded
// CTA brings the busiest CTA to 1.002-1.011 of the mean in a model of the same rows (cost per
// tile = tile_cost + its K/V blocks; the result moves by < 0.8 % when tile_cost is off by 2x).
//
// Order (FlashAttention-3's causal scheduler orders tiles the same way): sections of
// heads_per_section (batch, head) pairs, whose K and V fit in L2 together; within a section the
// m blocks longest first, the heads fastest. The CTAs then run through one section's heads at
// a time (their K / V read from HBM once, as the zig-zag's "m fastest" order does per head), and
// each CTA's k-th tile sits near position k x grid of that list, so the table's rounds stay in
// step across the CTAs. (Longest first over *all* heads lost 20 % at D 128 causal 2k in run 3:
// ~132 heads' K / V in flight at once; tile_scheduler.cuh.)
//
// Host-only (tests/core/flash3_lpt_schedule_test.cpp checks it without a GPU).
#pragma once

#include <algorithm>
#include <cstdint>
#include <queue>
#include <utility>
#include <vector>

namespace attnkit::flash3 {

/// The schedule as the kernels read it: tiles[k * grid + c] = the tile CTA c runs k-th (the tile
/// numbering of decode_tile: t = hb * num_m_blocks + i, m block num_m_blocks - 1 - i when causal),
/// -1 when CTA c has fewer than k + 1 tiles; rounds = the most tiles a CTA runs.
struct LptTable {
  int rounds = 0;
  std::vector<int> tiles;
  double max_load = 0.0;  // the busiest CTA's load, in K/V blocks (tile_cost per tile included)
};

/// The largest power of two of (batch, head) pairs whose K and V (kv_bytes_per_head each; a pair
/// of q heads that share K / V counts once per q head: pass bytes / group) fit in
/// section_bytes, at least 1. Powers of two: in the cost model, sections of 24 / 48 / 96 heads
/// balanced worse than the powers of two beside them (D 128 causal 1k: 48 heads 1.043, 32 heads
/// 1.020, 64 heads 1.008 max / mean load; bench/notes/session46.md, the section table).
inline int lpt_heads_per_section(int64_t kv_bytes_per_head, int64_t section_bytes, int bh) {
  int h = 1;
  while (2 * static_cast<int64_t>(h) <= bh && 2 * h * kv_bytes_per_head <= section_bytes)
    h *= 2;
  return h;
}

/// Session 61: a tile's K/V blocks in the model when only some of its consumer warpgroups have
/// rows (the last m block of a head when S_q is not a multiple of the tile's rows, e.g. D 64's
/// 192-row tiles at S_q = 1024 / 4096: 64 rows, one warpgroup of three). Such a turn is not 1/3 of
/// a full one: the lone warpgroup's chain (Q K^T, exps, P V) runs without the others to hide it
/// (session 13's clock64 trace: 16.5k vs 24.7k cycles a 1k tile, 0.67). `rows` of `block_m`
/// (warpgroups of 64 rows); one_wg = a one-warpgroup turn's cost, in full turns; k of n
/// warpgroups in between, linearly: one_wg + (1 - one_wg) (k - 1) / (n - 1). 1 for a full tile.
inline double lpt_partial_weight(int rows, int block_m, double one_wg) {
  const int n = block_m / 64, k = (rows + 63) / 64;
  if (k >= n || n <= 1) return 1.0;
  return one_wg + (1.0 - one_wg) * (k < 1 ? 0 : k - 1) / (n - 1);
}

/// A tile's cost in the model: tile_cost + its K/V blocks, those times weight[i] when the caller
/// gives weights (lpt_partial_weight per in-head index; empty: 1).
inline double lpt_tile_load(const std::vector<int>& blocks, const std::vector<double>& weight,
                            int i, double tile_cost) {
  return tile_cost + blocks[i] * (weight.empty() ? 1.0 : weight[i]);
}

/// Greedy longest-first assignment (the file's comment has the order). blocks[i] = K/V blocks of
/// a tile with in-head index i (decode_tile's t % num_m_blocks; the kernels' num_n_blocks of its
/// m block), i = 0 .. num_m_blocks - 1; bh = batch x heads_q; grid = CTAs (>= 1); tile_cost =
/// a tile's fixed cost in K/V blocks; weight: lpt_tile_load's (empty: none). Ties go to the lower
/// CTA index, so the table is the same for the same arguments.
inline LptTable build_lpt_table(const std::vector<int>& blocks, int bh, int grid,
                                int heads_per_section, double tile_cost,
                                const std::vector<double>& weight = {}) {
  const int m = static_cast<int>(blocks.size());
  LptTable out;
  if (m == 0 || bh <= 0 || grid <= 0) return out;
  // In-head indices by blocks, longest first (stable: equal lengths keep index order).
  std::vector<int> by_len(m);
  for (int i = 0; i < m; ++i)
    by_len[i] = i;
  std::vector<double> load(m);
  for (int i = 0; i < m; ++i)
    load[i] = lpt_tile_load(blocks, weight, i, tile_cost);
  std::stable_sort(by_len.begin(), by_len.end(), [&](int x, int y) { return load[x] > load[y]; });
  using Load = std::pair<double, int>;  // (load in K/V blocks, CTA)
  std::priority_queue<Load, std::vector<Load>, std::greater<Load>> least;
  for (int c = 0; c < grid; ++c)
    least.push({0.0, c});
  std::vector<std::vector<int>> lists(grid);
  const int sec = heads_per_section < 1 ? 1 : heads_per_section;
  for (int h0 = 0; h0 < bh; h0 += sec) {
    const int h1 = h0 + sec < bh ? h0 + sec : bh;
    for (int i : by_len) {
      for (int hb = h0; hb < h1; ++hb) {
        const Load l = least.top();
        least.pop();
        lists[l.second].push_back(hb * m + i);
        least.push({l.first + load[i], l.second});
      }
    }
  }
  for (; !least.empty(); least.pop())
    out.max_load = least.top().first > out.max_load ? least.top().first : out.max_load;
  for (const auto& l : lists)
    out.rounds = static_cast<int>(l.size()) > out.rounds ? static_cast<int>(l.size()) : out.rounds;
  out.tiles.assign(static_cast<size_t>(out.rounds) * grid, -1);
  for (int c = 0; c < grid; ++c)
    for (size_t k = 0; k < lists[c].size(); ++k)
      out.tiles[k * grid + c] = lists[c][k];
  return out;
}

/// The busiest CTA's load (same units) under the zig-zag rounds the table replaces
/// (tile_scheduler.cuh tile_of_round, causal: CTA c takes tile r x grid + c in even rounds,
/// r x grid + grid - 1 - c in odd ones; no rotation).
inline double zigzag_max_load(const std::vector<int>& blocks, int bh, int grid, double tile_cost,
                              const std::vector<double>& weight = {}) {
  const int m = static_cast<int>(blocks.size());
  if (m == 0 || bh <= 0 || grid <= 0) return 0.0;
  const int64_t tiles = static_cast<int64_t>(m) * bh;
  std::vector<double> load(grid, 0.0);
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t r = t / grid, x = t % grid;
    const int64_t c = (r & 1) ? grid - 1 - x : x;
    load[c] += lpt_tile_load(blocks, weight, static_cast<int>(t % m), tile_cost);
  }
  return *std::max_element(load.begin(), load.end());
}

/// The busiest CTA's load (same units) under the dynamic scheduler the table replaces on long
/// causal launches (tile_scheduler.cuh: the tiles in decode order, each taken by the CTA that
/// finishes first), idealised as bench/causal_balance_model.py's "dynamic": each tile to the
/// least-loaded CTA (ties to the lower index). Session 48 call 3 (H200, 1-second blocks): the
/// table's gain per cycle over the real scheduler was within 0-2.2 points of this model's (D 256
/// causal 4224 / 5760 / 6784: +15.4 / +10.8 / +12.6 % against +17.6 / 11.4 / 12.5; D 128 4224 /
/// 5760 +7.1 / +8.1 against +8.8 / 8.3).
inline double dynamic_max_load(const std::vector<int>& blocks, int bh, int grid, double tile_cost,
                               const std::vector<double>& weight = {}) {
  const int m = static_cast<int>(blocks.size());
  if (m == 0 || bh <= 0 || grid <= 0) return 0.0;
  const int64_t tiles = static_cast<int64_t>(m) * bh;
  using Slot = std::pair<double, int>;  // (load, CTA)
  std::priority_queue<Slot, std::vector<Slot>, std::greater<Slot>> q;
  for (int c = 0; c < grid; ++c)
    q.emplace(0.0, c);
  double max_load = 0.0;
  for (int64_t t = 0; t < tiles; ++t) {
    auto [l, c] = q.top();
    q.pop();
    l += lpt_tile_load(blocks, weight, static_cast<int>(t % m), tile_cost);
    max_load = std::max(max_load, l);
    q.emplace(l, c);
  }
  return max_load;
}

/// Session 70 (Tuning::round_table): the busiest CTA's load under the rotated static rounds
/// (tile_scheduler.cuh tile_of_round with FwdArgs::rotate: CTA c takes tile r x grid + (c + r)
/// mod grid in round r), tiles of in-head index i costing weight[i] (non-causal: the tiles all
/// visit the same K/V blocks, so a tile's cost is its weight alone).
inline double rotated_max_load(const std::vector<double>& weight, int bh, int grid) {
  const int m = static_cast<int>(weight.size());
  if (m == 0 || bh <= 0 || grid <= 0) return 0.0;
  const int64_t tiles = static_cast<int64_t>(m) * bh;
  std::vector<double> load(grid, 0.0);
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t r = t / grid, x = t % grid;  // (x = (c + r) mod grid)
    load[(x - r % grid + grid) % grid] += weight[t % m];
  }
  return *std::max_element(load.begin(), load.end());
}

/// Session 70: a table that keeps the rounds (round r runs tiles r x grid .. r x grid + grid - 1,
/// the rotated rounds' set: every CTA stays on the same few heads, whose K / V are in L2 once)
/// but chooses which CTA runs which tile of a round. The rounds are assigned last to first, each
/// round's tiles in decreasing weight to the CTAs in increasing load so far (ties: the lower
/// CTA index), so the CTAs that run the partial last round get more of the cheap tiles before it.
/// D 64 non-causal at S_q 1024 (192-row tiles, 6 m blocks, the last with 64 rows at weight p; 512
/// heads, 132 CTAs): the rotated rounds give 36 CTAs 20 full + 4 partial tiles (20 + 4 p), this
/// table at most 20 + 3 p or 18 + 6 p (p 0.64: 22.56 -> 21.92 full tiles, +2.9 % in the model).
/// weight[i]: the cost of a tile with in-head index i (lpt_partial_weight); tiles are numbered as
/// decode_tile's (t = hb x m + i). max_load in the same units.
inline LptTable build_round_table(const std::vector<double>& weight, int bh, int grid) {
  const int m = static_cast<int>(weight.size());
  LptTable out;
  if (m == 0 || bh <= 0 || grid <= 0) return out;
  const int64_t tiles = static_cast<int64_t>(m) * bh;
  out.rounds = static_cast<int>((tiles + grid - 1) / grid);
  out.tiles.assign(static_cast<size_t>(out.rounds) * grid, -1);
  std::vector<double> load(grid, 0.0);
  std::vector<int> order(grid), ctas(grid);
  for (int r = out.rounds - 1; r >= 0; --r) {
    const int64_t t0 = static_cast<int64_t>(r) * grid;
    const int n = static_cast<int>(std::min<int64_t>(grid, tiles - t0));
    for (int j = 0; j < n; ++j)
      order[j] = j;
    std::stable_sort(order.begin(), order.begin() + n,
                     [&](int x, int y) { return weight[(t0 + x) % m] > weight[(t0 + y) % m]; });
    for (int c = 0; c < grid; ++c)
      ctas[c] = c;
    std::stable_sort(ctas.begin(), ctas.end(), [&](int x, int y) { return load[x] < load[y]; });
    for (int j = 0; j < n; ++j) {
      const int64_t t = t0 + order[j];
      out.tiles[static_cast<size_t>(r) * grid + ctas[j]] = static_cast<int>(t);
      load[ctas[j]] += weight[t % m];
    }
  }
  out.max_load = *std::max_element(load.begin(), load.end());
  return out;
}

/// Session 47's model (bench/causal_balance_model.py --sweep; the same cost model): the table's
/// predicted gain over the zig-zag rounds, zig-zag busiest load / table busiest load - 1. Against
/// 1-second blocks on the H200 (bench/results/2026-11-30-h200-flash3-s47.md calls 2 / 5) the
/// measured gain ran 0.8-3.3 points under it: D 256 causal 3k +6.1 % predicted, +5.3 % measured;
/// 4k +3.0 / +1.9 %; D 64 4k +3.0 / +1.9 %; D 128 4k +2.2 / +0.6 %, 2k +2.0 / -0.6 %, 1k +2.3 /
/// -1.0 %. (The table's extra work per turn and its power; the long-first order's L2 reuse.)
/// The launch's model mode (launch.cuh lpt_mode 3, session 48) runs the table from this predicted
/// gain: above the 0.8-3.3 points the measured gains ran under the model near 0. Where the model
/// predicts 10-57 % (session 48 call 1) the measured gain was 0.34-0.61 of it (right per cycle,
/// the clock lower under the power cap). Session 50 (call 3, flash3_knob_ab.py, 1-second blocks,
/// zig-zag twice around the table, 3 rounds, the benchmark's B x H) lowered the bar from 0.06 to
/// 0.035: where the model predicts 3.6-5.9 % the table gained D 128 1088 / 1408 / 1728 / 2752
/// +2.3 / +2.3 / +2.5 / +2.3 %, D 64 1152 / 1792 / 2240 / 2368 +3.1 / +1.7 / +4.4 / -0.2 %, D 256
/// 2240 / 2304 +2.9 / +2.7 % (and at 6.7-7.9 %: +2.8..+4.9 %); at 2.0-2.3 % (session 47) it
/// gained -1.0..+0.6 %. The benchmark's causal 1k / 4k / 16k stay below 0.035 (model 2.2-3.0 %).
/// Static-schedule launches only: see kLptMinModelGainLong.
inline constexpr double kLptMinModelGain = 0.035;
/// The bar on long causal launches (launch.cuh, > 32 m blocks), where the model's baseline is the
/// dynamic scheduler (session 48): kept at 0.06, as the 3.5-6 % band was not measured there (D 128
/// causal 8k: model +5.6 %).
inline constexpr double kLptMinModelGainLong = 0.06;
/// (Session 48: on long causal launches, whose auto is the dynamic scheduler, the baseline is
/// dynamic_max_load instead.)
inline double lpt_predicted_gain(const LptTable& table, double baseline_load) {
  return table.max_load > 0.0 ? baseline_load / table.max_load - 1.0 : 0.0;
}

}  // namespace attnkit::flash3
