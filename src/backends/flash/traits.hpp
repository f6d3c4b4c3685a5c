// Tile shapes per head dim, shared by kernels and launchers (host + device). Chosen after FA-2's
// sm80 table, then measured (H100 A/B runs and `nvcc -Xptxas -v` spills in bench/notes/flash.md).
#pragma once

// Tuning knobs, overridable with -D for A/B runs on the GPU (bench/notes/flash.md):
//   ATTNKIT_FLASH_KK_UNROLL_{FWD,BWD}: unroll of the k loop of the shared x shared warp GEMMs.
//     Forward: fully unrolled (64), ptxas hoists every ldmatrix of the loop and spills at
//     D = 128 with 32 rows per warp (212 B); 1 spills nothing, same speed as 2 (H100, run 2).
//     Backward: full unroll measured 1.17-1.39x faster than 1 at S = 4k (H100, run 3).
//   ATTNKIT_FLASH_FWD_BN_{64,128}: forward key-block width at D = 64 / D = 128. BN = 64 at
//     D = 128 spills 172 B and ran 3 % slower than 32; BN = 128 at D = 64 spills 272 B, 7 %
//     slower than 64 (H100, S = 4k, run 2).
#ifndef ATTNKIT_FLASH_KK_UNROLL_FWD
#define ATTNKIT_FLASH_KK_UNROLL_FWD 1
#endif
#ifndef ATTNKIT_FLASH_KK_UNROLL_BWD
#define ATTNKIT_FLASH_KK_UNROLL_BWD 64
#endif
#ifndef ATTNKIT_FLASH_FWD_BN_64
#define ATTNKIT_FLASH_FWD_BN_64 64
#endif
#ifndef ATTNKIT_FLASH_FWD_BN_128
#define ATTNKIT_FLASH_FWD_BN_128 32
#endif

namespace attnkit::flash {

/// Forward: CTA tile (kBM query rows, kBN keys), kWarps warps each owning 16 * kMT rows.
template <int D>
struct FwdTraits {
  static constexpr int kHeadDim = D;
  static constexpr int kKUnroll = ATTNKIT_FLASH_KK_UNROLL_FWD;
  static constexpr int kBN =
      D == 64 ? ATTNKIT_FLASH_FWD_BN_64 : (D == 128 ? ATTNKIT_FLASH_FWD_BN_128 : 64);
  // D <= 128: 4 warps x 32 rows (2 m16 tiles: K/V fragments reused twice per ldmatrix);
  // D > 128: 8 warps x 16 rows, to keep the (16*kMT, D) fp32 output accumulator in registers.
  static constexpr int kWarps = D <= 128 ? 4 : 8;
  static constexpr int kMT = D <= 128 ? 2 : 1;
  static constexpr int kBM = kWarps * 16 * kMT;  // 128
  static constexpr int kThreads = kWarps * 32;
  // Q (kBM, D) + K (kBN, D) + V (kBN, D), 2-byte elements.
  static constexpr int kSmemBytes = (kBM + 2 * kBN) * D * 2;
};

/// Backward dK/dV kernel: one CTA per (key block of kBN, kv head, batch), looping over query
/// blocks of kBM rows of every q head of the group. 8 warps as 4 (rows) x 2 (cols) for the
/// (kBM, kBN) S / dP tiles and for the (kBN, D) dK / dV tiles.
template <int D>
struct BwdKVTraits {
  static constexpr int kHeadDim = D;
  static constexpr int kKUnroll = ATTNKIT_FLASH_KK_UNROLL_BWD;
  static constexpr int kBM = 64, kBN = 64;
  static constexpr int kWarps = 8, kThreads = 256;
  static constexpr int kWR = 4, kWC = 2;
  static constexpr int kSMT = kBM / kWR / 16, kSNT = kBN / kWC / 8;  // S / dP warp tile
  static constexpr int kKMT = kBN / kWR / 16, kKNT = D / kWC / 8;    // dK / dV warp tile
  // Q / dO double-buffered (next query block loads during this one's 4 GEMMs) where it fits
  // an A100's 163 KiB; D = 256 keeps one stage (144 KiB).
  static constexpr int kStages = D <= 192 ? 2 : 1;
  // K, V (kBN, D); kStages x Q, dO (kBM, D); P, dS (kBM, kBN).
  static constexpr int kSmemBytes = (2 * kBN * D + kStages * 2 * kBM * D + 2 * kBM * kBN) * 2;
};

/// Backward dQ kernel: one CTA per (query block, q head, batch), looping over key blocks; each
/// warp owns 16 rows so dS stays in registers as the A operand of dQ += dS K.
template <int D>
struct BwdQTraits {
  static constexpr int kHeadDim = D;
  static constexpr int kKUnroll = ATTNKIT_FLASH_KK_UNROLL_BWD;
  static constexpr int kWarps = 4, kThreads = 128, kMT = 1;
  static constexpr int kBM = 64;
  static constexpr int kBN = D <= 128 ? 64 : 32;  // S + dP + dQ accumulators <= ~200 registers
  // Q, dO (kBM, D); 2 stages x K, V (kBN, D).
  static constexpr int kSmemBytes = (2 * kBM * D + 2 * 2 * kBN * D) * 2;
};

}  // namespace attnkit::flash
