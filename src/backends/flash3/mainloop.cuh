// The flash3 forward mainloop: the producer's TMA schedule and the consumers' wgmma pipeline.
//
// Pipeline (per consumer warpgroup, tiles visited n-1 .. 0, stage = iteration % kStages):
//   it = 0:   S = Q K_0^T; softmax -> P
//   it >= 1:  issue S' = Q K_it^T; issue O += P V_{it-1}; wait S'; softmax(S') -> factor;
//             wait PV; O *= factor; P = pack(S')
//   end:      O += P V_last
// so the exp2/max work of tile it is meant to overlap the tensor cores' P V of tile it-1 (FA3's
// intra-warpgroup overlap) -- which ptxas undoes by hoisting the P V wait unless
// Tuning::ordered_softmax (softmax_before_wait). P' is packed to 16 bit only after the PV wait.
// On top, the 2 or 3 consumer warpgroups ping-pong their GEMM issue (PingPong below), the
// pipeline indices run on across the tiles of a persistent CTA, and (Consumer, D <= 128) the
// "end" step of one tile shares its turn with the "it = 0" step of the next.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backends/flash3/bwd_wgmma_ops.hpp"
#include "backends/flash3/cluster.cuh"
#include "backends/flash3/dropout.cuh"
#include "backends/flash3/epilogue.cuh"
#include "backends/flash3/fwd_args.hpp"
#include "backends/flash3/mask_blocks.hpp"
#include "backends/flash3/reg_ops.cuh"
#include "backends/flash3/score_mod.cuh"
#include "backends/flash3/softmax.cuh"
#include "backends/flash3/tail.cuh"
#include "backends/flash3/tile_scheduler.cuh"
#include "backends/flash3/traits.hpp"
#include "backends/flash3/wgmma_ops.hpp"
#include "cuda/ptx_sm80.hpp"
#include "cuda/ptx_sm90.hpp"

namespace attnkit::flash3 {

/// Carves the 1024-aligned dynamic shared memory: Q stages | K stages | V stages | barriers |
/// scheduler slots (ATTNKIT_FLASH3_FWD_D256_TMA_EPI: O's staging before the barriers).
template <class Tr>
struct SmemLayout {
  uint8_t* q;  // Q buffer i at q + i * kQBytes
  uint8_t* k;  // stage s at k + s * kKStageBytes
  uint8_t* v;
  uint8_t* zero;      // [kD / 64][16][64] zeros (FwdTraits::kZeroBytes)
  uint8_t* ones;      // kTcSum: the 16-bit ones (FwdTraits: after both V stages at D 128,
                      // after each at D 256, kTcVStageBytes apart)
  uint64_t* full_q;   // [kQStages] TMA -> consumers (tx bytes)
  uint64_t* empty_q;  // [kQStages] consumer warps -> producer: that Q is no longer read
  uint64_t* full_k;
  uint64_t* full_v;
  uint64_t* empty_k;
  uint64_t* empty_v;
  int* sched_tile;  // [kSchedSlots] dynamic tile scheduler hand-over (SchedSlot)
#if ATTNKIT_FLASH3_FWD_D256_TMA_EPI
  // FwdTraits::kEpiStageBytes (before the barriers): O's staging, consumer warp w's
  // kEpiStageBufs x 2 KB at epi + w x FwdTraits::kEpiStageWarpBytes
  uint8_t* epi;
#endif
  __device__ explicit SmemLayout(uint8_t* base) {
    q = base;
    k = q + Tr::kQStages * Tr::kQBytes;
    // the ring: k = v = its slot 0; kTcSum: v = k, V stage s at v + Tr::v_off(s)
    v = k + (Tr::kRing || Tr::kTcSum ? 0 : Tr::kStagesK * Tr::kKVBytes);
    zero = k + Tr::kKVRegionBytes;
    ones = k + Tr::kOnesOff;
#if ATTNKIT_FLASH3_FWD_D256_TMA_EPI
    epi = zero + Tr::kZeroBytes;  // (1024-aligned: traits.hpp)
    uint64_t* bars = reinterpret_cast<uint64_t*>(epi + Tr::kEpiStageBytes);
#else
    uint64_t* bars = reinterpret_cast<uint64_t*>(zero + Tr::kZeroBytes);
#endif
    full_q = bars;
    empty_q = full_q + Tr::kQStages;
    full_k = empty_q + Tr::kQStages;
    full_v = full_k + Tr::kStagesK;
    empty_k = full_v + Tr::kStagesV;
    empty_v = empty_k + Tr::kStagesK;
    sched_tile = reinterpret_cast<int*>(empty_v + Tr::kStagesV);
    static_assert((2 * Tr::kQStages + 2 * Tr::kStagesK + 2 * Tr::kStagesV) * 8 + 4 * kSchedSlots <=
                      Tr::kBarrierRegionBytes,
                  "flash3: barriers + the scheduler's slot ring exceed their region");
  }
};

/// Q buffer use, counted over the tiles this CTA has visited (producer and consumers count
/// alike): nq = 1 or 2 buffers in use (FwdArgs::q_bufs).
struct QIndex {
  int count = 0;
  __device__ __forceinline__ int buf(int nq) const { return nq == 2 ? count & 1 : 0; }
  __device__ __forceinline__ uint32_t phase(int nq) const {
    return (nq == 2 ? count >> 1 : count) & 1;
  }
};

/// Position in the K/V rings (K blocks loaded = V blocks loaded), counted over every tile this
/// CTA has visited (producer and consumers advance it identically, so stage/phase agree without
/// communication). The K ring has KS stages, the V ring VS (FwdTraits::kStagesK/V).
template <int KS, int VS>
struct PipeIndex {
  static constexpr uint32_t kKS = KS, kVS = VS;
  int count = 0;
  __device__ __forceinline__ int ks(int ahead = 0) const { return (count + ahead) % KS; }
  __device__ __forceinline__ uint32_t kph(int ahead = 0) const {
    return ((count + ahead) / KS) & 1;
  }
  __device__ __forceinline__ int vs(int ahead = 0) const { return (count + ahead) % VS; }
  __device__ __forceinline__ uint32_t vph(int ahead = 0) const {
    return ((count + ahead) / VS) & 1;
  }
};
template <class Tr>  // (the chunk ring has no V stages: RingPos indexes it)
using PipeOf = PipeIndex<Tr::kStagesK, (Tr::kStagesV > 0 ? Tr::kStagesV : 1)>;

/// Position of chunk j of K/V block c in the K/V chunk ring (FwdTraits::kRing): the stream is
/// K(c) = chunks 8c .. 8c+3, V(c) = 8c+4 .. 8c+7 (c = PipeIndex::count, blocks over all tiles of
/// the CTA); chunk position p lives in slot p % RS, in that slot's use (p / RS), so its "full"
/// barrier completes phase parity (p / RS) & 1 and its "empty" one the same.
template <int RS>
struct RingPos {
  int slot;
  uint32_t parity;
  __device__ __forceinline__ explicit RingPos(int p) : slot(p % RS), parity((p / RS) & 1) {}
  __device__ __forceinline__ RingPos(int s, uint32_t ph) : slot(s), parity(ph) {}
  /// The same position with its slot in a uniform register (warp_uniform).
  __device__ __forceinline__ RingPos uniform() const { return RingPos(warp_uniform(slot), parity); }
  /// The chunk j positions later (j < RS).
  __device__ __forceinline__ RingPos next(int j) const {
    return slot + j >= RS ? RingPos(slot + j - RS, parity ^ 1u) : RingPos(slot + j, parity);
  }
};

/// Producer of the ring variant (one thread; FwdTraits::kRing). Per K/V block, in the order
/// the consumers read and release them:
///   K chunk j = 0..3: keys 64 * (j < 2) .. + 63, columns 128 * (j % 2) .. + 127: two TMA boxes
///                     [64 keys][64 columns] (8 KB each, K-major, 128B swizzle);
///   V chunk j = 0..3: keys 32 j .. 32 j + 31, all 256 columns: four boxes [32 keys][64 columns]
///                     (4 KB each; wgmma reads V MN-major, box c at +4096 c).
/// Each chunk waits for its slot's "empty" (both consumer warpgroups released the chunk RS
/// positions earlier), then arms its "full" with 16 KB.
#ifndef ATTNKIT_FLASH3_FWD_WAIT_NS
#define ATTNKIT_FLASH3_FWD_WAIT_NS -1
#endif
/// The producer's wait for an empty K / V stage: try_wait with a suspend-time hint of this many
/// ns (0: the plain try_wait loop), so the one producer lane stops re-polling every few cycles
/// (bench/notes/fwd-energy-s47.md P4 counted ~404 polls per K/V block, 8.2 % of the kernel's warp
/// instructions at D 128 4k, all on sub-partition 0 beside two consumer warps). Session 51 call B
/// (H200, 1-second blocks under the power cap, rounds 1-2, the A/B build switch
/// ATTNKIT_FLASH3_FWD_WAIT_NS against the default and a second copy of it, which read -0.3..+0.1
/// %): 200 ns +0.0..+0.5 % at D 128 and +0.0..+0.7 % at D 256 over 1k / 4k / 16k, causal or not,
/// never below the default; 2000 ns +0.1..+0.8 % at D 128, -0.2..+0.4 % at D 256. D 64 (not
/// measured) keeps the loop. (The backward's 10 ms hint lost 6-7 %: the wake-up on the refill,
/// flash3-bwd-s3.md "+sl"; hence short hints.) The switch (>= 0) overrides every head dim.
template <int D>
inline constexpr uint32_t kFwdProducerWaitNs = ATTNKIT_FLASH3_FWD_WAIT_NS >= 0
                                                   ? uint32_t(ATTNKIT_FLASH3_FWD_WAIT_NS)
                                               : D == 64 ? 0u
                                                         : 200u;
template <int D>
__device__ __forceinline__ void producer_wait_empty(uint64_t* bar, uint32_t parity) {
  namespace ptx = attnkit::cuda::sm90;
  constexpr uint32_t kNs = kFwdProducerWaitNs<D>;
  if constexpr (kNs > 0)
    ptx::mbar_wait_hint(ptx::smem_u32(bar), parity, kNs);
  else
    ptx::mbar_wait(bar, parity);
}

template <class Tr>
__device__ __forceinline__ void produce_tile_ring(const FwdArgs& a, SmemLayout<Tr>& sm, int m_block,
                                                  int h, int b, int n_blocks, PipeOf<Tr>& pipe,
                                                  QIndex& qi) {
  namespace ptx = attnkit::cuda::sm90;
  constexpr int RS = Tr::kRingSlots;
  const int hkv = h / a.group;
  auto arm = [&](RingPos<RS> r) {
    producer_wait_empty<Tr::kD>(&sm.empty_k[r.slot], r.parity ^ 1u);
    ptx::mbar_arrive_expect_tx(&sm.full_k[r.slot], Tr::kRingChunkBytes);
    return sm.k + r.slot * Tr::kRingChunkBytes;
  };
  auto load_k = [&](int nb) {
    const RingPos<RS> r0(8 * pipe.count);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const RingPos<RS> r = r0.next(j);
      uint8_t* dst = arm(r);
      const int key0 = nb * Tr::kBlockN + (j < 2 ? 64 : 0);
#pragma unroll
      for (int e = 0; e < 2; ++e)
        ptx::tma_load_4d(dst + e * 8192, &a.tma_k, &sm.full_k[r.slot], (2 * (j % 2) + e) * 64, key0,
                         hkv, b);
    }
  };
  auto load_v = [&](int nb) {
    const RingPos<RS> r0(8 * pipe.count + 4);
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const RingPos<RS> r = r0.next(j);
      uint8_t* dst = arm(r);
#pragma unroll
      for (int c = 0; c < 4; ++c)
        ptx::tma_load_4d(dst + c * 4096, &a.tma_v, &sm.full_k[r.slot], c * 64,
                         nb * Tr::kBlockN + 32 * j, hkv, b);
    }
  };
  load_k(n_blocks - 1);
  {
    ptx::mbar_wait(&sm.empty_q[0], qi.phase(1) ^ 1);
    ptx::mbar_arrive_expect_tx(&sm.full_q[0], Tr::kQBytes);
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c)
      ptx::tma_load_4d(sm.q + c * Tr::kQChunkBytes, &a.tma_q, &sm.full_q[0], c * 64,
                       m_block * Tr::kBlockM, h, b);
    ++qi.count;
  }
  load_v(n_blocks - 1);
  ++pipe.count;
  for (int nb = n_blocks - 2; nb >= 0; --nb, ++pipe.count) {
    load_k(nb);
    load_v(nb);
  }
}

/// Producer (one thread): K/V tiles n-1 .. 0 of the tile, with its Q issued right after the
/// first K (so the K/V stream never waits behind a Q buffer that is still being read).
/// t_next: the CTA's next tile (-1: none or unknown): with FwdArgs::q_prefetch = L > 0 its Q box
/// (and with kv_prefetch its first K and V blocks) is prefetched into L2 once this tile has
/// min(L, n) blocks left to issue, so that its TMA load, which can only start when this tile's
/// last Q K^T is done (one Q buffer), reads L2. Only t_next is carried through the block loop
/// and decoded at the prefetch (the D = 256 producer runs with 24 registers: carrying the
/// decoded tile spilled 156 B instead of 36 B). q_row0 / kv_row0 (kVarVarlen): the sequence's
/// first rows in the packed Q and K/V maps, added to every TMA row coordinate (0 otherwise).
template <class Tr, bool kDiet = false>
__device__ __forceinline__ void produce_tile(const FwdArgs& a, SmemLayout<Tr>& sm, int m_block,
                                             int h, int b, int n_blocks, PipeOf<Tr>& pipe,
                                             QIndex& qi, int t_next = -1, int nb_lo = 0,
                                             int q_row0 = 0, int kv_row0 = 0) {
  namespace ptx = attnkit::cuda::sm90;
  if (n_blocks <= 0) return;  // consumers write zeros; nothing may be left in flight
  if constexpr (Tr::kRing) {
    produce_tile_ring<Tr>(a, sm, m_block, h, b, n_blocks, pipe, qi);
    return;
  }
  const int hkv = h / a.group;
  const int rank = Tr::kCluster == 2 ? static_cast<int>(cl::ctarank()) : 0;
  // (A split tail's piece, tail.cuh: blocks nb_lo .. nb_lo + n_blocks - 1, from the last.)
  // (kVarVarlen: the sequence's first rows q_row0 / kv_row0 in the packed maps; 0 otherwise.)
  auto load_k = [&](int nb) {
    nb += nb_lo;
    const int s = pipe.ks();
    producer_wait_empty<Tr::kD>(&sm.empty_k[s], pipe.kph() ^ 1);
    ptx::mbar_arrive_expect_tx(&sm.full_k[s], Tr::kKVBytes);
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c) {
      if constexpr (Tr::kCluster == 2) {  // this CTA's half of the chunks, into both CTAs
        if (c % 2 == rank)
          cl::tma_load_4d_multicast(sm.k + s * Tr::kKStageBytes + c * Tr::kKVChunkBytes, &a.tma_k,
                                    &sm.full_k[s], c * 64, nb * Tr::kBlockN + kv_row0, hkv, b, 0x3);
      } else {
        ptx::tma_load_4d(sm.k + s * Tr::kKStageBytes + c * Tr::kKVChunkBytes, &a.tma_k,
                         &sm.full_k[s], c * 64, nb * Tr::kBlockN + kv_row0, hkv, b);
      }
    }
  };
  auto load_v = [&](int nb) {
    nb += nb_lo;
    const int s = pipe.vs();
    producer_wait_empty<Tr::kD>(&sm.empty_v[s], pipe.vph() ^ 1);
    ptx::mbar_arrive_expect_tx(&sm.full_v[s], Tr::kKVBytes);
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c) {
      if constexpr (Tr::kCluster == 2) {
        if (c % 2 == rank)
          cl::tma_load_4d_multicast(sm.v + Tr::v_off(s) + c * Tr::v_lbo(s), &a.tma_v, &sm.full_v[s],
                                    c * 64, nb * Tr::kBlockN + kv_row0, hkv, b, 0x3);
      } else {
        ptx::tma_load_4d(sm.v + Tr::v_off(s) + c * Tr::v_lbo(s), &a.tma_v, &sm.full_v[s], c * 64,
                         nb * Tr::kBlockN + kv_row0, hkv, b);
      }
    }
  };
  load_k(n_blocks - 1);
  {
    const int nq = Tr::kQStages == 1 ? 1 : a.q_bufs;
    const int qb = qi.buf(nq);
    ptx::mbar_wait(&sm.empty_q[qb], qi.phase(nq) ^ 1);
    ptx::mbar_arrive_expect_tx(&sm.full_q[qb], Tr::kQBytes);
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c)
      ptx::tma_load_4d(sm.q + qb * Tr::kQBytes + c * Tr::kQChunkBytes, &a.tma_q, &sm.full_q[qb],
                       c * 64, m_block * Tr::kBlockM + q_row0, h, b);
    ++qi.count;
  }
  // Blocks are issued n-1 .. 0: the prefetch goes after block pf_at (the L-th from the end).
  const int pf_at = t_next >= 0 && a.q_prefetch > 0
                        ? (a.q_prefetch < n_blocks ? a.q_prefetch : n_blocks) - 1
                        : -1;
  auto prefetch_next = [&]() {
    const Tile next = decode_tile_of<kDiet>(a, t_next);
    const int next_nb = num_n_blocks<Tr>(a, next.m_block) - 1;
    if (next_nb < 0) return;  // a tile without keys loads nothing
#pragma unroll
    for (int c = 0; c < Tr::kChunks; ++c)
      ptx::tma_prefetch_l2_4d(&a.tma_q, c * 64, next.m_block * Tr::kBlockM, next.h, next.b);
    if (a.kv_prefetch != 0) {
      const int nhkv = next.h / a.group;
#pragma unroll
      for (int c = 0; c < Tr::kChunks; ++c) {
        ptx::tma_prefetch_l2_4d(&a.tma_k, c * 64, next_nb * Tr::kBlockN, nhkv, next.b);
        ptx::tma_prefetch_l2_4d(&a.tma_v, c * 64, next_nb * Tr::kBlockN, nhkv, next.b);
      }
    }
  };
  load_v(n_blocks - 1);
  ++pipe.count;
  if (pf_at == n_blocks - 1) prefetch_next();
  for (int nb = n_blocks - 2; nb >= 0; --nb, ++pipe.count) {
    load_k(nb);
    load_v(nb);
    if (nb == pf_at) prefetch_next();
  }
}

/// Inter-warpgroup ping-pong (named barriers 1 .. n, 256 threads each): a consumer warpgroup
/// issues its GEMMs only in its turn and then hands the turn to the next one (round robin over
/// the n = 2 or 3 consumers), so one warpgroup's softmax runs while another's GEMMs occupy the
/// tensor cores. The last consumer hands consumer 0 the first turn at kernel start; consumer 0
/// takes the one surplus turn back at kernel end. A barrier never collects two arrivals of the
/// same warpgroup: to arrive again, that warpgroup must first get the turn back around the ring.
struct PingPong {
  int me;
  int n;    // consumer warpgroups
  bool on;  // off only for A/B measurements (flash3::Tuning)
  __device__ __forceinline__ void wait_turn() const {
    if (on) attnkit::cuda::sm90::named_bar_sync(1 + me, 256);
  }
  /// The next warpgroup's barrier id.
  __device__ __forceinline__ int next_bar() const { return 1 + (me + 1 == n ? 0 : me + 1); }
  /// Hands the turn to barrier `next` (next_bar(); kD64Ring computes it once per loop: in the
  /// unrolled turns ptxas recomputed it per turn, 3 instructions).
  __device__ __forceinline__ void pass_turn_to(int next) const {
    if (on) attnkit::cuda::sm90::named_bar_arrive(next, 256);
  }
  __device__ __forceinline__ void pass_turn() const {
    if (on) attnkit::cuda::sm90::named_bar_arrive(next_bar(), 256);
  }
  /// pass_turn with the id computed outside the `on` test, where it is loop invariant
  /// (ATTNKIT_FLASH3_FWD_D64_TURN; inside it, ptxas recomputed it every turn).
  __device__ __forceinline__ void pass_turn_lean() const { pass_turn_to(next_bar()); }
};

/// issue_qk from the k-step 0 descriptors of Q_wg (da0) and of the K stage (db0).
template <class Tr, bool BF16>
__device__ __forceinline__ void issue_qk_desc(float (&s)[Tr::kBlockN / 2], uint64_t da0,
                                              uint64_t db0) {
#pragma unroll
  for (int ks = 0; ks < Tr::kD / 16; ++ks) {
    const uint32_t off = (ks % 4) * 32;  // 16 elements = 32 bytes along K inside a chunk
    Wgmma<Tr::kBlockN, BF16>::ss(s, desc_add(da0, (ks / 4) * Tr::kQChunkBytes + off),
                                 desc_add(db0, (ks / 4) * Tr::kKVChunkBytes + off), ks > 0 ? 1 : 0);
  }
}

/// S[64 x kBlockN] = Q_wg[64 x kD] K_s^T (issued, not waited). Q_wg = this warpgroup's 64 rows.
/// kLegacy: the descriptor rebuilt per wgmma (v5; A/B knob Tuning::legacy_desc).
template <class Tr, bool BF16, bool kLegacy = false>
__device__ __forceinline__ void issue_qk(float (&s)[Tr::kBlockN / 2], uint32_t q_wg,
                                         uint32_t k_stage) {
  namespace ptx = attnkit::cuda::sm90;
  if constexpr (!kLegacy) {
    issue_qk_desc<Tr, BF16>(s, ptx::Sw128Desc::make(q_wg, 16, 1024),
                            ptx::Sw128Desc::make(k_stage, 16, 1024));
  } else {
#pragma unroll
    for (int ks = 0; ks < Tr::kD / 16; ++ks) {
      const uint32_t off = (ks % 4) * 32;  // 16 elements = 32 bytes along K inside a chunk
      const uint64_t da = ptx::Sw128Desc::make(q_wg + (ks / 4) * Tr::kQChunkBytes + off, 16, 1024);
      const uint64_t db =
          ptx::Sw128Desc::make(k_stage + (ks / 4) * Tr::kKVChunkBytes + off, 16, 1024);
      Wgmma<Tr::kBlockN, BF16>::ss(s, da, db, ks > 0 ? 1 : 0);
    }
  }
}

/// issue_pv from the V stage's kk = 0 descriptor db0.
template <class Tr, bool BF16>
__device__ __forceinline__ void issue_pv_desc(float (&o)[Tr::kD / 2],
                                              const uint32_t (&p)[Tr::kBlockN / 4], uint64_t db0,
                                              uint32_t kk_stride, int scale_first) {
#pragma unroll
  for (int kk = 0; kk < Tr::kBlockN / 16; ++kk) {
    const uint32_t a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
    Wgmma<Tr::kD, BF16>::rs(o, a, desc_add(db0, kk * kk_stride), kk == 0 ? scale_first : 1);
  }
}

/// O[64 x kD] += P[64 x kBlockN] V_s[kBlockN x kD] (issued, not waited). V is MN-major in smem.
/// scale_first: the first wgmma's scale-d (0: O = P V, the old O is not read; kVarTileDiet).
template <class Tr, bool BF16, bool kLegacy = false>
__device__ __forceinline__ void issue_pv(float (&o)[Tr::kD / 2],
                                         const uint32_t (&p)[Tr::kBlockN / 4], uint32_t v_stage,
                                         uint32_t kk_stride = 16 * Tr::kChunkRowBytes,
                                         uint32_t chunk_stride = Tr::kKVChunkBytes,
                                         int scale_first = 1) {
  namespace ptx = attnkit::cuda::sm90;
  if constexpr (!kLegacy) {
    issue_pv_desc<Tr, BF16>(o, p, ptx::Sw128Desc::make(v_stage, chunk_stride, 1024), kk_stride,
                            scale_first);
  } else {
#pragma unroll
    for (int kk = 0; kk < Tr::kBlockN / 16; ++kk) {
      const uint64_t db = ptx::Sw128Desc::make(v_stage + kk * kk_stride, chunk_stride, 1024);
      const uint32_t a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
      Wgmma<Tr::kD, BF16>::rs(o, a, db, kk == 0 ? scale_first : 1);
    }
  }
}

/// Probabilities (fp32 accumulator layout) -> 16-bit A-operand registers: the accumulator pairs
/// of key block kk (16 keys) are exactly the m64k16 A fragment a0..a3 in order.
template <int kBlockN, bool BF16>
__device__ __forceinline__ void convert_p(const float (&s)[kBlockN / 2],
                                          uint32_t (&p)[kBlockN / 4]) {
#pragma unroll
  for (int i = 0; i < kBlockN / 4; ++i)
    p[i] = pack2<BF16>(s[2 * i], s[2 * i + 1]);
}

template <class Tr>
__device__ __forceinline__ void release(uint64_t* bar, int lane) {
  if (lane == 0) attnkit::cuda::sm90::mbar_arrive(bar);
}

// ATTNKIT_FLASH3_FWD_D128_RING (session 55, helper-47; default 1 since session 56, 0 = the code
// before it): D 64's two steady-turn diets for the D 128 ordered kernels with the row sums in
// P V (kVarTcSum: slot 37 = kVar 66321 and its 2-CTA multicast twin, slot 77; bf16 and f16):
// Consumer::tile's turns as a masked loop, then the unmasked ones two an iteration over the
// 2-stage K / V ring (Consumer::ring_turns, as ATTNKIT_FLASH3_FWD_D64_TURN's split and
// ATTNKIT_FLASH3_FWD_D64_RING: compile-time stages, barriers and stage descriptors, a
// loop-carried parity bit, the ping-pong id once a loop; P V on the kTcSum layout through the
// ring's per-stage V descriptor), and the multicast twin's remote releases with the cluster rank
// read once (cl::ctarank_pure, kD128RingRank). Same values, same mbarrier protocol (the argument
// and the SASS in bench/notes/fwd-d128-ring-s55.md). Issued steady turn slot 37 427 -> 395,
// slot 77 437 -> 402 (ring_turn_state's rank mask: +1). H200, same process (session 56 call 1,
// bench/results/2026-12-01-h200-flash3-s56.md): slot 37 +1.0..+1.9 % at nc 1k / 4224 and
// causal 1k / 4k / 4224 / 16k, 0 bits differing; slot 77 +2.4 % at nc 4k / 16k but half of O
// wrong before the rank mask (ring_turn_state).
#ifndef ATTNKIT_FLASH3_FWD_D128_RING
#define ATTNKIT_FLASH3_FWD_D128_RING 1
#endif
static_assert(ATTNKIT_FLASH3_FWD_D128_RING == 0 || ATTNKIT_FLASH3_FWD_D128_RING == 1,
              "ATTNKIT_FLASH3_FWD_D128_RING: 0 (off) or 1 (split loops, two turns an iteration)");
/// (ATTNKIT_FLASH3_FWD_D128_RING) The traits of slot 77 (D 128 with the row sums in P V, 2-CTA
/// cluster: only kVar 66321 has them): release_kv reads the cluster rank once.
template <class Tr>
inline constexpr bool kD128RingRank =
    ATTNKIT_FLASH3_FWD_D128_RING == 1 && Tr::kD == 128 && Tr::kTcSum&& Tr::kCluster == 2;

/// A K or V stage is released: with a cluster of 2 on both CTAs' "empty" barriers (the peer's
/// producer multicasts into this CTA's stage too; cluster.cuh).
template <class Tr>
__device__ __forceinline__ void release_kv(uint64_t* bar, int lane) {
  if (lane != 0) return;
  attnkit::cuda::sm90::mbar_arrive(bar);
  if constexpr (kD128RingRank<Tr>)  // (the rank read once: ctarank_pure)
    cl::mbar_arrive_remote(bar, cl::ctarank_pure() ^ 1u);
  else if constexpr (Tr::kCluster == 2)
    cl::mbar_arrive_remote(bar, cl::ctarank() ^ 1u);
}

/// Kernel variant bits (the kVar template parameter; Tuning::ordered_softmax, early_rescale).
inline constexpr int kVarOrdered = 1;  // softmax_before_wait
// O *= factor issued right before the P V that adds P * V to it (between that turn's Q K^T and
// P V issues, FA3's RescaleOBeforeGemm) instead of right after the previous P V's wait: the
// FMULs (kD/2 per thread) leave the path wait(P V) -> convert(P) -> next turn and run while the
// tensor cores work on this turn's Q K^T.
inline constexpr int kVarEarlyRescale = 2;
// v5's code generation, A/B only: wgmma descriptors rebuilt per instruction (instead of base +
// offset, desc_add) and the row max as one dependent chain (instead of a tree, softmax.cuh).
inline constexpr int kVarLegacyDesc = 8;
// Session 4 (helper f3fwd7), A/B knobs Tuning::uniform_desc / lazy_rescale:
// kVarUniformDesc: the stage offsets (pipe.ks / vs) and the warpgroup's Q offset pass through
// warp_uniform (REDUX -> uniform register), so ptxas keeps the wgmma descriptors derived from
// them in uniform registers (UIADD3/UMOV) instead of building them in vector registers and
// moving both words with R2UR per wgmma (flash3-fwd-s3.md, round 3: D = 128 loop 732 -> 708
// static instructions per K/V block, R2UR 48 -> 9).
inline constexpr int kVarUniformDesc = 16;
// kVarLazyRescale: OnlineSoftmax::step<.., true> keeps a row's reference max until it would grow
// by more than 2^8, and O *= factor is skipped (warp-uniform branch) when no row of the warp
// moved: kD/2 FMULs per thread and block (softmax.cuh).
inline constexpr int kVarLazyRescale = 32;
// Session 5 (helper f3fwd9): Q K^T with Q from registers (RS wgmma, A = the m64k16 fragments of
// this warpgroup's 64 Q rows, loaded once per tile by ldmatrix) instead of from shared memory
// (SS). Why: shared-memory operand bandwidth. Per 64 clocks (one m64n128k16 at ~2048 MAC/clk/SM)
// an SS wgmma reads A 2 KB + B 4 KB = 96 B/clk of the SM's 128 B/clk; the TMA writes of K and V
// add ~32 B/clk on average (64 KB per 128-key block of ~2048 tensor clocks), so the Q K^T half
// of every turn wants ~100 % of the shared-memory bandwidth; RS drops it to 64 + 32 B/clk.
// Costs 32 registers per consumer thread at D = 128 (8 k-steps x 4), 8 LDSM.x4 per tile.
// D = 128 with 128-key tiles only (launch.cuh; Tuning::q_regs), with uniform descriptors
// (kVarUniformDesc) as the D = 128 default it is measured against. Measured (H100, f3fwd9
// run 1): +0.8 % at S = 1k / 4k non-causal, -2.2 % at 1k causal; ncu: 7 % fewer instructions,
// 0.9 % fewer cycles. The hypothesis was wrong (cuDNN's Q K^T is SS); kept as an A/B knob.
inline constexpr int kVarQReg = 128;
// Session 7 (helper f3fwd15): per-tile instruction diet of the overlapped consumer (Consumer,
// kernel.cuh; Tuning::tile_diet). The SASS of the D = 128 default spends ~575 instructions per
// consumer warp and tile beyond one steady K/V block (537): at S = 1k (8 blocks) ~12 % of what
// a consumer warp issues (bench/notes/flash3-fwd-s3.md, session 7). Two of those items go:
//  - O = 0 after each epilogue (zero_o: ptxas emits 48 UMOV + 64 MOV for it, ~115 per warp
//    and tile): the first P V into O of a tile is issued with scale-d = 0 instead (O = P V,
//    the stale O is not read): mainloop turn 1, or the pending P V of a one-block tile;
//  - the schedule's three integer divisions per tile (num_rounds, decode_tile: ~110 per warp
//    and tile): multiplications by the launch's precomputed reciprocals instead (FastDiv,
//    tile_scheduler.cuh), in the consumers and the producer warp. (First tried: walking the
//    static schedule incrementally with per-CTA deltas; ptxas rematerialised the deltas, with
//    their divisions, in every iteration: no gain.)
// Turn 1 is peeled (its P V with scale-d = 0): a runtime `it == 1` scale-d in the loop cost
// ISETP + VOTEU.ANY + UMOV per turn. Exact (the same values are computed and stored). With
// uniform descriptors; D = 128, 128-key tiles (launch.cuh).
inline constexpr int kVarTileDiet = 256;
// kVarTmaEpi (Tuning::tma_epilogue, helper f3fwd17; with kVarTileDiet, D = 128 first): the
// overlapped consumer's epilogue writes O through shared memory: each warp stmatrix-es its
// normalised 16 x kD rows into its own rows of the finished tile's Q buffer (the tile's last
// Q K^T was waited for in its last turn; a warpgroup's Q K^T reads only its own 64 rows), and
// lane 0 issues the TMA stores (FwdArgs::tma_o, box 64 x 16; rows >= seqlen_q clipped by the
// map's extent). That Q buffer goes back to the producer only after the store has read it: the
// tile's own end no longer releases it; each warp arrives on empty_q after its lane 0's
// cp.async.bulk.wait_group.read, in the next tile's turn 1 (or at its end for a one-block tile,
// or at the end of an idle tile). Needs both Q buffers (q_bufs = 2: the next tile's Q must not
// land in the buffer being stored from; with one buffer the deferred release would deadlock),
// which launch.cuh checks (fallback: the STG epilogue kernel). Same bits as store_output.
inline constexpr int kVarTmaEpi = 512;
// kVarTail (session 19, tail.cuh): the split tail's kernel, launch 2 of a forward whose last
// round is partial. Its CTAs run pieces of the tail's tiles (tail_piece) instead of the static
// schedule's tiles, and a piece of a cut tile ends in finish_tail_piece instead of the
// epilogue. D = 128: the overlapped consumer with the diet, without the TMA epilogue; D = 256
// (session 20): consume_tile_simple, slot 11's ordered variant without the diet (launch.cuh).
inline constexpr int kVarTail = 1024;
// kVarScoreMod (session 23, score_mod.cuh): softcap, ALiBi and the sliding window (its right edge
// folded into causal_offset, its left edge FwdArgs::window_lo; the producer and the consumers
// skip the key blocks left of a tile's window, tile_scheduler.cuh first_n_block). Runs the
// tile-at-a-time consumer (consume_tile_simple) at every D: Consumer::kCanOverlap is false.
inline constexpr int kVarScoreMod = 2048;
// kVarVarlen (session 24, with kVarScoreMod; kernel.cuh varlen_args): packed sequences. Every
// tile reads its sequence's row offsets and lengths (FwdArgs::cu_q / cu_k) and runs as a dense
// tile of that sequence: TMA rows shifted by the offsets (produce_tile q_row0 / kv_row0), O and
// lse pointers shifted, per-sequence bounds (seq_bounds.hpp). Tiles past their sequence's end
// have no blocks and write nothing.
inline constexpr int kVarVarlen = 4096;
// kVarMask (session 24, with kVarScoreMod; score_mod.cuh apply_mask_tile): a bool or additive
// mask read element by element. A kernel of its own, so that the score-mod kernel's code stays
// as measured (the mask's per-element loads and dtype branches nearly doubled its SASS).
inline constexpr int kVarMask = 8192;
// kVarNarrow (session 25, with kVarScoreMod; D = 128 and 256 kernels): a head dim of 96 / 192 run
// on the 128 / 256 kernel. The tensor maps' D is the call's (launch.cuh base_args), so TMA
// zero-fills Q / K / V columns past it: S is unchanged, O's extra columns are 0; the epilogue
// stores only FwdArgs::d_cols columns (store_output kNarrow).
inline constexpr int kVarNarrow = 16384;
// kVarDropout (session 39, with kVarScoreMod and kVarMask or kVarVarlen; dropout.cuh): dropout
// on P after the online softmax's row sums, before P is packed (FwdArgs::drop_*). A kernel of
// its own: the Philox draws (kBlockN / 8 per thread and tile) more than double the tile's
// instructions.
inline constexpr int kVarDropout = 32768;

// kVarTcSum (session 40; FwdTraits TC, Tuning::tc_row_sum): the softmax's row sums as 8 more
// columns of P V, whose B operand continues past V's chunks into a chunk of ones (traits.hpp
// kTcSum has the layout): m64n136k16 instead of m64n128k16 (WgmmaExt), accumulated, rescaled and
// overwritten (scale-d 0) with O, so l sums exactly the 16-bit P that P V multiplies, and each
// thread holds its rows' complete sums (no quad reduction). Replaces 64 FADDs per thread and turn
// (the steady turn of the slot-15 ordered kernel: 652 -> 596 SASS instructions) with 6 % more
// P V tensor work. Same process against an identical control (bench/results/
// 2026-11-30-h200-flash3-s40.md): D 128 +3.1..+4.9 % at S 4k / 16k, -1.1..-2.5 % at 1k; D 64
// (m64n72, 12.5 % more P V) -1..-4 %. The tile-diet kernels only (O written by its tile's first
// P V, never zeroed): in the others the 4 more accumulators made ptxas serialise the wgmmas
// (C7511) and spill 1.5-1.9 KB. Not with score mods (dropout needs the sums before P is dropped).
// So the traits' kTcSum alone says whether a kernel sums on the tensor core. Session 41: D 256
// too (consume_tile_simple; two P V wgmmas a k-step, issue_pv_tc), its slot-27 kernel (not a
// diet kernel: the sums start from zeroed accumulators there) and slot 29's: +2.7..+4.4 % at
// 16k, +1.7..+3.5 % at 4k (bench/results/2026-11-30-h200-flash3-s41.md). kernel.cuh asserts the
// combinations.
inline constexpr int kVarTcSum = 65536;
// kVarSkipTurn (session 48; consume_tile_simple, skip_masked_turn has the why and the protocol):
// a causal launch's warpgroup skips its tile's first K/V block when the mask hides all of it.
inline constexpr int kVarSkipTurn = 131072;
// kVarEdgeNc (session 58 helper, for session 59; Tuning::edge_nc_twin, launch.cuh): a kernel
// that runs non-causal launches only, with the tile-boundary diet's parts
// ATTNKIT_FLASH3_FWD_EDGE_PARTS_NC instead of ATTNKIT_FLASH3_FWD_EDGE_PARTS (kFwdEdgePart,
// below). Nothing else reads the bit: the kernel is its base variant built with those parts (the
// same SASS, bench/notes/fwd-d64-edge-nc-twin-s58.md). D 64 slot 14's twin only (kVar 272 | this
// bit; kernel.cuh asserts it).
inline constexpr int kVarEdgeNc = 262144;

// ATTNKIT_FLASH3_FWD_D64_TURN (session 55; default 1, 0 = the session-54 code): a shorter steady
// turn for the D 64 overlapped consumer (Consumer, no score mods, no kTcSum), with the same values
// (bitwise). Session 54 measured the D 64 turn as issue-limited (+64 / +128 FMA-pipe instructions
// a turn: -3.4..-5.3 % / -5.7..-9.9 %); slot 14's issued steady turn 456 -> 424 (2 WGs) / 455 ->
// 430 (3 WGs) bought +1.1..+4.0 % on the H200 (session 55 call 2: nc 1k / 4k / 16k +1.3..2.9 /
// +3.1..3.4 / +3.4..4.0 %, causal +1.1..2.2 / +2.0..3.4 / +2.5..3.7 %; bench/notes/session55.md;
// the SASS table in bench/notes/fwd-d64-turn-s55.md).
//  1: both parts below; 2: the lean math only; 3: the split loops only (separate A/B arms).
//  Lean math (kD64TurnMath): OnlineSoftmax::step's kLean form (softmax.cuh: 2 instructions fewer
//     per row), the stage descriptors' offsets without desc_add's shift and mask, the next
//     ping-pong barrier's id outside PingPong's `on` test.
//  Split loops (kD64TurnSplit): Consumer::tile runs its turns as a masked loop, then an
//     unmasked one, so the steady turn has no per-turn mask test (nb >= mask_from, its branch,
//     BSSY / BSYNC), and ptxas schedules it without the mask's code in the middle.
#ifndef ATTNKIT_FLASH3_FWD_D64_TURN
#define ATTNKIT_FLASH3_FWD_D64_TURN 1
#endif
static_assert(ATTNKIT_FLASH3_FWD_D64_TURN >= 0 && ATTNKIT_FLASH3_FWD_D64_TURN <= 3,
              "ATTNKIT_FLASH3_FWD_D64_TURN: 0 (off), 1 (all), 2 (lean math), 3 (split loops)");
/// Kernel variant kVar is a tile-diet kernel with uniform descriptors and none of the variant
/// bits in kNone: the family the turn diets and ring unrolls below apply to (each names its own
/// excluded bits).
template <int kVar, int kNone>
inline constexpr bool kDietUniformWithout = (kVar & (kVarTileDiet | kVarUniformDesc)) ==
                                                (kVarTileDiet | kVarUniformDesc) &&
                                            (kVar & kNone) == 0;
/// The D 64 turn diet (ATTNKIT_FLASH3_FWD_D64_TURN) applies to kernel variant kVar at head dim kD:
/// the tile-diet kernels with uniform descriptors (slot 14's family; in the other D 64 A/B
/// kernels it changed ptxas's spills, e.g. kVar 3 with 3 WGs 1020 -> 1140 B).
template <int kD, int kVar, bool kTc>
inline constexpr bool kD64Turn =
    ATTNKIT_FLASH3_FWD_D64_TURN >= 1 && kD == 64 && !kTc &&
    kDietUniformWithout<kVar, kVarScoreMod | kVarLazyRescale | kVarLegacyDesc>;
template <int kD, int kVar, bool kTc>
inline constexpr bool kD64TurnMath = kD64Turn<kD, kVar, kTc>&& ATTNKIT_FLASH3_FWD_D64_TURN != 3;
template <int kD, int kVar, bool kTc>
inline constexpr bool kD64TurnSplit = kD64Turn<kD, kVar, kTc>&& ATTNKIT_FLASH3_FWD_D64_TURN != 2;
/// mainloop_turn's mask test: kMaskTest per turn (main's form), or known for the whole loop.
inline constexpr int kMaskTest = 0, kMaskAlways = 1, kMaskNever = 2;

// ATTNKIT_FLASH3_FWD_D64_RING (session 55, helper-46; default 1, 0 = the code before it): the
// unmasked loop of kD64TurnSplit (Consumer::tile) runs two turns an iteration, the first on K stage
// 0 and the second on K stage 1 of the 2-stage ring (Consumer::ring_turns), so each turn's K / V
// stage is a compile-time constant (mainloop_turn's kStage) and the phase parity a loop-carried
// bit flipped once an iteration: no ring index math (count + it, % 2, / 2 and their signed
// fix-ups, the parity shift), barrier addresses as immediates, and the four stage descriptors'
// low words as (smem base >> 4) + constants (ring_desc: one LEA.HI where ptxas rematerialises
// them; make()'s VIADD + LOP3 + LEA.HI + IMAD by stage before). Values and the mbarrier protocol
// are unchanged (the same barriers waited on with the same parities, in the same order; the
// argument in bench/notes/fwd-d64-ring-s55.md). Issued steady turn (nvcc 13.0): slot 14 424 ->
// 402 (2 WGs) / 430 -> 409 (3 WGs), its TMA-epilogue twin 784 427 -> 401; spills unchanged
// (20 B); +376..+416 static instructions (the second turn body). H200, same process, 0 bits
// differing (session 55 calls 4-5, bench/results/2026-12-01-h200-flash3-s55.md): +0.8..+2.8 %
// at 4k / 16k (every round), nc 2k +0.9..+1.1 %, nc 1k +0.2 %, causal 1k / 2k -0.2 / -0.4 %
// (short unmasked runs: the loop's setup is paid per tile). Helper-46's four-turn form (the
// parity a constant too) saved ~3 instructions more a turn for +800 static; not kept.
#ifndef ATTNKIT_FLASH3_FWD_D64_RING
#define ATTNKIT_FLASH3_FWD_D64_RING 1
#endif
static_assert(ATTNKIT_FLASH3_FWD_D64_RING == 0 || ATTNKIT_FLASH3_FWD_D64_RING == 1,
              "ATTNKIT_FLASH3_FWD_D64_RING: 0 (off) or 1 (two turns an iteration)");
template <int kD, int kVar, bool kTc>
inline constexpr bool kD64Ring = ATTNKIT_FLASH3_FWD_D64_RING == 1 && kD64TurnSplit<kD, kVar, kTc>;
// ATTNKIT_FLASH3_FWD_EDGE (session 56, helper-50; default 1 since session 58 with only part 1 of
// ATTNKIT_FLASH3_FWD_EDGE_PARTS, below; 0 = the code before it): a tile-boundary diet for the
// overlapped consumer (Consumer::tile's turn 0, the kernel loop's next-tile fetch). At 1k a tile
// has 8 K/V blocks and removed boundary instructions paid 3-10 cycles each
// (bench/notes/fwd-1k-tile-cost-s51.md). Output values, the mbarrier / named-barrier protocol and
// its order are unchanged (bench/notes/fwd-edge-s56.md):
//  - turn 0's P V without a pending tile (the CTA's first tile, after a flush) reads the tile's
//    own landed Q buffer instead of the zero block (issue_pending_pv_t0: its result is never
//    read), so the k-step stride is a constant and the 8 k-step descriptors are one REDUX'd low
//    word + immediates (before: the `pending` select of stride and base in vector registers,
//    LEA.HI + IMAD.MOV + 2 R2UR per wgmma);
//  - turn 0's Q K^T from the K stage descriptor's uniform low word (mainloop_turn's kDescRedux
//    form) instead of issue_qk's;
//  - the pending P V's V stage / parity and turn 0's K stage / parity in unsigned ring
//    arithmetic (pipe.count >= 0, and count >= 1 wherever the pending values are used; as
//    mainloop_turn's kUnsignedRing);
//  - kernel.cuh: num_n_blocks' non-causal count (Sk + kBlockN - 1) / kBlockN once per CTA.
// Tile boundary (bench/gpu/sass_tile_edge.py, issued on the 1k nc path from the ring loop's exit
// to the next tile's ring entry, nvcc 13.0): slot 37 1220 -> 1194, slot 77 1247 -> 1219, D 64
// slot 14 1174 -> 1148 (3 WGs 1188 -> 1160, TMA epilogue 784 1190 -> 1165); the steady ring
// turns and the spills unchanged. H200, same process, 0 bits differing (session 57 call 2, rounds
// 1 / 2): D 64 nc 1k +2.3 / +2.1 %, but D 64 causal 1k -1.4 / -1.5 % (the same kernel, slot 14;
// the worst row of issue #5), D 128 nc / causal 1k -0.2..+0.2 %, 4k / 16k within +-1 %: off
// until its parts were measured apart (session 58, below).
#ifndef ATTNKIT_FLASH3_FWD_EDGE
#define ATTNKIT_FLASH3_FWD_EDGE 1
#endif
static_assert(ATTNKIT_FLASH3_FWD_EDGE == 0 || ATTNKIT_FLASH3_FWD_EDGE == 1,
              "ATTNKIT_FLASH3_FWD_EDGE: 0 (off) or 1 (the tile-boundary diet)");
/// ATTNKIT_FLASH3_FWD_EDGE applies to the overlapped tile-diet kernels with uniform descriptors
/// (D 64 slot 14 and its TMA-epilogue / 3-warpgroup builds, D 128 slots 37 / 77), without the
/// A/B-only bits or the split tail.
template <int kD, int kVar>
inline constexpr bool kFwdEdge =
    ATTNKIT_FLASH3_FWD_EDGE == 1 && kD != 256 &&
    kDietUniformWithout<kVar, kVarScoreMod | kVarLegacyDesc | kVarQReg | kVarTail |
                                  kVarEarlyRescale | kVarMask | kVarDropout | kVarVarlen |
                                  kVarNarrow>;
// ATTNKIT_FLASH3_FWD_EDGE_PARTS (session 57; with ATTNKIT_FLASH3_FWD_EDGE = 1 only; default 1):
// which of its four parts run, as bits: 1 = turn 0's idle P V on the tile's own Q buffer
// (issue_pending_pv_t0), 2 = turn 0's Q K^T on the uniform K descriptor (REDUX), 4 = the pending
// P V's and turn 0's ring positions unsigned, 8 = the non-causal K/V block count once a CTA
// (kernel.cuh). Slot 14's nc boundary path (sass_tile_edge.py, issued) 1174 -> 1153 / 1172 /
// 1182 / 1167 / 1148 for 1 / 2 / 4 / 8 / 15. H200, same process, vs EDGE 0, 0 bits differing,
// rounds 1 / 2 (bench/results/2026-12-01-h200-flash3-s58-call{1,2}-edgeparts.txt, -call3-d128-p1):
//   D 64 1k nc / causal: 1 +0.2 / +0.3, +0.3 / +0.2 and +0.7 / +0.7, +0.6 / +0.6 (two calls);
//   3 +1.1 / +1.0 and -0.6 / -0.6; 7 +1.9 / +1.4 and -1.7 / -1.6; 9 +0.8 / +1.4 and -0.9 / -0.9;
//   15 +2.1 / +2.4 and -1.7 / -1.7; 8 alone costs causal -0.4 / -0.5 although it runs only
//   non-causal. Parts 2 and 4 buy nc and cost causal in the same SASS (slot 14 serves both), so
//   only part 1 is on: the one set without a losing row (D 64 2k +0.1..+0.6; D 128 1k / 2k / 4k,
//   slots 37 / 77: nc +1.2 / +0.3, 0.0 / +0.4, -0.1 / +0.1, causal +0.7 / 0.0, +0.5 / 0.0,
//   0.0 / +0.2).
#ifndef ATTNKIT_FLASH3_FWD_EDGE_PARTS
#define ATTNKIT_FLASH3_FWD_EDGE_PARTS 1
#endif
static_assert(ATTNKIT_FLASH3_FWD_EDGE_PARTS >= 1 && ATTNKIT_FLASH3_FWD_EDGE_PARTS <= 15,
              "ATTNKIT_FLASH3_FWD_EDGE_PARTS: bits 1 (own Q), 2 (REDUX K descriptor), 4 "
              "(unsigned ring), 8 (block count once)");
// ATTNKIT_FLASH3_FWD_EDGE_PARTS_NC (session 58 helper; default 15 = all four parts): the parts
// of the kernels with kVarEdgeNc, which run non-causal launches only (D 64 slot 14's twin,
// launch.cuh Tuning::edge_nc_twin). Why: in slot 14, which serves both modes, all parts read D 64
// nc 1k +2.1 / +2.4 %, 2k +0.8 / +1.1 %, but causal 1k -1.7 / -1.7 %, 2k -2.0 / -1.9 % (session
// 58 call 1, above); the twin keeps the non-causal gain without the causal loss (the precedent:
// session 48's kVarSkipTurn twins). Same bits.
#ifndef ATTNKIT_FLASH3_FWD_EDGE_PARTS_NC
#define ATTNKIT_FLASH3_FWD_EDGE_PARTS_NC 15
#endif
static_assert(ATTNKIT_FLASH3_FWD_EDGE_PARTS_NC >= 1 && ATTNKIT_FLASH3_FWD_EDGE_PARTS_NC <= 15,
              "ATTNKIT_FLASH3_FWD_EDGE_PARTS_NC: bits 1 (own Q), 2 (REDUX K descriptor), 4 "
              "(unsigned ring), 8 (block count once)");
/// The tile-boundary diet's parts in kernel variant kVar: ATTNKIT_FLASH3_FWD_EDGE_PARTS, or
/// ATTNKIT_FLASH3_FWD_EDGE_PARTS_NC in the non-causal twin (kVarEdgeNc).
template <int kVar>
inline constexpr int kFwdEdgeParts = (kVar & kVarEdgeNc) != 0 ? ATTNKIT_FLASH3_FWD_EDGE_PARTS_NC
                                                              : ATTNKIT_FLASH3_FWD_EDGE_PARTS;
/// Part kPart (one bit of kFwdEdgeParts) of the tile-boundary diet applies.
template <int kD, int kVar, int kPart>
inline constexpr bool kFwdEdgePart = kFwdEdge<kD, kVar> && (kFwdEdgeParts<kVar> & kPart) != 0;
/// ATTNKIT_FLASH3_FWD_D128_RING (above release_kv) applies to kernel variant kVar at head dim kD:
/// the D 128 kernels with the row sums in P V (kTc: only the tile-diet kernels, kernel.cuh), with
/// uniform descriptors and none of the A/B-only or tail bits; in the build: 66321 at CL 1 and 2.
template <int kD, int kVar, bool kTc>
inline constexpr bool kD128Ring =
    ATTNKIT_FLASH3_FWD_D128_RING == 1 && kD == 128 && kTc &&
    (kDietUniformWithout<kVar,
                         kVarScoreMod | kVarLazyRescale | kVarLegacyDesc | kVarQReg | kVarTail>);

// ATTNKIT_FLASH3_FWD_D256_RING (session 55, helper-48; default 1 since session 56, 0 = the code
// before it): D 64's two turn diets for D 256's row-sums-in-P-V diet kernels (consume_tile_simple:
// slot 39, its causal skip-turn twin slot 119, 39's multicast twin). The turns after the peeled
// turn 1 run as a masked prefix loop (the mask test once a tile, first_masked_block, instead of
// block_needs_mask every turn), then the unmasked turns two an iteration over the 2-stage K / V
// ring (ring_loop, mainloop_turn's kStage, RingTurn; the V descriptor through issue_pv_tc_desc).
// Same values, the same barriers waited on with the same parities in the same order (the argument:
// bench/notes/fwd-d256-ring-s55.md). Issued steady turn (nvcc 13.0; bf16 = f16): slot 39 435 ->
// 386 / 384 (stage 0 / 1 halves; without a rescale 303 -> 254 / 252), slot 119 433 -> 386 / 384,
// the multicast twin 446 -> 397 / 395; a masked turn 526 -> 504; the exps' place against the P V
// wait unchanged (3 before, 31 after); spills 124 / 184 -> 116 / 172 B (68 / 104 -> 60 / 96);
// +848..+872 static instructions (the second turn body). H200, same process, 0 bits differing
// (session 56 call 1): +1.9..+2.8 % at nc / causal 4k and 4224, causal 16k +2.5 %, nc 16k
// +1.1..+1.6 %; causal 1k (slot 119, 16 blocks a tile) +1.3 / +1.2 % (rounds 1 / 2; session
// 56's notes said -1.2 %, a sign slip found in session 71: the call's table and raw rows read
// 1.013 / 1.012).
#ifndef ATTNKIT_FLASH3_FWD_D256_RING
#define ATTNKIT_FLASH3_FWD_D256_RING 1
#endif
static_assert(ATTNKIT_FLASH3_FWD_D256_RING == 0 || ATTNKIT_FLASH3_FWD_D256_RING == 1,
              "ATTNKIT_FLASH3_FWD_D256_RING: 0 (off) or 1 (split loops, two turns an iteration)");
/// The variant bits that keep a D 256 kernel off the plain path the ring and the tile-boundary
/// diet (below) rewrite.
inline constexpr int kD256NotPlain = kVarScoreMod | kVarMask | kVarDropout | kVarVarlen |
                                     kVarNarrow | kVarTail | kVarLegacyDesc | kVarEarlyRescale;
/// The D 256 TMA-store epilogue (traits.hpp ATTNKIT_FLASH3_FWD_D256_TMA_EPI) applies to kernel
/// variant kVar of traits Tr: those with O's staging region (D 256, 64-key blocks, 2 V stages)
/// and none of kD256NotPlain's bits (the others keep store_output, as does every kernel at run
/// time when FwdArgs::o_tma is 0).
template <class Tr, int kVar>
inline constexpr bool kD256TmaEpi = Tr::kEpiStageBytes > 0 && (kVar & kD256NotPlain) == 0;
/// The D 256 ring turns (ATTNKIT_FLASH3_FWD_D256_RING) apply to kernel variant kVar: the plain
/// (no score mod, mask, dropout, varlen, split tail) tile-diet kernels with uniform descriptors
/// and the row sums in P V.
template <int kD, int kVar, bool kTc>
inline constexpr bool kD256Ring = ATTNKIT_FLASH3_FWD_D256_RING == 1 && kD == 256 && kTc &&
                                  (kDietUniformWithout<kVar, kD256NotPlain>);
// ATTNKIT_FLASH3_FWD_D256_EDGE (sessions 56-57, helper-51; default 1 since session 57, 0 = the
// code before it): a D 256 tile-boundary diet for the plain tile-diet kernels at CL 1
// (slots 29, 39, 119 and 109): consume_tile_simple computes first_masked_block once a tile and
// tests `nb >= mfb` (one ISETP) for turn 0, the peeled turn 1 and slot 29's / 109's plain loop
// (mainloop_turn's kMaskFrom) instead of block_needs_mask (the same rule: the host test
// tests/core/flash3_mask_blocks_test.cpp; the ring kernels' it_plain already rests on it).
// Issued instructions from the last steady turn of tile i to the steady loop of tile i + 1
// (nc, no mask, bench/gpu/sass_path.py): slot 39 1217 -> 1190, 119 1228 -> 1200, 29 1283 ->
// 1246; slot 29's steady turn 454 -> 432 (without a rescale 326 -> 304); spills not grown.
// H200, same process, 0 bits differing (session 57 call 2): nc 1k (slot 29) +1.6 / +1.9 %
// (rounds 1 / 2; round 0 +0.0), causal 1k -1.5 / +0.3 / +0.4 %, 4k / 16k within +-1 %.
// ATTNKIT_FLASH3_FWD_D256_EDGE_IDX (default 0; with _EDGE = 1 only): also the epilogue's index
// products zero-extended (store_output's kNonNeg): -14 / -14 / -11 more, but ptxas then spills
// the tile counter (+3 local accesses a boundary). bench/notes/fwd-d256-edge-s56.md has it all.
#ifndef ATTNKIT_FLASH3_FWD_D256_EDGE
#define ATTNKIT_FLASH3_FWD_D256_EDGE 1
#endif
static_assert(ATTNKIT_FLASH3_FWD_D256_EDGE == 0 || ATTNKIT_FLASH3_FWD_D256_EDGE == 1,
              "ATTNKIT_FLASH3_FWD_D256_EDGE: 0 (off) or 1 (the tile-boundary diet)");
#ifndef ATTNKIT_FLASH3_FWD_D256_EDGE_IDX
#define ATTNKIT_FLASH3_FWD_D256_EDGE_IDX 0
#endif
static_assert(ATTNKIT_FLASH3_FWD_D256_EDGE_IDX == 0 || ATTNKIT_FLASH3_FWD_D256_EDGE_IDX == 1,
              "ATTNKIT_FLASH3_FWD_D256_EDGE_IDX: 0 (off) or 1 (zero-extended epilogue indices)");
// ATTNKIT_FLASH3_FWD_D256_EDGE_CL2 (session 59 helper, default 1 since session 60; 0 = the code
// before it, the diet in the CL 1 kernels only): the same diet in slot 29's 2-CTA K/V multicast
// twin (69), which runs D 256 non-causal launches from kMulticast256MinSeqlenK = 1024 keys below
// 2048 (launch.hpp). Nothing of it depends on the cluster: mfb comes from this CTA's own FwdArgs
// and first row, as block_needs_mask's test did; the mask decides mask_tile's register work only;
// every wait, release (release_kv's remote arrival on the peer's "empty" too), descriptor
// (ring_turn_state's rank mask) and the ring's it_plain keep their values and order
// (bench/notes/fwd-d256-edge-cl2-s59.md; boundary 1302 -> 1271 issued, turn 466 -> 447). H200,
// one process, 1-second blocks, 0 bits differing (session 60, bench/results/
// 2026-12-01-h200-flash3-s60.md): 69 with it against slot 29 (the default there until now) at nc
// 1k +1.2 / +1.1 % (call 1, rounds 1 / 2), +0.5 / +0.6 / +1.1 / +1.1 % (call 2, rounds 1-4),
// 1536 +1.5 / +1.0 / +1.2 / +1.5 %; 69 without it -1.4..-0.2 (call 2). Not in slot 39's twin (79,
// from 2048 keys; kVarTcSum): there it read +0.2 / -0.4 %, -0.2 / -0.4 %, -0.8 / -0.2 % at 2k / 4k
// / 16k (call 1), within the noise of identical kernels in that call (up to +-0.9 %), so 79 stays
// as measured before.
#ifndef ATTNKIT_FLASH3_FWD_D256_EDGE_CL2
#define ATTNKIT_FLASH3_FWD_D256_EDGE_CL2 1
#endif
static_assert(ATTNKIT_FLASH3_FWD_D256_EDGE_CL2 == 0 || ATTNKIT_FLASH3_FWD_D256_EDGE_CL2 == 1,
              "ATTNKIT_FLASH3_FWD_D256_EDGE_CL2: 0 (off) or 1 (the diet in slot 29's twin, 69)");
/// The D 256 tile-boundary diet (ATTNKIT_FLASH3_FWD_D256_EDGE) applies to kernel variant kVar at
/// cluster size kCl: D 256 tile-diet kernels with uniform descriptors, with or without the row
/// sums in P V, none of score mod / mask / dropout / varlen / narrow / split tail / legacy
/// descriptors / early rescale; without the cluster, or in the multicast twin without the row
/// sums (CL 2, slot 69) under ATTNKIT_FLASH3_FWD_D256_EDGE_CL2 = 1.
template <int kD, int kVar, int kCl>
inline constexpr bool kD256Edge = ATTNKIT_FLASH3_FWD_D256_EDGE == 1 && kD == 256 &&
                                  (kCl == 1 || (kCl == 2 && ATTNKIT_FLASH3_FWD_D256_EDGE_CL2 == 1 &&
                                                (kVar & kVarTcSum) == 0)) &&
                                  kDietUniformWithout<kVar, kD256NotPlain>;
/// The traits of kernel variant kVar (the TC layout with kVarTcSum; O's D 256 staging region,
/// traits.hpp ATTNKIT_FLASH3_FWD_D256_TMA_EPI: with kVarSkipTurn at 1 and 3, always at 2, at 3
/// also the plain kernels without kVarTcSum; the others keep value 1's layout and size there).
template <int D, int BN, int WGs, int VS, int kVar, int CL = 1, int RS = 0>
using FwdTraitsOf =
    FwdTraits<D, BN, WGs, VS, CL, RS, (kVar & kVarTcSum) != 0,
              ATTNKIT_FLASH3_FWD_D256_TMA_EPI == 2 ||
                  (ATTNKIT_FLASH3_FWD_D256_TMA_EPI != 0 && (kVar & kVarSkipTurn) != 0) ||
                  (ATTNKIT_FLASH3_FWD_D256_TMA_EPI == 3 &&
                   (kVar & (kVarTcSum | kD256NotPlain)) == 0)>;

/// O[64 x kD] and l[64 x 8] (+)= P[64 x kBlockN] [V | ones] (issued, not waited); db0 = the
/// kk = 0 descriptor of V's chunks (chunk stride = its LBO; the chunk after the last is ones).
template <class Tr, bool BF16>
__device__ __forceinline__ void issue_pv_ext_desc(float (&o)[Tr::kD / 2], float (&l)[4],
                                                  const uint32_t (&p)[Tr::kBlockN / 4],
                                                  uint64_t db0, uint32_t kk_stride,
                                                  int scale_first) {
#pragma unroll
  for (int kk = 0; kk < Tr::kBlockN / 16; ++kk) {
    const uint32_t a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
    WgmmaExt<Tr::kD, BF16>::rs(o, l, a, desc_add(db0, kk * kk_stride), kk == 0 ? scale_first : 1);
  }
}

/// V stage sp's kk = 0 descriptor on the kTcSum layout: address and chunk stride (both in the low
/// word) per stage, the low word through REDUX (warp-uniform, all lanes active).
template <class Tr>
__device__ __forceinline__ uint64_t tc_v_desc(uint32_t v_base, int sp) {
  namespace ptx = attnkit::cuda::sm90;
  const uint64_t d0 = ptx::Sw128Desc::make(v_base + Tr::v_off(0), Tr::v_lbo(0), 1024);
  const uint64_t d1 = ptx::Sw128Desc::make(v_base + Tr::v_off(1), Tr::v_lbo(1), 1024);
  return uniform_lo(sp == 0 ? d0 : d1);  // (both have the same high word: SBO, swizzle)
}

/// P V on the kTcSum layout from d0, the kk = 0 descriptor of the V stage (low word uniform),
/// with the row sums into l: D = 128 one m64n(128 + 8) wgmma per k-step; D = 256 two, columns
/// 0-127 and 128-255 + 8 (the sums). (issue_pv_tc's stage sp; mainloop_turn's kFixed ring turns
/// pass RingTurn's V stage descriptor.)
template <class Tr, bool BF16>
__device__ __forceinline__ void issue_pv_tc_desc(float (&o)[Tr::kD / 2], float (&l)[4],
                                                 const uint32_t (&p)[Tr::kBlockN / 4], uint64_t d0,
                                                 int scale_first) {
  constexpr uint32_t kKk = 16 * Tr::kChunkRowBytes;  // 16 keys along a chunk
  if constexpr (Tr::kD == 128) {
    issue_pv_ext_desc<Tr, BF16>(o, l, p, d0, kKk, scale_first);
  } else {
    static_assert(Tr::kD == 256, "flash3: the kTcSum layout is D = 128 or 256");
    const uint64_t d1 = desc_add(d0, 2 * Tr::kTcChunk);  // (the second half 2C on)
    float(&lo)[64] = *reinterpret_cast<float(*)[64]>(&o[0]);
    float(&hi)[64] = *reinterpret_cast<float(*)[64]>(&o[64]);
#pragma unroll
    for (int kk = 0; kk < Tr::kBlockN / 16; ++kk) {
      const uint32_t a[4] = {p[4 * kk], p[4 * kk + 1], p[4 * kk + 2], p[4 * kk + 3]};
      const int sc = kk == 0 ? scale_first : 1;
      Wgmma<128, BF16>::rs(lo, a, desc_add(d0, kk * kKk), sc);
      WgmmaExt<128, BF16>::rs(hi, l, a, desc_add(d1, kk * kKk), sc);
    }
  }
}

/// P V on the kTcSum layout for V stage sp (issue_pv_tc_desc), with the row sums into l.
template <class Tr, bool BF16>
__device__ __forceinline__ void issue_pv_tc(float (&o)[Tr::kD / 2], float (&l)[4],
                                            const uint32_t (&p)[Tr::kBlockN / 4], uint32_t v_base,
                                            int sp, int scale_first) {
  if constexpr (Tr::kD == 128) {
    issue_pv_tc_desc<Tr, BF16>(o, l, p, tc_v_desc<Tr>(v_base, sp), scale_first);
  } else {
    // (stage sp at base + sp x 5C, the plain kernel's form)
    namespace ptx = attnkit::cuda::sm90;
    const uint64_t db = ptx::Sw128Desc::make(v_base + Tr::v_off(0), Tr::kTcChunk, 1024);
    issue_pv_tc_desc<Tr, BF16>(o, l, p, uniform_lo(desc_add(db, sp * Tr::kTcVStageBytes)),
                               scale_first);
  }
}

/// l rows r = 0/1 *= f[r] (the m64n8 accumulator: l[2 r + e]).
__device__ __forceinline__ void rescale_l(float (&l)[4], const float (&f)[2]) {
  l[0] *= f[0], l[1] *= f[0], l[2] *= f[1], l[3] *= f[1];
}

/// This warpgroup's Q rows [64 x kD] (128B-swizzled column chunks of kBlockM rows x 128 B at
/// q_wg) as m64k16 A fragments: qa[ks] = k-step ks (columns 16 ks .. 16 ks + 15), the layout of
/// a wgmma register A operand (= mma.m16n8k16's A for the warp's 16 rows): a0 (row g, cols
/// 2t, 2t+1), a1 (row g + 8), a2 (cols + 8), a3 (row g + 8, cols + 8), g = lane / 4, t = lane % 4.
/// ldmatrix.x4: lane l gives the address of row (l % 8) of 8x8 matrix l / 8 = (row half l / 8 % 2,
/// column half l / 16). 128B swizzle: 16-byte unit u of row r sits at unit u ^ (r % 8) (the
/// chunk and q_wg are 1024-byte aligned, so r % 8 is the row index mod 8 in the chunk).
template <class Tr>
__device__ __forceinline__ void load_q_regs(uint32_t (&qa)[Tr::kD / 16][4], uint32_t q_wg, int warp,
                                            int lane) {
  const int r = 16 * warp + 8 * ((lane / 8) % 2) + lane % 8;  // row in the warpgroup's 64
  const int half = lane / 16;                                 // columns 0-7 or 8-15 of the step
  const uint32_t row_base = q_wg + r * Tr::kChunkRowBytes;
#pragma unroll
  for (int ks = 0; ks < Tr::kD / 16; ++ks) {
    const int unit = ((ks % 4) * 2 + half) ^ (r % 8);
    attnkit::ptx::ldmatrix_x4(qa[ks], row_base + (ks / 4) * Tr::kQChunkBytes + unit * 16);
  }
}

/// S[64 x kBlockN] = Q_wg K_s^T with Q_wg from registers (kVarQReg; K K-major in smem, as
/// issue_qk).
template <class Tr, bool BF16>
__device__ __forceinline__ void issue_qk_rs(float (&s)[Tr::kBlockN / 2],
                                            const uint32_t (&qa)[Tr::kD / 16][4],
                                            uint32_t k_stage) {
  const uint64_t db0 = attnkit::cuda::sm90::Sw128Desc::make(k_stage, 16, 1024);
#pragma unroll
  for (int ks = 0; ks < Tr::kD / 16; ++ks)
    bwd::BwdWgmma<Tr::kBlockN, BF16>::template rs<0>(
        s, qa[ks], desc_add(db0, (ks / 4) * Tr::kKVChunkBytes + (ks % 4) * 32), ks > 0 ? 1 : 0);
}

/// S = Q K_s^T for variant kVar: Q from registers (kVarQReg, issue_qk_rs) or from shared memory
/// (issue_qk, legacy descriptors with kVarLegacyDesc).
template <class Tr, bool BF16, int kVar>
__device__ __forceinline__ void issue_qk_var(float (&s)[Tr::kBlockN / 2], uint32_t q_wg,
                                             const uint32_t (&qa)[Tr::kD / 16][4],
                                             uint32_t k_stage) {
  if constexpr ((kVar & kVarQReg) != 0)
    issue_qk_rs<Tr, BF16>(s, qa, k_stage);
  else
    issue_qk<Tr, BF16, (kVar & kVarLegacyDesc) != 0>(s, q_wg, k_stage);
}

/// O rows r = 0/1 of this thread *= f[r] (accumulator layout: o[4j + 2r + e]).
template <int kD>
__device__ __forceinline__ void rescale_o(float (&o)[kD / 2], const float (&f)[2]) {
#pragma unroll
  for (int j = 0; j < kD / 8; ++j) {
    o[4 * j + 0] *= f[0];
    o[4 * j + 1] *= f[0];
    o[4 * j + 2] *= f[1];
    o[4 * j + 3] *= f[1];
  }
}

/// Keeps the softmax in front of the following P V wait in the machine code (kOn; Tuning::
/// ordered_softmax). Without it ptxas hoists that wait (WARPGROUP.DEPBAR.LE gsb0, 0x0) above
/// the row max and every MUFU.EX2, although the PTX has them before it, so the softmax never
/// overlaps the warpgroup's own P V (seen in the SASS of every mainloop since v1). A branch on
/// a value only the end of the softmax produces (the row sums) is a point ptxas does not move
/// the wait across: with it the EX2s come first (checked in the SASS: D = 64 2/3 warpgroups,
/// D = 128, D = 256). The trap is unreachable: the sums add exp2 results (>= 0, or the
/// canonical NaN 0x7fffffff), never the bit pattern 0xffffffff.
/// With the row sums on the tensor core (kTcSum) row_sum holds each row's last p, and ptxas puts
/// most MUFU.EX2 after the wait again (D 128: 62 of 66; D 256: 31 of 34). Session 55 anchored on
/// the AND of every p so that all ran before it: -2.2..-4.5 % at D 128, -2.2..-5.8 % at D 256
/// (bench/results/2026-12-01-h200-flash3-s55.md), so the last-p anchor stays.
template <bool kOn>
__device__ __forceinline__ void softmax_before_wait(const float (&row_sum)[2]) {
  if constexpr (kOn) {
    if ((__float_as_uint(row_sum[0]) & __float_as_uint(row_sum[1])) == 0xffffffffu) __trap();
  }
}

/// ATTNKIT_FLASH3_TRACE builds only (measurement, FwdArgs::trace): the trace holds, per CTA, tile
/// k < 64 and consumer warpgroup < 3, kTraceWords 64-bit words: 0-3 clock64 stamps (kernel.cuh /
/// consume_tile_simple say which), 4-10 the WaitClock sums of consume_tile_simple or, in the
/// overlapped consumer, Consumer::stamp's clock64 stamps.
inline constexpr int kTraceWords = 12;

/// `value` into word `word` of tile k of consumer warpgroup cwg, from its thread 0 (tid).
__device__ __forceinline__ void trace_put(const FwdArgs& a, int k, int cwg, int tid, int word,
                                          unsigned long long value) {
#if defined(ATTNKIT_FLASH3_TRACE)
  if (a.trace != nullptr && tid == 0 && k >= 0 && k < 64 && cwg < 3)
    a.trace[((static_cast<int64_t>(blockIdx.x) * 64 + k) * 3 + cwg) * kTraceWords + word] = value;
#else
  (void)a, (void)k, (void)cwg, (void)tid, (void)word, (void)value;
#endif
}

/// %globaltimer (ns, one clock for every SM) into word `word` (trace builds only; trace_put):
/// the split tail's launch timeline (session 19, tail.cuh; trace slots k = 47 / 48..).
__device__ __forceinline__ void trace_gtime(const FwdArgs& a, int k, int cwg, int tid, int word) {
#if defined(ATTNKIT_FLASH3_TRACE)
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  trace_put(a, k, cwg, tid, word, t);
#else
  (void)a, (void)k, (void)cwg, (void)tid, (void)word;
#endif
}

/// clock64 into word `word` (trace builds only; trace_put).
__device__ __forceinline__ void trace_stamp(const FwdArgs& a, int k, int cwg, int tid, int word) {
#if defined(ATTNKIT_FLASH3_TRACE)
  trace_put(a, k, cwg, tid, word, clock64());
#else
  (void)a, (void)k, (void)cwg, (void)tid, (void)word;
#endif
}

/// fence_regs(regs) in trace builds only: a following trace_stamp reads the clock after regs'
/// last writer. Nothing in other builds.
template <class R>
__device__ __forceinline__ void trace_fence(R& regs) {
#if defined(ATTNKIT_FLASH3_TRACE)
  fence_regs(regs);
#else
  (void)regs;
#endif
}

/// Trace builds (session 15): the cycles a warpgroup's thread 0 spent in one tile's mainloop turns
/// 1 .. n-1, by part: waiting for K, for V, for S = Q K^T (wgmma wait 1), for the previous P V
/// (wait 0); issuing the Q K^T and P V wgmmas; the mask + online softmax; the rest after the P V
/// wait (release, rescale, P conversion). The turn marks the start of each stretch it measures
/// and laps it into its part (stretches between a lap and the next mark count nowhere); a null
/// clock (the overlapped Consumer's turns) reads no clock. Trace words 4 + part. In other builds
/// every member is empty and compiles away (the turn is unchanged: checked with cuobjdump on
/// fwd_d256_bf16).
struct WaitClock {
  enum Part { kK, kV, kS, kPv, kIssue, kSoft, kPost, kParts };
#if defined(ATTNKIT_FLASH3_TRACE)
  uint32_t sum[kParts] = {};
  uint32_t t = 0;  // the clock at the last mark or lap
  __device__ __forceinline__ static void mark(WaitClock* c) {
    if (c != nullptr) c->t = static_cast<uint32_t>(clock64());
  }
  __device__ __forceinline__ static void lap(WaitClock* c, Part part) {
    if (c == nullptr) return;
    const uint32_t now = static_cast<uint32_t>(clock64());
    c->sum[part] += now - c->t;
    c->t = now;
  }
  /// lap after `regs` are written (the clock read is not hoisted above their last writer).
  template <class R>
  __device__ __forceinline__ static void lap(WaitClock* c, Part part, R& regs) {
    fence_regs(regs);
    lap(c, part);
  }
  /// The sums into trace words 4 .. 4 + kParts - 1 of tile k (trace_put).
  __device__ __forceinline__ void put(const FwdArgs& a, int k, int cwg, int tid) const {
#pragma unroll
    for (int i = 0; i < kParts; ++i)
      trace_put(a, k, cwg, tid, 4 + i, sum[i]);
  }
#else
  __device__ __forceinline__ static void mark(WaitClock*) {}
  __device__ __forceinline__ static void lap(WaitClock*, Part) {}
  template <class R>
  __device__ __forceinline__ static void lap(WaitClock*, Part, R&) {}
  __device__ __forceinline__ void put(const FwdArgs&, int, int, int) const {}
#endif
};

/// Turn 0 without its Q K^T (idle_tile_simple, skip_masked_turn): K of ring position pipe.count
/// waited for, the ping-pong turn taken and passed, K released.
template <class Tr>
__device__ __forceinline__ void pass_turn_k(const SmemLayout<Tr>& sm, const PipeOf<Tr>& pipe,
                                            int lane, const PingPong& turn) {
  attnkit::cuda::sm90::mbar_wait(&sm.full_k[pipe.ks()], pipe.kph());
  turn.wait_turn();
  turn.pass_turn();
  release_kv<Tr>(&sm.empty_k[pipe.ks()], lane);
}

/// Tiles one at a time (v4 structure; D = 256, see Consumer::kCanOverlap).
/// A consumer warpgroup whose 64 rows all lie beyond seqlen_q (the last tile of a 192-row
/// D = 64 launch, e.g. S = 1024: rows 960 .. 1151, two of three warpgroups empty): it computes
/// nothing but keeps the protocol: the same ping-pong turns (n + 1), and every K, V and Q buffer
/// released once its data has landed (waiting on "full" first keeps its arrivals in the right
/// phase). Nothing to write either: the epilogue skips rows >= seqlen_q.
/// The Q buffer too (q_phase: the parity of this tile's full_q phase): without ping-pong turns
/// (D = 256 non-causal runs with pingpong = 0) nothing else holds this warpgroup back, and a
/// release of tile t + 1's Q before it landed completed the phase of tile t's Q without the
/// working warpgroup's arrivals (B 1, S_q 1, S_k 20, H_q 4000: the producer overwrote a Q still
/// being read, then armed full_q twice in one phase: a hang, or cudaErrorLaunchFailure; session
/// 14). The Q of tile t + 1 lands only after every warp released tile t's.
template <class Tr>
__device__ __forceinline__ void idle_tile_simple(const SmemLayout<Tr>& sm, int n_blocks,
                                                 PipeOf<Tr>& pipe, int qb, uint32_t q_phase,
                                                 int lane, const PingPong& turn) {
  namespace ptx = attnkit::cuda::sm90;
  pass_turn_k<Tr>(sm, pipe, lane, turn);
  for (int it = 1; it < n_blocks; ++it) {
    const int st = pipe.ks(it), sp = pipe.vs(it - 1);
    ptx::mbar_wait(&sm.full_k[st], pipe.kph(it));
    turn.wait_turn();
    ptx::mbar_wait(&sm.full_v[sp], pipe.vph(it - 1));
    turn.pass_turn();
    release_kv<Tr>(&sm.empty_k[st], lane);
    release_kv<Tr>(&sm.empty_v[sp], lane);
  }
  ptx::mbar_wait(&sm.full_q[qb], q_phase);
  release<Tr>(&sm.empty_q[qb], lane);
  const int sp = pipe.vs(n_blocks - 1);
  ptx::mbar_wait(&sm.full_v[sp], pipe.vph(n_blocks - 1));
  turn.wait_turn();
  turn.pass_turn();
  release_kv<Tr>(&sm.empty_v[sp], lane);
  pipe.count += n_blocks;
}

// kVarSkipTurn (session 48; Tuning::skip_masked_turn, launch.cuh): in consume_tile_simple's
// plain causal kernels (D = 256; none of kVarScoreMod, kVarMask, kVarTail, kVarDropout,
// kVarNarrow, kVarVarlen; kernels of their own, run on causal launches only), a consumer warpgroup
// whose tile's first block (K/V block n_end - 1, 64 keys) lies wholly right of its 64 rows'
// diagonal (mask_blocks.hpp block_wholly_masked) does not compute it: no Q K^T, mask, softmax of
// -inf, or P V with P = 0. With S_q = S_k that is warpgroup 0 of every full causal tile (m block m:
// rows 128m .. 128m + 63, first block 2m + 1 = keys 128m + 64 ..); warpgroup 1 never (its last row
// sees a key of block n - 1). 5.6 % of the warpgroup turns at S 1k, 1.5 % at 4k
// (bench/notes/fwd-energy-s47.md P2).
//
// The protocol stays (skip_masked_turn):
// - ping-pong: the skipped turn still waits for and passes the turn, so the warpgroup keeps
//   n_blocks + 1 turn pairs per tile and the alternation stays in step;
// - the K/V ring: K_{n-1} and V_{n-1} are waited for ("full") and released ("empty"): the producer
//   refills a stage only after every consumer warp released it, and waiting on "full" first puts
//   the arrival into that stage use's phase (idle_tile_simple's reason);
// - the counters: the skipped block's ring position is counted (++pipe.count); the rest of the
//   tile runs as a tile of n_blocks - 1 blocks ending at n_end - 1 (its turn 0 = block n - 2,
//   the diet's peeled first P V = block n - 2's); the tile ends with pipe.count advanced by
//   n_blocks in both warpgroups.
//
// Where V_{n-1} is released: right after the skipped turn, once it has landed. The producer
// (produce_tile, one thread, in program order) issues per tile K_{n-1}, Q, V_{n-1}, then K_b, V_b
// for b = n - 2 .. 0, each load after its stage's previous use was released by every consumer
// warp (2 K stages, VS = 2 or 3 V stages). No deadlock: the default code of this warpgroup waits
// for K_{n-2} at the same point of its protocol (after turn 0's wait_turn / pass_turn and K_{n-1}'s
// release, before any other arrival), and K_{n-2} is issued only after V_{n-1}; so V_{n-1} is
// issued whenever the default would get past that wait, and an issued TMA load completes without
// further arrivals. Its stage's previous use (ring position pipe.count - VS <= pipe.count - 2)
// was released by this warpgroup in an earlier tile and by the other one before its last
// pass_turn of the previous tile. Nor a stall: the block needed next, K_{n-2}, is issued after
// V_{n-1} anyway, and the early release frees V_{n-1}'s stage for V_{n-1-VS} a turn sooner than
// the P V path did. (Releasing it later, after V_{n-2}'s P V, would hold a stage the producer
// needs for V_{n-1-VS}: a turn later with VS = 2, so no deadlock, but a delayed stream.)
//
// Bitwise: the skipped block leaves the online softmax state exactly as init() does. Its scores
// are all -inf, so step() finds mx = -inf (kLazy: grow compares NaN > 8, false; the reference
// stays -inf), ref = 0, factor = 2^-inf = +0, p = 2^-inf = +0: row_max = -inf, row_sum = 0 * 0 + 0
// = +0 (kTcSum: row_sum = the last p = +0, l = P x ones = +0). Every later step runs on the same
// state and scores as in the default, so m, l, lse and the factors have the same bits. O: in the
// default the skipped block's P V wrote O = P V_{n-1} = 0 (scale-d 0 with kVarTileDiet, else onto
// the zeroed O) and block n - 2's turn rescaled it by +0 (kLazy: or left it) before adding
// P V_{n-2}; here block n - 2's P V writes O itself (scale-d 0; or onto the zeroed O). So the
// wgmma's accumulator input is a zero either way (+-0 against scale-d 0 or +0), which changes no
// nonzero sum: the only possible difference is the sign of an output that is exactly 0 (every
// product p v of the element zero, e.g. a row without visible keys: -0 when V's column is <= 0 in
// every visited block but > 0 somewhere in block n - 1). Where V_{n-1} holds inf / NaN, the
// default's 0 x inf = NaN reaches rows that cannot see those keys; here it does not.
//
// Why kernels of their own (session 48 call 1, H200, 1-second blocks, 3 rounds; bench/results/
// 2026-11-30-h200-flash3-s48.md): first built as a switch in the shared causal / non-causal
// kernels (slot 39), causal +1.5..+1.9 % at S 1k, +1.4..+2.1 % at 2k, +0.4..+1.4 % at 4k, bitwise
// on every row, but non-causal -1.2..-1.6 % at 2k and -1.8..-2.5 % at 4k (the branch never taken
// there: code generation). The twins leave the non-causal kernels as they were.

/// The skipped first turn of kVarSkipTurn (the comment above): one
/// ping-pong turn without a GEMM, K and V of the ring position pipe.count waited for and
/// released, then pipe.count one block on.
template <class Tr>
__device__ __forceinline__ void skip_masked_turn(const SmemLayout<Tr>& sm, PipeOf<Tr>& pipe,
                                                 int lane, const PingPong& turn) {
  pass_turn_k<Tr>(sm, pipe, lane, turn);
  attnkit::cuda::sm90::mbar_wait(&sm.full_v[pipe.vs()], pipe.vph());
  release_kv<Tr>(&sm.empty_v[pipe.vs()], lane);
  ++pipe.count;
}

/// (kD64Ring, kD128Ring, kD256Ring) The ring state of ring_loop's turns (their K stage is
/// mainloop_turn's template argument kStage): the 2-stage ring's phase parity, the K / V stage
/// descriptors of stages 0 and 1 (ring_turn_state, ring_desc; at D 64 / 128 the turn takes their
/// low words through REDUX, as stage_desc: mainloop_turn's ring_lo) and the ping-pong barrier to
/// arrive on.
struct RingTurn {
  uint64_t kd[2], vd[2];
  uint32_t ph;
  int next_bar;  // PingPong::next_bar
};

/// (kD64Ring, kD128Ring, kD256Ring) The descriptor of the shared-memory stage `off` bytes after
/// `base` (16-byte multiples), with leading byte offset lbo; mainloop_turn takes its low word
/// through REDUX (uniform_lo), as stage_desc, at D 64 / 128 (ring_lo). The same value as
/// Sw128Desc::make(base + off, lbo, 1024): its low word is ((addr & 0x3FFFF) >> 4) | ((lbo >> 4) &
/// 0x3FFF) << 16. base must be < 2^18 (a CTA's offset, 228 KB at most; ring_turn_state masks
/// it in a cluster), so the mask changes nothing and | is +, and the word is (base >> 4) + a
/// constant: one LEA.HI where ptxas rematerialises it in the loop (make's VIADD + LOP3 + LEA.HI
/// from the smem base; base = the smem base itself, so no VIADD either).
__device__ __forceinline__ uint64_t ring_desc(uint32_t base, uint32_t off, uint32_t lbo) {
  const uint64_t hi = attnkit::cuda::sm90::Sw128Desc::make(0, 0, 1024);  // SBO, swizzle
  return hi | ((base >> 4) + (off >> 4) + (((lbo >> 4) & 0x3FFF) << 16));
}

/// (kD64Ring, kD128Ring, kD256Ring) The stage descriptors of both K and V stages (SmemLayout: k = q
/// + kQStages x kQBytes; v = k + kStagesK x kKVBytes, or v = k on the kTcSum layout; V stage s at
/// v + v_off(s) with chunk stride v_lbo(s)) and the ping-pong barrier to arrive on; ring_loop sets
/// the parity.
template <class Tr>
__device__ __forceinline__ void ring_turn_state(RingTurn& r, const SmemLayout<Tr>& sm,
                                                const PingPong& turn) {
  static_assert(Tr::kStagesK == 2 && Tr::kStagesV == 2 && !Tr::kRing, "flash3: the 2-stage ring");
  // A shared address carries the CTA's cluster rank in bits 24-31 (ptxas forms the window
  // base as rank << 24 | 0x400): 0 without a cluster, 1 in the second CTA of a pair. Unmasked,
  // that rank lands in the descriptor's LBO field (bit 20 of the low word) and rank 1's P V
  // reads V with a wrong chunk stride (session 56 call 1: half of O and lse wrong at D 128 nc
  // 4k / 16k, slot 77). The mask only where a rank can be nonzero: CL 1 SASS unchanged.
  constexpr uint32_t kRankMask = Tr::kCluster == 2 ? 0x3FFFFu : 0xFFFFFFFFu;
  const uint32_t q_base = attnkit::cuda::sm90::smem_u32(sm.q) & kRankMask;
  constexpr uint32_t kKOff = Tr::kQStages * Tr::kQBytes;
  constexpr uint32_t kVOff = kKOff + (Tr::kTcSum ? 0 : Tr::kStagesK * Tr::kKVBytes);
#pragma unroll
  for (int st = 0; st < 2; ++st) {
    r.kd[st] = ring_desc(q_base, kKOff + st * Tr::kKStageBytes, 16);
    r.vd[st] = ring_desc(q_base, kVOff + Tr::v_off(st), Tr::v_lbo(st));
  }
  r.next_bar = turn.next_bar();
}

/// (kD64Ring, kD128Ring, kD256Ring) Turns it .. n_blocks - 1 (it < n_blocks) of a tile, the turn at
/// ring position c = pipe.count + it first, with the 2-stage K / V ring unrolled: an iteration runs
/// run(integral_constant<int, 0>) (the turn on K stage 0), then run(.. 1 ..) (K stage 1). Turn i
/// reads ring position c = pipe.count + i: K stage c % 2 with parity (c / 2) & 1, V stage (c -
/// 1) % 2 with parity ((c - 1) / 2) & 1 (PipeIndex; c >= 2 here, so no signed fix-ups are
/// needed, and kUnsignedRing's unsigned c % 2, c / 2 at D 128 / 256 are the same values). For even
/// c: K stage 0, V stage 1, K parity ph = (c / 2) & 1, V parity ph ^ 1; for odd c: K stage 1, V
/// stage 0, both parities ph = (c >> 1) & 1. ph (r.ph) flips after each odd c. A loop that starts
/// on an odd c (pipe.count and it vary per tile) skips its first stage-0 turn. it counts the turns
/// (run reads it through the caller's reference: the turn's key block).
template <class Run>
__device__ __forceinline__ void ring_loop(int& it, int n_blocks, int c, RingTurn& r, Run&& run) {
  using S0 = std::integral_constant<int, 0>;
  using S1 = std::integral_constant<int, 1>;
  r.ph = static_cast<uint32_t>(c >> 1) & 1u;
  bool odd = (c & 1) != 0;
  for (;;) {
    if (!odd) {
      run(S0{});
      if (++it == n_blocks) break;
    }
    run(S1{});
    if (++it == n_blocks) break;
    r.ph ^= 1u;
    odd = false;
  }
}

/// Turn it (1 <= it < n_blocks) of a tile (consume_tile_simple, Consumer::tile): S = Q K_it^T
/// and O += P V_{it-1} issued in one ping-pong turn, the softmax of S (key tile
/// nb = n_blocks - 1 - it) while P V runs, then O *= factor and P = S converted (16-bit pairs).
/// k_base / v_base: shared addresses of K / V stage 0; row0 = this thread's first row.
/// (n_blocks: one past the tile's last block; a split tail's piece passes its own end, tail.cuh.)
/// kMaskFrom (Consumer::kMaskFrom): first_row holds the first block that needs the mask
/// (Consumer::mask_from) instead of the warpgroup's first row.
/// kMask: kMaskTest (main's per-turn needs_mask test), or kMaskAlways / kMaskNever when the
/// caller knows the answer for every turn of its loop (kD64TurnSplit's split loops).
/// kStage >= 0 (kD64Ring, kD128Ring, kD256Ring): the turn's K stage, known to the caller's
/// unrolled loop (ring_loop); ring holds the phase parity and the stage descriptors (RingTurn),
/// and `it` only names the key block.
template <class Tr, bool BF16, int kVar, bool kMaskFrom = false, int kMask = kMaskTest,
          int kStage = -1, class Sm, class State>
__device__ __forceinline__ void mainloop_turn(
    const FwdArgs& a, Sm& sm, PipeOf<Tr>& pipe, const PingPong& turn, int it, int n_blocks,
    uint32_t q_wg, uint32_t k_base, uint32_t v_base, float (&o)[Tr::kD / 2],
    uint32_t (&p)[Tr::kBlockN / 4], float (&s)[Tr::kBlockN / 2], float (&factor)[2], float (&pf)[2],
    State& sm_state, float sl2, int first_row, int row0, int lane,
    const uint32_t (&qa)[Tr::kD / 16][4], int pv_scale = 1, WaitClock* wc = nullptr,
    float alibi_k = 0.f, const uint8_t* mask_bh = nullptr, uint32_t drop_bh = 0,
    const RingTurn* ring = nullptr) {
  namespace ptx = attnkit::cuda::sm90;
  constexpr int kBN = Tr::kBlockN;
  constexpr bool kScoreMod = (kVar & kVarScoreMod) != 0;
  constexpr bool kOrdered = (kVar & kVarOrdered) != 0;
  constexpr bool kEarly = (kVar & kVarEarlyRescale) != 0;
  constexpr bool kLegacyDesc = (kVar & kVarLegacyDesc) != 0;
  constexpr bool kUniform = (kVar & kVarUniformDesc) != 0;
  constexpr bool kLazy = (kVar & kVarLazyRescale) != 0;
  constexpr bool kTc = Tr::kTcSum;
  constexpr bool kLean = kD64TurnMath<Tr::kD, kVar, kTc>;
  auto uni = [](int x) { return kUniform ? warp_uniform(x) : x; };
  auto needs_mask = [&](int nb) {
    if constexpr (kMask != kMaskTest) return kMask == kMaskAlways;
    if constexpr (kMaskFrom) return nb >= first_row;
    return block_needs_mask<kBN>(a, nb, first_row);
  };
  const int nb = n_blocks - 1 - it;
  // kUnsignedRing: the ring position in unsigned arithmetic; PipeIndex's signed % and / put
  // LEA.HI / LOP3 / IADD3 sign fix-ups at the loop top, before the turn's first wgmma (count + it
  // >= 1, so the values are the same). Same-process A/Bs against an identical-kernel control
  // (bench/results/2026-11-29-h200-flash3-s36.md call 3, -s37.md call 1): D 128 +1.7..+2.4 % at
  // S 4k / 16k, +0.2..+0.5 % at 1k; D 256 +0.3..+1.1 % at S 4k / 16k, -0.3..+0.4 % at 1k; D 64
  // -0.5..-0.9 % (off). (Written here, not as PipeIndex methods: that form computes V's
  // position as count + (it - 1), which changed the SASS of the measured D 128 kernels.)
  constexpr bool kUnsignedRing = kUniform && (Tr::kD == 128 || Tr::kD == 256);
  constexpr uint32_t KS = PipeOf<Tr>::kKS, VS = PipeOf<Tr>::kVS;
  // (kD64Ring / kD128Ring / kD256Ring: ring_loop says why the values are these; with
  // kUnsignedRing too, since the unsigned and the signed forms agree for c >= 1)
  constexpr bool kFixed = kStage >= 0;
  // (kFixed: the stage descriptors' low words through REDUX, as stage_desc, at D 64 / 128, their
  // measured form; at D 256 ptxas builds ring_desc's words from the smem base's uniform register,
  // ULEA.HI, and a REDUX only moved them through a vector register: 4 IMAD.U32 + REDUX a turn)
  auto ring_lo = [](uint64_t d) { return Tr::kD == 256 ? d : uniform_lo(d); };
  static_assert(!kFixed || (KS == 2 && VS == 2), "flash3: the 2-stage ring");
  const uint32_t c = static_cast<uint32_t>(pipe.count + it);
  const int st = kFixed ? kStage : kUnsignedRing ? static_cast<int>(c % KS) : pipe.ks(it);
  const int sp = kFixed          ? kStage ^ 1
                 : kUnsignedRing ? static_cast<int>((c - 1) % VS)
                                 : pipe.vs(it - 1);
  const uint32_t kph = kFixed ? ring->ph : kUnsignedRing ? (c / KS) & 1u : pipe.kph(it);
  const uint32_t vph = kFixed          ? ring->ph ^ (kStage == 0 ? 1u : 0u)
                       : kUnsignedRing ? ((c - 1) / VS) & 1u
                                       : pipe.vph(it - 1);
  // (trace builds: the turn's parts into *wc; no code otherwise)
  using Clk = WaitClock;
  Clk::mark(wc);
  ptx::mbar_wait(&sm.full_k[st], kph);
  Clk::lap(wc, Clk::kK);
  fence_regs(o);
  fence_regs(p);
  if constexpr (kTc) fence_regs(sm_state.lacc);
  turn.wait_turn();
  Clk::mark(wc);
  ptx::wgmma_fence();
  // kDescRedux: REDUX of the stage descriptor's low word itself (the base descriptor + st *
  // kKVBytes / 16, vector work ptxas places before the turn), so the chain after the ping-pong
  // barrier is REDUX -> UIADD3 -> HGMMA instead of REDUX -> MOV -> IADD3 -> R2UR -> ULOP3 -> ULEA
  // -> UIADD3 -> HGMMA. Session 37 call 1 (same process, against an identical-kernel control):
  // D 128 +0.5..+0.9 % non-causal, +0.7..+1.2 % causal (every row); D 64 +0.0..+0.6 %; D 256
  // -0.5..+0.4 % (off).
  constexpr bool kDescRedux =
      kUniform && (Tr::kD == 64 || Tr::kD == 128) && (kVar & (kVarQReg | kVarLegacyDesc)) == 0;
  auto stage_desc = [&](uint32_t base, int stage, uint32_t lbo, int stride) {
    const uint64_t d = ptx::Sw128Desc::make(base, lbo, 1024);
    if constexpr (kLean) {  // (stride % 16 == 0: desc_add's low word, without its shift and mask)
      static_assert(Tr::kKStageBytes % 16 == 0 && Tr::kKVBytes % 16 == 0, "16-byte units");
      return uniform_lo((d & 0xFFFFFFFF00000000ull) |
                        (static_cast<uint32_t>(d) + static_cast<uint32_t>(stage * (stride >> 4))));
    }
    return uniform_lo(desc_add(d, stage * stride));
  };
  if constexpr (kFixed)
    issue_qk_desc<Tr, BF16>(s, ptx::Sw128Desc::make(q_wg, 16, 1024), ring_lo(ring->kd[kStage]));
  else if constexpr (kDescRedux)
    issue_qk_desc<Tr, BF16>(s, ptx::Sw128Desc::make(q_wg, 16, 1024),
                            stage_desc(k_base, st, 16, Tr::kKStageBytes));
  else
    issue_qk_var<Tr, BF16, kVar>(s, q_wg, qa, k_base + uni(st * Tr::kKStageBytes));
  ptx::wgmma_commit();
  Clk::lap(wc, Clk::kIssue);
  ptx::mbar_wait(&sm.full_v[sp], vph);
  Clk::lap(wc, Clk::kV);
  if constexpr (kEarly) rescale_o<Tr::kD>(o, pf);  // (never with kTc: a tile-diet kernel)
  ptx::wgmma_fence();  // the V wait is a branch: re-establish register ordering for PV
  // pv_scale 0 (kVarTileDiet, turn 1: the tile's first P V): O = P V, O was not cleared.
  if constexpr (kTc && kFixed) {  // (kD128Ring, kD256Ring: the kTcSum layout's V stage kStage ^ 1)
    issue_pv_tc_desc<Tr, BF16>(o, sm_state.lacc, p, ring_lo(ring->vd[kStage ^ 1]), pv_scale);
  } else if constexpr (kTc) {  // (the kTcSum layout)
    issue_pv_tc<Tr, BF16>(o, sm_state.lacc, p, v_base, sp, pv_scale);
  } else if constexpr (kFixed) {
    issue_pv_desc<Tr, BF16>(o, p, uniform_lo(ring->vd[kStage ^ 1]), 16 * Tr::kChunkRowBytes,
                            pv_scale);
  } else if constexpr (kDescRedux) {
    issue_pv_desc<Tr, BF16>(o, p, stage_desc(v_base, sp, Tr::kKVChunkBytes, Tr::kKVBytes),
                            16 * Tr::kChunkRowBytes, pv_scale);
  } else {
    issue_pv<Tr, BF16, kLegacyDesc>(o, p, v_base + uni(sp * Tr::kKVBytes), 16 * Tr::kChunkRowBytes,
                                    Tr::kKVChunkBytes, pv_scale);
  }
  ptx::wgmma_commit();
  Clk::lap(wc, Clk::kIssue);
  if constexpr (kFixed)
    turn.pass_turn_to(ring->next_bar);
  else if constexpr (kLean)
    turn.pass_turn_lean();
  else
    turn.pass_turn();
  Clk::mark(wc);
  ptx::wgmma_wait<1>();  // S ready
  Clk::lap(wc, Clk::kS);
  fence_regs(s);
  release_kv<Tr>(&sm.empty_k[st], lane);
  if constexpr (kScoreMod)  // softcap / ALiBi, then the mask with the window's left edge
    score_mod_tile<kBN>(s, a, nb, first_row, row0, lane, alibi_k, mask_bh);
  else if (needs_mask(nb))
    mask_tile<kBN>(s, nb * kBN, row0, lane, a.seqlen_k, a.causal, a.causal_offset);
  const bool moved = sm_state.template step<!kLegacyDesc, kLazy, kTc, kLean>(s, sl2, factor);
  softmax_before_wait<kOrdered>(sm_state.row_sum);
  Clk::lap(wc, Clk::kSoft);
  ptx::wgmma_wait<0>();  // P V_{it-1} done: O and P are free
  Clk::lap(wc, Clk::kPv);
  fence_regs(o);
  fence_regs(p);
  if constexpr (kTc) fence_regs(sm_state.lacc);
  release_kv<Tr>(&sm.empty_v[sp], lane);
  if constexpr (!kEarly) {
    if (moved) {  // (kLazy: factor = 1 when !moved)
      rescale_o<Tr::kD>(o, factor);
      if constexpr (kTc) rescale_l(sm_state.lacc, factor);
    }
  }
  if constexpr ((kVar & kVarDropout) != 0) dropout_tile<kBN>(s, a, nb * kBN, row0, lane, drop_bh);
  // P is converted only now: writing its registers while P V_{it-1} still reads them makes
  // ptxas serialise every wgmma (C7513), since empty asm fences do not reach the PTX.
  convert_p<kBN, BF16>(s, p);
  pf[0] = factor[0], pf[1] = factor[1];
  Clk::lap(wc, Clk::kPost, p);
}

/// kVarTail (session 20, D = 256; tail.cuh): piece pc of a split tail's tile, its blocks pc.lo
/// .. pc.lo + n_blocks - 1 (n_blocks = pc.n); a piece of a cut tile (pc.pieces > 1) ends in
/// finish_tail_piece instead of store_output.
/// kVarScoreMod (session 23): blocks nb_lo .. nb_lo + n_blocks - 1 (tile_scheduler.cuh
/// first_n_block: the window's left edge), scores through score_mod_tile.
template <class Tr, bool BF16, int kVar>
__device__ __forceinline__ void consume_tile_simple(const FwdArgs& a, SmemLayout<Tr>& sm,
                                                    int m_block, int h, int b, int n_blocks,
                                                    PipeOf<Tr>& pipe, QIndex& qi, int cwg, int tid,
                                                    const PingPong& turn,
                                                    const TailPiece& pc = TailPiece{},
                                                    int nb_lo = 0) {
  namespace ptx = attnkit::cuda::sm90;
  constexpr int kBN = Tr::kBlockN;
  constexpr bool kTail = (kVar & kVarTail) != 0;
  constexpr bool kScoreMod = (kVar & kVarScoreMod) != 0;
  constexpr bool kNarrow = (kVar & kVarNarrow) != 0;
  static_assert(!kNarrow || (kScoreMod && !kTail), "flash3 kVarNarrow: the score-mod kernel");
  // kTc: the row sums in P V (kVarTcSum) at D = 256 (session 41); D = 128's run the Consumer.
  constexpr bool kTc = Tr::kTcSum;
  static_assert(!kTc || Tr::kD == 256, "flash3: D = 128's row sums in P V are the Consumer's");
  // (mainloop_turn's block of turn it is n_end - 1 - it; pc.lo / nb_lo are 0 without kVarTail /
  // kVarScoreMod.)
  const int n_end = (kTail ? pc.lo : kScoreMod ? nb_lo : 0) + n_blocks;
  constexpr bool kEarly = (kVar & kVarEarlyRescale) != 0;
  constexpr bool kLegacyDesc = (kVar & kVarLegacyDesc) != 0;
  constexpr bool kUniform = (kVar & kVarUniformDesc) != 0;
  constexpr bool kLazy = (kVar & kVarLazyRescale) != 0;
  // kVarTileDiet (helper f3fwd16, D = 256): O is not zeroed per tile; the tile's first P V
  // (turn 1, peeled; or the last one of a one-block tile) is issued with scale-d = 0.
  constexpr bool kDiet = (kVar & kVarTileDiet) != 0;
  static_assert(!kDiet || !kEarly, "flash3: kVarTileDiet does not rescale O before P V");
  // kVarSkipTurn (above skip_masked_turn): the plain kernels only.
  constexpr bool kSkipTurn = (kVar & kVarSkipTurn) != 0;
  // ATTNKIT_FLASH3_FWD_D256_RING: split loops and the unrolled K / V ring (below the peeled turn 1)
  constexpr bool kRing256 = kD256Ring<Tr::kD, kVar, kTc>;
  static_assert(!kRing256 || kDiet, "flash3: the ring loop starts at turn 2 (c >= 2)");
  // ATTNKIT_FLASH3_FWD_D256_EDGE: the tile-boundary diet (kD256Edge); _EDGE_IDX with it: the
  // epilogue's zero-extended index products (store_output's kNonNeg)
  constexpr bool kEdge = kD256Edge<Tr::kD, kVar, Tr::kCluster>;
  constexpr bool kEdgeIdx = kEdge && ATTNKIT_FLASH3_FWD_D256_EDGE_IDX == 1;
  static_assert(!kSkipTurn || (kVar & (kVarScoreMod | kVarMask | kVarTail | kVarDropout |
                                       kVarNarrow | kVarVarlen)) == 0,
                "flash3: kVarSkipTurn runs in the plain kernels only");
  // kUniform: shared-memory offsets through REDUX (warp-uniform; all 32 lanes are active here).
  auto uni = [](int x) { return kUniform ? warp_uniform(x) : x; };
  const int warp = tid / 32, lane = tid % 32;
  const int row0 = m_block * Tr::kBlockM + cwg * 64 + warp * 16 + lane / 4;
  const float sl2 = a.scale_log2;

  float o[Tr::kD / 2];
  // (kDiet: O is written by the first P V (scale-d 0) before it is read; zeroed below only for
  // a tile without keys, whose O is stored as it is.)
  OnlineSoftmax<kBN> sm_state;
  if constexpr (!kDiet) {
#pragma unroll
    for (int i = 0; i < Tr::kD / 2; ++i)
      o[i] = 0.f;
    if constexpr (kTc)
      sm_state.lacc[0] = sm_state.lacc[1] = sm_state.lacc[2] = sm_state.lacc[3] = 0.f;
  }
  sm_state.init();

  if (n_blocks > 0 && m_block * Tr::kBlockM + cwg * 64 >= a.seqlen_q) {
    const int nq = Tr::kQStages == 1 ? 1 : a.q_bufs;
    idle_tile_simple<Tr>(sm, n_blocks, pipe, qi.buf(nq), qi.phase(nq), lane, turn);
    ++qi.count;
    return;
  }
  if (n_blocks > 0) {
    const int nq = Tr::kQStages == 1 ? 1 : a.q_bufs;
    const int qb = qi.buf(nq);
    const uint32_t q_wg =
        ptx::smem_u32(sm.q) + uni(qb * Tr::kQBytes + cwg * 64 * Tr::kChunkRowBytes);
    const uint32_t k_base = ptx::smem_u32(sm.k);
    const uint32_t v_base = ptx::smem_u32(sm.v);
    // A tile needs the mask when it holds keys >= Sk or keys right of the first row's diagonal.
    const int first_row = m_block * Tr::kBlockM + cwg * 64;
    // kEdge: the first block that needs the mask, once a tile (first_masked_block; a block needs
    // it iff nb >= mfb, block_needs_mask's rule: tests/core/flash3_mask_blocks_test.cpp checks the
    // two agree), for turn 0's test, turn 1's and the plain loop's (mainloop_turn's kMaskFrom)
    // and the ring's it_plain: one ISETP a test instead of block_needs_mask's ~10 instructions.
    const int mfb = kEdge ? first_masked_block<__builtin_ctz(kBN)>(a, first_row) : 0;
    auto needs_mask = [&](int nb) {
      if constexpr (kEdge) return nb >= mfb;
      return block_needs_mask<kBN>(a, nb, first_row);
    };
    // (mainloop_turn's first_row: mfb under kMaskFrom = kEdge)
    const int turn_row = kEdge ? mfb : first_row;
    const float alibi_k = kScoreMod ? alibi_factor(a, b, h) : 0.f;
    const uint8_t* mask_bh = (kVar & kVarMask) != 0 ? mask_base(a, b, h) : nullptr;
    // kVarDropout: the Philox counter's word 2 (core/philox.hpp; b is the batch: not varlen)
    const uint32_t drop_bh = static_cast<uint32_t>(b * a.heads_q + h);

    float s[kBN / 2];
    uint32_t p[kBN / 4];
    float factor[2];
    float pf[2];   // kEarly: the factor that goes with P (applied to O before P's P V)
    WaitClock wc;  // (trace builds: words 4-10)
    ptx::mbar_wait(&sm.full_q[qb], qi.phase(nq));
    // (trace: word 1 = Q landed; tiles counted by qi, = the kernel's k when every tile has keys)
    trace_stamp(a, qi.count, cwg, tid, 1);
    ++qi.count;
    // The blocks this warpgroup computes: n_run_end - n_run .. n_run_end - 1 (n_blocks, n_end
    // unless its first block is skipped: kVarSkipTurn).
    int n_run = n_blocks, n_run_end = n_end;
    if constexpr (kSkipTurn) {  // (n_blocks >= 2: at least one block is left to compute)
      if (cwg == 0 && n_blocks > 1 && block_wholly_masked<kBN, 64>(a, n_end - 1, first_row)) {
        skip_masked_turn<Tr>(sm, pipe, lane, turn);
        --n_run, --n_run_end;
      }
    }

    // it = 0: S = Q K_{n-1}^T only (block n_run_end - 1: n - 2 after a skipped turn).
    {
      const int nb = n_run_end - 1;
      ptx::mbar_wait(&sm.full_k[pipe.ks()], pipe.kph());
      turn.wait_turn();
      ptx::wgmma_fence();
      issue_qk<Tr, BF16, kLegacyDesc>(s, q_wg, k_base + uni(pipe.ks() * Tr::kKVBytes));
      ptx::wgmma_commit();
      turn.pass_turn();
      ptx::wgmma_wait<0>();
      fence_regs(s);
      release_kv<Tr>(&sm.empty_k[pipe.ks()], lane);
      if constexpr (kScoreMod)
        score_mod_tile<kBN>(s, a, nb, first_row, row0, lane, alibi_k, mask_bh);
      else if (needs_mask(nb))
        mask_tile<kBN>(s, nb * kBN, row0, lane, a.seqlen_k, a.causal, a.causal_offset);
      sm_state.template step<!kLegacyDesc, kLazy, kTc>(s, sl2, factor);  // O = 0: no rescale
      if constexpr ((kVar & kVarDropout) != 0)
        dropout_tile<kBN>(s, a, nb * kBN, row0, lane, drop_bh);
      convert_p<kBN, BF16>(s, p);
      pf[0] = factor[0], pf[1] = factor[1];
    }
    static_assert((kVar & kVarQReg) == 0,
                  "flash3: Q in registers is a Consumer (D <= 128) variant");
    const uint32_t no_qa[Tr::kD / 16][4] = {};  // (unused without kVarQReg)
    if constexpr (kDiet) {  // turn 1 peeled: its P V (the tile's first) with scale-d 0
      if (n_run > 1)
        mainloop_turn<Tr, BF16, kVar, kEdge>(a, sm, pipe, turn, 1, n_run_end, q_wg, k_base, v_base,
                                             o, p, s, factor, pf, sm_state, sl2, turn_row, row0,
                                             lane, no_qa, 0, &wc, alibi_k, mask_bh, drop_bh);
    }
    if constexpr (kRing256) {
      // (kD256Ring) Turn it shows block n_run_end - 1 - it, which needs the mask iff that block
      // is >= first_masked_block's (block_needs_mask's rule; a host test checks the two agree):
      // the turns it < it_plain, all before the others. They run in a loop of their own (still
      // masked), the rest two an iteration over the K / V ring without the mask's code or its
      // per-turn test. (Causal with mask_from <= 0: every turn is in the first loop.)
      const int it_plain =
          n_run_end - (kEdge ? mfb : first_masked_block<__builtin_ctz(kBN)>(a, first_row));
      int it = 2;
      for (; it < n_run && it < it_plain; ++it)
        mainloop_turn<Tr, BF16, kVar, false, kMaskAlways>(
            a, sm, pipe, turn, it, n_run_end, q_wg, k_base, v_base, o, p, s, factor, pf, sm_state,
            sl2, first_row, row0, lane, no_qa, 1, &wc, alibi_k, mask_bh, drop_bh);
      if (it < n_run) {
        RingTurn r;
        ring_turn_state<Tr>(r, sm, turn);
        ring_loop(it, n_run, pipe.count + it, r, [&](auto stage) {
          mainloop_turn<Tr, BF16, kVar, false, kMaskNever, decltype(stage)::value>(
              a, sm, pipe, turn, it, n_run_end, q_wg, k_base, v_base, o, p, s, factor, pf, sm_state,
              sl2, first_row, row0, lane, no_qa, 1, &wc, alibi_k, mask_bh, drop_bh, &r);
        });
      }
    } else {
      for (int it = kDiet ? 2 : 1; it < n_run; ++it)
        mainloop_turn<Tr, BF16, kVar, kEdge>(a, sm, pipe, turn, it, n_run_end, q_wg, k_base, v_base,
                                             o, p, s, factor, pf, sm_state, sl2, turn_row, row0,
                                             lane, no_qa, 1, &wc, alibi_k, mask_bh, drop_bh);
    }
    // Every QK^T of this tile is done: the producer may load the next tile's Q.
    release<Tr>(&sm.empty_q[qb], lane);
    {
      const int sp = pipe.vs(n_run - 1);
      ptx::mbar_wait(&sm.full_v[sp], pipe.vph(n_run - 1));
      if constexpr (kEarly) {
        rescale_o<Tr::kD>(o, pf);
        if constexpr (kTc) rescale_l(sm_state.lacc, pf);
      }
      fence_regs(o);
      fence_regs(p);
      if constexpr (kTc) fence_regs(sm_state.lacc);
      turn.wait_turn();
      ptx::wgmma_fence();
      if constexpr (kTc) {  // (the kTcSum layout)
        issue_pv_tc<Tr, BF16>(o, sm_state.lacc, p, v_base, sp, kDiet && n_run <= 1 ? 0 : 1);
      } else if constexpr (kDiet) {  // a one-block tile: this is its only P V (O = P V)
        issue_pv<Tr, BF16, kLegacyDesc>(o, p, v_base + uni(sp * Tr::kKVBytes),
                                        16 * Tr::kChunkRowBytes, Tr::kKVChunkBytes,
                                        n_run > 1 ? 1 : 0);
      } else {
        issue_pv<Tr, BF16, kLegacyDesc>(o, p, v_base + uni(sp * Tr::kKVBytes));
      }
      ptx::wgmma_commit();
      turn.pass_turn();
      ptx::wgmma_wait<0>();
      fence_regs(o);
      if constexpr (kTc) fence_regs(sm_state.lacc);
      release_kv<Tr>(&sm.empty_v[sp], lane);
    }
    pipe.count += n_run;  // (+ the skipped block's 1: n_blocks in every warpgroup)
    trace_stamp(a, qi.count - 1, cwg, tid, 3);  // (trace: word 3 = the epilogue starts)
    wc.put(a, qi.count - 1, cwg, tid);          // (words 4-10: turns 1 .. n-1, WaitClock)
  }
  float inv[2], lse[2];
  if constexpr (kTc) {  // (no keys: the FADD state's l = 0; lacc was never written)
    if (n_blocks > 0) {
      // (a copy of the maxima: row_max itself as the argument moved the D 256 kernels' code)
      const float m[2] = {sm_state.row_max[0], sm_state.row_max[1]};
      OnlineSoftmax<kBN>::finalize_acc(sm_state.lacc, m, a.scale, inv, lse);
    } else {
      sm_state.finalize(a.scale, inv, lse);
    }
  } else {
    sm_state.finalize(a.scale, inv, lse);
  }
  if constexpr (kDiet) {
    if (n_blocks <= 0) {  // no visible key: out = 0 (from an array of its own: zeroing o here
      // made the compiler zero it on every path, o being undefined on the others)
      float z[Tr::kD / 2];
#pragma unroll
      for (int i = 0; i < Tr::kD / 2; ++i)
        z[i] = 0.f;
      store_output<Tr::kD, BF16, kNarrow, kEdgeIdx>(a, z, inv, lse, b, h, row0, lane);
      return;
    }
  }
  if constexpr (kTail) {
    if (pc.pieces > 1) {  // (pieces always have blocks: n_blocks > 0)
      constexpr int kWarps = Tr::kConsumerWGs * 4;
      finish_tail_piece<Tr::kD, kWarps, BF16>(a, o, inv, lse, pc, cwg * 4 + warp, lane, b, h, row0);
      return;
    }
  }
#if ATTNKIT_FLASH3_FWD_D256_TMA_EPI
  if constexpr (kD256TmaEpi<Tr, kVar>) {
    // FwdArgs::o_tma (uniform): 1 = tma_o is (D, Sq, Hq x B): box (column, row, b Hq + h), rows
    // >= Sq clipped by the map; 2 = (D, Hq, B x Sq): box (column, h, b Sq + row), where rows past
    // Sq would land in the next batch's, so a warp whose 16 rows cross Sq (one per head's last m
    // block, none when 16 divides Sq) stores with STG below (a warp-uniform branch). A warp
    // without rows < Sq has nothing to store (store_output would write nothing either) and stages
    // nothing (store_output_tma_warp's round robin wants every call to commit all its chunks).
    const int wrow0 = row0 - lane / 4;
    if (a.o_tma != 0 && wrow0 >= a.seqlen_q) return;
    if (a.o_tma == 1 || (a.o_tma == 2 && wrow0 + 16 <= a.seqlen_q)) {
      const bool hb = a.o_tma == 1;
      const uint32_t buf =
          ptx::smem_u32(sm.epi) + static_cast<uint32_t>((cwg * 4 + warp) * Tr::kEpiStageWarpBytes);
      store_output_tma_warp<Tr::kD, Tr::kEpiStageBufs, BF16, kEdgeIdx>(
          a, o, inv, lse, b, h, row0, lane, buf, hb ? wrow0 : h,
          hb ? b * a.heads_q + h : b * a.seqlen_q + wrow0);
      return;
    }
  }
#endif
  // (kEdge: b, h, row0 >= 0, store_output's kNonNeg)
  store_output<Tr::kD, BF16, kNarrow, kEdgeIdx>(a, o, inv, lse, b, h, row0, lane);
}

/// P (16-bit pairs) packed in place into the low half of S's registers: s[i] = pack(s[2i],
/// s[2i + 1]) for i < kBlockN/4, in increasing i (s[i] was read by an earlier i/2 <= i).
template <int kBlockN, bool BF16>
__device__ __forceinline__ void pack_p_in_s(float (&s)[kBlockN / 2]) {
#pragma unroll
  for (int i = 0; i < kBlockN / 4; ++i)
    s[i] = __uint_as_float(pack2<BF16>(s[2 * i], s[2 * i + 1]));
}

/// The softmax of a turn of consume_tile_fused / consume_tile_ring once S (masked) is in s:
/// online softmax (factor = the rows' rescale factors), O *= factor (kRescale: every turn but
/// the first, where O = 0), P packed into s[0 .. kBN/4 - 1] (pack_p_in_s).
template <class Tr, bool BF16, bool kRescale, class Sm>
__device__ __forceinline__ void softmax_pack(float (&s)[Tr::kBlockN / 2], float (&o)[Tr::kD / 2],
                                             Sm& sm_state, float (&factor)[2], float sl2) {
  sm_state.template step<true>(s, sl2, factor);
  if constexpr (kRescale) rescale_o<Tr::kD>(o, factor);
  pack_p_in_s<Tr::kBlockN, BF16>(s);
}

/// O[64 x kD] += P V_s with P in the low half of s (pack_p_in_s).
template <class Tr, bool BF16>
__device__ __forceinline__ void issue_pv_from_s(float (&o)[Tr::kD / 2],
                                                const float (&s)[Tr::kBlockN / 2],
                                                uint32_t v_stage) {
  const uint64_t db0 = attnkit::cuda::sm90::Sw128Desc::make(v_stage, Tr::kKVChunkBytes, 1024);
#pragma unroll
  for (int kk = 0; kk < Tr::kBlockN / 16; ++kk) {
    const uint32_t a[4] = {__float_as_uint(s[4 * kk]), __float_as_uint(s[4 * kk + 1]),
                           __float_as_uint(s[4 * kk + 2]), __float_as_uint(s[4 * kk + 3])};
    Wgmma<Tr::kD, BF16>::rs(o, a, desc_add(db0, kk * 16 * Tr::kChunkRowBytes), 1);
  }
}

/// Half h (keys 64h .. 64h + 63) of S = Q K_s^T at 128-key tiles: an m64n64 wgmma sequence into
/// s[32h .. 32h + 31], which is exactly that half of the m64n128 accumulator layout.
template <class Tr, bool BF16, int kHalf>
__device__ __forceinline__ void issue_qk_half(float (&s)[Tr::kBlockN / 2], uint32_t q_wg,
                                              uint32_t k_stage) {
  static_assert(Tr::kBlockN == 128, "issue_qk_half: 128-key tiles");
  namespace ptx = attnkit::cuda::sm90;
  float(&d)[32] = *reinterpret_cast<float(*)[32]>(&s[32 * kHalf]);
  const uint64_t da0 = ptx::Sw128Desc::make(q_wg, 16, 1024);
  const uint64_t db0 = ptx::Sw128Desc::make(k_stage + kHalf * 64 * Tr::kChunkRowBytes, 16, 1024);
#pragma unroll
  for (int ks = 0; ks < Tr::kD / 16; ++ks) {
    const uint32_t off = (ks % 4) * 32;
    Wgmma<64, BF16>::ss(d, desc_add(da0, (ks / 4) * Tr::kQChunkBytes + off),
                        desc_add(db0, (ks / 4) * Tr::kKVChunkBytes + off), ks > 0 ? 1 : 0);
  }
}

/// D = 256 with 128-key tiles (FwdTraits::kFused, Tuning::kv_tile_256 = 128; cuDNN's
/// 64x128x256 kernel). Registers: O 128 + S 64 per thread leave no room for a separate P (32),
/// so P lives in the low half of S (cuDNN's SASS does the same): in each turn the P V that reads
/// P is issued before the Q K^T that overwrites S, and both are waited for before the softmax.
/// One K and one V stage (FwdTraits): K_it and V_it-1 are released after this turn's wgmmas,
/// the producer refills them while the other warpgroup's turn runs.
///   turn 0:      S = Q K_{n-1}^T; wait; softmax; P -> s[0 .. 31]
///   turn it:     O += P V_{it-1}; S = Q K_it^T; wait both; O *= factor after the softmax
///   last turn:   O += P V_0
/// Same turn count (n + 1) and release order as consume_tile_simple (idle_tile_simple serves).
template <class Tr, bool BF16>
__device__ __forceinline__ void consume_tile_fused(const FwdArgs& a, SmemLayout<Tr>& sm,
                                                   int m_block, int h, int b, int n_blocks,
                                                   PipeOf<Tr>& pipe, QIndex& qi, int cwg, int tid,
                                                   const PingPong& turn) {
  namespace ptx = attnkit::cuda::sm90;
  static_assert(Tr::kStagesK == 1 && Tr::kStagesV == 1 && Tr::kQStages == 1 && Tr::kCluster == 1,
                "consume_tile_fused: one Q, K and V stage, no cluster");
  constexpr int kBN = Tr::kBlockN;
  const int warp = tid / 32, lane = tid % 32;
  const int first_row = m_block * Tr::kBlockM + cwg * 64;
  const float sl2 = a.scale_log2;

  if (n_blocks > 0 && first_row >= a.seqlen_q) {
    idle_tile_simple<Tr>(sm, n_blocks, pipe, 0, qi.phase(1), lane, turn);
    ++qi.count;
    return;
  }
  float o[Tr::kD / 2];
#pragma unroll
  for (int i = 0; i < Tr::kD / 2; ++i)
    o[i] = 0.f;
  OnlineSoftmax<kBN> sm_state;
  sm_state.init();
  if (n_blocks > 0) {
    // Every shared address as one base + compile-time offsets (SmemLayout's order).
    const uint32_t base = ptx::smem_u32(sm.q);
    constexpr uint32_t kK = Tr::kQBytes, kV = kK + Tr::kKVBytes;
    constexpr uint32_t kBars = kV + Tr::kKVBytes + Tr::kZeroBytes;
    constexpr uint32_t kFullQ = kBars, kEmptyQ = kBars + 8, kFullK = kBars + 16;
    constexpr uint32_t kFullV = kBars + 24, kEmptyK = kBars + 32, kEmptyV = kBars + 40;
    const uint32_t q_wg = base + cwg * 64 * Tr::kChunkRowBytes;
    auto release_u32 = [&](uint32_t off) {
      if (lane == 0) ptx::mbar_arrive(base + off);
    };
    auto needs_mask = [&](int nb) { return block_needs_mask<kBN>(a, nb, first_row); };
    const int row0 = first_row + warp * 16 + lane / 4;
    float s[kBN / 2];
    float factor[2];
    ptx::mbar_wait(base + kFullQ, qi.phase(1));
    ++qi.count;
    {
      const int nb = n_blocks - 1;
      ptx::mbar_wait(base + kFullK, pipe.kph());
      turn.wait_turn();
      ptx::wgmma_fence();
      issue_qk<Tr, BF16>(s, q_wg, base + kK);
      ptx::wgmma_commit();
      turn.pass_turn();
      ptx::wgmma_wait<0>();
      fence_regs(s);
      release_u32(kEmptyK);
      if (needs_mask(nb))
        mask_tile<kBN>(s, nb * kBN, row0, lane, a.seqlen_k, a.causal, a.causal_offset);
      softmax_pack<Tr, BF16, false>(s, o, sm_state, factor, sl2);
    }
    for (int it = 1; it < n_blocks; ++it) {
      const int nb = n_blocks - 1 - it;
      ptx::mbar_wait(base + kFullV, pipe.vph(it - 1));
      ptx::mbar_wait(base + kFullK, pipe.kph(it));
      fence_regs(o);
      fence_regs(s);
      turn.wait_turn();
      ptx::wgmma_fence();
      issue_pv_from_s<Tr, BF16>(o, s, base + kV);  // reads P = s[0 .. 31]
      ptx::wgmma_commit();
      issue_qk_half<Tr, BF16, 1>(s, q_wg, base + kK);  // writes s[32 .. 63]
      ptx::wgmma_commit();
      // s[0 .. 31] may be overwritten only once the P V that reads it is complete: a wgmma
      // writing a register that an in-flight wgmma reads makes ptxas serialise every wgmma of the
      // kernel (C7511, checked). The tensor pipe still has this Q K^T half queued meanwhile.
      ptx::wgmma_wait<1>();  // P V_{it-1} done: V free
      fence_regs(o);
      fence_regs(s);
      release_u32(kEmptyV);
      ptx::wgmma_fence();
      issue_qk_half<Tr, BF16, 0>(s, q_wg, base + kK);  // writes s[0 .. 31]
      ptx::wgmma_commit();
      turn.pass_turn();
      ptx::wgmma_wait<0>();  // S ready: K free
      fence_regs(s);
      release_u32(kEmptyK);
      if (needs_mask(nb))
        mask_tile<kBN>(s, nb * kBN, row0, lane, a.seqlen_k, a.causal, a.causal_offset);
      softmax_pack<Tr, BF16, true>(s, o, sm_state, factor, sl2);
    }
    release_u32(kEmptyQ);
    {
      ptx::mbar_wait(base + kFullV, pipe.vph(n_blocks - 1));
      fence_regs(o);
      fence_regs(s);
      turn.wait_turn();
      ptx::wgmma_fence();
      issue_pv_from_s<Tr, BF16>(o, s, base + kV);
      ptx::wgmma_commit();
      turn.pass_turn();
      ptx::wgmma_wait<0>();
      fence_regs(o);
      release_u32(kEmptyV);
    }
    pipe.count += n_blocks;
  }
  float inv[2], lse[2];
  sm_state.finalize(a.scale, inv, lse);
  store_output<Tr::kD, BF16>(a, o, inv, lse, b, h, first_row + warp * 16 + lane / 4, lane);
}

/// Half kHalf (keys 64 kHalf .. + 63) of S = Q K^T from two ring chunks (FwdTraits::kRing):
/// k_a holds columns 0-127, k_b columns 128-255 of those 64 keys, each as two [64][64] boxes.
template <class Tr, bool BF16, int kHalf>
__device__ __forceinline__ void issue_qk_half_ring(float (&s)[Tr::kBlockN / 2], uint32_t q_wg,
                                                   uint32_t k_a, uint32_t k_b) {
  namespace ptx = attnkit::cuda::sm90;
  float(&d)[32] = *reinterpret_cast<float(*)[32]>(&s[32 * kHalf]);
  const uint64_t da0 = ptx::Sw128Desc::make(q_wg, 16, 1024);
  const uint64_t dba = ptx::Sw128Desc::make(k_a, 16, 1024);
  const uint64_t dbb = ptx::Sw128Desc::make(k_b, 16, 1024);
#pragma unroll
  for (int ks = 0; ks < Tr::kD / 16; ++ks) {
    const uint32_t off = (ks % 4) * 32;
    const int c = ks / 4;  // 64-column chunk of D
    Wgmma<64, BF16>::ss(d, desc_add(da0, c * Tr::kQChunkBytes + off),
                        desc_add(c < 2 ? dba : dbb, (c % 2) * 8192 + off), ks > 0 ? 1 : 0);
  }
}

/// O[64 x kD] += P V with P in the low half of s and V in four ring chunks of 32 keys
/// (FwdTraits::kRing): chunk j = keys 32 j .. + 31, its 64-column boxes 4096 bytes apart.
/// (All four chunks are waited for before the first wgmma: an mbarrier wait between the P V
/// wgmmas, to start on chunks 0-1 while 2-3 land, made ptxas serialise every wgmma, C7511.)
template <class Tr, bool BF16>
__device__ __forceinline__ void issue_pv_ring(float (&o)[Tr::kD / 2],
                                              const float (&s)[Tr::kBlockN / 2],
                                              const uint32_t (&v)[4]) {
#pragma unroll
  for (int kk = 0; kk < Tr::kBlockN / 16; ++kk) {
    const uint64_t db = attnkit::cuda::sm90::Sw128Desc::make(
        v[kk / 2] + (kk % 2) * 16 * Tr::kChunkRowBytes, 4096, 1024);
    const uint32_t a[4] = {__float_as_uint(s[4 * kk]), __float_as_uint(s[4 * kk + 1]),
                           __float_as_uint(s[4 * kk + 2]), __float_as_uint(s[4 * kk + 3])};
    Wgmma<Tr::kD, BF16>::rs(o, a, db, 1);
  }
}

/// consume_tile_fused with K and V streamed through the chunk ring (FwdTraits::kRing;
/// Tuning::kv_ring_256). Same turns (n + 1, the ping-pong protocol unchanged) and the same
/// register plan (P packed into s[0 .. 31]); what changes is when each 16 KB chunk is waited for
/// and released (chunk positions: RingPos):
///   turn 0:   wait K(c) 0-3; S = Q K^T (both halves); wait; release K(c) 0-3; softmax, pack P
///   turn it:  wait V(c-1) 0-3; O += P V (8 wgmmas) | wait K 0,1; S_hi = Q K_hi^T |
///             wait K 2,3; wait<1> (P V done): release V 0-3 | S_lo = Q K_lo^T; pass turn;
///             wait<0>: release K 0-3; softmax, O *= factor, pack P
///   last:     wait V 0-3; O += P V; wait; release V 0-3
/// so P V starts as soon as V has landed, while K_hi and K_lo may still be in flight.
/// A warpgroup without rows (first_row >= seqlen_q) takes the same turns and releases every
/// chunk once it has landed.
template <class Tr, bool BF16>
__device__ __forceinline__ void consume_tile_ring(const FwdArgs& a, SmemLayout<Tr>& sm, int m_block,
                                                  int h, int b, int n_blocks, PipeOf<Tr>& pipe,
                                                  QIndex& qi, int cwg, int tid,
                                                  const PingPong& turn) {
  namespace ptx = attnkit::cuda::sm90;
  static_assert(Tr::kRing && Tr::kQStages == 1, "consume_tile_ring: the ring variant");
  constexpr int kBN = Tr::kBlockN;
  constexpr int RS = Tr::kRingSlots;
  const int warp = tid / 32, lane = tid % 32;
  const int first_row = m_block * Tr::kBlockM + cwg * 64;
  const float sl2 = a.scale_log2;
  // Every shared address as one base + offsets (SmemLayout's order: Q | ring | barriers).
  const uint32_t base = ptx::smem_u32(sm.q);
  constexpr uint32_t kRingOff = Tr::kQBytes;
  constexpr uint32_t kBars = kRingOff + Tr::kKVRegionBytes + Tr::kZeroBytes;
  constexpr uint32_t kFullQ = kBars, kEmptyQ = kBars + 8, kFull = kBars + 16;
  constexpr uint32_t kEmpty = kFull + 8 * RS;
  auto chunk = [&](RingPos<RS> r) { return base + kRingOff + r.slot * Tr::kRingChunkBytes; };
  auto wait_full = [&](RingPos<RS> r) { ptx::mbar_wait(base + kFull + 8 * r.slot, r.parity); };
  auto release4 = [&](RingPos<RS> r0) {
    if (lane == 0) {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        ptx::mbar_arrive(base + kEmpty + 8 * r0.next(j).slot);
    }
  };
  auto wait4 = [&](RingPos<RS> r0) {
#pragma unroll
    for (int j = 0; j < 4; ++j)
      wait_full(r0.next(j));
  };

  if (n_blocks > 0 && first_row >= a.seqlen_q) {  // idle warpgroup: same turns and releases
    const int c0 = pipe.count;
    wait4(RingPos<RS>(8 * c0));
    turn.wait_turn();
    turn.pass_turn();
    release4(RingPos<RS>(8 * c0));
    for (int it = 1; it < n_blocks; ++it) {
      const RingPos<RS> rv(8 * (c0 + it) - 4), rk(8 * (c0 + it));
      wait4(rv);
      wait4(rk);
      turn.wait_turn();
      turn.pass_turn();
      release4(rv);
      release4(rk);
    }
    ptx::mbar_wait(base + kFullQ, qi.phase(1));  // (idle_tile_simple: why)
    if (lane == 0) ptx::mbar_arrive(base + kEmptyQ);
    const RingPos<RS> rv(8 * (c0 + n_blocks) - 4);
    wait4(rv);
    turn.wait_turn();
    turn.pass_turn();
    release4(rv);
    pipe.count += n_blocks;
    ++qi.count;
    return;
  }
  float o[Tr::kD / 2];
#pragma unroll
  for (int i = 0; i < Tr::kD / 2; ++i)
    o[i] = 0.f;
  OnlineSoftmax<kBN> sm_state;
  sm_state.init();
  if (n_blocks > 0) {
    const uint32_t q_wg = base + warp_uniform(cwg * 64 * Tr::kChunkRowBytes);
    auto needs_mask = [&](int nb) { return block_needs_mask<kBN>(a, nb, first_row); };
    const int row0 = first_row + warp * 16 + lane / 4;
    float s[kBN / 2];
    float factor[2];
    ptx::mbar_wait(base + kFullQ, qi.phase(1));
    ++qi.count;
    {
      const int nb = n_blocks - 1;
      const RingPos<RS> rk = RingPos<RS>(8 * pipe.count).uniform();
      wait4(rk);
      turn.wait_turn();
      ptx::wgmma_fence();
      issue_qk_half_ring<Tr, BF16, 1>(s, q_wg, chunk(rk), chunk(rk.next(1)));
      issue_qk_half_ring<Tr, BF16, 0>(s, q_wg, chunk(rk.next(2)), chunk(rk.next(3)));
      ptx::wgmma_commit();
      turn.pass_turn();
      ptx::wgmma_wait<0>();
      fence_regs(s);
      release4(rk);
      if (needs_mask(nb))
        mask_tile<kBN>(s, nb * kBN, row0, lane, a.seqlen_k, a.causal, a.causal_offset);
      softmax_pack<Tr, BF16, false>(s, o, sm_state, factor, sl2);
    }
    for (int it = 1; it < n_blocks; ++it) {
      const int nb = n_blocks - 1 - it;
      const RingPos<RS> rk = RingPos<RS>(8 * (pipe.count + it)).uniform();
      const RingPos<RS> rv = RingPos<RS>(8 * (pipe.count + it) - 4).uniform();  // previous V
      const uint32_t v[4] = {chunk(rv), chunk(rv.next(1)), chunk(rv.next(2)), chunk(rv.next(3))};
      wait4(rv);
      fence_regs(o);
      fence_regs(s);
      turn.wait_turn();
      ptx::wgmma_fence();
      issue_pv_ring<Tr, BF16>(o, s, v);  // reads P = s[0 .. 31]
      ptx::wgmma_commit();
      wait_full(rk);
      wait_full(rk.next(1));
      ptx::wgmma_fence();  // the K waits are branches: re-establish register ordering
      issue_qk_half_ring<Tr, BF16, 1>(s, q_wg, chunk(rk), chunk(rk.next(1)));  // s[32 .. 63]
      ptx::wgmma_commit();
      wait_full(rk.next(2));
      wait_full(rk.next(3));
      // As in consume_tile_fused: s[0 .. 31] is overwritten only after the P V reading it is
      // complete (C7511 otherwise).
      ptx::wgmma_wait<1>();  // P V done: V(c-1) free
      fence_regs(o);
      fence_regs(s);
      release4(rv);
      ptx::wgmma_fence();
      issue_qk_half_ring<Tr, BF16, 0>(s, q_wg, chunk(rk.next(2)), chunk(rk.next(3)));
      ptx::wgmma_commit();
      turn.pass_turn();
      ptx::wgmma_wait<0>();  // S ready: K(c) free
      fence_regs(s);
      release4(rk);
      if (needs_mask(nb))
        mask_tile<kBN>(s, nb * kBN, row0, lane, a.seqlen_k, a.causal, a.causal_offset);
      softmax_pack<Tr, BF16, true>(s, o, sm_state, factor, sl2);
    }
    if (lane == 0) ptx::mbar_arrive(base + kEmptyQ);
    {
      const RingPos<RS> rv = RingPos<RS>(8 * (pipe.count + n_blocks) - 4).uniform();
      const uint32_t v[4] = {chunk(rv), chunk(rv.next(1)), chunk(rv.next(2)), chunk(rv.next(3))};
      wait4(rv);
      fence_regs(o);
      fence_regs(s);
      turn.wait_turn();
      ptx::wgmma_fence();
      issue_pv_ring<Tr, BF16>(o, s, v);
      ptx::wgmma_commit();
      turn.pass_turn();
      ptx::wgmma_wait<0>();
      fence_regs(o);
      release4(rv);
    }
    pipe.count += n_blocks;
  }
  float inv[2], lse[2];
  sm_state.finalize(a.scale, inv, lse);
  store_output<Tr::kD, BF16>(a, o, inv, lse, b, h, first_row + warp * 16 + lane / 4, lane);
}

/// One consumer warpgroup's whole stream of tiles, with the tiles overlapped (a.overlap):
/// the last P V of tile t is issued in the same ping-pong turn as the first Q K^T of tile t+1,
/// and tile t's epilogue (normalise, store O and lse) runs while the tensor cores work on that
/// turn and on the other warpgroups' turns. Without it (v4) a tile boundary costs a turn with
/// only P V in it, then the epilogue, then a turn with only Q K^T whose softmax nothing hides.
///
/// Turn accounting (every consumer warpgroup must take the same number of ping-pong turns):
///   a tile with n >= 1 K/V blocks: n turns (turn 0 = its first Q K^T + the pending P V of the
///     previous tile, if this warpgroup has one; turns 1 .. n-1 as in the mainloop below);
///   a flush turn (the pending P V alone, or a zero-block one) before a tile with no visible
///     keys, after every tile when overlap is off, and once at the end (kernel.cuh: one call
///     site, since ptxas serialised the wgmma pipeline (C7511) with several inlined copies);
/// so the count depends on the tile sequence only, not on whether a warpgroup has rows in the
/// tile. A warpgroup whose 64 rows all lie past seqlen_q (the last tile of a 192-row D = 64
/// launch, e.g. S = 1024: rows 960 .. 1151) takes its turns without computing and releases each
/// K/V/Q buffer once its data has landed (waiting on "full" first keeps its arrivals in the
/// right phase); the epilogue would write nothing for those rows anyway.
template <class Tr, bool BF16, int kVar>
struct Consumer {
  static constexpr int kBN = Tr::kBlockN;
  static constexpr bool kOrdered = (kVar & kVarOrdered) != 0;
  static constexpr bool kEarly = (kVar & kVarEarlyRescale) != 0;
  static constexpr bool kLegacyDesc = (kVar & kVarLegacyDesc) != 0;
  static constexpr bool kUniform = (kVar & kVarUniformDesc) != 0;
  static constexpr bool kLazy = (kVar & kVarLazyRescale) != 0;
  static constexpr bool kQReg = (kVar & kVarQReg) != 0;
  static_assert(!kQReg || (Tr::kD == 128 && kBN == 128 && Tr::kConsumerWGs == 2),
                "flash3: kVarQReg is D = 128, 128-key tiles, 2 consumer warpgroups");
  static constexpr bool kDiet = (kVar & kVarTileDiet) != 0;
  static_assert(!kDiet || !kEarly, "flash3: kVarTileDiet does not rescale O before P V");
  static constexpr bool kTc = Tr::kTcSum;
  // ATTNKIT_FLASH3_FWD_D64_TURN's parts
  static constexpr bool kLean = kD64TurnMath<Tr::kD, kVar, kTc>;
  // ATTNKIT_FLASH3_FWD_D128_RING: the same split and ring for D 128's row-sum kernels
  static constexpr bool kRing128 = kD128Ring<Tr::kD, kVar, kTc>;
  static constexpr bool kSplit = kD64TurnSplit<Tr::kD, kVar, kTc> || kRing128;
  // ATTNKIT_FLASH3_FWD_D64_RING
  static constexpr bool kRing = kD64Ring<Tr::kD, kVar, kTc> || kRing128;
  // ATTNKIT_FLASH3_FWD_EDGE's parts (ATTNKIT_FLASH3_FWD_EDGE_PARTS bits 1 / 2 / 4 / 8; with
  // kVarEdgeNc ATTNKIT_FLASH3_FWD_EDGE_PARTS_NC's)
  static constexpr bool kEdgeOwnQ = kFwdEdgePart<Tr::kD, kVar, 1>;
  static constexpr bool kEdgeDesc = kFwdEdgePart<Tr::kD, kVar, 2>;
  static constexpr bool kEdgeRing = kFwdEdgePart<Tr::kD, kVar, 4>;
  static constexpr bool kEdgeCount = kFwdEdgePart<Tr::kD, kVar, 8>;
  /// The pending P V's V stage / parity (ring position count - 1 >= 0 whenever used; kEdgeRing:
  /// unsigned, no signed fix-ups; the same values there).
  __device__ __forceinline__ int pend_vs() const {
    if constexpr (kEdgeRing)
      return static_cast<int>((static_cast<uint32_t>(pipe.count) - 1u) % PipeOf<Tr>::kVS);
    return pipe.vs(-1);
  }
  __device__ __forceinline__ uint32_t pend_vph() const {
    if constexpr (kEdgeRing)
      return ((static_cast<uint32_t>(pipe.count) - 1u) / PipeOf<Tr>::kVS) & 1u;
    return pipe.vph(-1);
  }
  /// kUniform: a shared-memory offset through REDUX (warp-uniform; all 32 lanes active).
  __device__ __forceinline__ static int uni(int x) { return kUniform ? warp_uniform(x) : x; }
  /// Trace builds (session 67, flash3_tile_trace.py --phases): clock64 into word `word` of the
  /// current tile (qi.count - 1, = the kernel's k when every tile has keys: the square causal and
  /// non-causal shapes), after `regs` are written when given (trace_fence: the read is not
  /// hoisted above their writer). tile()'s turn 0 stamps 4 = token taken, 5 = S ready, 6 =
  /// softmax done, 7 = the pending P V done, 8 = the previous tile's epilogue done; 9 = turn 1
  /// done (diet kernels, tiles of >= 2 blocks), 10 = the last turn done (kernel.cuh: 0 / 1 / 2 =
  /// the tile starts / after the flush turn / returns). A warpgroup without rows in the tile
  /// (idle_tile) writes none of 4-10. Not in the split tail's kernels (kernel.cuh keeps their
  /// pieces at trace slots 49 + k, and their second launch shares the trace). No code in other
  /// builds.
  __device__ __forceinline__ void stamp(int word) const {
    if constexpr (!kTail) trace_stamp(a, qi.count - 1, cwg, warp * 32 + lane, word);
  }
  template <class R>
  __device__ __forceinline__ void stamp(int word, R& regs) const {
    trace_fence(regs);
    stamp(word);
  }
  // D = 256 never overlaps tiles: its O accumulator alone is 128 of the 240 registers, and a
  // second epilogue site (turn 0) made ptxas spill ~10 KB and serialise the wgmma (C7512).
  // kVarScoreMod kernels run consume_tile_simple too (its score_mod_tile hook; no overlapped form).
  static constexpr bool kCanOverlap = Tr::kD != 256 && (kVar & kVarScoreMod) == 0;
  __device__ __forceinline__ bool overlap() const { return kCanOverlap && a.overlap != 0; }
  const FwdArgs& a;
  const SmemLayout<Tr>& sm;
  PipeOf<Tr>& pipe;
  QIndex& qi;
  const PingPong& turn;
  int cwg, warp, lane;
  float o[Tr::kD / 2];
  uint32_t p[kBN / 4];
  uint32_t qa[Tr::kD / 16][4];  // kQReg: this tile's Q fragments (unused otherwise)
  OnlineSoftmax<kBN> state;
  float pf[2] = {1.f, 1.f};  // kEarly: the factor that goes with P (O *= pf before P's P V)
  bool pending = false;      // P V of the last block of tile (pb, ph, prow0) not issued yet
  int pb = 0, ph = 0, prow0 = 0;
  int pacc = 1;  // kDiet: the pending P V accumulates (0: it is its tile's only one, O = P V)
  static constexpr bool kTmaEpi = (kVar & kVarTmaEpi) != 0;
  static_assert(!kTmaEpi || (kDiet && Tr::kQStages == 2),
                "flash3: kVarTmaEpi is a kVarTileDiet variant and stages O in the 2nd Q buffer");
  int pqb = 0;  // kTmaEpi: the pending tile's Q buffer (the epilogue's staging)
  int sq = -1;  // kTmaEpi: the Q buffer this warp's TMA store reads, not yet released (-1: none)
  static constexpr bool kTail = (kVar & kVarTail) != 0;
  // (D = 256 names this class too but runs consume_tile_simple: kernel.cuh.)
  static_assert(!kTail || !kCanOverlap || (kDiet && !kTmaEpi),
                "flash3: kVarTail is the overlapped diet consumer with the STG epilogue");
  TailPiece piece;  // kTail: the pending tile's piece (pieces > 1: tail.cuh finish_tail_piece)
  // The mask test as `nb >= mask_from`, once per tile, instead of a reload of causal_offset and
  // a compare chain in every turn (session 34's PARAM_HOIST A/B, with the D 64 epilogue's fixed
  // 4-byte path, store_lse's one row pointer and the TMA epilogue's nq = 2: +1.1..+2.9 % at D 64,
  // +0.9..+2.0 % at D 128, S 1k-16k, same process; bench/notes/fwd-hoist-s34.md). Score-mod
  // kernels keep first_row (score_mod_tile reads it), and so does the 176-key D 128 kernel (not a
  // power of two). tests/core/flash3_mask_blocks_test.cpp checks the rule against the per-block
  // test (helper-13 checked 111 M host cases: key blocks 32 / 64 / 128, Sk 0..700, offsets
  // -700..700).
  static constexpr bool kMaskFrom = (kVar & kVarScoreMod) == 0 && (kBN & (kBN - 1)) == 0;
  /// The first K/V block that needs the mask (mask_blocks.hpp; a host test checks it against the
  /// per-block predicate).
  __device__ __forceinline__ int mask_from(int first_row) const {
    return first_masked_block<__builtin_ctz(kBN)>(a, first_row);
  }

  __device__ __forceinline__ Consumer(const FwdArgs& a_, const SmemLayout<Tr>& sm_,
                                      PipeOf<Tr>& pipe_, QIndex& qi_, const PingPong& turn_,
                                      int cwg_, int tid)
      : a(a_),
        sm(sm_),
        pipe(pipe_),
        qi(qi_),
        turn(turn_),
        cwg(cwg_),
        warp(tid / 32),
        lane(tid % 32) {
    zero_o();
    zero_p();
    state.init();
  }

  __device__ __forceinline__ void zero_o() {
#pragma unroll
    for (int i = 0; i < Tr::kD / 2; ++i)
      o[i] = 0.f;
    if constexpr (kTc) state.lacc[0] = state.lacc[1] = state.lacc[2] = state.lacc[3] = 0.f;
  }
  /// The pending tile's inv / lse after its last P V completed (kTc: from the row-sum
  /// accumulator; m: the reference maxima of that tile).
  __device__ __forceinline__ void finalize_pending(const float (&m)[2], float (&inv)[2],
                                                   float (&lse)[2]) {
    if constexpr (kTc) {
      fence_regs(state.lacc);
      OnlineSoftmax<kBN>::finalize_acc(state.lacc, m, a.scale, inv, lse);
    } else {
      state.finalize(a.scale, inv, lse);
    }
  }
  __device__ __forceinline__ void zero_p() {
#pragma unroll
    for (int i = 0; i < kBN / 4; ++i)
      p[i] = 0u;
  }
  __device__ __forceinline__ uint32_t v_addr(int stage) const {
    return attnkit::cuda::sm90::smem_u32(sm.v) + uni(stage * Tr::kKVBytes);
  }
  /// Issues the pending P V (the previous tile's last V block = pipe position count - 1), or,
  /// without one, the same wgmma sequence on P = 0 and the zero block (O stays 0): the issue
  /// itself is never inside a data-dependent branch (ptxas would serialise every wgmma, C7518).
  __device__ __forceinline__ void issue_pending_pv() {
    namespace ptx = attnkit::cuda::sm90;
    if (pending) ptx::mbar_wait(&sm.full_v[pend_vs()], pend_vph());
    // (kUniform: one REDUX on the selected offset from the Q base; V stages follow Q and K,
    // the zero block follows the K/V region, SmemLayout.)
    constexpr int kVOff = Tr::kQStages * Tr::kQBytes + Tr::kStagesK * Tr::kKVBytes;
    constexpr int kZeroOff = Tr::kQStages * Tr::kQBytes + Tr::kKVRegionBytes;
    if constexpr (kTc) {  // per-stage chunk strides (FwdTraits::kTcSum); V from k = v
      const int vs = pipe.vs(-1);
      const int off = pending ? Tr::kQStages * Tr::kQBytes + Tr::v_off(vs) : kZeroOff;
      const uint32_t base = ptx::smem_u32(sm.q) + (kUniform ? warp_uniform(off) : off);
      const uint32_t lbo = pending ? Tr::v_lbo(vs) : 16 * Tr::kChunkRowBytes;
      const uint32_t kk_stride = pending ? 16 * Tr::kChunkRowBytes : 0;
      const uint64_t db = ptx::Sw128Desc::make(base, lbo, 1024);
      ptx::wgmma_fence();  // (a tile-diet kernel: no early rescale)
      issue_pv_ext_desc<Tr, BF16>(o, state.lacc, p, db, kk_stride, kDiet ? pacc : 1);
      ptx::wgmma_commit();
      return;
    }
    const uint32_t base =
        kUniform ? ptx::smem_u32(sm.q) +
                       warp_uniform(pending ? kVOff + pipe.vs(-1) * Tr::kKVBytes : kZeroOff)
        : pending ? v_addr(pipe.vs(-1))
                  : ptx::smem_u32(sm.zero);
    const uint32_t kk_stride = pending ? 16 * Tr::kChunkRowBytes : 0;
    const uint32_t chunk_stride = pending ? Tr::kKVChunkBytes : 16 * Tr::kChunkRowBytes;
    if constexpr (kEarly) rescale_o<Tr::kD>(o, pf);  // O = 0 without a pending P V
    ptx::wgmma_fence();
    // (kDiet: without a pending P V, O is not stored afterwards, whatever pacc says.)
    issue_pv<Tr, BF16, kLegacyDesc>(o, p, base, kk_stride, chunk_stride, kDiet ? pacc : 1);
    ptx::wgmma_commit();
  }
  /// (ATTNKIT_FLASH3_FWD_EDGE) issue_pending_pv in tile()'s turn 0, where the tile's Q buffer
  /// (shared address q_buf, its first row; 1024-aligned) has landed and is read-only until the
  /// tile's end: without a pending P V the wgmmas read it instead of the zero block, with the
  /// pending one's k-step stride (16 rows, 2 KB) and chunk stride lbo (kTcSum: 2 KB; else V's
  /// chunk stride), i.e. 7 x 2 KB + (chunks - 1) x lbo + 2 KB from its start: kTcSum D 128 (3
  /// chunks with the ones) 20 KB of the 32 KB buffer, D 64 16 KB of 16 / 24 KB, D 128 without
  /// the sums 32 KB of 32 KB (static_assert). The k-step stride is then a constant and only the kk
  /// = 0 low word depends on `pending` (one REDUX): each k-step's descriptor is that word + an
  /// immediate. That P V's result is never read: O and the row sums are overwritten by the tile's
  /// first P V (scale-d 0: turn 1's pv_scale, or pacc = 0 for a one-block tile) and finish_pending
  /// stores nothing without a pending tile, so neither P's value nor the bytes read matter (0 x NaN
  /// included). With a pending P V: the same descriptors, wait and wgmmas as issue_pending_pv.
  __device__ __forceinline__ void issue_pending_pv_t0(uint32_t q_buf) {
    namespace ptx = attnkit::cuda::sm90;
    if (pending) ptx::mbar_wait(&sm.full_v[pend_vs()], pend_vph());
    constexpr uint32_t kRow16 = 16 * Tr::kChunkRowBytes;
    const int vs = pend_vs();
    const uint32_t q0 = ptx::smem_u32(sm.q);
    uint32_t addr, lbo;
    if constexpr (kTc) {
      addr = pending ? q0 + Tr::kQStages * Tr::kQBytes + Tr::v_off(vs) : q_buf;
      lbo = pending ? Tr::v_lbo(vs) : kRow16;
    } else {
      constexpr int kVOff = Tr::kQStages * Tr::kQBytes + Tr::kStagesK * Tr::kKVBytes;
      addr = pending ? q0 + kVOff + vs * Tr::kKVBytes : q_buf;
      lbo = Tr::kKVChunkBytes;  // (the pending one's; the extent: static_assert below)
    }
    static_assert(Tr::kBlockN / 16 * kRow16 +
                          (Tr::kD / 64 + (kTc ? 1 : 0) - 1) * (kTc ? kRow16 : Tr::kKVChunkBytes) <=
                      Tr::kQBytes,
                  "flash3: the fake P V stays inside the tile's Q buffer");
    const uint64_t db = uniform_lo(ptx::Sw128Desc::make(addr, lbo, 1024));
    ptx::wgmma_fence();
    if constexpr (kTc)
      issue_pv_ext_desc<Tr, BF16>(o, state.lacc, p, db, kRow16, pacc);
    else
      issue_pv_desc<Tr, BF16>(o, p, db, kRow16, pacc);
    ptx::wgmma_commit();
  }
  /// After that P V completed: finishes the pending tile (frees its V buffer, writes O and
  /// lse; inv/lse = its finalised softmax state), then clears O (P is cleared by the callers
  /// whose next P V may be a zero-block one). kDiet: O is left as it is (the next tile's first
  /// P V overwrites it, scale-d = 0).
  __device__ __forceinline__ void finish_pending(const float (&inv)[2], const float (&lse)[2]) {
    if (pending) {
      release_kv<Tr>(&sm.empty_v[pend_vs()], lane);
      if constexpr (kTail) {
        if (piece.pieces > 1) {
          finish_tail_piece<Tr::kD, Tr::kConsumerWGs * 4, BF16>(
              a, o, inv, lse, piece, cwg * 4 + warp, lane, pb, ph, prow0);
          pending = false;
          return;
        }
      }
      if constexpr (kTmaEpi) {
        const uint32_t stage = attnkit::cuda::sm90::smem_u32(sm.q) +
                               uni(pqb * Tr::kQBytes + (cwg * 64 + warp * 16) * Tr::kChunkRowBytes);
        store_output_tma<Tr::kD, Tr::kQChunkBytes, BF16>(a, o, inv, lse, pb, ph, prow0,
                                                         prow0 - lane / 4, lane, stage);
        sq = pqb;
      } else {
        store_output<Tr::kD, BF16>(a, o, inv, lse, pb, ph, prow0, lane);
      }
    }
    if constexpr (!kDiet) zero_o();
    pending = false;
  }
  /// kTmaEpi: once this warp's TMA store has read its staging rows, that Q buffer goes back to
  /// the producer (this warp's arrival; lane 0 issued the store, so lane 0 waits and arrives).
  __device__ __forceinline__ void release_staged() {
    if constexpr (kTmaEpi) {
      if (sq >= 0) {
        if (lane == 0) {
          attnkit::cuda::sm90::bulk_wait_read<0>();
          attnkit::cuda::sm90::mbar_arrive(&sm.empty_q[sq]);
        }
        sq = -1;
      }
    }
  }
  /// kTmaEpi: before the CTA exits, its TMA stores must be done with shared memory.
  __device__ __forceinline__ void drain() {
    if constexpr (kTmaEpi) {
      if (lane == 0) attnkit::cuda::sm90::bulk_wait<0>();
    }
  }
  /// A turn with only the pending P V in it (a zero-block P V for a warpgroup without one).
  __device__ __forceinline__ void flush_turn() {
    namespace ptx = attnkit::cuda::sm90;
    fence_regs(o);
    fence_regs(p);
    turn.wait_turn();
    issue_pending_pv();
    turn.pass_turn();
    ptx::wgmma_wait<0>();
    fence_regs(o);
    fence_regs(p);
    float inv[2], lse[2];
    finalize_pending(state.row_max, inv, lse);
    finish_pending(inv, lse);
    zero_p();
  }

  /// Rows without any visible key (n = 0): out = 0, lse = -inf.
  __device__ __forceinline__ void empty_tile(int b, int h, int row0) {
    OnlineSoftmax<kBN> st;
    st.init();
    float inv[2], lse[2];
    st.finalize(a.scale, inv, lse);
    if constexpr (kDiet) zero_o();  // (finish_pending left O as it was)
    store_output<Tr::kD, BF16>(a, o, inv, lse, b, h, row0, lane);  // o is zero here
  }

  /// n turns without computing (all rows of this warpgroup past seqlen_q).
  /// (Q released only once it has landed: idle_tile_simple says why.)
  __device__ __forceinline__ void idle_tile(int n_blocks, int qb, uint32_t q_phase) {
    namespace ptx = attnkit::cuda::sm90;
    ptx::mbar_wait(&sm.full_k[pipe.ks()], pipe.kph());
    fence_regs(o);
    fence_regs(p);
    turn.wait_turn();
    if constexpr (kCanOverlap) issue_pending_pv();
    turn.pass_turn();
    release_kv<Tr>(&sm.empty_k[pipe.ks()], lane);
    if constexpr (kCanOverlap) {
      ptx::wgmma_wait<0>();
      fence_regs(o);
      fence_regs(p);
      float inv[2], lse[2];
      finalize_pending(state.row_max, inv, lse);
      finish_pending(inv, lse);
      zero_p();
    }
    for (int it = 1; it < n_blocks; ++it) {
      const int st = pipe.ks(it), sp = pipe.vs(it - 1);
      ptx::mbar_wait(&sm.full_k[st], pipe.kph(it));
      turn.wait_turn();
      ptx::mbar_wait(&sm.full_v[sp], pipe.vph(it - 1));
      turn.pass_turn();
      release_kv<Tr>(&sm.empty_k[st], lane);
      release_kv<Tr>(&sm.empty_v[sp], lane);
    }
    ptx::mbar_wait(&sm.full_q[qb], q_phase);
    release<Tr>(&sm.empty_q[qb], lane);
    release_staged();  // (kTmaEpi: the previous tile's store, staged above)
    ptx::mbar_wait(&sm.full_v[pipe.vs(n_blocks - 1)], pipe.vph(n_blocks - 1));
    release_kv<Tr>(&sm.empty_v[pipe.vs(n_blocks - 1)], lane);
    pipe.count += n_blocks;
  }

  /// (kRing) The unmasked turns it .. n_blocks - 1 (it < n_blocks) with the 2-stage K / V ring
  /// unrolled: an iteration runs the turn on K stage 0, then the one on K stage 1 (ring_loop has
  /// the ring positions and why the stages and parities are these; ring_turn_state the stage
  /// descriptors, on the kTcSum layout too).
  __device__ __forceinline__ void ring_turns(int it, int n_blocks, int n_end, uint32_t q_wg,
                                             uint32_t k_base, float (&s)[kBN / 2],
                                             float (&factor)[2], float sl2, int mrow, int row0) {
    namespace ptx = attnkit::cuda::sm90;
    static_assert(kDiet, "flash3: ring_turns starts at turn 2 (c >= 2: no signed fix-ups)");
    const uint32_t v_base = ptx::smem_u32(sm.v);
    RingTurn r;
    ring_turn_state<Tr>(r, sm, turn);
    ring_loop(it, n_blocks, pipe.count + it, r, [&](auto stage) {
      mainloop_turn<Tr, BF16, kVar, kMaskFrom, kMaskNever, decltype(stage)::value>(
          a, sm, pipe, turn, it, n_end, q_wg, k_base, v_base, o, p, s, factor, pf, state, sl2, mrow,
          row0, lane, qa, 1, nullptr, 0.f, nullptr, 0, &r);
    });
  }

  /// Tile (m_block, h, b): its n_blocks K/V blocks, or (kTail) piece pc's, blocks pc.lo ..
  /// pc.lo + n_blocks - 1 (n_blocks = pc.n).
  __device__ __forceinline__ void tile(int m_block, int h, int b, int n_blocks,
                                       const TailPiece& pc = TailPiece{}) {
    namespace ptx = attnkit::cuda::sm90;
    // (mainloop_turn's block of turn it is n_end - 1 - it; kernels without kVarTail: pc.lo = 0.)
    const int n_end = (kTail ? pc.lo : 0) + n_blocks;
    const int first_row = m_block * Tr::kBlockM + cwg * 64;
    const int row0 = first_row + warp * 16 + lane / 4;
    if (n_blocks <= 0) {  // the caller flushed before this tile
      empty_tile(b, h, row0);
      return;
    }
    // (kTmaEpi: the launch runs it with both Q buffers only, launch.cuh tma_epi; no load of q_bufs)
    const int nq = Tr::kQStages == 1 ? 1 : kTmaEpi ? 2 : a.q_bufs;
    const int qb = qi.buf(nq);
    if (first_row >= a.seqlen_q) {
      idle_tile(n_blocks, qb, qi.phase(nq));
      ++qi.count;
      return;
    }
    const float sl2 = a.scale_log2;
    const uint32_t q_wg =
        ptx::smem_u32(sm.q) + uni(qb * Tr::kQBytes + cwg * 64 * Tr::kChunkRowBytes);
    const uint32_t k_base = ptx::smem_u32(sm.k);
    // A block needs the mask when it holds keys >= Sk or keys right of the first row's diagonal.
    // (kMaskFrom: mrow = that first block, passed to mainloop_turn in first_row's place.)
    const int mrow = kMaskFrom ? mask_from(first_row) : first_row;
    auto needs_mask = [&](int nb) {
      if constexpr (kMaskFrom) return nb >= mrow;
      return block_needs_mask<kBN>(a, nb, first_row);
    };
    float s[kBN / 2];
    float factor[2];
    ptx::mbar_wait(&sm.full_q[qb], qi.phase(nq));
    ++qi.count;
    // (No wgmma reads qa here: the previous tile's Q K^Ts were all waited for in its turns.)
    if constexpr (kQReg) load_q_regs<Tr>(qa, q_wg, warp, lane);

    // Turn 0: S = Q K_{n-1}^T, plus the previous tile's last P V (then its epilogue).
    {
      const int nb = n_end - 1;
      // (kEdgeRing: pipe.count >= 0, so the unsigned stage / parity are pipe.ks() / kph())
      const uint32_t c0 = static_cast<uint32_t>(pipe.count);
      const int st = kEdgeRing ? static_cast<int>(c0 % PipeOf<Tr>::kKS) : pipe.ks();
      ptx::mbar_wait(&sm.full_k[st], kEdgeRing ? (c0 / PipeOf<Tr>::kKS) & 1u : pipe.kph());
      fence_regs(o);
      fence_regs(p);
      turn.wait_turn();
      stamp(4);  // (trace builds: words 4-10, Consumer::stamp)
      ptx::wgmma_fence();
      if constexpr (kEdgeDesc)  // (the K stage descriptor's low word through REDUX: the same value)
        issue_qk_desc<Tr, BF16>(
            s, ptx::Sw128Desc::make(q_wg, 16, 1024),
            uniform_lo(ptx::Sw128Desc::make(k_base + st * Tr::kKStageBytes, 16, 1024)));
      else
        issue_qk_var<Tr, BF16, kVar>(s, q_wg, qa, k_base + uni(st * Tr::kKStageBytes));
      ptx::wgmma_commit();
      if constexpr (kEdgeOwnQ)
        issue_pending_pv_t0(ptx::smem_u32(sm.q) + uni(qb * Tr::kQBytes));
      else if constexpr (kCanOverlap)
        issue_pending_pv();
      turn.pass_turn();
      if constexpr (kCanOverlap) {
        ptx::wgmma_wait<1>();  // S ready
      } else {
        ptx::wgmma_wait<0>();
      }
      fence_regs(s);
      stamp(5);
      release_kv<Tr>(&sm.empty_k[st], lane);
      float inv[2], lse[2];
      // kTc: the previous tile's sums are complete only after its pending P V (below); keep
      // its reference maxima for that.
      const float m_prev[2] = {state.row_max[0], state.row_max[1]};
      if constexpr (kCanOverlap && !kTc)
        state.finalize(a.scale, inv, lse);  // the previous tile's (its P V changes no sums)
      state.init();
      if (needs_mask(nb))
        mask_tile<kBN>(s, nb * kBN, row0, lane, a.seqlen_k, a.causal, a.causal_offset);
      state.template step<!kLegacyDesc, kLazy, kTc, kLean>(s, sl2, factor);  // O starts from zero
      if constexpr (kCanOverlap) {
        softmax_before_wait<kOrdered>(state.row_sum);
        stamp(6, state.row_sum);
        ptx::wgmma_wait<0>();  // the previous tile's P V
        fence_regs(o);
        fence_regs(p);
        stamp(7);
        if constexpr (kTc) finalize_pending(m_prev, inv, lse);
        convert_p<kBN, BF16>(s, p);  // first: S (kBN/2 registers) dies before the epilogue
        finish_pending(inv, lse);    // the previous tile's epilogue; O = 0
        stamp(8, p);
      } else {
        convert_p<kBN, BF16>(s, p);
      }
      pf[0] = factor[0], pf[1] = factor[1];
    }
    // kDiet: turn 1 (the tile's first P V, O = P V) peeled, so that the loop's P V keeps a
    // constant scale-d (a per-turn `it == 1` cost ISETP + VOTEU.ANY + UMOV in the loop).
    if constexpr (kDiet) {
      if (n_blocks > 1) {
        mainloop_turn<Tr, BF16, kVar, kMaskFrom>(a, sm, pipe, turn, 1, n_end, q_wg, k_base,
                                                 attnkit::cuda::sm90::smem_u32(sm.v), o, p, s,
                                                 factor, pf, state, sl2, mrow, row0, lane, qa, 0);
        release_staged();  // kTmaEpi: turn 0's store has had a turn to read its rows
        stamp(9, p);
      }
    }
    if constexpr (kSplit && kMaskFrom) {
      // (kD64TurnSplit, kD128Ring) Turn it shows block n_end - 1 - it, which needs the mask iff it
      // is >= mrow: the turns it < n_end - mrow, all before the others. Two loops, the second one
      // without the mask's code or its per-turn test.
      const int it_plain = n_end - mrow;
      int it = kDiet ? 2 : 1;
      for (; it < n_blocks && it < it_plain; ++it)
        mainloop_turn<Tr, BF16, kVar, kMaskFrom, kMaskAlways>(
            a, sm, pipe, turn, it, n_end, q_wg, k_base, attnkit::cuda::sm90::smem_u32(sm.v), o, p,
            s, factor, pf, state, sl2, mrow, row0, lane, qa);
      if constexpr (kRing) {
        if (it < n_blocks)
          ring_turns(it, n_blocks, n_end, q_wg, k_base, s, factor, sl2, mrow, row0);
      } else {
        for (; it < n_blocks; ++it)
          mainloop_turn<Tr, BF16, kVar, kMaskFrom, kMaskNever>(
              a, sm, pipe, turn, it, n_end, q_wg, k_base, attnkit::cuda::sm90::smem_u32(sm.v), o, p,
              s, factor, pf, state, sl2, mrow, row0, lane, qa);
      }
    } else {
      for (int it = kDiet ? 2 : 1; it < n_blocks; ++it)
        mainloop_turn<Tr, BF16, kVar, kMaskFrom>(a, sm, pipe, turn, it, n_end, q_wg, k_base,
                                                 attnkit::cuda::sm90::smem_u32(sm.v), o, p, s,
                                                 factor, pf, state, sl2, mrow, row0, lane, qa);
    }
    stamp(10, p);
    // Every QK^T of this tile is done: the producer may load a later tile's Q here (kTmaEpi:
    // only after the epilogue's TMA store has read it, release_staged in a later tile).
    if constexpr (kTmaEpi) {
      release_staged();  // a one-block tile's turn-0 store (no turn 1)
      pqb = qb;
    } else {
      release<Tr>(&sm.empty_q[qb], lane);
    }
    pipe.count += n_blocks;
    pending = true;
    pb = b, ph = h, prow0 = row0;
    if constexpr (kDiet) pacc = n_blocks > 1 ? 1 : 0;
    if constexpr (kTail) piece = pc;
  }
};

}  // namespace attnkit::flash3
