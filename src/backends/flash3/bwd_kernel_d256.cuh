// flash3 backward at D = 256 (session 26): the main kernel of bwd_launch_d256.cuh's three launches
// (the preprocess and the dQ conversion are bwd_kernel.cuh's, D-generic): causal (both
// alignments), GQA, Sq != Sk, and (kMod) softcap, ALiBi, sliding windows and bool / additive
// masks; varlen (kVarlen, session 30) and, for plain calls, deterministic (kDet, session 30).
// Two consumer layouts share this kernel's producer and shared-memory map: the split layout
// described below (kMod calls; plain calls with ATTNKIT_FLASH3_BWD_D256_LAYOUT=split), and since
// session 29 for plain calls the RS layout (kRs: bwd_d256_rs.cuh, its own header).
//
// Why its own kernel: bwd_kernel.cuh gives each consumer warpgroup 64 keys and all D columns of
// dK and dV in registers, D / 2 + D / 2 fp32 a thread: 256 at D = 256, more than a thread has.
// Here, as FlashAttention-3 does at D 256, a CTA owns 64 keys and its two consumer warpgroups
// split dK / dV by columns: WG w keeps dK[:, 128 w .. 128 w + 127] and dV likewise (64 + 64
// registers). Per query block of 64 rows (looping over the q heads of the GQA group):
//   S^T_w [64 keys x 32 queries] = K Q_w^T, dP^T_w = V dO_w^T          (WG w: queries 32 w ..)
//       wgmma m64n32k16 SS, K = 256 (16 k-steps), A and B K-major
//   P^T_w = exp2(S^T scale_log2 - lse2), dS^T_w = P^T_w (dP^T_w - delta)          registers
//   P^T_w, dS^T_w -> smem tiles [64 keys][64 queries] (16-bit, 128B swizzle), double-buffered
//       by item parity; a 256-thread barrier: both halves present
//   dV_w += P^T dO[:, cols_w], dK_w += dS^T Q[:, cols_w]     m64n128k16 SS (A K-major from the
//       P^T / dS^T tiles, B MN-major), K = 64 queries
//   dQ[:, cols_w] = dS K[:, cols_w]                          m64n128k16 SS (both MN-major),
//       K = 64 keys, issued first; fp32 stored into the item's dead Q / dO columns and added
//       into the workspace tile's part w by the producer's bulk reduce-adds (see below;
//       kDqN = 128, the layout of bwd_traits.hpp, converted by bwd_dq_convert_kernel<256, 128>)
// The S^T / dP^T GEMMs are split by queries so that no GEMM is computed twice; the price is the
// smem round trip of P^T / dS^T (FA3 makes the same trade at D 256).
// Shared memory: K, V [64 x 256] 32 KB each; Q, dO [2 stages][64 x 256] 128 KB; P^T, dS^T
// [2 buffers][64 x 64] 32 KB: 224 KB + barriers + 1 KB alignment (of 227).
// Registers per consumer thread: dK, dV 64 each, dQ 64 (live only from its issue to its stores),
// S^T / dP^T 16 each: at most 192 + addressing under setmaxnreg 240.
// Double-buffered P^T / dS^T need one barrier per item: WG w rewrites buffer it % 2 at item it
// after passing item it - 1's barrier, which the other WG reached only after waiting for all of
// its item it - 2 GEMMs (the last readers of that buffer).
#pragma once

#include <cstdint>

#include "backends/flash3/bwd_args.hpp"
#include "backends/flash3/bwd_d256_rs.cuh"
#include "backends/flash3/bwd_d256_score_mod.cuh"
#include "backends/flash3/bwd_kernel.cuh"
#include "backends/flash3/bwd_order.cuh"
#include "backends/flash3/bwd_trace.hpp"
#include "backends/flash3/bwd_wgmma_ops.hpp"
#include "backends/flash3/dropout.cuh"
#include "backends/flash3/mask_elem.cuh"
#include "backends/flash3/reg_ops.cuh"
#include "cuda/ptx_sm90.hpp"
#include "cuda/sfu_math.cuh"

namespace attnkit::flash3::bwd {

struct BwdTraits256 {
  static constexpr int kD = 256;
  static constexpr int kBlockN = 64;  // keys per CTA
  static constexpr int kBlockM = 64;  // query rows per item
  static constexpr int kStages = 2;
  static constexpr int kConsumerWGs = 2;
  static constexpr int kThreads = 128 * (1 + kConsumerWGs);
  static constexpr int kChunks = kD / 64;                   // [rows][64] column chunks
  static constexpr int kRowBytes = 128;                     // one swizzle row: 64 x 16 bit
  static constexpr int kQChunkBytes = kBlockM * kRowBytes;  // 8 KB
  static constexpr int kQBytes = kBlockM * kD * 2;          // 32 KB
  static constexpr int kKChunkBytes = kBlockN * kRowBytes;  // 8 KB
  static constexpr int kKBytes = kBlockN * kD * 2;          // 32 KB
  static constexpr int kTileBytes = kBlockN * kBlockM * 2;  // a P^T or dS^T tile, 8 KB
  static constexpr int kDqN = 128;                          // dQ columns per WG (workspace parts)
  static constexpr int kProducerRegs = 24;
  static constexpr int kConsumerRegs = 240;
  static constexpr int kOffK = 0;
  static constexpr int kOffV = kOffK + kKBytes;
  static constexpr int kOffQ = kOffV + kKBytes;
  static constexpr int kOffDO = kOffQ + kStages * kQBytes;
  static constexpr int kOffPT = kOffDO + kStages * kQBytes;  // [2 buffers] P^T tiles
  static constexpr int kOffDS = kOffPT + 2 * kTileBytes;     // [2 buffers] dS^T tiles
  static constexpr int kOffBars = kOffDS + 2 * kTileBytes;
  static constexpr int kNumBars = 1 + 2 * kStages;  // full_kv, full[s], empty[s]
  static constexpr int kSmemBytes = kOffBars + kNumBars * 8 + 1024;
  static_assert(kSmemBytes <= 227 * 1024, "shared memory per CTA");
  static_assert(kOffPT % 1024 == 0 && kOffDS % 1024 == 0, "swizzle atoms 1024-aligned");
};

// The GEMM order after dS^T: dQ first (session 26 call 5, with atomics then: +5..+10 % over dQ
// after dV / dK). Session 27 call 2 measured a split of the atomics (half under dV / dK, half
// under the next item's S^T / dP^T): -1..-4.5 %, dropped; so was issuing the next S^T / dP^T
// before dV / dK retire (ptxas serialised every wgmma, C7512).
/// kMod (session 26): softcap, ALiBi, a sliding window and a bool / additive mask, each where set
/// (BwdArgs as bwd_kernel.cuh's kMod kinds take them), tested per element: at D 256 a thread
/// has 16 scores per item against 4 x 64 accumulator registers of GEMM work, so one general
/// kernel serves every combination (softcap with a mask too: t = tanh is kept in registers, not
/// recovered from P as the D 64 / 128 kernels do).
/// dQ (session 28) leaves through the item's own Q / dO stage, not by float4 atomics from
/// registers. dQ, dV and dK are committed as three wgmma groups. Once dV is done, WG w's columns
/// of dO(s) (chunks 2 w, 2 w + 1) are dead (the other WG read them last in its dP^T, before the
/// item's barrier): the second half of its dQ part [64 x 128] fp32 goes there while dK runs; the
/// first half goes into its Q(s) chunks after dK. The stage is then released, and the producer
/// thread, before refilling it, adds the item's 64 KB into the workspace with four bulk
/// reduce-adds (cp.reduce.async.bulk) and waits for their shared-memory reads. No extra shared
/// memory. Measured (calls 2 and 4, one process per run): +2.6..+7.5 % over the atomics, whose 16
/// REDs a thread took ~2080 of the item's ~6450 clocks to issue (lg throttle; call 1's trace);
/// storing the second half under dK rather than after it: +0..+1.5 %. cuDNN's D 256 kernel
/// issues no REDG either.
/// kRs (session 28; plain calls only, their default since session 29): the consumers run
/// bwd_d256_rs.cuh's layout (S^T / dP^T by GEMM at m64n64, dV / dK as RS GEMMs); the producer
/// takes dQ part 0 from dO(s) and part 1 from Q(s).
/// The producer thread of bwd_kernel_d256 (its thread 0): K and V once, then Q and dO of every item
/// through the ring, and each item's dQ out of its stage by bulk reduce-adds before the refill.
/// kDet: the deterministic turn around each tile's adds (see the kernel's comment).
template <bool kRs, bool kDet = false, typename Tr = BwdTraits256>
__device__ __forceinline__ void d256_produce(const BwdArgs& maps, const BwdArgs& a, uint8_t* smem,
                                             uint64_t* full_kv, uint64_t* full, uint64_t* empty,
                                             int n0, int g, int bt, int k0, int q0, int m_begin,
                                             int m_count, int items, [[maybe_unused]] int kblk) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  namespace ptx = attnkit::cuda::sm90;
  constexpr int kBM = Tr::kBlockM, kStages = Tr::kStages, D = Tr::kD;
  ptx::tma_prefetch_map(&maps.tma_q);
  ptx::tma_prefetch_map(&maps.tma_do);
  ptx::mbar_arrive_expect_tx(full_kv, 2 * Tr::kKBytes);
#pragma unroll
  for (int c = 0; c < Tr::kChunks; ++c) {
    ptx::tma_load_4d(smem + Tr::kOffK + c * Tr::kKChunkBytes, &maps.tma_k, full_kv, c * 64, k0 + n0,
                     g, bt);
    ptx::tma_load_4d(smem + Tr::kOffV + c * Tr::kKChunkBytes, &maps.tma_v, full_kv, c * 64, k0 + n0,
                     g, bt);
  }
  // Item j's dQ [64 x 256] fp32 (the workspace tile at row(j) * D: part w = columns
  // 128 w .., 32 KB, first half from Q(s) chunks 2 w, 2 w + 1, second from dO(s)'s) -> L2.
  auto reduce_dq = [&](int j, int s) {
    const Item y = item_of(a, g, j, m_begin, m_count, kBM);
    float* tile = a.dq_acc + ((static_cast<int64_t>(bt) * a.heads_q + y.h) * a.sq_pad + y.m0) * D;
    [[maybe_unused]] int* sem = nullptr;
    [[maybe_unused]] int turn = 0;
    if constexpr (kDet) {  // wait for this key block's turn on the tile
      const int nkb = static_cast<int>(gridDim.x), mb = y.m0 / kBM;
      int first = nkb - 1;
      if (a.causal) {
        const int qb = (mb * kBM + kBM - 1 + a.causal_offset) / Tr::kBlockN;
        first = qb < first ? qb : first;
      }
      turn = first - kblk;  // >= 0: a key block visits a tile only if some row sees it
      sem = a.dq_sem + (static_cast<int64_t>(bt) * a.heads_q + y.h) * a.num_m_blocks + mb;
      while (ptx::ld_acquire_gpu(sem) != turn) {
      }
      ptx::fence_proxy_async_global();  // the earlier key blocks' adds before ours
    }
    if constexpr (kRs) {  // part 0 whole in dO(s), part 1 in Q(s)
      ptx::bulk_reduce_add_f32(tile, smem + Tr::kOffDO + s * Tr::kQBytes, Tr::kQBytes);
      ptx::bulk_reduce_add_f32(tile + 64 * Tr::kDqN, smem + Tr::kOffQ + s * Tr::kQBytes,
                               Tr::kQBytes);
    } else {
#pragma unroll
      for (int w = 0; w < Tr::kConsumerWGs; ++w) {
        const int cb = s * Tr::kQBytes + 2 * w * Tr::kQChunkBytes;
        ptx::bulk_reduce_add_f32(tile + w * 64 * Tr::kDqN, smem + Tr::kOffQ + cb,
                                 2 * Tr::kQChunkBytes);
        ptx::bulk_reduce_add_f32(tile + w * 64 * Tr::kDqN + 32 * Tr::kDqN, smem + Tr::kOffDO + cb,
                                 2 * Tr::kQChunkBytes);
      }
    }
    ptx::bulk_commit();
    if constexpr (kDet) {  // our adds complete in L2, then the next key block's turn
      ptx::bulk_wait<0>();
      ptx::fence_proxy_async_global();
      ptx::st_release_gpu(sem, turn + 1);
    }
  };
  for (int it = 0; it < items; ++it) {
    const int s = it % kStages;
    const uint32_t ph = (it / kStages) & 1;
    const Item x = item_of(a, g, it, m_begin, m_count, kBM);
    ptx::mbar_wait(&empty[s], ph ^ 1);
    if (it >= kStages) {  // the stage holds item it - kStages's dQ: add it, then refill
      reduce_dq(it - kStages, s);
      ptx::bulk_wait_read<0>();
    }
    ptx::mbar_arrive_expect_tx(&full[s], 2 * Tr::kQBytes);
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c) {
      ptx::tma_load_4d(smem + Tr::kOffQ + s * Tr::kQBytes + c * Tr::kQChunkBytes, &maps.tma_q,
                       &full[s], c * 64, q0 + x.m0, x.h, bt);
      ptx::tma_load_4d(smem + Tr::kOffDO + s * Tr::kQBytes + c * Tr::kQChunkBytes, &maps.tma_do,
                       &full[s], c * 64, q0 + x.m0, x.h, bt);
    }
  }
  // The last kStages items' dQ (their stages' release: phase (j / kStages) of empty[s]).
  for (int j = items > kStages ? items - kStages : 0; j < items; ++j) {
    const int s = j % kStages;
    ptx::mbar_wait(&empty[s], (j / kStages) & 1);
    reduce_dq(j, s);
  }
  ptx::bulk_wait<0>();  // shared memory read (and the adds done) before the CTA exits
#endif
}

/// kVarlen (session 30): packed sequences, as bwd_kernel.cuh's kVarlen: blockIdx.z is the
/// sequence, whose lengths, causal / window bounds, workspace rows and dK / dV rows come from
/// varlen_bwd_args; the tensor maps are over the packed [1, total, H, D] tensors (batch
/// coordinate 0, rows from the sequence's first). Rows past the sequence in a block (the next
/// sequence's, or TMA's zero fill past the total) are masked as keys past Sk and query rows with
/// lse2 = +inf, as in the dense kernel.
/// kDet (session 30, run in session 31): the deterministic backward. Each
/// (q head, query block) dQ tile takes the key blocks' partial sums in one fixed order, key block
/// `first` (the highest that sees the tile) down to 0, through a turn counter per tile
/// (BwdArgs::dq_sem, int [bh, m_blocks], zeroed by the launcher): the producer waits for its turn
/// before the tile's bulk reduce-adds, waits for them to complete (not just to read), then hands
/// the turn on. Key blocks are launched in reverse (block x runs key block N - 1 - x), so every
/// wait is on a CTA launched earlier (as the D 64 / 128 kDet and FA3 assume: blocks start in
/// index order, which CUDA does not promise formally). Plain dense calls on the RS layout; no
/// item rotation.
/// kDrop (session 40): the kMod kernel with dropout (a kernel of its own, so that the score-mod
/// and mask kernels stay as measured).
template <bool BF16, bool kMod = false, bool kRs = false, bool kVarlen = false, bool kDet = false,
          bool kDrop = false>
__global__ void __launch_bounds__(BwdTraits256::kThreads, 1)
    bwd_kernel_d256(const __grid_constant__ BwdArgs maps) {
  static_assert(!(kRs && kMod), "the RS layout: plain calls only");
  static_assert(!kDrop || kMod, "dropout: the kMod kernel");
  static_assert(!kDet || (kRs && !kVarlen), "deterministic: plain dense calls on the RS layout");
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Tr = BwdTraits256;
  namespace ptx = attnkit::cuda::sm90;
  constexpr int kBM = Tr::kBlockM, kBN = Tr::kBlockN, kStages = Tr::kStages, D = Tr::kD;
  extern __shared__ uint8_t smem_raw[];
  uint8_t* smem = smem_raw + ((1024u - (ptx::smem_u32(smem_raw) & 1023u)) & 1023u);
  uint64_t* bars = reinterpret_cast<uint64_t*>(smem + Tr::kOffBars);
  uint64_t* full_kv = bars;
  uint64_t* full = bars + 1;
  uint64_t* empty = bars + 1 + kStages;

  // (kDet: key blocks launched in reverse, see the template's comment; maps.order_sec > 0,
  // session 49: causal dense launches x-major within sections of (kv head, batch) pairs,
  // bwd_order.cuh; never with kDet or kVarlen, whose blockIdx.z is the sequence, nor with
  // kMod: the score-mod kernels keep the hardware's order; bwd_kernel.cuh never calls bwd_cta: D
  // 128's kOrd twins read a power-of-two order from the grid)
  const BwdCta cta = kDet || kVarlen || kMod ? BwdCta{blockIdx.x, static_cast<int>(blockIdx.y),
                                                      static_cast<int>(blockIdx.z)}
                                             : bwd_cta(maps.order_sec);
  const int kblk = kDet ? static_cast<int>(gridDim.x - 1 - cta.x) : static_cast<int>(cta.x);
  const int n0 = kblk * kBN, g = cta.g, b = cta.b;
  // `a`: the launch's arguments, or (kVarlen) sequence b's; the tensor maps always from `maps`
  // (TMA reads them from the kernel parameter). q0 / k0: the sequence's first rows in the maps;
  // bt: the maps' and the workspace's batch coordinate (varlen: 0, packed).
  [[maybe_unused]] BwdArgs va;
  int q0 = 0, k0 = 0;
  if constexpr (kVarlen) {
    q0 = maps.cu_q[b];
    k0 = maps.cu_k[b];
    // Key blocks past this sequence's keys: nothing to write (the grid covers the longest).
    if (n0 >= maps.cu_k[b + 1] - k0) return;
    va = varlen_bwd_args<D, kBM>(maps, b, q0, k0);
  }
  const BwdArgs& a = kVarlen ? va : maps;
  const int bt = kVarlen ? 0 : b;
  const MRange mr = visible_m_blocks<kMod, kBM, kBN>(a, n0);
  const int m_begin = mr.begin, m_count = mr.count;
  const int items = a.group * m_count;

  init_bwd_ring<kStages>(full_kv, full, empty, Tr::kConsumerWGs * 4);
  __syncthreads();

  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    // ---- producer: K and V once, then Q and dO of every item through the ring --------------
    ptx::setmaxnreg_dec<Tr::kProducerRegs>();
    if (items == 0 || threadIdx.x != 0) return;
    d256_produce<kRs, kDet>(maps, a, smem, full_kv, full, empty, n0, g, bt, k0, q0, m_begin,
                            m_count, items, kblk);
    return;
  }

  // ---- consumers --------------------------------------------------------------------------------
  ptx::setmaxnreg_inc<Tr::kConsumerRegs>();
  if constexpr (kRs) {
    // (bt: the workspace rows' batch; dK / dV: varlen's batch stride is 0)
    d256_rs_consumer<Tr, BF16>(a, smem, full, empty, full_kv, n0, g, bt, m_begin, m_count, items,
                               wg - 1);
    return;
  }
  using WS = BwdWgmma<32, BF16>;   // S^T_w, dP^T_w [64 keys x 32 queries]
  using WD = BwdWgmma<128, BF16>;  // dK_w, dV_w [64 keys x 128 columns], dQ_w [64 x 128]
  const int w = wg - 1;            // consumer index: queries 32 w .., columns 128 w ..
  const int tid = threadIdx.x % 128, warp = tid / 32, lane = tid % 32;
  const int kr0 = 16 * warp + lane / 4;  // key row (of the block) of accumulator row r = 0
  const int key_r0 = n0 + kr0;
  const int qc = 2 * (lane % 4);
  const int qw = 32 * w;  // this WG's first query column of the block
  const uint32_t base = ptx::smem_u32(smem);
  const uint32_t k_s = base + Tr::kOffK, v_s = base + Tr::kOffV;
  const float sl2 = a.scale_log2;

  float dk[64], dv[64];
#pragma unroll
  for (int i = 0; i < 64; ++i)
    dk[i] = dv[i] = 0.f;

  // Measurement builds: clock64 stamps of the first kTraceItems items (bwd_trace.hpp).
  auto stamp = [&](int it, int k) { trace_stamp(a, tid, w, it, k); };
  if (items > 0) ptx::mbar_wait(full_kv, 0);
  for (int it = 0; it < items; ++it) {
    stamp(it, kStampTop);
    const int s = it % kStages;
    const Item x = item_of(a, g, it, m_begin, m_count, kBM);
    const uint32_t q_s = base + Tr::kOffQ + s * Tr::kQBytes;
    const uint32_t do_s = base + Tr::kOffDO + s * Tr::kQBytes;
    const int64_t row = (static_cast<int64_t>(bt) * a.heads_q + x.h) * a.sq_pad + x.m0;
    ptx::mbar_wait(&full[s], (it / kStages) & 1);
    stamp(it, kStampLanded);

    // S^T_w = K Q_w^T and dP^T_w = V dO_w^T: 16 k-steps over D (4 column chunks x 4 steps).
    float st[16], dpt[16];
    auto gemm_t = [&](float(&acc)[16], uint32_t w_s, uint32_t b_s) {
      const uint64_t da0 = bwd_desc0<kUniDesc256>(w_s, 16), db0 = bwd_desc0<kUniDesc256>(b_s, 16);
#pragma unroll
      for (int ks = 0; ks < D / 16; ++ks) {
        const uint32_t off = (ks / 4) * Tr::kKChunkBytes + (ks % 4) * 32;
        const uint32_t offq = (ks / 4) * Tr::kQChunkBytes + qw * Tr::kRowBytes + (ks % 4) * 32;
        const uint64_t da = bwd_desc_at<kUniDesc256>(da0, w_s, off, 16);
        const uint64_t db = bwd_desc_at<kUniDesc256>(db0, b_s, offq, 16);
        if (ks == 0)  // (write-only: acc's previous item is dead to the compiler)
          WS::template ss_first<0, 0>(acc, da, db);
        else
          WS::template ss<0, 0>(acc, da, db, 1);
      }
      ptx::wgmma_commit();
    };
    ptx::wgmma_fence();
    gemm_t(st, k_s, q_s);
    gemm_t(dpt, v_s, do_s);
    stamp(it, kStampIssued);

    // lse2 / delta of this thread's 8 query columns qw + 8 j + qc + e (the padded workspace rows:
    // in bounds, 8-byte aligned), loaded under the GEMMs.
    float l2[8], dl[8];
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const float2 lv = __ldg(reinterpret_cast<const float2*>(a.lse2 + row + qw + 8 * j + qc));
      const float2 dv2 = __ldg(reinterpret_cast<const float2*>(a.delta + row + qw + 8 * j + qc));
      l2[2 * j] = lv.x, l2[2 * j + 1] = lv.y;
      dl[2 * j] = dv2.x, dl[2 * j + 1] = dv2.y;
    }
    // kDrop (sessions 39-40): the item's keep bits (dropout.cuh, 4 draws a thread) while S^T /
    // dP^T run.
    [[maybe_unused]] uint32_t drop_keep = ~0u;
    if constexpr (kDrop)
      drop_keep = bwd_dropout_keep_bits<4>(a.drop_seed, a.drop_offset, a.drop_threshold,
                                           static_cast<uint32_t>(b * a.heads_q + x.h), key_r0,
                                           x.m0 + qw + qc, lane);
    ptx::wgmma_wait<0>();
    fence_regs(st);
    fence_regs(dpt);
    stamp(it, kStampSdp);
    // P^T (0 for keys >= Sk and, causal, keys right of the row's bound, kMod: left of the
    // window's edge; rows >= Sq have lse2 = +inf) and dS^T = P^T (dP^T - delta), packed to 16
    // bit: pk[2 j + r] = columns 8 j + qc, +1. kMod: softcap's t = tanh(.) first (dS^T then
    // times 1 - t^2), ALiBi, then the mask's value (score_mod.cuh's order).
    const int coff = a.causal ? a.causal_offset : (1 << 30);
    [[maybe_unused]] ModItem mi{};
    if constexpr (kMod) mi = mod_item(a, b, x.h);
    [[maybe_unused]] const int loff = kMod ? mi.lo : -(1 << 30);
    uint32_t pp[8], pds[8];
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float pv[2], dsv[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int idx = 4 * j + 2 * r + e;
          const int key = key_r0 + 8 * r, q = x.m0 + qw + 8 * j + qc + e;
          float xs = st[idx], f = 1.f;
          if constexpr (kMod) xs = score_mod_elem(a, mi, xs, q, key, f);
          float p = exp2_approx(fmaf(xs, sl2, -l2[2 * j + e]));
          p = (key >= a.seqlen_k || key > q + coff || (kMod && key < q + loff)) ? 0.f : p;
          if constexpr (kDrop) {  // dS^T = P^T (z dP^T - delta) (1 - t^2), dV from z P^T
            const float z = ((drop_keep >> (8 * (2 * r + e) + j)) & 1u) ? a.drop_rescale : 0.f;
            pv[e] = p * z;
            dsv[e] = p * fmaf(z, dpt[idx], -dl[2 * j + e]) * f;
          } else {
            pv[e] = p;
            dsv[e] = p * (dpt[idx] - dl[2 * j + e]) * f;
          }
        }
        pp[2 * j + r] = pack2<BF16>(pv[0], pv[1]);
        pds[2 * j + r] = pack2<BF16>(dsv[0], dsv[1]);
      }
    // -> the item's P^T / dS^T tiles [64 keys][64 queries] (128B swizzle: 16-byte chunk c of
    // row R at c ^ (R % 8)); this WG's columns are chunks 4 w .. 4 w + 3.
    const int buf = it & 1;
    uint8_t* pt_t = smem + Tr::kOffPT + buf * Tr::kTileBytes;
    uint8_t* ds_t = smem + Tr::kOffDS + buf * Tr::kTileBytes;
#pragma unroll
    for (int j = 0; j < 4; ++j)
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const int kr = kr0 + 8 * r;
        const int off = kr * Tr::kRowBytes + (((4 * w + j) ^ (kr & 7)) * 16) + 2 * qc;
        *reinterpret_cast<uint32_t*>(pt_t + off) = pp[2 * j + r];
        *reinterpret_cast<uint32_t*>(ds_t + off) = pds[2 * j + r];
      }
    ptx::fence_proxy_async_smem();  // generic stores -> both WGs' wgmma reads
    stamp(it, kStampSoft);
    ptx::named_bar_sync(1, 2 * 128);
    stamp(it, kStampBar);
    // dV_w += P^T dO[:, cols_w], dK_w += dS^T Q[:, cols_w]: K = 64 queries (4 steps); B spans
    // column chunks 2 w, 2 w + 1 (MN-major, chunk stride kQChunkBytes).
    const uint32_t pt_u = base + Tr::kOffPT + buf * Tr::kTileBytes;
    const uint32_t ds_u = base + Tr::kOffDS + buf * Tr::kTileBytes;
    auto issue_dvdk = [&] {
      constexpr bool kU = kUniDesc256;
      const uint64_t dpt0 = bwd_desc0<kU>(pt_u, 16), ddo0 = bwd_desc0<kU>(do_s, Tr::kQChunkBytes);
#pragma unroll
      for (int kk = 0; kk < kBM / 16; ++kk) {
        const uint32_t boff = 2 * w * Tr::kQChunkBytes + kk * 16 * Tr::kRowBytes;
        WD::template ss<0, 1>(dv, bwd_desc_at<kU>(dpt0, pt_u, kk * 32, 16),
                              bwd_desc_at<kU>(ddo0, do_s, boff, Tr::kQChunkBytes), 1);
      }
      ptx::wgmma_commit();  // dV its own group
      const uint64_t dds0 = bwd_desc0<kU>(ds_u, 16), dq0 = bwd_desc0<kU>(q_s, Tr::kQChunkBytes);
#pragma unroll
      for (int kk = 0; kk < kBM / 16; ++kk) {
        const uint32_t boff = 2 * w * Tr::kQChunkBytes + kk * 16 * Tr::kRowBytes;
        WD::template ss<0, 1>(dk, bwd_desc_at<kU>(dds0, ds_u, kk * 32, 16),
                              bwd_desc_at<kU>(dq0, q_s, boff, Tr::kQChunkBytes), 1);
      }
      ptx::wgmma_commit();
    };
    // dQ[:, cols_w] = dS K[:, cols_w]: A = the dS^T tile (MN-major: queries contiguous), B = K
    // column chunks 2 w, 2 w + 1 (MN-major), K = 64 keys.
    float dq[64];
    auto issue_dq = [&] {
      issue_dq_d256<WD, kBN>(dq, ds_u, k_s, w, Tr::kRowBytes, Tr::kTileBytes, Tr::kKChunkBytes);
      ptx::wgmma_commit();
    };
    ptx::wgmma_fence();
    issue_dq();  // first: its second half is stored while dK runs
    issue_dvdk();
    // dQ -> dO(s) / Q(s) chunks 2 w, 2 w + 1 (see above), the workspace part's bytes in order:
    // float4 j of thread tid at byte (j * 128 + tid) * 16 of the part, j < 8 in Q(s).
    uint8_t* q_part = smem + Tr::kOffQ + s * Tr::kQBytes + 2 * w * Tr::kQChunkBytes;
    uint8_t* do_part = smem + Tr::kOffDO + s * Tr::kQBytes + 2 * w * Tr::kQChunkBytes;
    auto store_dq = [&](int j0, uint8_t* dst) {
#pragma unroll
      for (int j = j0; j < j0 + 8; ++j)
        *reinterpret_cast<float4*>(dst + ((j % 8) * 128 + tid) * 16) =
            make_float4(dq[4 * j], dq[4 * j + 1], dq[4 * j + 2], dq[4 * j + 3]);
    };
    ptx::wgmma_wait<1>();  // dQ and dV done: dO(s)'s chunks 2 w, 2 w + 1 are free
    fence_regs(dq);
    fence_regs(dv);
    store_dq(8, do_part);
    ptx::wgmma_wait<0>();  // dK done: so are Q(s)'s
    fence_regs(dk);
    stamp(it, kStampDq);
    store_dq(0, q_part);
    ptx::fence_proxy_async_smem();  // generic stores -> the producer's bulk reduce
    stamp(it, kStampRed);
    __syncwarp();
    if (lane == 0) ptx::mbar_arrive(&empty[s]);
    stamp(it, kStampDone);
  }

  // ---- epilogue: dK = scale * acc, dV = acc, key rows < Sk, columns 128 w .. (pairs) -----------
#pragma unroll
  for (int r = 0; r < 2; ++r) {
    const int key = key_r0 + 8 * r;
    if (key >= a.seqlen_k) continue;
    uint16_t* dk_row =
        static_cast<uint16_t*>(a.dk) + b * a.dk_sb + key * a.dk_ss + g * a.dk_sh + 128 * w + qc;
    uint16_t* dv_row =
        static_cast<uint16_t*>(a.dv) + b * a.dv_sb + key * a.dv_ss + g * a.dv_sh + 128 * w + qc;
#pragma unroll
    for (int j = 0; j < 16; ++j) {
      *reinterpret_cast<uint32_t*>(dk_row + 8 * j) =
          pack2<BF16>(dk[4 * j + 2 * r] * a.scale, dk[4 * j + 2 * r + 1] * a.scale);
      *reinterpret_cast<uint32_t*>(dv_row + 8 * j) =
          pack2<BF16>(dv[4 * j + 2 * r], dv[4 * j + 2 * r + 1]);
    }
  }
#endif
}

}  // namespace attnkit::flash3::bwd
