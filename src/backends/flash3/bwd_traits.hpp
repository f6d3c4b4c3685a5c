// Tile sizes and shared-memory layout of the flash3 backward (FA3-style: one CTA per key block),
// shared by the kernel and the host launcher.
//
// One CTA = (kBlockN = 128 keys, kv head g, batch b), 3 warpgroups (384 threads):
//   WG0 producer: thread 0 issues TMA (K and V once; Q and dO per query block into a kStages
//       ring); warp 1 copies the query block's lse2 and delta rows (64 fp32 each) into smem.
//   WG1, WG2 consumers, WG w owning keys [64 w, 64 w + 64) of the block. Per query block of
//       kBlockM = 64 rows (looping over every q head of the GQA group):
//         S^T [64k x 64q] = K_w Q^T,  dP^T = V_w dO^T            wgmma SS (K-major A and B)
//         P^T = exp2(S^T scale_log2 - lse2),  dS^T = P^T (dP^T - delta)     registers
//         dV_w += P^T dO,  dK_w += dS^T Q                          wgmma RS (P^T, dS^T from regs)
//         dS^T -> smem (both halves), then dQ [64q x D] = dS K      wgmma SS (MN-major A and B)
//         dQ -> fp32 workspace by atomicAdd(float2) (red.global.add.v2.f32)
//       dQ is split between the two consumers: D = 128 by columns (WG w: D/2 columns over all
//       128 keys); D = 64 by keys (WG w: its own 64 keys, all 64 columns; both add atomically).
//
// Registers per consumer thread (fp32 accumulators, m64nN layout = N/2 regs): dK, dV = D/2 each;
// S^T, dP^T = 32 each; dQ = kDqN/2; P^T, dS^T packed 16-bit = 16 each.
//   D = 128: 64 + 64 + 32 + 32 (+ dQ 32 once S/dP are packed) -> fits 240 (setmaxnreg).
// Shared memory (16-bit tiles as kD/64 column chunks of [rows][64] with the 128-byte swizzle):
//   K, V      [kBlockN x kD]               once
//   Q, dO     [kStages][kBlockM x kD]      ring; full barrier = TMA bytes + 32 loader arrivals
//   dS^T      [2][kBlockN x kBlockM]       double-buffered by iteration parity
//   lse2,delta[kStages][kBlockM] fp32
//   D = 128: 32 + 32 + 2*2*16 + 2*16 + 1 KB = 161 KB; D = 64: 97 KB.
#pragma once

#include <cstdint>

namespace attnkit::flash3::bwd {

template <int D>
struct BwdTraits {
  static_assert(D == 64 || D == 128, "flash3 backward: D in {64, 128}");
  static constexpr int kD = D;
  static constexpr int kBlockN = 128;  // keys per CTA: 2 consumer warpgroups x 64
  static constexpr int kBlockM = 64;   // query rows per iteration
  static constexpr int kStages = 2;
  static constexpr int kConsumerWGs = 2;
  static constexpr int kThreads = 128 * (1 + kConsumerWGs);
  static constexpr int kChunks = D / 64;
  static constexpr int kRowBytes = 128;                     // one swizzle row: 64 x 16 bit
  static constexpr int kQChunkBytes = kBlockM * kRowBytes;  // [64 rows][64] chunk of Q / dO
  static constexpr int kQBytes = kBlockM * D * 2;           // one Q (or dO) stage
  static constexpr int kKChunkBytes = kBlockN * kRowBytes;  // [128 rows][64] chunk of K / V
  static constexpr int kKBytes = kBlockN * D * 2;
  static constexpr int kDSBytes = kBlockN * kBlockM * 2;  // dS^T [128 keys][64 queries]: 1 chunk
  // dQ split between the consumers (see above).
  static constexpr bool kDqSplitD = D >= 128;
  static constexpr int kDqN = kDqSplitD ? D / 2 : D;        // dQ columns per consumer
  static constexpr int kDqKeys = kDqSplitD ? kBlockN : 64;  // keys summed per consumer
  // 40 + 232: with 24 for the producer (TMA thread + lse/delta loader warp) ptxas spilled
  // 16-36 bytes there; 40*128 + 232*256 = 64512 <= 65536 registers per SM.
  static constexpr int kProducerRegs = 40;
  static constexpr int kConsumerRegs = 232;
  // Offsets (bytes) from the 1024-aligned base.
  static constexpr int kOffK = 0;
  static constexpr int kOffV = kOffK + kKBytes;
  static constexpr int kOffQ = kOffV + kKBytes;
  static constexpr int kOffDO = kOffQ + kStages * kQBytes;
  static constexpr int kOffDS = kOffDO + kStages * kQBytes;
  static constexpr int kOffLse = kOffDS + 2 * kDSBytes;
  static constexpr int kOffDelta = kOffLse + kStages * kBlockM * 4;
  static constexpr int kOffBars = kOffDelta + kStages * kBlockM * 4;
  static constexpr int kNumBars = 1 + 2 * kStages;                   // full_kv, full[s], empty[s]
  static constexpr int kSmemBytes = kOffBars + kNumBars * 8 + 1024;  // + 1 KB base alignment
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");
  static_assert(kQChunkBytes % 1024 == 0 && kKChunkBytes % 1024 == 0 && kOffDS % 1024 == 0,
                "swizzle atoms must stay 1024-aligned");
};

}  // namespace attnkit::flash3::bwd
