// Which CTA order the flash3 backward runs, by shape (session 49; bwd_order.cuh decodes it on the
// D 256 device kernels; since session 50 D 128's default structures have twins that take it
// division-free from the grid, bwd_kernel.cuh kOrd, bwd_order_shift). Host-only, so that
// tests/core can check the rule without a GPU.
#pragma once

#include <cstdint>

namespace attnkit::flash3 {

/// Sections of (kv head, batch) pairs in the auto's sectioned order (BwdTuning::order_sections).
inline constexpr int kBwdOrderAutoSections = 4;
/// Shortest key length the auto sections at D 256 (D 128: kBwdOrderMinKeysD128): below it nothing
/// was gained (D 256 causal 1024 / 2176 +0.2 / +0.9 %: within the rounds' spread).
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
/// D 128's auto (session 51): from 2048 keys (1280 since session 52), sections of 8 while a section
/// of 8 fits kBwdOrderMaxWideSectionBytes (at group 1: S_q <= 3584, whatever S_k), else of 4
/// (kBwdOrderAutoSections) within kBwdOrderMaxSectionBytes. Measured only at S_q = S_k, group 1;
/// S_q != S_k and GQA follow the same byte bounds unmeasured (e.g. GQA 2 at 2048-3071 keys now
/// runs 4, S_q 1024 with S_k 16384 runs 8). Session 51 call 2 (H200, bench/gpu/flash3_bwd_ab.cu
/// F3AB_ORDERS 0,4,8,16 interleaved in one process, 6 rounds x 80 calls, B x H of the benchmark),
/// TFLOP/s for sections 0 / 4 / 8 / 16: causal 2048 406.1 / 413.7 / 419.8 / 417.0, 2176 407.5 /
/// 410.0 / 426.0 / 427.3, 3072 450.4 / 455.7 / 465.9 / 458.8, 3328 454.7 / 465.4 / 469.3 / 467.2,
/// 4096 478.7 / 489.4 / 486.2 / 474.9, 6144 512.4 / 525.5 / 521.1 / 510.4, 1024 333.1 / 334.3 /
/// 335.7 / 339.5 (within its rounds' spread, 275-346). Call 3 again (orders 0 / 4 / 8): 2048 412.4
/// / 415.9 / 422.6, 3072 445.6 / 455.4 / 462.5, 3328 450.4 / 461.0 / 469.6.
/// Session 52 (call 3, the same tool, orders 0 / 8 / 16, 10 rounds x 400 calls, sustained):
/// causal 1024 330.1 / 329.0 / 329.2 (nothing), 1280 355.1 / 359.8 / 363.6, 1536 378.1 / 386.0 /
/// 389.0, 1792 396.3 / 409.0 / 408.4, 2048 409.8 / 425.3 / 420.6: sections of 8 from 1280 keys
/// (+1.3 / +2.1 / +3.2 % at 1280 / 1536 / 1792; 16 read another +0.8..+1.1 % at 1280 / 1536 here
/// but -1.3 % at 1536 in call 1's 80-call rounds: not taken).
inline constexpr int kBwdOrderWideSectionsD128 = 8;
inline constexpr int64_t kBwdOrderMinKeysD128 = 1280;
/// A section of 8 gained at 3328 keys (8 x 3328 x 128 x 8 bytes = 26 MiB: +0.8 / +1.9 % over 4)
/// and lost at 4096 (32 MiB: -0.7 %); 28 MiB sits between (nothing measured there).
inline constexpr int64_t kBwdOrderMaxWideSectionBytes = int64_t{28} << 20;

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
/// The auto at D 128 (session 51): sections of 8 from 2048 keys (1280 since session 52) while 8 x
/// group x S_q x 128 x 8 bytes <= 28 MiB (S_q <= 3584 at group 1), else of 4 while the 32 MiB bound
/// holds (to 8192).
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
  if (seqlen_k < (d == 128 ? kBwdOrderMinKeysD128 : kBwdOrderMinKeys)) return 0;
  const int64_t pair_bytes = group * seqlen_q * d * 8;  // one (kv head, batch) pair's Q / dO / dQ
  if (d == 128 && kBwdOrderWideSectionsD128 * pair_bytes <= kBwdOrderMaxWideSectionBytes)
    return kBwdOrderWideSectionsD128;
  return kBwdOrderAutoSections * pair_bytes <= kBwdOrderMaxSectionBytes ? kBwdOrderAutoSections : 0;
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
