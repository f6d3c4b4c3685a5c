// Which CTA order the flash3 backward runs, by shape (session 49; bwd_order.cuh decodes it on the
// D 256 device kernels; since session 50 D 128's default structures have twins that take it
// division-free from the grid, bwd_kernel.cuh kOrd, bwd_order_shift). Host-only, so that
// tests/core can check the rule without a GPU.
#pragma once

#include <cstdint>

namespace attnkit::flash3 {

/// Sections of (kv head, batch) pairs in the auto's sectioned order (BwdTuning::order_sections).
inline constexpr int kBwdOrderAutoSections = 4;
/// Shortest key length the auto sections: below it nothing was gained (D 256 causal 1024 / 2176
/// +0.2 / +0.9 %: within the rounds' spread).
inline constexpr int64_t kBwdOrderMinKeys = 3072;
/// Largest footprint of one section in L2: sections x group x S_q x D x 8 bytes (Q and dO in
/// 16-bit, the dQ accumulator in fp32, per query head of the section's pairs). 32 MiB: the
/// measured gains stop where a section of 4 outgrows it (D 256 4k: 32 MiB +2.1 %, 8k: 64 MiB
/// -1.7 %; D 128 before it was dropped, 8k / 16k: 32 / 64 MiB, +3.4 / -0.4 %).
inline constexpr int64_t kBwdOrderMaxSectionBytes = int64_t{32} << 20;
/// The auto at D 128 (session 50, the kOrd twins): on. Session 50 call 1 (H200, main's A/B binary
/// against the branch's, processes ABBA, 6 rounds x 80 calls): causal 4096 / 8192 +2.8 / +2.4 %;
/// in one binary, sections of 4 against the hardware's order +2.3 / +3.1 % at 4096 / 8192, 0.0 %
/// at 3328 (its rounds spread 387-483; session 49's slowed kernel +1.5 / +2.3 % there), -1.1 % at
/// 16384 (outside the bound: the auto runs 0 there). D 64's auto is always off
/// (session 49: nothing measurable gained, -1.9..+0.8 % at 1k-16k), and D 64 has no twin.
inline constexpr bool kBwdOrderAutoD128 = true;

/// The sections a backward launch runs (0 = the hardware's order). requested: the knob
/// (BwdTuning::order_sections): >= 0 is taken as is (0 = off), -1 = the auto. causal: the call's
/// causal flag after its score mods; d: the kernel's head dim; group: query heads per kv head.
/// Callers pass causal = false for varlen and deterministic launches (hardware order).
///
/// D 256 (bwd_kernel_d256.cuh decodes the order with divisions, partial sections allowed) takes
/// the result as is. D 128 (session 50) rounds it with bwd_order_shift: the same division decode
/// in bwd_kernel.cuh cost D 128 7-9 % at every length, causal or not (session 49 call 5: the A/B
/// binary built from main against the branch, processes interleaved: non-causal 4k / 16k -7.4 /
/// -7.6 %, causal 16k -8.9 %; D 64 within +-1 %, D 256 -1.0..+1.6 %), so its default structures'
/// kOrd twins take power-of-two sections within one batch from the grid instead (a runtime shift
/// in every kernel still cost 1.0-1.5 % at 16k: session 50 call 1). There a forced request
/// (requested > 0, causal) is honoured, the auto with auto_d128 (kBwdOrderAutoD128). D 64 has no
/// twin: its launcher never asks (the order gained nothing measurable there, -1.9..+0.8 % at
/// 1k-16k, session 49).
///
/// The auto at D 256, measured in session 49 (bench/gpu/flash3_bwd_ab.cu F3AB_ORDERS, sections 0 /
/// 2 / 4 / 6 interleaved in one process, 6 rounds of 80 calls, H200; bench/notes/session49.md):
/// sections of 4 gained at causal 3328 / 4096 +4.9 / +2.1 % (20-call rounds: +3.9 / +1.0 %), lost
/// at 8192 / 16384 -1.7 / -2.0 % (a section outgrows L2) and gave +0.2 / +0.9 % at 1024 / 2176
/// (within the rounds' spread). Sections of 2 gained less, of 6 / 8 / 16 lost more. At D 128 (the
/// session-49 division-decode kernel, same binary): +3.6 / +3.4 % at causal 4096 / 8192 (16 / 32
/// MiB a section), -0.4 % at 16384 (64 MiB): the same bound.
inline int bwd_order_sections(int requested, bool causal, int64_t d, int64_t seqlen_q,
                              int64_t seqlen_k, int64_t group, bool auto_d128 = kBwdOrderAutoD128) {
  if (!causal || (d != 64 && d != 128 && d != 256)) return 0;
  if (requested >= 0) return requested;
  if (d == 64 || (d == 128 && !auto_d128)) return 0;
  if (seqlen_k < kBwdOrderMinKeys) return 0;
  const int64_t section_bytes = kBwdOrderAutoSections * group * seqlen_q * d * 8;
  return section_bytes <= kBwdOrderMaxSectionBytes ? kBwdOrderAutoSections : 0;
}

/// D 128's kOrd twins (bwd_kernel.cuh, session 50): the shift sh of the sections that run, 2^sh kv
/// heads of one batch: the largest power of two <= sections that divides heads_kv (sections of 4:
/// Hkv 16 -> 2, Hkv 6 -> 1, Hkv odd -> 0), and only while the grid's x, key_blocks << sh, stays
/// within 2^31 - 1. sections <= 1: 0 (the hardware's order).
inline int bwd_order_shift(int sections, int64_t heads_kv, int64_t key_blocks) {
  int sh = 0;
  while (sh < 30 && heads_kv > 0 && (int64_t{2} << sh) <= sections &&
         heads_kv % (int64_t{2} << sh) == 0 && (key_blocks << (sh + 1)) <= int64_t{0x7fffffff})
    ++sh;
  return sh;
}

}  // namespace attnkit::flash3
