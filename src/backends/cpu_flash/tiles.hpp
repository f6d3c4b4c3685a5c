// Tile sizes and the packed K/V layout shared by cpu_flash's forward and backward.
//
// Packed layouts (fp32, zero padded; D -> dp, Dv -> dvp, both multiples of kPad):
//   kt  block (kb, g): [dp][kBk]   K^T of keys kb*kBk .. +kBk   (B operand of S = Q K^T)
//   k   block (kb, g): [kBk][dp]   K rows                        (B operand of dQ = dS K)
//   v   block (kb, g): [kBk][dvp]  V rows                        (B operand of O = P V)
//   vt  block (kb, g): [dvp][kBk]  V^T                           (B operand of dP = dO V^T)
// kb is a global key-block index: sequence b's blocks are kblock_start[b] .. kblock_start[b+1]-1,
// so varlen batches pack only their real tokens (rounded up to kBk per sequence).
#pragma once

#include <cstdint>
#include <vector>

#include "backends/cpu_flash/kernels.hpp"
#include "core/params.hpp"
#include "core/score_policy.hpp"

namespace attnkit::cpu_flash {

/// Query rows per work item / key columns per inner step. Measured (CPU time, 1 thread, B=2, H=16,
/// S=1024, D=64, f32, this project's 2-core AMD EPYC Zen 4 dev box): forward 64x64 -> 116-123 ms,
/// 128x64 -> 110-118 ms, 128x128 -> 108-111 ms (fewer per-row softmax reductions and K/V passes);
/// backward 222-227 / 226 / 226-238 ms (noise ~5%); causal forward equal. Tiles at 128x128, D=128:
/// S 64 KiB, Q 64 KiB, K^T block 64 KiB: L2-resident (1 MiB per core).
inline constexpr int64_t kBq = 128;
inline constexpr int64_t kBk = 128;
static_assert(kBk % kPad == 0, "score tiles are whole vectors wide");

inline int64_t round_up(int64_t x, int64_t m) {
  return (x + m - 1) / m * m;
}
inline int64_t ceil_div(int64_t x, int64_t m) {
  return (x + m - 1) / m;
}

struct Geometry {
  int64_t dp = 0, dvp = 0;
  std::vector<SeqSpan> spans;         // per sequence
  std::vector<int64_t> kblock_start;  // [batch + 1]
  std::vector<int64_t> kblock_seq;    // sequence of each global key block
  int64_t num_kblocks() const { return kblock_start.back(); }
};
Geometry make_geometry(const Params& p);

/// Which packed operands to build.
struct PackWhat {
  bool kt = false, k = false, v = false, vt = false;
  bool kt_bf16 = false, v_bf16 = false;  // pair-packed bf16 operands for KernelTable::gemm_bf16
  bool vt_bf16 = false, k_bf16 = false;  // backward: V^T (pairs over dv), K rows (pairs over keys)
  float kt_scale =
      1.0f;  // fp32 K^T is packed as kt_scale * K^T (the forward folds its score scale)
};

/// Packed operands; the storage belongs to the calling thread's arena (reused by its next call).
struct PackedKV {
  float *kt = nullptr, *k = nullptr, *v = nullptr, *vt = nullptr;
  int64_t heads_kv = 0, dp = 0, dvp = 0;
  const float* kt_block(int64_t kb, int64_t g) const { return kt + (kb * heads_kv + g) * dp * kBk; }
  const float* k_block(int64_t kb, int64_t g) const { return k + (kb * heads_kv + g) * dp * kBk; }
  const float* v_block(int64_t kb, int64_t g) const { return v + (kb * heads_kv + g) * dvp * kBk; }
  const float* vt_block(int64_t kb, int64_t g) const {
    return vt + (kb * heads_kv + g) * dvp * kBk;
  }
  // bf16 pair-packed (bf16 inputs only, bits copied, no rounding):
  //   ktb block: element (d, j) at (d/2)*2*kBk + 2*j + d%2     (B of S = Q K^T, ldb2 = 2*kBk)
  //   vb  block: element (j, c) at (j/2)*2*dvp + 2*c + j%2     (B of O = P V,   ldb2 = 2*dvp)
  //   vtb block: element (c, j) at (c/2)*2*kBk + 2*j + c%2     (B of dP = dO V^T, ldb2 = 2*kBk)
  //   kb  block: element (j, d) at (j/2)*2*dp + 2*d + j%2      (B of dQ = dS K,   ldb2 = 2*dp)
  uint16_t *ktb = nullptr, *vb = nullptr, *vtb = nullptr, *kpb = nullptr;
  const uint16_t* vtb_block(int64_t kb, int64_t g) const {
    return vtb + (kb * heads_kv + g) * dvp * kBk;
  }
  const uint16_t* kpb_block(int64_t kb, int64_t g) const {
    return kpb + (kb * heads_kv + g) * dp * kBk;
  }
  const uint16_t* ktb_block(int64_t kb, int64_t g) const {
    return ktb + (kb * heads_kv + g) * dp * kBk;
  }
  const uint16_t* vb_block(int64_t kb, int64_t g) const {
    return vb + (kb * heads_kv + g) * dvp * kBk;
  }
};

/// Grow-only, uninitialised fp32 buffer `slot` (0..kArenaSlots-1) of the calling thread, reused
/// across calls: fresh buffers cost page faults plus zeroing, ~5% of a B=2, H=16, S=1024, D=64
/// forward (perf). Memory stays allocated until the thread exits (the size of the largest call's
/// packed K/V).
float* thread_arena(int slot, int64_t floats);
inline constexpr int kArenaSlots = 8;

/// kt [dp][kBk] = scale * K^T of keys j0 .. j0+kBk-1 of sequence b, kv head g (fp32 K with unit
/// d-stride; zero past the sequence end and for d >= head_dim).
void pack_kt_block_f32(const Params& p, const SeqSpan& sp, int64_t b, int64_t g, int64_t j0,
                       int64_t dp, float scale, float* kt);

/// Converts and packs K/V for every (key block, kv head), in parallel on p.num_threads.
PackedKV pack_kv(const Params& p, const Geometry& geo, PackWhat what, int threads);

/// Converting row access. offset = element offset of the row's first element, stride = the d
/// stride; dst[0..n) = scale * x, dst[n..n_pad) = 0.
void load_row(const void* base, DType t, int64_t offset, int64_t stride, int64_t n, int64_t n_pad,
              float scale, float* dst);
/// bf16 row copy (bits, no conversion): dst[0..n) = x, dst[n..n_pad) = 0.
void load_row_bf16_bits(const void* base, int64_t offset, int64_t stride, int64_t n, int64_t n_pad,
                        uint16_t* dst);
/// Stores scale * src[0..n) rounded (RNE) to t.
void store_row(void* base, DType t, int64_t offset, int64_t stride, int64_t n, const float* src,
               float scale);

/// Element offsets of row (b, i, h) of a [B, S, H, D] tensor and of lse (b, h, i); i is the row
/// inside sequence b, `start` its packed offset (varlen) or 0.
inline int64_t row_offset(const Strides4& st, int64_t b, int64_t start, int64_t i, int64_t h) {
  return b * st.b + (start + i) * st.s + h * st.h;
}

int resolve_threads(const Params& p);

}  // namespace attnkit::cpu_flash
