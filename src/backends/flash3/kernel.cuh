// flash3 forward kernel (sm_90a): shared storage, block -> tile mapping and warp roles.
//
//   grid  = min(#tiles, #SMs) persistent CTAs (tile_scheduler.cuh: static or dynamic order);
//   block = 128 * (1 + WGs) threads, 1 CTA per SM. A tile = 64 * WGs query rows of one (b, h).
//   WG0  producer: setmaxnreg down to 32 (24 at D = 256); warp 0 runs the tile loop (and,
//        with the dynamic scheduler, takes the tiles from the global counter), its lane 0
//        issues the TMA loads of Q (one per tile) and of the K/V ring.
//   WG1 .. WGs consumers: setmaxnreg up (2 WGs: 232, 240 at D = 256; 3 WGs: 160); each owns
//        64 query rows, runs
//        S = Q K^T (wgmma, both operands in smem), mask + online softmax in registers,
//        O += P V (wgmma, P from registers), then the epilogue.
#pragma once

#include <cuda.h>

#include <cstdint>

#include "backends/flash3/cluster.cuh"
#include "backends/flash3/epilogue.cuh"
#include "backends/flash3/fwd_args.hpp"
#include "backends/flash3/mainloop.cuh"
#include "backends/flash3/seq_bounds.hpp"
#include "backends/flash3/tail.cuh"
#include "backends/flash3/tile_scheduler.cuh"
#include "backends/flash3/traits.hpp"
#include "cuda/pdl.hpp"
#include "cuda/ptx_sm90.hpp"

namespace attnkit::flash3 {

/// kVarVarlen (session 24): the FwdArgs that tile (b, ...) of a packed call runs with: its
/// sequence's lengths and causal / window bounds (seq_bounds.hpp), O and lse moved to the
/// sequence's first row (their b strides are 0 in a varlen call); q0 / k0 = the sequence's first
/// rows in the packed Q and K/V (the producer's TMA coordinates). Only the fields read per tile
/// live on: the tensor maps are always read from the kernel parameter, never from this copy.
__device__ __forceinline__ FwdArgs varlen_args(const FwdArgs& a, int b, int& q0, int& k0) {
  q0 = a.cu_q[b];
  k0 = a.cu_k[b];
  FwdArgs v = a;
  v.seqlen_q = a.cu_q[b + 1] - q0;
  v.seqlen_k = a.cu_k[b + 1] - k0;
  set_bounds(v, seq_bounds(v.seqlen_q, v.seqlen_k, a.causal_kind, a.win_left, a.win_right));
  v.out = static_cast<uint16_t*>(a.out) + static_cast<int64_t>(q0) * a.out_ss;
  v.out_sb = 0;
  if (a.lse != nullptr) v.lse = a.lse + static_cast<int64_t>(q0) * a.lse_ss;
  v.lse_sb = 0;
  return v;
}

/// kVarVarlen: the K/V blocks of tile m_block of a sequence (va = varlen_args), from block lo
/// (first_n_block): none for a tile past the sequence's end (its rows belong to the next one).
template <class Tr>
__device__ __forceinline__ int varlen_blocks(const FwdArgs& va, int m_block, int lo) {
  if (m_block * Tr::kBlockM >= va.seqlen_q) return 0;
  const int n = num_n_blocks<Tr>(va, m_block) - lo;
  return n > 0 ? n : 0;
}

/// kVar: variant bits (mainloop.cuh: kVarOrdered, kVarEarlyRescale); VS: V ring stages;
/// CL: CTAs per cluster (1, or 2 = K/V multicast, cluster.cuh); RS: K/V ring slots (0, or 10 =
/// the D = 256 128-key chunk ring, FwdTraits::kRing).
/// (kVar's kVarTcSum bit selects the traits' TC layout: FwdTraitsOf.)
template <int D, bool BF16, int BN, int WGs, int VS, int kVar, int CL = 1, int RS = 0>
__global__ void __launch_bounds__(FwdTraits<D, BN, WGs, VS, CL, RS>::kThreads, 1)
    fwd_kernel(const __grid_constant__ FwdArgs args) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  using Tr = FwdTraitsOf<D, BN, WGs, VS, kVar, CL, RS>;
  static_assert((kVar & kVarTcSum) == 0 || ((kVar & kVarScoreMod) == 0 &&
                                            ((D == 128 && (kVar & kVarTileDiet) != 0) || D == 256)),
                "flash3: the row sums in P V (kVarTcSum): D = 128 tile-diet kernels, D = 256");
  static_assert((kVar & kVarEdgeNc) == 0 ||
                    (D == 64 && (kVar & ~kVarEdgeNc) == (kVarTileDiet | kVarUniformDesc)),
                "flash3: kVarEdgeNc is D 64 slot 14's non-causal twin only (launch.cuh)");
  namespace ptx = attnkit::cuda::sm90;
  extern __shared__ uint8_t smem_raw[];
  // Swizzle-128B atoms need 1024-byte alignment; the dynamic window only promises 16.
  uint8_t* smem =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(smem_raw) + 1023) & ~uintptr_t{1023});
  SmemLayout<Tr> sm(smem);
  // A split tail's second launch (tail.cuh) may start as soon as every CTA of this one runs (its
  // CTAs then take the SMs this one leaves); without such a launch this does nothing.
  cuda::pdl_launch_dependents();
  // (Trace builds: the split tail's timeline, tail.cuh. Slot 47 (46: the tail kernel): thread
  // 0's %globaltimer at entry / exit (words 0 / 1), its clock64 (2 / 3); slot 48 (the tail
  // kernel): its consumer warpgroup 0's clock64 when ready, after its last flush, after
  // griddepcontrol.wait; slots 49..: per piece start / return, blocks | pieces | index.)
  constexpr int kTraceSlot = (kVar & kVarTail) != 0 ? 46 : 47;
  trace_gtime(args, kTraceSlot, 0, threadIdx.x, 0);
  trace_stamp(args, kTraceSlot, 0, threadIdx.x, 2);

  const int wg = threadIdx.x / 128;
  constexpr bool kDiet = (kVar & kVarTileDiet) != 0;  // (tile_scheduler.cuh FastDiv)
  // The split tail's kernel (launch 2, tail.cuh): pieces of the tail's tiles, static only.
  constexpr bool kTail = (kVar & kVarTail) != 0;
  const bool dynamic = args.tile_counter != nullptr;
  // kVarScoreMod (session 23): a tile's blocks start at first_n_block (the window's left edge).
  constexpr bool kScoreMod = (kVar & kVarScoreMod) != 0;
  // Kernels that may read a balanced schedule table (session 46, launch.cuh lpt_table_device):
  // launch_forward's, without the cluster (score mods, varlen and masks run their own launch).
  constexpr bool kLptTable = !kScoreMod && Tr::kCluster == 1;
  constexpr bool kVarlen = (kVar & kVarVarlen) != 0;
  static_assert(!kVarlen || (kScoreMod && !kTail && !kDiet && Tr::kCluster == 1 && !Tr::kRing),
                "flash3: kVarVarlen runs on the score-mod kernel only");
  auto lo_block = [&](int m_block) { return kScoreMod ? first_n_block<Tr>(args, m_block) : 0; };
  // (blocks lo_block .. num_n_blocks - 1; none when that is empty)
  auto blocks_from = [&](int m_block, int lo) {
    const int n = num_n_blocks<Tr>(args, m_block);
    if constexpr (!kScoreMod) return n;  // (lo = 0: the same code as before session 23)
    return n - lo > 0 ? n - lo : 0;
  };
  constexpr int kConsumerWarps = Tr::kConsumerWGs * 4;  // lane 0 of each arrives on "empty"
  // K/V "empty": the consumer warps of every CTA of the cluster (cluster.cuh).
  constexpr int kKVReleases = kConsumerWarps * Tr::kCluster;

  if (threadIdx.x == 0) {
    for (int i = 0; i < Tr::kQStages; ++i) {
      ptx::mbar_init(&sm.full_q[i], 1);
      ptx::mbar_init(&sm.empty_q[i], kConsumerWarps);
    }
    for (int s = 0; s < Tr::kStagesK; ++s) {
      ptx::mbar_init(&sm.full_k[s], 1);
      ptx::mbar_init(&sm.empty_k[s], kKVReleases);
    }
    for (int s = 0; s < Tr::kStagesV; ++s) {
      ptx::mbar_init(&sm.full_v[s], 1);
      ptx::mbar_init(&sm.empty_v[s], kKVReleases);
    }
    ptx::fence_mbar_init();
  }
  // The zero V block (Consumer::issue_pending_pv): written by the generic proxy, read by wgmma
  // (async proxy), hence the proxy fence before the barrier.
  for (int i = threadIdx.x; i < Tr::kZeroBytes / 16; i += Tr::kThreads)
    reinterpret_cast<uint4*>(sm.zero)[i] = make_uint4(0, 0, 0, 0);
  // kTcSum: the chunk of ones after both V stages (P V's 8 row-sum columns): 1.0 in bf16 / f16.
  if constexpr (Tr::kTcSum) {
    constexpr uint32_t kOne2 = BF16 ? 0x3F803F80u : 0x3C003C00u;
    for (int j = 0; j < Tr::kTcOnesChunks; ++j)
      for (int i = threadIdx.x; i < Tr::kTcChunk / 16; i += Tr::kThreads)
        reinterpret_cast<uint4*>(sm.ones + j * Tr::kTcVStageBytes)[i] =
            make_uint4(kOne2, kOne2, kOne2, kOne2);
  }
  ptx::fence_proxy_async_smem();
  __syncthreads();
  if constexpr (Tr::kCluster > 1) cl::sync();  // the peer's barriers exist before any remote use

  PipeOf<Tr> pipe;
  QIndex qi;
  const SchedSlot slot{sm.sched_tile, 32 + 128 * Tr::kConsumerWGs};
  if (wg == 0) {
    ptx::setmaxnreg_dec<Tr::kProducerRegs>();
    // Warp 0 runs the producer loop (the whole warp: the dynamic hand-over uses named barriers,
    // which count warps); lane 0 alone issues the TMA loads. Warps 1-3 have nothing to do.
    if (threadIdx.x < 32) {
      const int lane = threadIdx.x;
      if (lane == 0) {
        ptx::tma_prefetch_map(&args.tma_q);
        ptx::tma_prefetch_map(&args.tma_k);
        ptx::tma_prefetch_map(&args.tma_v);
        if constexpr ((kVar & kVarTmaEpi) != 0) ptx::tma_prefetch_map(&args.tma_o);
#if ATTNKIT_FLASH3_FWD_D256_TMA_EPI
        if constexpr (kD256TmaEpi<Tr, kVar>)  // (only an encoded map: FwdArgs::o_tma)
          if (args.o_tma != 0) ptx::tma_prefetch_map(&args.tma_o);
#endif
      }
      if constexpr (kTail) {  // this CTA's pieces, in order (tail_piece)
        int k = 0;
        for (TailPiece w = tail_piece(args, 0), next; w.t >= 0; w = next) {
          next = tail_piece(args, ++k);  // (its tile's Q is prefetched: FwdArgs::q_prefetch)
          if (lane == 0) {
            const Tile tile = decode_tile_of<kDiet>(args, w.t);
            produce_tile<Tr, kDiet>(args, sm, tile.m_block, tile.h, tile.b, w.n, pipe, qi, next.t,
                                    w.lo);
          }
          __syncwarp();
        }
      } else {
        // Dynamic: tile blockIdx.x first (grid <= #tiles), then one atomic per tile, taken when
        // this tile's loads are all issued (about kStagesK K/V tiles before the consumers need
        // the next one): a tile claimed earlier would sit reserved behind a long causal row
        // while other CTAs run out of work (measured: claiming at the start of the previous
        // tile cost 15 % at D = 256, S = 4k causal, run 5).
        int t = dynamic ? static_cast<int>(blockIdx.x) : static_tile<kLptTable>(args, 0);
        for (int k = 0;; ++k) {
          if (dynamic) slot.put(k, t, lane);
          if (t < 0) break;
          // Static: the next tile is known now (FwdArgs::q_prefetch prefetches its Q into L2).
          const int t_next = dynamic ? -1 : static_tile<kLptTable>(args, k + 1);
          if (lane == 0) {
            const Tile tile = decode_tile_of<kDiet>(args, t);
            if constexpr (kVarlen) {  // (TMA coordinate b = 0: the maps are [1, total, H, D])
              int q0, k0;
              const FwdArgs va = varlen_args(args, tile.b, q0, k0);
              const int lo = first_n_block<Tr>(va, tile.m_block);
              produce_tile<Tr, kDiet>(args, sm, tile.m_block, tile.h, 0,
                                      varlen_blocks<Tr>(va, tile.m_block, lo), pipe, qi, -1, lo, q0,
                                      k0);
            } else {
              const int lo = lo_block(tile.m_block);
              produce_tile<Tr, kDiet>(args, sm, tile.m_block, tile.h, tile.b,
                                      blocks_from(tile.m_block, lo), pipe, qi, t_next, lo);
            }
          }
          __syncwarp();
          if (dynamic) {
            int n = 0;
            if (lane == 0) n = atomicAdd(args.tile_counter, 1) + static_cast<int>(gridDim.x);
            n = __shfl_sync(0xffffffffu, n, 0);
            t = n < args.num_tiles ? n : -1;
          } else {
            t = t_next;
          }
        }
      }  // (kTail)
    }
  } else {
    ptx::setmaxnreg_inc<Tr::kConsumerRegs>();
    const int cwg = wg - 1;
    const PingPong turn{cwg, Tr::kConsumerWGs, args.pingpong != 0};
    if (cwg == Tr::kConsumerWGs - 1) turn.pass_turn();  // consumer 0 goes first
    if constexpr (kTail && !Consumer<Tr, BF16, kVar>::kCanOverlap) {
      // D = 256 (session 20): consume_tile_simple per piece (no overlap, so no flush turns).
      for (int k = 0;; ++k) {
        const TailPiece w = tail_piece(args, k);
        if (w.t < 0) break;
        const Tile tile = decode_tile_of<kDiet>(args, w.t);
        consume_tile_simple<Tr, BF16, kVar>(args, sm, tile.m_block, tile.h, tile.b, w.n, pipe, qi,
                                            cwg, threadIdx.x % 128, turn, w);
      }
    } else if constexpr (kTail) {
      Consumer<Tr, BF16, kVar> consumer(args, sm, pipe, qi, turn, cwg, threadIdx.x % 128);
      trace_stamp(args, 48, cwg, threadIdx.x % 128, 0);
      for (int k = 0;; ++k) {
        const TailPiece w = tail_piece(args, k);
        trace_stamp(args, 49 + k, cwg, threadIdx.x % 128, 0);
        // (The flush turn as below: after the last piece; pieces always have blocks.)
        if (k > 0 && (w.t < 0 || !consumer.overlap())) consumer.flush_turn();
        if (w.t < 0) break;
        const Tile tile = decode_tile_of<kDiet>(args, w.t);
        trace_put(args, 49 + k, cwg, threadIdx.x % 128, 3, w.n | w.pieces << 16 | w.index << 24);
        consumer.tile(tile.m_block, tile.h, tile.b, w.n, w);
        trace_stamp(args, 49 + k, cwg, threadIdx.x % 128, 1);
      }
      trace_stamp(args, 48, cwg, threadIdx.x % 128, 1);
    } else if constexpr (Consumer<Tr, BF16, kVar>::kCanOverlap) {
      Consumer<Tr, BF16, kVar> consumer(args, sm, pipe, qi, turn, cwg, threadIdx.x % 128);
      // Static: tile k + 1 is asked for while tile k runs (session 46: with FwdArgs::sched_table
      // an entry is a load from L2, which would otherwise wait at every tile boundary of these
      // short overlapped tiles; the tile-at-a-time consumer below reads its entry at the start).
      int t_ahead = dynamic ? -1 : static_tile<kLptTable>(args, 0);
      // (ATTNKIT_FLASH3_FWD_EDGE) num_n_blocks' non-causal count, once: (Sk + kBlockN - 1) /
      // kBlockN, the value num_n_blocks returns when !args.causal.
      const int total_n = (args.seqlen_k + Tr::kBlockN - 1) / Tr::kBlockN;
      for (int k = 0;; ++k) {
        // kVarTileDiet: the schedule without per-tile divisions (tile_scheduler.cuh FastDiv).
        const int t = dynamic ? slot.get(k) : t_ahead;
        if (!dynamic && t >= 0) t_ahead = static_tile<kLptTable>(args, k + 1);
        const Tile tile = decode_tile_of<kDiet>(args, t < 0 ? 0 : t);
        int n_blocks;
        // (ATTNKIT_FLASH3_FWD_EDGE part 8; of ATTNKIT_FLASH3_FWD_EDGE_PARTS_NC with kVarEdgeNc,
        // whose launches are non-causal: the args.causal test stays, the same code as slot 14's)
        if constexpr (Consumer<Tr, BF16, kVar>::kEdgeCount)
          n_blocks = t < 0 ? 0 : args.causal ? num_n_blocks<Tr>(args, tile.m_block) : total_n;
        else
          n_blocks = t < 0 ? 0 : num_n_blocks<Tr>(args, tile.m_block);
        // (trace builds: word 0 = the tile starts, 3 = its m block and K/V block count, 1 = after
        // the flush turn, 2 = the tile call returns)
        if (t >= 0) {
          trace_stamp(args, k, cwg, threadIdx.x % 128, 0);
          trace_put(args, k, cwg, threadIdx.x % 128, 3, tile.m_block | n_blocks << 16);
        }
        // Flush turn (the same decision in every consumer warpgroup): after the last tile,
        // before a tile without keys, and between tiles when they do not overlap.
        if (k > 0 && (t < 0 || n_blocks == 0 || !consumer.overlap())) consumer.flush_turn();
        if (t < 0) break;
        trace_stamp(args, k, cwg, threadIdx.x % 128, 1);
        consumer.tile(tile.m_block, tile.h, tile.b, n_blocks);
        trace_stamp(args, k, cwg, threadIdx.x % 128, 2);
      }
      consumer.drain();  // (kVarTmaEpi only)
    } else {
      for (int k = 0;; ++k) {
        const int t = dynamic ? slot.get(k) : static_tile<kLptTable>(args, k);
        if (t < 0) break;
        const Tile tile = decode_tile_of<kDiet>(args, t);
        if constexpr (Tr::kRing) {
          consume_tile_ring<Tr, BF16>(args, sm, tile.m_block, tile.h, tile.b,
                                      num_n_blocks<Tr>(args, tile.m_block), pipe, qi, cwg,
                                      threadIdx.x % 128, turn);
        } else if constexpr (Tr::kFused) {
          consume_tile_fused<Tr, BF16>(args, sm, tile.m_block, tile.h, tile.b,
                                       num_n_blocks<Tr>(args, tile.m_block), pipe, qi, cwg,
                                       threadIdx.x % 128, turn);
        } else {
          // (trace, measurement builds: words 0 / 2 = the tile call starts / returns; 1 / 3 in
          // consume_tile_simple)
          trace_stamp(args, k, cwg, threadIdx.x % 128, 0);
          if constexpr (kVarlen) {  // (b stays the sequence's index: ALiBi's [B, Hq] slopes)
            int q0, k0;
            const FwdArgs va = varlen_args(args, tile.b, q0, k0);
            const int lo = first_n_block<Tr>(va, tile.m_block);
            consume_tile_simple<Tr, BF16, kVar>(va, sm, tile.m_block, tile.h, tile.b,
                                                varlen_blocks<Tr>(va, tile.m_block, lo), pipe, qi,
                                                cwg, threadIdx.x % 128, turn, TailPiece{}, lo);
          } else {
            const int lo = lo_block(tile.m_block);
            consume_tile_simple<Tr, BF16, kVar>(args, sm, tile.m_block, tile.h, tile.b,
                                                blocks_from(tile.m_block, lo), pipe, qi, cwg,
                                                threadIdx.x % 128, turn, TailPiece{}, lo);
          }
          trace_stamp(args, k, cwg, threadIdx.x % 128, 2);
        }
      }
#if ATTNKIT_FLASH3_FWD_D256_TMA_EPI
      // (ATTNKIT_FLASH3_FWD_D256_TMA_EPI) This warp's O stores (lane 0 issued them: bulk groups
      // are per thread) are complete before it leaves: its staging chunk is not released under a
      // store still reading it, and O is written before the CTA (and, with PDL, the split tail's
      // wait on this launch) ends. Nothing else uses the staging region. (With o_tma = 0 lane 0
      // has no bulk group: the wait returns at once.)
      if constexpr (kD256TmaEpi<Tr, kVar>)
        if (threadIdx.x % 32 == 0) ptx::bulk_wait<0>();
#endif
    }
    if (cwg == 0) turn.wait_turn();  // the surplus turn handed over at the start
  }
  // No CTA leaves while its peer may still arrive on its barriers (every thread, incl. the
  // producer warpgroup's idle warps).
  if constexpr (Tr::kCluster > 1) cl::sync();
  // The tail kernel may have started before launch 1 finished: it ends only after it, so that
  // the stream's later work sees every row of O.
  if constexpr (kTail) {
    cuda::pdl_wait_previous();
    trace_stamp(args, 48, wg == 1 ? 0 : 3, threadIdx.x % 128, 2);  // (consumer WG 0 only)
  }
  trace_gtime(args, kTraceSlot, 0, threadIdx.x, 1);
  trace_stamp(args, kTraceSlot, 0, threadIdx.x, 3);
#endif
}

}  // namespace attnkit::flash3
