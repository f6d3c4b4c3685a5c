// Tile-size traits of the flash3 forward kernel, shared by the kernel and the host launcher.
//
// One CTA = 3 warpgroups (384 threads): WG0 is the producer (one elected thread issues every TMA
// load), WG1 and WG2 are consumers, each owning 64 query rows of the kBlockM = 128-row tile.
// Shared memory (all 16-bit tiles stored as kD/64 column chunks of [rows][64] elements, 128-byte
// rows with the 128B swizzle that TMA writes and wgmma reads):
//   Q  [kBlockM x kD]               loaded once per CTA
//   K  [kStages][kBlockN x kD]      ring, "full" barriers filled by TMA, "empty" by consumers
//   V  [kStages][kBlockN x kD]      same, separate barriers so S = QK^T can start before V lands
// kBlockN per head dim keeps the consumers' registers under the 240 setmaxnreg budget:
//   O accumulator 64 x kD fp32 = kD/2 regs/thread, S tile 64 x kBlockN fp32 = kBlockN/2,
//   P (16-bit, packed after the PV wait so one copy is live) = kBlockN/4.
//   D=64: 32+64+32 ; D=128: 64+64+32 (kBlockN 176: 64+88+44) ; D=256 (kBlockN 64): 128+32+16
//   (kBlockN 80: 128+40+20).
// kBlockN = 0 picks the default per D; 176 (D = 128, non-causal) is FA3's choice: fewer
// softmax/barrier rounds per FLOP. Causal keeps 128 (less work wasted on diagonal tiles).
#pragma once

#include <cstdint>

namespace attnkit::flash3 {

template <int D, int BN = 0>
struct FwdTraits {
  static_assert(D == 64 || D == 128 || D == 256, "flash3 forward: D in {64, 128, 256}");
  static constexpr int kD = D;
  static constexpr int kBlockM = 128;  // 2 consumer warpgroups x 64 rows
  static constexpr int kBlockN = BN != 0 ? BN : (D == 256 ? 64 : 128);
  static constexpr int kStages = 2;
  static constexpr int kConsumerWGs = 2;
  static constexpr int kThreads = 128 * (1 + kConsumerWGs);
  static constexpr int kChunks = D / 64;  // 64-element (128-byte) column chunks
  static constexpr int kChunkRowBytes = 128;
  static constexpr int kQBytes = kBlockM * D * 2;
  static constexpr int kKVBytes = kBlockN * D * 2;  // one K (or V) stage
  static constexpr int kQChunkBytes = kBlockM * kChunkRowBytes;
  static constexpr int kKVChunkBytes = kBlockN * kChunkRowBytes;
  // setmaxnreg budgets: 24*128 + 240*256 = 64512 <= 65536 registers per SM (1 CTA/SM).
  // (setmaxnreg.inc waits until the registers exist: the sum must fit.)
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = 240;
  // Everything 1024-aligned (128B-swizzle atoms), plus barriers, plus 1 KB to align the base.
  static constexpr int kSmemBytes = kQBytes + 2 * kStages * kKVBytes + 1024 + 1024;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");
  static_assert(kBlockN % 16 == 0 && kBlockN <= 256, "wgmma N");
  static_assert(kKVChunkBytes % 1024 == 0, "K/V chunks must stay 1024-aligned (swizzle atoms)");
};

}  // namespace attnkit::flash3
