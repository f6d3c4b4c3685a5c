// Forward kernel (FlashAttention-2 schedule on mma.sync): one CTA per (query block, q head,
// batch); each warp owns 16 * kMT query rows and runs the online softmax over key blocks in
// registers. K/V tiles go through shared memory with cp.async, overlapped as in FA-2: V_n loads
// while S = Q K_n^T is computed, K_{n-1} loads while O += P V_n is computed.
// Key blocks outside the causal/window band of the whole query block are never visited; the
// per-element mask runs only on blocks that straddle a boundary (fast path).
#pragma once

#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "backends/flash/fwd_tail.cuh"
#include "backends/flash/score_mod.cuh"
#include "backends/flash/smem_layout.hpp"
#include "backends/flash/traits.hpp"
#include "backends/flash/warp_mma.cuh"
#include "cuda/pdl.hpp"

namespace attnkit::flash {

/// cp.async.wait_group with a count known only after unrolling (0..4).
__device__ __forceinline__ void cp_async_wait_upto(int n) {
  switch (n) {
    case 0:
      ptx::cp_async_wait<0>();
      break;
    case 1:
      ptx::cp_async_wait<1>();
      break;
    case 2:
      ptx::cp_async_wait<2>();
      break;
    case 3:
      ptx::cp_async_wait<3>();
      break;
    default:
      ptx::cp_async_wait<4>();
      break;
  }
}

/// One tile's cp.async: TileLoader's precomputed addresses when every row and column is valid
/// (and Tr::kFastLoad), else load_tile_async's per-chunk bounds checks.
/// kTid: every tile, full or not, through TileLoader::load_tid (`ld` unused; FwdTraits::kTidLoad);
/// kFullT: load_tid's full-tile branch (FwdTraits::kTidFull).
template <typename L, int kThreads, bool kFast, bool kTid = false, bool kFullT = false, typename T>
__device__ __forceinline__ void fwd_load_tile(T* smem, const T* gmem, int64_t stride,
                                              int valid_rows, int valid_cols,
                                              const TileLoader<L, kThreads>& ld) {
  if constexpr (kTid && TileLoader<L, kThreads>::kSupported) {
    TileLoader<L, kThreads>::template load_tid<kFullT>(smem, gmem, stride, valid_rows, valid_cols);
    return;
  }
  if constexpr (kFast && TileLoader<L, kThreads>::kSupported) {
    if (valid_rows >= L::kRows && valid_cols >= L::kCols) {
      ld.load_full(smem, gmem);
      return;
    }
  }
  load_tile_async<L, kThreads>(smem, gmem, stride, valid_rows, valid_cols);
}

/// fwd_load_tile (fast) from `gthr` = tile pointer + ld.g, the thread's first chunk
/// (FwdTraits::kThrPtr): full tiles as TileLoader::load_full_thr; partial ones (the sequence's
/// last key block, head_dim < D) get the tile pointer back through TileLoader::opaque_g.
template <typename L, int kThreads, typename T>
__device__ __forceinline__ void fwd_load_tile_thr(T* smem, const T* gthr, int64_t stride,
                                                  int valid_rows, int valid_cols,
                                                  const TileLoader<L, kThreads>& ld) {
  if (valid_rows >= L::kRows && valid_cols >= L::kCols) {
    ld.load_full_thr(smem, gthr);
    return;
  }
  load_tile_async<L, kThreads>(smem, gthr - TileLoader<L, kThreads>::opaque_g(stride), stride,
                               valid_rows, valid_cols);
}

/// FwdTraits::kKV2Chain: one full-row (kRows, D) tile of the KV2 key loop from `src`, the
/// thread's chunk-0 byte address of the tile above it (kRows rows further), walked down one row
/// group per chunk: chunk it (row r0 + it * kRowStep, TileLoader's assignment) is issued last to
/// first, each after a 64-bit subtract of `step` (kRowStep rows in bytes), so `src` ends on this
/// tile's chunk 0, the next call's start. `dst`: the shared address of chunk 0 (rows r and
/// r + kRowStep share their swizzle: kPhases == 1). `ok`: the thread's column is inside head_dim
/// (else zero-filled from an in-row address, as load_tile_async does).
template <typename L, int kThreads>
__device__ __forceinline__ void fwd_chain_tile(uint32_t dst, uint64_t& src, int64_t step, bool ok) {
  using TL = TileLoader<L, kThreads>;
  static_assert(TL::kSupported && TL::kPhases == 1 && !L::kHasHalfPanel, "kKV2Chain layouts");
#pragma unroll
  for (int it = TL::kIters - 1; it >= 0; --it) {
    // A PTX subtract: written in C++, NVVM may rebuild each chunk's address from the base with a
    // 64-bit multiply-add per chunk (as in TileLoader::load_tid).
    asm("sub.s64 %0, %0, %1;" : "+l"(src) : "l"(step));
    ptx::cp_async_16(dst + static_cast<uint32_t>(it * TL::kRowStep * 128),
                     reinterpret_cast<const void*>(src), ok);
  }
}

/// A query tile (m block, q head, batch) in the launch order of the 3-D grid: m blocks fastest,
/// heavy causal blocks (the last) first.
struct FwdTile {
  int64_t b, h;
  int m_block;
};
__device__ __forceinline__ FwdTile fwd_tile_of(int64_t t, int num_m, int64_t heads) {
  const int64_t bh = t / num_m;
  return FwdTile{bh / heads, bh % heads, num_m - 1 - static_cast<int>(t - bh * num_m)};
}

/// One query tile. `pre`: its first Q and K tiles were already issued (one cp.async group) by the
/// previous tile of this CTA; `nxt`: the CTA's next tile where has_next. Returns true when it
/// issued nxt's first Q and K (persistent launches, Tr::kPersist): after the last key block's S
/// GEMM sQ and sK are free, so the next tile's loads overlap this one's last softmax, P V and
/// epilogue instead of stalling the next tile's start.
/// kKV2 (FwdTraits::kKV2, fast path): two K and two V buffers after sV; key block n (the i-th
/// visited, i = n_end - 1 - n) uses pair i % 2, and K_{n-1} / V_{n-1} load into the other pair
/// from the start of block n on, so each block waits (and synchronizes) once, at its start.
/// kPiece (fwd_tail_kernel, non-causal): key blocks [pc.n_lo, pc.n_hi) only; with pc.pieces > 1
/// the piece epilogue (fwd_tail.cuh) instead of this one.
template <int D, typename T, bool kGeneral, int kBM256, bool kKV2 = false, bool kPiece = false>
__device__ __forceinline__ bool fwd_tile(const Params& p, uint8_t* smem_raw, const FwdTile tile,
                                         const FwdTile nxt, bool has_next, bool pre,
                                         const FwdTailArgs& ta = FwdTailArgs(),
                                         const FwdPiece& pc = FwdPiece()) {
  using Tr = FwdTraits<D, kBM256, kKV2>;
  using LQ = SmemLayout<Tr::kBM, D>;
  using LK = SmemLayout<Tr::kBN, D>;
  constexpr int kBM = Tr::kBM, kBN = Tr::kBN, kMT = Tr::kMT, kNT = kBN / 8, kDT = D / 8;
  T* sQ = reinterpret_cast<T*>(smem_raw);  // (kBM, D)
  T* sK = sQ + LQ::kSize;                  // (kBN, D)
  T* sV = sK + LK::kSize;                  // (kBN, D)
  T* sK2 = sV + LK::kSize;                 // kKV2: the second K and V buffers, (kBN, D) each
  T* sV2 = sK2 + LK::kSize;
  static_assert(!kKV2 || (!kGeneral && Tr::kKV2), "KV2: FwdTraits::kKV2 fast path only");

  const int64_t b = tile.b, h = tile.h;
  const SeqSpan sp = seq_span(p, b);
  const int64_t m0 = static_cast<int64_t>(tile.m_block) * kBM;
  if (m0 >= sp.sq) return false;
  const int rows = static_cast<int>(sp.sq - m0 < kBM ? sp.sq - m0 : kBM);
  const int64_t g = h / p.group;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int qr = lane / 4, qc = (lane % 4) * 2;  // row / first column of this lane in a C tile

  const T* q_ptr =
      static_cast<const T*>(p.q) + b * p.q_st.b + (sp.q_start + m0) * p.q_st.s + h * p.q_st.h;
  const T* k_ptr = static_cast<const T*>(p.k) + b * p.k_st.b + sp.k_start * p.k_st.s + g * p.k_st.h;
  const T* v_ptr = static_cast<const T*>(p.v) + b * p.v_st.b + sp.k_start * p.v_st.s + g * p.v_st.h;
  const int dq_valid = static_cast<int>(p.head_dim), dv_valid = static_cast<int>(p.head_dim_v);

  ScoreCtx ctx;
  ctx.init(p, b, h, sp.sq, sp.sk);
  const float mul = logit_mul<kGeneral>(ctx);

  // Key blocks any row of this query block can see.
  const Range32 first = row_range(p, m0, sp.sq, sp.sk);
  const Range32 last = row_range(p, m0 + rows - 1, sp.sq, sp.sk);
  const int n_begin_rows = first.lo / kBN;
  const int n_end_rows = last.hi >= first.lo ? last.hi / kBN + 1 : n_begin_rows;
  const int n_begin = kPiece ? pc.n_lo : n_begin_rows;
  const int n_end = kPiece ? pc.n_hi : n_end_rows;
  // Tr::kBlockCheck (fast path): the key blocks that need no element rule, [nf_lo, nf_hi] (every
  // row sees every key: last.lo <= n * kBN and n * kBN + kBN - 1 <= first.hi; lo >= 0, hi >= -1),
  // so each block tests its 32-bit index instead of 64-bit key offsets against the ranges.
  constexpr bool kBlockCheck = Tr::kBlockCheck && !kGeneral;
  [[maybe_unused]] const int nf_lo = (last.lo + kBN - 1) / kBN;
  [[maybe_unused]] const int nf_hi = (first.hi + 1) / kBN - 1;

  float o[kMT][kDT][4];  // (16*kMT, D) output accumulator of this warp
  zero(o);
  float m_run[kMT][2], l_run[kMT][2];  // running max (log2 units), partial row sums
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      m_run[mt][r] = -INFINITY;
      l_run[mt][r] = 0.f;
    }
  // Global row (within the sequence) of this lane's row r of m-tile mt.
  auto row_of = [&](int mt, int r) {
    return static_cast<int>(m0) + warp * 16 * kMT + mt * 16 + qr + r * 8;
  };

  // The first Q / K tiles as kPanels column panels (one cp.async group each); a 64-wide panel
  // of an (R, D) tile is an (R, 64) SmemLayout tile at element offset panel * R * 64.
  constexpr int kPanels = Tr::kProloguePanels, kPW = D / kPanels;
  static_assert(kPanels == 1 || kPW == 64, "prologue panels are 64 columns wide");
  using LQp = SmemLayout<kBM, kPW>;
  using LKp = SmemLayout<kBN, kPW>;
  // The general path keeps its registers. The D = 64 KV2 kernel (ATTNKIT_FLASH_FWD_KV2_64_MAX_S)
  // always takes TileLoader: with load_tile_async it spills 64 B (11 LDL per key block; ptxas
  // 255 registers), with it 245 registers and no spill (sm_90a, nvcc 13.0).
  constexpr bool kFast = (Tr::kFastLoad || (kKV2 && D == 64)) && !kGeneral;
  // S GEMM k-loop unroll (k16 steps): the fast path's may differ (BN64_DIET bit 64).
  constexpr int kKU = kGeneral ? Tr::kKUnroll : Tr::kKUnrollFast;
  const TileLoader<LK, Tr::kThreads> ldk(p.k_st.s), ldv(p.v_st.s);
  // BN_128 = 64 diet (Tr::kThrPtr): the key loop's K / V loads from per-thread pointers.
  constexpr bool kThr = Tr::kThrPtr && kFast && TileLoader<LK, Tr::kThreads>::kSupported;
  // 64-row D = 256 diet and BN64_DIET bit 32 at D = 128 (Tr::kTidLoad): every K / V / first-Q
  // tile through TileLoader::load_tid (no loader state live across the key loop, no full /
  // partial branch: 0 B spill vs 72 B at D = 256; at D = 128 with bit 64, 0 B vs 16 B).
  constexpr bool kTid = Tr::kTidLoad && kFast && TileLoader<LK, Tr::kThreads>::kSupported;
  constexpr bool kFullT = Tr::kTidFull && kTid;  // load_tid's full-tile branch
  const T* k_thr = kThr ? k_ptr + ldk.g : k_ptr;
  const T* v_thr = kThr ? v_ptr + ldv.g : v_ptr;
  if (n_end > n_begin && !pre) {
    const int64_t n0 = static_cast<int64_t>(n_end - 1) * kBN;
    const int k_rows = static_cast<int>(sp.sk - n0);
    const TileLoader<LQp, Tr::kThreads> ldq(p.q_st.s);
    const TileLoader<LKp, Tr::kThreads> ldk0(p.k_st.s);
#pragma unroll
    for (int pp = 0; pp < kPanels; ++pp) {
      const int vc = dq_valid - pp * kPW;  // <= 0: the panel is zero-filled from the row start
      const int64_t c0 = vc > 0 ? pp * kPW : 0;
      fwd_load_tile<LQp, Tr::kThreads, kFast, kTid, kFullT>(sQ + pp * kBM * kPW, q_ptr + c0,
                                                            p.q_st.s, rows, vc, ldq);
      fwd_load_tile<LKp, Tr::kThreads, kFast, kTid, kFullT>(
          sK + pp * kBN * kPW, k_ptr + n0 * p.k_st.s + c0, p.k_st.s, k_rows, vc, ldk0);
      ptx::cp_async_commit();
    }
    if constexpr (kKV2) {  // V of the first block: the group after the panels
      fwd_load_tile<LK, Tr::kThreads, kFast, kTid, kFullT>(sV, v_ptr + n0 * p.v_st.s, p.v_st.s,
                                                           k_rows, dv_valid, ldv);
      ptx::cp_async_commit();
    }
  }

  // Tr::kKV2Chain (D = 64 KV2 fast path): the key loop's K / V loads from running per-thread
  // byte pointers (fwd_chain_tile), starting on chunk 0 of the first block's tile; `kv_dst` is
  // the thread's chunk-0 address in the pair the next loads fill (pair 1 first), toggled by
  // kv_sum - kv_dst. Every tile the loop loads is full in rows (n - 1 < n_end - 1 and last.hi <=
  // seqlen_k - 1), so only the column predicate remains, fixed per thread.
  constexpr bool kChain = kKV2 && Tr::kKV2Chain && !kGeneral;
  using TLK = TileLoader<LK, Tr::kThreads>;
  [[maybe_unused]] uint64_t k_src = 0, v_src = 0;
  [[maybe_unused]] int64_t k_step = 0, v_step = 0;
  [[maybe_unused]] uint32_t kv_dst = 0, kv_sum = 0;
  [[maybe_unused]] bool k_ok = false, v_ok = false;
  if constexpr (kChain) {
    const int t = static_cast<int>(threadIdx.x);
    const int r0 = t / TLK::kChunksPerRow, c = (t % TLK::kChunksPerRow) * 8;
    k_ok = c < dq_valid;
    v_ok = c < dv_valid;
    // Integer byte addresses: the first block's row r0 may lie past the sequence (a partial last
    // tile); it is only a start, every chunk is issued after a subtract.
    const int64_t row = static_cast<int64_t>(n_end - 1) * kBN + r0;
    k_src = reinterpret_cast<uint64_t>(k_ptr) +
            static_cast<uint64_t>(row * p.k_st.s + (k_ok ? c : 0)) * sizeof(T);
    v_src = reinterpret_cast<uint64_t>(v_ptr) +
            static_cast<uint64_t>(row * p.v_st.s + (v_ok ? c : 0)) * sizeof(T);
    k_step = TLK::kRowStep * p.k_st.s * static_cast<int64_t>(sizeof(T));
    v_step = TLK::kRowStep * p.v_st.s * static_cast<int64_t>(sizeof(T));
    const uint32_t off = 2u * static_cast<uint32_t>(LK::off(r0, c));
    kv_dst = ptx::smem_addr(sK2) + off;
    kv_sum = ptx::smem_addr(sK) + off + kv_dst;
  }

  // Tr::kKV2Lanes (D = 64 KV2 fast path): the lane bases of Q (S GEMM A), K (B) and V (P V's
  // B, [k][n]) as WarpFragAddr bases, kept in registers across the key loop; kb / vb are this
  // block's pair's (pair 0 first), toggled by *_sum - * at the end of each block.
  constexpr bool kLanes = kKV2 && Tr::kKV2Lanes && !kGeneral;
  [[maybe_unused]] uint32_t qa = 0, kb = 0, kb_sum = 0, vb = 0, vb_sum = 0;
  if constexpr (kLanes) {
    qa = WarpFragAddr<LQ>(sQ, lane_r_a() + warp * 16 * kMT, lane_c_a()).base;
    kb = WarpFragAddr<LK>(sK, lane_r_t(), lane_c_t()).base;
    kb_sum = kb + WarpFragAddr<LK>(sK2, lane_r_t(), lane_c_t()).base;
    vb = WarpFragAddr<LK>(sV, lane_r_kn(), lane_c_kn()).base;
    vb_sum = vb + WarpFragAddr<LK>(sV2, lane_r_kn(), lane_c_kn()).base;
  }

  // Waits for V_n, then starts K_{n-1} into sK (free once every warp is past this barrier).
  // Where it runs in the loop is Tr::kEarlyK's choice (before or after the softmax).
  // After the last key block's S GEMM: nxt's first Q and K tiles (one group), if it has any key.
  bool issued_next = false;
  auto load_next_tile = [&]() {
    const SeqSpan sp2 = seq_span(p, nxt.b);
    const int64_t m2 = static_cast<int64_t>(nxt.m_block) * kBM;
    if (m2 >= sp2.sq) return;
    const int rows2 = static_cast<int>(sp2.sq - m2 < kBM ? sp2.sq - m2 : kBM);
    const Range32 f2 = row_range(p, m2, sp2.sq, sp2.sk);
    const Range32 l2 = row_range(p, m2 + rows2 - 1, sp2.sq, sp2.sk);
    if (l2.hi < f2.lo) return;  // no visible key: that tile runs no key loop
    const int64_t n2 = static_cast<int64_t>(l2.hi / kBN) * kBN;
    const int64_t g2 = nxt.h / p.group;
    const T* q2 = static_cast<const T*>(p.q) + nxt.b * p.q_st.b + (sp2.q_start + m2) * p.q_st.s +
                  nxt.h * p.q_st.h;
    const T* k2 = static_cast<const T*>(p.k) + nxt.b * p.k_st.b + (sp2.k_start + n2) * p.k_st.s +
                  g2 * p.k_st.h;
    const TileLoader<LQ, Tr::kThreads> ldq2(p.q_st.s);
    fwd_load_tile<LQ, Tr::kThreads, kFast>(sQ, q2, p.q_st.s, rows2, dq_valid, ldq2);
    fwd_load_tile<LK, Tr::kThreads, kFast>(sK, k2, p.k_st.s, static_cast<int>(sp2.sk - n2),
                                           dq_valid, ldk);
    ptx::cp_async_commit();
    issued_next = true;
  };
  auto wait_v_load_next_k = [&](int n, int64_t n0) {
    ptx::cp_async_wait<0>();
    __syncthreads();  // V_n landed; every warp is done with K_n (and Q)
    if (n > n_begin) {
      const int64_t n1 = n0 - kBN;
      if constexpr (kThr) {
        fwd_load_tile_thr<LK, Tr::kThreads>(sK, k_thr + n1 * p.k_st.s, p.k_st.s,
                                            static_cast<int>(sp.sk - n1), dq_valid, ldk);
      } else {
        fwd_load_tile<LK, Tr::kThreads, kFast, kTid, kFullT>(
            sK, k_ptr + n1 * p.k_st.s, p.k_st.s, static_cast<int>(sp.sk - n1), dq_valid, ldk);
      }
      ptx::cp_async_commit();
    } else if (Tr::kPersist && has_next) {
      load_next_tile();
    }
  };

  for (int n = n_end - 1; n >= n_begin; --n) {
    const int64_t n0 = static_cast<int64_t>(n) * kBN;
    const bool first_blk = kPanels > 1 && !pre && n == n_end - 1;
    // kKV2: this block's K / V pair (the first block's is sK / sV, where the prologue loads).
    const bool odd = kKV2 && ((n_end - 1 - n) & 1) != 0;
    T* const sKn = odd ? sK2 : sK;
    T* const sVn = odd ? sV2 : sV;
    // kKV2: V of the first block is one more group after its panels.
    constexpr int kVGroup = kKV2 ? 1 : 0;
    if (first_blk) {
      cp_async_wait_upto(kPanels - 1 + kVGroup);  // panel 0 of Q and K landed
    } else {
      ptx::cp_async_wait<0>();
    }
    // K_n landed (kKV2: V_n too); every warp is done with V_{n+1} (kKV2: with all of block n + 1)
    __syncthreads();
    if constexpr (kKV2) {
      // K_{n-1} and V_{n-1} into the pair block n + 1 used, one group (empty in the last block,
      // so that the group counts above hold).
      if (n > n_begin) {
        if constexpr (kChain) {
          fwd_chain_tile<LK, Tr::kThreads>(kv_dst, k_src, k_step, k_ok);
          fwd_chain_tile<LK, Tr::kThreads>(kv_dst + 2u * LK::kSize, v_src, v_step, v_ok);
          kv_dst = kv_sum - kv_dst;
        } else {
          const int64_t n1 = n0 - kBN;
          T* const sKo = odd ? sK : sK2;
          T* const sVo = odd ? sV : sV2;
          fwd_load_tile<LK, Tr::kThreads, kFast, kTid, kFullT>(
              sKo, k_ptr + n1 * p.k_st.s, p.k_st.s, static_cast<int>(sp.sk - n1), dq_valid, ldk);
          fwd_load_tile<LK, Tr::kThreads, kFast, kTid, kFullT>(
              sVo, v_ptr + n1 * p.v_st.s, p.v_st.s, static_cast<int>(sp.sk - n1), dv_valid, ldv);
        }
      }
    } else if constexpr (kThr) {
      fwd_load_tile_thr<LK, Tr::kThreads>(sV, v_thr + n0 * p.v_st.s, p.v_st.s,
                                          static_cast<int>(sp.sk - n0), dv_valid, ldv);
    } else {
      fwd_load_tile<LK, Tr::kThreads, kFast, kTid, kFullT>(
          sV, v_ptr + n0 * p.v_st.s, p.v_st.s, static_cast<int>(sp.sk - n0), dv_valid, ldv);
    }
    ptx::cp_async_commit();

    float s[kMT][kNT][4];  // (16*kMT, kBN) scores of this warp
    zero(s);
    if (first_blk) {
      // In flight after V's commit: panels pp + 1 .. kPanels - 1, then V.
#pragma unroll
      for (int pp = 0; pp < kPanels; ++pp) {
        if (pp > 0) {
          cp_async_wait_upto(kPanels - pp + kVGroup);  // panel pp landed
          __syncthreads();
        }
        warp_gemm_ss<kMT, kNT, kPW, false, false, LQp, LKp, kKU>(
            s, sQ + pp * kBM * kPW, sKn + pp * kBN * kPW, warp * 16 * kMT, 0);
      }
    } else if constexpr (kLanes) {
      warp_gemm_ss_fa<kMT, kNT, D, LQ, LK, kKU, T>(s, WarpFragAddr<LQ>(qa), WarpFragAddr<LK>(kb));
    } else if constexpr (Tr::kWarpOrigin && !kGeneral) {
      // Tr::kWarpOrigin: one lane base per operand with the warp's rows folded in (WarpFragAddr):
      // each ldmatrix is one XOR per k slice plus an immediate, the tile base folded in too.
      warp_gemm_ss_wo<true, kMT, kNT, D, false, false, LQ, LK, kKU>(s, sQ, sKn, warp * 16 * kMT, 0);
    } else {
      warp_gemm_ss<kMT, kNT, D, false, false, LQ, LK, kKU>(s, sQ, sKn, warp * 16 * kMT, 0);
    }

    // Element rule only where the block straddles a band edge or the sequence end; the
    // general path (softcap / ALiBi / mask / dropout) transforms every element. Kept as a
    // separate pass so the common unmasked block runs the softmax with no per-element branches.
    const bool check =
        kBlockCheck ? !(n >= nf_lo && n <= nf_hi) : !(last.lo <= n0 && first.hi >= n0 + kBN - 1);
    const int j0 = static_cast<int>(n0) + qc;
    if (kGeneral || check) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int r = 0; r < 2; ++r) {
          const int i = row_of(mt, r);
          const Range32 rr = row_range(p, i, sp.sq, sp.sk);
#pragma unroll
          for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              float dcap;
              float& x = s[mt][nt][r * 2 + e];
              x = score_log2<kGeneral>(p, ctx, x, i, j0 + nt * 8 + e, rr, true, dcap);
            }
        }
    }
    if constexpr (Tr::kEarlyK && !kKV2) {
      // FA-2's order: wait for V_n and start K_{n-1} before the softmax, so the K load overlaps
      // the softmax and P V instead of P V alone.
      wait_v_load_next_k(n, n0);
    }
    float corr[kMT][2];
    bool rescale = false;
    // Tr::kMaxPair: the row max starts from the first score pair, not -inf (a NaN pair then gives
    // a NaN mx, which the fmaxf with m_run below drops as it drops -inf: same m_new).
    constexpr bool kMaxPair = Tr::kMaxPair && !kGeneral;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = kMaxPair ? fmaxf(s[mt][0][r * 2], s[mt][0][r * 2 + 1]) : -INFINITY;
#pragma unroll
        for (int nt = kMaxPair ? 1 : 0; nt < kNT; ++nt)
          mx = fmaxf(mx, fmaxf(s[mt][nt][r * 2], s[mt][nt][r * 2 + 1]));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
        mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
        const float m_new = fmaxf(m_run[mt][r], mx * mul);    // log2 units (mul > 0)
        const float base = m_new == -INFINITY ? 0.f : m_new;  // no (-inf) - (-inf)
        corr[mt][r] = fast_exp2(m_run[mt][r] - base);         // 0 when m_run = -inf
        rescale |= corr[mt][r] != 1.f;
        m_run[mt][r] = m_new;
      }
    }
    // Skip the (16*kMT, D) rescale when no row max of the warp moved (exact: corr == 1);
    // the common case once the maxima settle on long rows. Warp-uniform branch.
    if (__any_sync(0xffffffffu, rescale)) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
        for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            o[mt][dt][e] *= corr[mt][e / 2];
    }
    // Tr::kPackP (fast path, BN_128 = 64 diet): P leaves the exp2 as the packed A fragments of
    // P V (pa[k16 slice][mt], c_to_a's order: pair (nt, r) at [nt / 2][mt][(nt % 2) * 2 + r]),
    // so the (16 * kMT, kBN) fp32 scores die here instead of living into warp_gemm_rs.
    constexpr bool kPackP = Tr::kPackP && !kGeneral;
    // Tr::kTreeSum (BN_128 = 64 diet): each row's sum of P as a tree over its n8 tiles (the
    // exp2 results die as soon as summed) instead of one serial chain, which ptxas scheduled at
    // the end of the key loop, keeping 6 fp32 P values live over P V (spilled: 24 B, DIET = 2).
    constexpr bool kTreeSum = Tr::kTreeSum;
    constexpr bool kSumFence = Tr::kSumFence && !kGeneral;
    // The fence sits on the last k16 slice of P V: the sums finish under its first slices
    // (slice 0: 56 B spill, the sums' latency exposed before P V; slice 3: 16 B, ptxas sm_90a).
    constexpr int kFenceSlice = kBN / 16 - 1;
    [[maybe_unused]] uint32_t pa[kPackP ? kBN / 16 : 1][kMT][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float base = m_run[mt][r] == -INFINITY ? 0.f : m_run[mt][r];
        float sum = 0.f;
        [[maybe_unused]] float part[kNT];  // Tr::kTreeSum: per-n8-tile pair sums, then a tree
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float& x = s[mt][nt][r * 2 + e];
            x = fast_exp2(fmaf(x, mul, -base));  // one FFMA + one MUFU per element
            if constexpr (!kTreeSum) sum += x;
          }
          if constexpr (kTreeSum) part[nt] = s[mt][nt][r * 2] + s[mt][nt][r * 2 + 1];
          if constexpr (kPackP)
            pa[nt / 2][mt][(nt % 2) * 2 + r] =
                ptx::pack2<T>(s[mt][nt][r * 2], s[mt][nt][r * 2 + 1]);
        }
        if constexpr (kTreeSum) {
#pragma unroll
          for (int w = 1; w < kNT; w *= 2)
#pragma unroll
            for (int nt = 0; nt + w < kNT; nt += 2 * w)
              part[nt] += part[nt + w];
          sum = part[0];
        }
        l_run[mt][r] = l_run[mt][r] * corr[mt][r] + sum;
        if constexpr (kSumFence) {
          // Tr::kSumFence: P V's first MMA of this row waits for the row sum (sum >= 0 or NaN, so
          // the select never fires): a data dependence ptxas must honour, so the sum's inputs die
          // before P V instead of after it. One FSETP + SEL per row and key block.
          if constexpr (kPackP) {
            pa[kFenceSlice][mt][r] = dep_fence(pa[kFenceSlice][mt][r], sum);
          } else {
            s[mt][2 * kFenceSlice][r * 2] =
                __uint_as_float(dep_fence(__float_as_uint(s[mt][2 * kFenceSlice][r * 2]), sum));
          }
        }
        if constexpr (kGeneral) {
          if (p.dropout_threshold != 0) {
            const int i = row_of(mt, r);
#pragma unroll
            for (int nt = 0; nt < kNT; ++nt) {
              const uint32_t keep = keep_pair(p, ctx, i, j0 + nt * 8);
              s[mt][nt][r * 2] *= (keep & 1u) ? p.dropout_rescale : 0.f;
              s[mt][nt][r * 2 + 1] *= (keep & 2u) ? p.dropout_rescale : 0.f;
            }
          }
        }
      }
    }

    if constexpr (kKV2) {
      if (first_blk) {  // V of the first block (the next pair's group may still be in flight)
        ptx::cp_async_wait<1>();
        __syncthreads();
      }
    } else if constexpr (!Tr::kEarlyK) {
      wait_v_load_next_k(n, n0);
    }
    if constexpr (kLanes) {
      // warp_gemm_rs / _rp with V's kept lane base (mma_b_slice: the same loads and MMAs).
      const WarpFragAddr<LK> fv(vb);
#pragma unroll
      for (int kk = 0; kk < kBN / 16; ++kk) {
        if constexpr (kPackP) {
          mma_b_slice<kMT, kDT, true, LK>(o, pa[kk], fv, sVn, kk, 0);
        } else {
          uint32_t a[kMT][4];
#pragma unroll
          for (int mt = 0; mt < kMT; ++mt)
            c_to_a<T, kNT>(a[mt], s[mt], kk);
          mma_b_slice<kMT, kDT, true, LK>(o, a, fv, sVn, kk, 0);
        }
      }
      kb = kb_sum - kb;
      vb = vb_sum - vb;
    } else if constexpr (kPackP) {
      warp_gemm_rp<kMT, kDT, kBN, true, LK>(o, pa, sVn, 0);
    } else {
      warp_gemm_rs<kMT, kDT, kBN, true, LK>(o, s, sVn, 0);
    }
  }

  // Epilogue: normalize, store O and lse. Tr::kSmemEpilogue: O goes through this warp's own
  // rows of sQ (only this warp's S GEMM reads them, and it is past its last one: no CTA barrier)
  // and out as 16-byte row chunks (coalesced), instead of one 4-byte store per element pair
  // (each warp store then touches 8 rows: 8x the L1 wavefronts per byte). The stores of one lane
  // overwrite words that other lanes of the warp read in the last S GEMM's ldmatrix: the one-pair
  // kernel has wait_v_load_next_k's CTA barrier in between, the KV2 key loop ends without one
  // (its barrier is at the top of a block), so there a __syncwarp orders them. Without it only
  // data dependence did (the stored O comes from those reads through the MMAs): safe on the
  // hardware, a hazard in the programming model, 8 racecheck warnings (one per A ldmatrix of the
  // S GEMM, 124 of 128 words per warp: all but those a lane reads and writes itself).
  if constexpr (kPiece) {
    if (pc.pieces > 1) {
      fwd_piece_epilogue<kMT, kDT, Tr::kWarps, T>(p, ta, pc, o, m_run, l_run, b, h, sp, m0,
                                                  dv_valid);
      return false;
    }
  }
  if constexpr (kKV2 && Tr::kSmemEpilogue) __syncwarp();
  T* o_ptr = static_cast<T*>(p.out) + b * p.out_st.b + sp.q_start * p.out_st.s + h * p.out_st.h;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int r = 0; r < 2; ++r) {
      float l = l_run[mt][r];
      l += __shfl_xor_sync(0xffffffffu, l, 1);
      l += __shfl_xor_sync(0xffffffffu, l, 2);
      const float inv = l > 0.f ? 1.f / l : 0.f;
      const int i = row_of(mt, r);
      if constexpr (Tr::kSmemEpilogue) {
        const int rl = warp * 16 * kMT + mt * 16 + qr + r * 8;  // row in the CTA tile
#pragma unroll
        for (int dt = 0; dt < kDT; ++dt)
          *reinterpret_cast<uint32_t*>(sQ + LQ::off(rl, dt * 8 + qc)) =
              ptx::pack2<T>(o[mt][dt][r * 2] * inv, o[mt][dt][r * 2 + 1] * inv);
      }
      if (i < sp.sq) {
        if constexpr (!Tr::kSmemEpilogue) {
          T* orow = o_ptr + i * p.out_st.s;
#pragma unroll
          for (int dt = 0; dt < kDT; ++dt) {
            const int c = dt * 8 + qc;
            if (c < dv_valid)
              *reinterpret_cast<uint32_t*>(orow + c) =
                  ptx::pack2<T>(o[mt][dt][r * 2] * inv, o[mt][dt][r * 2 + 1] * inv);
          }
        }
        if (p.lse != nullptr && (lane % 4) == 0) {
          p.lse[b * p.lse_st.b + h * p.lse_st.h + (sp.q_start + i) * p.lse_st.s] =
              l > 0.f ? m_run[mt][r] * kLn2 + logf(l) : -INFINITY;
        }
      }
    }
  }
  if constexpr (Tr::kSmemEpilogue) {
    // The warp's (16 * kMT, D) rows, 16-byte chunks: lane l takes chunks l, l + 32, ... in row
    // order (8 lanes per 128-byte panel row: conflict-free reads, whole-row global stores).
    // Columns >= head_dim_v (a multiple of 8) and rows past the sequence are not stored.
    constexpr int kCpr = D / 8, kWarpRows = 16 * kMT;
    static_assert((kWarpRows * kCpr) % 32 == 0, "O chunks must split evenly over the lanes");
    __syncwarp();
    // Tr::kEpiRowPtr (fast path): a warp whose rows all lie in the sequence, every column valid,
    // stores from one running row pointer per lane. kCpr % 32 == 0 or 32 % kCpr == 0, so a
    // lane's column is fixed and its row advances kRpi per pass; the warp's first row is a
    // multiple of 16, so row (r0 + it * kRpi) % 8 == r0 % 8 + (it * kRpi) % 8 (no carry: r0 % 8
    // < kRpi <= 8 or kRpi = 1), and its swizzled chunk is the lane's XOR (it * kRpi) % 8
    // (SmemLayout's split form; the panel and row offsets have no bits in 4..6 of a byte offset).
    constexpr bool kRowPtr = Tr::kEpiRowPtr && !kGeneral;
    bool stored = false;
    if constexpr (kRowPtr) {
      constexpr int kRpi = kCpr >= 32 ? 1 : 32 / kCpr;  // rows per warp-wide pass
      constexpr int kLpr = kCpr >= 32 ? 32 : kCpr;      // lanes per row (per pass)
      const int r0 = warp * kWarpRows + lane / kLpr;
      if (m0 + (warp + 1) * kWarpRows <= sp.sq && dv_valid >= D) {
#pragma unroll
        for (int cc = 0; cc < kCpr / kLpr; ++cc) {
          const int c = (cc * kLpr + lane % kLpr) * 8;
          const uint32_t lane_off = 2u * static_cast<uint32_t>(LQ::off(r0, c));
          T* dst = o_ptr + (m0 + r0) * p.out_st.s + c;
          const int64_t step = kRpi * p.out_st.s;
#pragma unroll
          for (int it = 0; it < kWarpRows / kRpi; ++it) {
            const uint32_t off =
                (lane_off ^ (static_cast<uint32_t>((it * kRpi) & 7) << 4)) + it * kRpi * 128u;
            *reinterpret_cast<uint4*>(dst) =
                *reinterpret_cast<const uint4*>(reinterpret_cast<const uint8_t*>(sQ) + off);
            dst += step;
          }
        }
        stored = true;
      }
    }
    if (!stored) {
#pragma unroll
      for (int it = 0; it < kWarpRows * kCpr / 32; ++it) {
        const int idx = it * 32 + lane;
        const int rl = warp * kWarpRows + idx / kCpr, c = (idx % kCpr) * 8;
        const int i = static_cast<int>(m0) + rl;
        if (i < sp.sq && c < dv_valid)
          *reinterpret_cast<uint4*>(o_ptr + i * p.out_st.s + c) =
              *reinterpret_cast<const uint4*>(sQ + LQ::off(rl, c));
      }
    }
  }
  return issued_next;
}

/// Forward kernel. 3-D grid (m blocks, q heads, batch): one tile per CTA. Tr::kPersist (fast path):
/// a 1-D grid of resident CTAs, each running tiles in the 3-D grid's order (m blocks fastest,
/// heavy causal blocks first): tile blockIdx.x, then blockIdx.x + gridDim.x, then tiles taken
/// from `tile_ctr` (zeroed by the launcher: tile 2 * gridDim.x + its count), one ahead, so the
/// next tile is known when the current one's last key block prefetches its Q and K, and the
/// atomic's latency hides behind a whole tile. Dynamic like the hardware's dispatch, so uneven
/// (causal, window, varlen) tiles balance as before.
/// kBM256: the query block at D = 256 (FwdTraits; 64 for causal launches, launch_fwd). kKV2: two
/// K / V buffers (FwdTraits::kKV2; launch_fwd picks it where kSmemBytesKV2 fits).
/// kTrigger: the first launch of a split tail (fwd_tail.cuh): the stream's next kernel may start
/// once every CTA of this one has started.
template <int D, typename T, bool kGeneral, int kBM256 = ATTNKIT_FLASH_FWD_BM_256,
          bool kKV2 = false, bool kTrigger = false>
__global__ void __launch_bounds__(FwdTraits<D, kBM256>::kThreads)
    fwd_kernel(const Params p, int* tile_ctr) {
  using Tr = FwdTraits<D, kBM256>;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  if constexpr (kTrigger) cuda::pdl_launch_dependents();
  if constexpr (Tr::kPersist && !kGeneral) {
    __shared__ int next_slot[2];
    const int num_m = static_cast<int>((p.seqlen_q + Tr::kBM - 1) / Tr::kBM);
    const int64_t total = static_cast<int64_t>(num_m) * p.heads_q * p.batch;
    int64_t cur = blockIdx.x, nxt = static_cast<int64_t>(blockIdx.x) + gridDim.x;
    bool pre = false;
    for (int k = 0; cur < total; ++k) {
      if (threadIdx.x == 0)
        next_slot[k & 1] =
            static_cast<int>(2 * static_cast<int64_t>(gridDim.x) + atomicAdd(tile_ctr, 1));
      const bool has_next = nxt < total;
      pre = fwd_tile<D, T, kGeneral, kBM256>(p, smem_raw, fwd_tile_of(cur, num_m, p.heads_q),
                                             fwd_tile_of(has_next ? nxt : cur, num_m, p.heads_q),
                                             has_next, pre);
      __syncthreads();  // next_slot[k & 1] visible; slot k & 1 is rewritten after the next one
      cur = nxt;
      nxt = next_slot[k & 1];
    }
    return;
  }
  const FwdTile tile{static_cast<int64_t>(blockIdx.z), static_cast<int64_t>(blockIdx.y),
                     static_cast<int>(gridDim.x - 1 - blockIdx.x)};  // heavy causal blocks first
  fwd_tile<D, T, kGeneral, kBM256, kKV2>(p, smem_raw, tile, tile, false, false);
}

/// The split tail's second launch (fwd_tail.cuh; fast path, 64-row D = 256 kernel, non-causal):
/// CTAs 0 .. ta.whole - 1 one whole tile each, the others one key-block range each of the last
/// ta.ranges.tiles tiles (core/tail_ranges.hpp): a piece per tile the range touches, in order.
template <int D, typename T>
__global__ void __launch_bounds__(FwdTraits<D, 64>::kThreads)
    fwd_tail_kernel(const Params p, const FwdTailArgs ta) {
  using Tr = FwdTraits<D, 64>;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  const int num_m = static_cast<int>((p.seqlen_q + Tr::kBM - 1) / Tr::kBM);
  const int64_t c = blockIdx.x, nb = ta.ranges.n_blocks;
  if (c < ta.whole) {
    const FwdTile t = fwd_tile_of(ta.first_tile + c, num_m, p.heads_q);
    FwdPiece whole;
    whole.n_hi = static_cast<int>(nb);
    fwd_tile<D, T, false, 64, false, true>(p, smem_raw, t, t, false, false, ta, whole);
  } else {
    const int64_t r = c - ta.whole, lo = ta.ranges.begin(r), hi = ta.ranges.begin(r + 1);
    for (int64_t j = lo / nb; j * nb < hi; ++j) {
      // The previous piece's warps are done with sQ / sK / sV before this one loads them.
      if (j > lo / nb) __syncthreads();
      FwdPiece pc;
      pc.n_lo = static_cast<int>((lo > j * nb ? lo : j * nb) - j * nb);
      pc.n_hi = static_cast<int>((hi < j * nb + nb ? hi : j * nb + nb) - j * nb);
      pc.tile = static_cast<int>(j);
      pc.pieces = static_cast<int>(ta.ranges.pieces(j));
      pc.index = static_cast<int>(r - ta.ranges.first_cta(j));
      const FwdTile t = fwd_tile_of(ta.first_tile + ta.whole + j, num_m, p.heads_q);
      fwd_tile<D, T, false, 64, false, true>(p, smem_raw, t, t, false, false, ta, pc);
    }
  }
  // This launch may have started before the previous one (the whole tiles of the full waves)
  // finished: it ends only after it, so that later work in the stream sees every output row.
  cuda::pdl_wait_previous();
}

}  // namespace attnkit::flash
