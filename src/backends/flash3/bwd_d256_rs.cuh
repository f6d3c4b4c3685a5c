// flash3 D 256 backward, consumer side of the RS layout (written in session 28, the plain calls'
// default since session 29: +6..+12 % over the split layout, bench/notes/session29.md; no
// softcap / ALiBi / window / mask, which run the split layout). bwd_kernel_d256<BF16, false, true>.
//
// Why: session 28's shared-memory budget of the split layout (bench/notes/session28.md, call 3)
// is ~544 KB per item and CTA (~4250 clocks at 128 B/clk of a ~5660-clock item). Its S^T / dP^T
// are SS m64n32 halves (3 KB of operands per 32K MAC: 192 KB) and its dV / dK SS m64n128 with P^T
// / dS^T read from smem (96 KB). Here the two warpgroups split by GEMM, not by queries:
//   WG 0: S^T [64 keys x 64 queries] = K Q^T          SS m64n64k16 x 16   (64 KB of operands)
//         P^T = exp2(S^T scale_log2 - lse2); fp32 -> the P^T tile (16 KB) for WG 1
//         dV [64 keys x 256] += P^T dO                  RS m64n256k16 x 4   (A = P^T registers)
//   WG 1: dP^T = V dO^T                                  SS m64n64k16 x 16
//         dS^T = P^T (dP^T - delta) with P^T from the tile; -> the dS^T tile (8 KB, 16 bit)
//         dK [64 keys x 256] += dS^T Q                  RS m64n256k16 x 4
//   both: dQ[:, 128 w ..] = dS K[:, 128 w ..]            SS m64n128k16 x 4   (as the split)
// ~472 KB per item (-13 %). Each warpgroup keeps dV or dK whole: 128 fp32 registers, + dQ's 64.
// The P^T tile is fp32 (both P^T buffers of BwdTraits256, 16 KB) so that dS^T is formed from the
// unrounded P^T as in the split layout; it is thread-ordered, not swizzled (no wgmma reads it):
// thread tid's pair (2 j + r) at float2 index (2 j + r) * 128 + tid, the same accumulator
// position in both warpgroups.
// dQ leaves through the stage as in the split layout, but whole parts: WG 0's part [64 x 128]
// (32 KB) into dO(s) once its dV is done (WG 1 read dO(s) last in dP^T, before the dS^T hand-off
// WG 0 waited for), WG 1's into Q(s) once its dK is done (WG 0 read Q(s) last in S^T, before the
// P^T hand-off). The producer's bulk reduce-adds take part 0 from dO(s), part 1 from Q(s).
// Hand-offs (named barriers, 256 threads; WG 0 arrives at kBarP and syncs at kBarDs, WG 1 the
// reverse): single-buffered tiles suffice. WG 0 rewrites the P^T tile at item it + 1 only after
// passing kBarDs(it), which WG 1 reached after its last read of P^T(it); WG 1 rewrites the dS^T
// tile at item it + 1 only after passing kBarP(it + 1), which WG 0 reached after waiting for its
// dQ(it) (the tile's other reader; WG 1 waited for its own).
#pragma once

#include <cstdint>

#include "backends/flash3/bwd_args.hpp"
#include "backends/flash3/bwd_kernel.cuh"
#include "backends/flash3/bwd_trace.hpp"
#include "backends/flash3/bwd_wgmma_ops.hpp"
#include "backends/flash3/reg_ops.cuh"
#include "backends/flash3/wgmma_ops.hpp"
#include "cuda/ptx_sm90.hpp"

namespace attnkit::flash3::bwd {

inline constexpr int kBarP = 2;        // P^T tile stored (WG 0 -> WG 1)
inline constexpr int kBarDs = 3;       // dS^T tile stored and proxy-fenced (WG 1 -> WG 0)
inline constexpr int kBarDsLocal = 4;  // the same, among WG 1's own four warps

/// One consumer warpgroup (w = 0: S^T / P^T / dV, w = 1: dP^T / dS^T / dK) of the RS layout, all
/// its items and its epilogue. Tr = BwdTraits256 (the shared-memory map of bwd_kernel_d256.cuh;
/// the fp32 P^T tile spans both of its P^T buffers, the second dS^T buffer stays unused).
template <typename Tr, bool BF16>
__device__ __forceinline__ void d256_rs_consumer(const BwdArgs& a, uint8_t* smem, uint64_t* full,
                                                 uint64_t* empty, uint64_t* full_kv, int n0, int g,
                                                 int b, int m_begin, int m_count, int items,
                                                 int w) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  namespace ptx = attnkit::cuda::sm90;
  using WG64 = BwdWgmma<64, BF16>;  // S^T or dP^T [64 keys x 64 queries]
  using WD = BwdWgmma<128, BF16>;   // dQ_w [64 queries x 128 columns]
  using W256 = Wgmma<256, BF16>;    // dV or dK [64 keys x 256], rs: B MN-major
  constexpr int kBM = Tr::kBlockM, kBN = Tr::kBlockN, kStages = Tr::kStages, D = Tr::kD;
  const int tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
  const int kr0 = 16 * warp + lane / 4;  // key row (of the block) of accumulator row r = 0
  const int key_r0 = n0 + kr0;
  const int qc = 2 * (lane % 4);
  const uint32_t base = ptx::smem_u32(smem);
  const uint32_t k_s = base + Tr::kOffK, v_s = base + Tr::kOffV;
  float2* pt_t = reinterpret_cast<float2*>(smem + Tr::kOffPT);  // fp32, thread-ordered, 16 KB
  uint8_t* ds_t = smem + Tr::kOffDS;                            // single-buffered (see the header)
  static_assert(Tr::kOffDS - Tr::kOffPT >= 64 * 64 * 4, "the fp32 P^T tile fits both buffers");
  const uint32_t ds_u = base + Tr::kOffDS;
  const float sl2 = a.scale_log2;
  const int coff = a.causal ? a.causal_offset : (1 << 30);
  // Element (j, r, e) of the [64 keys][64 queries] dS^T tile: key row kr0 + 8 r, query column
  // 8 j + qc + e, at byte kr * 128 + ((j ^ (kr % 8)) * 16) + 2 qc (128B swizzle).
  auto tile_off = [&](int j, int r) {
    const int kr = kr0 + 8 * r;
    return kr * Tr::kRowBytes + ((j ^ (kr & 7)) * 16) + 2 * qc;
  };

  float acc[128];  // w = 0: dV, w = 1: dK (unscaled) [64 keys x 256]
#pragma unroll
  for (int i = 0; i < 128; ++i)
    acc[i] = 0.f;

  // Measurement builds (bwd_trace.hpp), the split layout's stamps where this layout has the
  // same point: issued / sdp (S^T or dP^T), soft (WG 0: P^T stored; WG 1: dS^T stored), bar (WG
  // 0: dV issued and the dS^T hand-off passed; WG 1: dK issued and its own barrier passed), dq
  // (dV / dK and dQ done), red (dQ stored), done (stage released).
  auto stamp = [&](int it, int k) { trace_stamp(a, tid, w, it, k); };
  if (items > 0) ptx::mbar_wait(full_kv, 0);
  for (int it = 0; it < items; ++it) {
    stamp(it, kStampTop);
    const int s = it % kStages;
    const Item x = item_of(a, g, it, m_begin, m_count, kBM);
    const uint32_t q_s = base + Tr::kOffQ + s * Tr::kQBytes;
    const uint32_t do_s = base + Tr::kOffDO + s * Tr::kQBytes;
    const int64_t row = (static_cast<int64_t>(b) * a.heads_q + x.h) * a.sq_pad + x.m0;
    ptx::mbar_wait(&full[s], (it / kStages) & 1);
    stamp(it, kStampLanded);

    // WG 0: S^T = K Q^T; WG 1: dP^T = V dO^T [64 keys x 64 queries]. 16 k-steps over D, both
    // operands K-major.
    float sg[32];
    {
      const uint32_t a_s = w == 0 ? k_s : v_s, b_s = w == 0 ? q_s : do_s;
      ptx::wgmma_fence();
      const uint64_t da0 = bwd_desc0<kUniDesc256>(a_s, 16), db0 = bwd_desc0<kUniDesc256>(b_s, 16);
#pragma unroll
      for (int ks = 0; ks < D / 16; ++ks) {
        const uint32_t off = (ks / 4) * Tr::kKChunkBytes + (ks % 4) * 32;
        const uint32_t offq = (ks / 4) * Tr::kQChunkBytes + (ks % 4) * 32;
        const uint64_t da = bwd_desc_at<kUniDesc256>(da0, a_s, off, 16);
        const uint64_t db = bwd_desc_at<kUniDesc256>(db0, b_s, offq, 16);
        if (ks == 0)
          WG64::template ss_first<0, 0>(sg, da, db);
        else
          WG64::template ss<0, 0>(sg, da, db, 1);
      }
      ptx::wgmma_commit();
    }
    stamp(it, kStampIssued);
    // lse2 (WG 0) or delta (WG 1) of this thread's 16 query columns 8 j + qc + e (the padded
    // workspace rows: in bounds, 8-byte aligned), loaded under the GEMM.
    float sv[16];
    {
      const float* stat = (w == 0 ? a.lse2 : a.delta) + row;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float2 v2 = __ldg(reinterpret_cast<const float2*>(stat + 8 * j + qc));
        sv[2 * j] = v2.x, sv[2 * j + 1] = v2.y;
      }
    }
    ptx::wgmma_wait<0>();
    fence_regs(sg);
    stamp(it, kStampSdp);

    // pk[2 j + r]: columns 8 j + qc, +1 of key row kr0 + 8 r, 16 bit (P^T on WG 0, dS^T on WG 1):
    // the m64k16 A fragments of the RS GEMM, k-step kk = {pk[4 kk] .. pk[4 kk + 3]}.
    uint32_t pk[16];
    if (w == 0) {
      // P^T (0 for keys >= Sk and, causal, right of the row's bound; rows >= Sq: lse2 = +inf)
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          float pv[2];
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            const int key = key_r0 + 8 * r, q = x.m0 + 8 * j + qc + e;
            const float p = exp2_approx(fmaf(sg[4 * j + 2 * r + e], sl2, -sv[2 * j + e]));
            pv[e] = (key >= a.seqlen_k || key > q + coff) ? 0.f : p;
          }
          pk[2 * j + r] = pack2<BF16>(pv[0], pv[1]);
          pt_t[(2 * j + r) * 128 + tid] = make_float2(pv[0], pv[1]);
        }
      stamp(it, kStampSoft);
      ptx::named_bar_arrive(kBarP, 2 * 128);  // P^T -> WG 1 (generic loads: no proxy fence)
    } else {
#pragma unroll
      for (int i = 0; i < 32; ++i)
        sg[i] -= sv[(i / 4) * 2 + i % 2];  // dP^T - delta, while WG 0 computes P^T
      ptx::named_bar_sync(kBarP, 2 * 128);
      // All 16 P^T loads before the first dS^T store (session 29, call 7: +1..+3 %). Interleaved,
      // each load waited for the store before it (the compiler cannot prove the two tiles
      // disjoint), 16 shared-memory latencies in a row on the item's critical chain.
      float2 pt[16];
#pragma unroll
      for (int i = 0; i < 16; ++i)
        pt[i] = pt_t[i * 128 + tid];
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const float2 p2 = pt[2 * j + r];
          const float d0 = p2.x * sg[4 * j + 2 * r];
          const float d1 = p2.y * sg[4 * j + 2 * r + 1];
          pk[2 * j + r] = pack2<BF16>(d0, d1);
          *reinterpret_cast<uint32_t*>(ds_t + tile_off(j, r)) = pk[2 * j + r];
        }
      ptx::fence_proxy_async_smem();  // generic stores -> both WGs' dQ wgmma reads
      stamp(it, kStampSoft);
      ptx::named_bar_arrive(kBarDs, 2 * 128);
    }

    // WG 0: dV += P^T dO; WG 1: dK += dS^T Q. K = 64 queries (4 k-steps of 16), B [16 queries x
    // 256 columns] MN-major across the stage's 4 column chunks (chunk stride kQChunkBytes).
    {
      const uint32_t b_s = w == 0 ? do_s : q_s;
      ptx::wgmma_fence();
      const uint64_t db0 = bwd_desc0<kUniDesc256>(b_s, Tr::kQChunkBytes);
#pragma unroll
      for (int kk = 0; kk < kBM / 16; ++kk) {
        const uint32_t af[4] = {pk[4 * kk], pk[4 * kk + 1], pk[4 * kk + 2], pk[4 * kk + 3]};
        W256::rs(acc, af,
                 bwd_desc_at<kUniDesc256>(db0, b_s, kk * 16 * Tr::kRowBytes, Tr::kQChunkBytes), 1);
      }
      ptx::wgmma_commit();
    }
    // The whole dS^T tile before dQ reads it: WG 0 waits for WG 1's hand-off; WG 1's own warps
    // for each other (bar.arrive above does not wait), on a barrier of its own.
    if (w == 0)
      ptx::named_bar_sync(kBarDs, 2 * 128);
    else
      ptx::named_bar_sync(kBarDsLocal, 128);
    stamp(it, kStampBar);

    // dQ[:, cols_w] = dS K[:, cols_w]: A = the dS^T tile (MN-major), B = K column chunks 2 w,
    // 2 w + 1 (MN-major), K = 64 keys. Then dQ part w -> dO(s) (w = 0) or Q(s) (w = 1), 32 KB in
    // the workspace part's order: float4 j of thread tid at byte (j * 128 + tid) * 16.
    uint8_t* part = smem + (w == 0 ? Tr::kOffDO : Tr::kOffQ) + s * Tr::kQBytes;
    float dq[64];
    ptx::wgmma_fence();
    issue_dq_d256<WD, kBN>(dq, ds_u, k_s, w, Tr::kRowBytes, Tr::kTileBytes, Tr::kKChunkBytes);
    ptx::wgmma_commit();
    ptx::wgmma_wait<0>();  // dV / dK and dQ done: this WG's reads of the stage are over
    fence_regs(acc);
    fence_regs(dq);
    stamp(it, kStampDq);
#pragma unroll
    for (int j = 0; j < Tr::kDqN / 8; ++j)
      *reinterpret_cast<float4*>(part + (j * 128 + tid) * 16) =
          make_float4(dq[4 * j], dq[4 * j + 1], dq[4 * j + 2], dq[4 * j + 3]);
    ptx::fence_proxy_async_smem();  // generic stores -> the producer's bulk reduce
    stamp(it, kStampRed);
    __syncwarp();
    if (lane == 0) ptx::mbar_arrive(&empty[s]);
    stamp(it, kStampDone);
  }

  // ---- epilogue: WG 0 dV = acc, WG 1 dK = scale * acc; key rows < Sk, all 256 columns --------
  const float mul = w == 0 ? 1.f : a.scale;
  void* out = w == 0 ? a.dv : a.dk;
  const int64_t sb = w == 0 ? a.dv_sb : a.dk_sb, ss = w == 0 ? a.dv_ss : a.dk_ss;
  const int64_t sh = w == 0 ? a.dv_sh : a.dk_sh;
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int key = key_r0 + 8 * r;
    if (key >= a.seqlen_k) continue;
    uint16_t* dst = static_cast<uint16_t*>(out) + b * sb + key * ss + g * sh + qc;
#pragma unroll
    for (int j = 0; j < 32; ++j)
      *reinterpret_cast<uint32_t*>(dst + 8 * j) =
          pack2<BF16>(acc[4 * j + 2 * r] * mul, acc[4 * j + 2 * r + 1] * mul);
  }
#endif
}

}  // namespace attnkit::flash3::bwd
