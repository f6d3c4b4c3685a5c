// The call classes where `auto` tries flash3 before the registry's order (cuDNN first): each one
// measured faster on flash3 than on cuDNN in the same process, and only over the range measured.
// Host-only (no GPU), so that tests/core can check the rule; dispatch/api.cpp request_for uses it.
// A class flash3 cannot run (dropout in a backward, Dv != D, an unbuilt head dim, another arch)
// falls through to the registry's order: `prefer` reorders, it never forces.
#pragma once

#include <cstdint>

#include "core/params.hpp"

namespace attnkit {

/// Shortest S_q and S_k of a dense call in the measured range (the benchmark's 1k / 4k / 16k rows;
/// below 1k nothing was compared).
inline constexpr int64_t kFlash3PreferMinSeqlen = 1024;
/// D 64 causal and D 256 non-causal forwards, where flash3 and cuDNN tie at 1k: from 2k.
inline constexpr int64_t kFlash3PreferFwdTieSeqlen = 2048;
/// D 192 backward (flash3's D 256 kernel against cuDNN's native D 192): from 4k.
inline constexpr int64_t kFlash3PreferBwdD192Seqlen = 4096;

/// Whether `auto` tries flash3 first for p (`deterministic`: the call's Options flag).
inline bool flash3_preferred(const Params& p, bool deterministic) {
  // Varlen backward (session 25, H200, bench/results/2026-11-28-h200-flash3-varlen-bwd.md:
  // 1.22-3.46x cuDNN's varlen backward, which ran at half its dense speed at 1k-long sequences).
  // The varlen forward keeps the registry's order (flash3 / cuDNN 0.97-1.15,
  // 2026-11-28-h200-flash3-varlen.md).
  if (p.varlen) return p.is_backward;
  // Plain calls only: masks and windows were not compared with cuDNN's; softcap / ALiBi reach
  // flash3 anyway (cuDNN declines them).
  const bool plain = !p.has_mask() && p.window_left < 0 && p.window_right < 0;
  if (!plain) return false;
  const auto at_least = [&](int64_t s) { return p.seqlen_q >= s && p.seqlen_k >= s; };
  const bool measured_1k = at_least(kFlash3PreferMinSeqlen);
  const int64_t d = p.head_dim;
  const bool causal = p.causal != Causal::none;
  if (p.is_backward) {
    // Dense backwards where flash3 beat cuDNN at every S >= 1k (H200; sessions 28-30,
    // bench/results/2026-11-29-h200-flash3-s30.md): D 256 (1.04-1.28x in session 30, both causal
    // modes; deterministic too, flash3's D 256 kDet) and causal D 64 (1.06-1.11x), at every S.
    // Session 34 (H200, bench/results/2026-11-29-h200-flash3-s34.md): D 128 (both causal modes)
    // and non-causal D 64 at S >= 1k: 1.01-1.08x cuDNN at the sustained (power-capped) clock.
    // Non-deterministic calls only there: flash3's deterministic D 64 / 128 backward runs at
    // 0.59-0.75 of its default and was not timed against cuDNN's. Session 38
    // (bench/results/2026-11-29-h200-flash3-s38.md, call 3): D 192 on flash3's D 256 kernel
    // against cuDNN's native D 192 backward, 1.02-1.03x at S 4k, 1.16-1.18x at 16k, 1.00 / 0.88
    // at 1k (non-causal / causal): from 4096. D 96 (0.94-1.00x) keeps the registry's order.
    // (Session 56's table: 1.12-1.34x at every D 64 / 128 / 256 row, S 1k-16k.)
    if (d == 256 || (d == 64 && causal)) return true;
    if (deterministic) return false;
    return (measured_1k && (d == 128 || d == 64)) ||
           (d == 192 && at_least(kFlash3PreferBwdD192Seqlen));
  }
  // Dense forwards (session 56, H200, bench/results/2026-12-01-h200-flash3-s56.md: three readings
  // of the peers table at 16384 tokens, bf16, S_q = S_k, H x D = 2048): D 128 1.05-1.15x cuDNN at
  // 1k / 4k / 16k (both causal modes); D 64 non-causal 1.04-1.16x; D 64 causal 1.10-1.17x at 4k /
  // 16k but 0.97 at 1k and 1.00-1.02 at 2k (session 55 call 5): from 2k; D 256 causal 1.04-1.16x;
  // D 256 non-causal 1.05-1.13x at 4k / 16k and 1.05 at 2k (session 56 call 4), 0.98-1.03 at 1k:
  // from 2k. Without dropout (not compared); GQA and f16 run the same kernels but were not timed
  // against cuDNN (the rule does not tell them apart, as for the backward).
  if (p.has_dropout() || !measured_1k) return false;
  const bool from_2k = at_least(kFlash3PreferFwdTieSeqlen);
  if (d == 128) return true;
  if (d == 64) return !causal || from_2k;
  if (d == 256) return causal || from_2k;
  return false;
}

}  // namespace attnkit
