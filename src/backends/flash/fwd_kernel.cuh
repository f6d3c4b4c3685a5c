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

#include "backends/flash/score_mod.cuh"
#include "backends/flash/smem_layout.hpp"
#include "backends/flash/traits.hpp"
#include "backends/flash/warp_mma.cuh"

namespace attnkit::flash {

template <int D, typename T, bool kGeneral>
__global__ void __launch_bounds__(FwdTraits<D>::kThreads) fwd_kernel(const Params p) {
  using Tr = FwdTraits<D>;
  using LQ = SmemLayout<Tr::kBM, D>;
  using LK = SmemLayout<Tr::kBN, D>;
  constexpr int kBM = Tr::kBM, kBN = Tr::kBN, kMT = Tr::kMT, kNT = kBN / 8, kDT = D / 8;
  extern __shared__ __align__(128) uint8_t smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);  // (kBM, D)
  T* sK = sQ + LQ::kSize;                  // (kBN, D)
  T* sV = sK + LK::kSize;                  // (kBN, D)

  const int64_t b = blockIdx.z, h = blockIdx.y;
  const int m_block = static_cast<int>(gridDim.x - 1 - blockIdx.x);  // heavy causal blocks first
  const SeqSpan sp = seq_span(p, b);
  const int64_t m0 = static_cast<int64_t>(m_block) * kBM;
  if (m0 >= sp.sq) return;
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
  const int n_begin = first.lo / kBN;
  const int n_end = last.hi >= first.lo ? last.hi / kBN + 1 : n_begin;

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

  if (n_end > n_begin) {
    load_tile_async<LQ, Tr::kThreads>(sQ, q_ptr, p.q_st.s, rows, dq_valid);
    {
      const int64_t n0 = static_cast<int64_t>(n_end - 1) * kBN;
      load_tile_async<LK, Tr::kThreads>(sK, k_ptr + n0 * p.k_st.s, p.k_st.s,
                                        static_cast<int>(sp.sk - n0), dq_valid);
    }
    ptx::cp_async_commit();
  }

  // Waits for V_n, then starts K_{n-1} into sK (free once every warp is past this barrier).
  // Where it runs in the loop is Tr::kEarlyK's choice (before or after the softmax).
  auto wait_v_load_next_k = [&](int n, int64_t n0) {
    ptx::cp_async_wait<0>();
    __syncthreads();  // V_n landed; every warp is done with K_n
    if (n > n_begin) {
      const int64_t n1 = n0 - kBN;
      load_tile_async<LK, Tr::kThreads>(sK, k_ptr + n1 * p.k_st.s, p.k_st.s,
                                        static_cast<int>(sp.sk - n1), dq_valid);
      ptx::cp_async_commit();
    }
  };

  for (int n = n_end - 1; n >= n_begin; --n) {
    const int64_t n0 = static_cast<int64_t>(n) * kBN;
    ptx::cp_async_wait<0>();
    __syncthreads();  // K_n landed; every warp is done with V_{n+1}
    load_tile_async<LK, Tr::kThreads>(sV, v_ptr + n0 * p.v_st.s, p.v_st.s,
                                      static_cast<int>(sp.sk - n0), dv_valid);
    ptx::cp_async_commit();

    float s[kMT][kNT][4];  // (16*kMT, kBN) scores of this warp
    zero(s);
    warp_gemm_ss<kMT, kNT, D, false, false, LQ, LK, Tr::kKUnroll>(s, sQ, sK, warp * 16 * kMT, 0);

    // Element rule only where the block straddles a band edge or the sequence end; the
    // general path (softcap / ALiBi / mask / dropout) transforms every element. Kept as a
    // separate pass so the common unmasked block runs the softmax with no per-element branches.
    const bool check = !(last.lo <= n0 && first.hi >= n0 + kBN - 1);
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
    if constexpr (Tr::kEarlyK) {
      // FA-2's order: wait for V_n and start K_{n-1} before the softmax, so the K load overlaps
      // the softmax and P V instead of P V alone.
      wait_v_load_next_k(n, n0);
    }
    float corr[kMT][2];
    bool rescale = false;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
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
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const float base = m_run[mt][r] == -INFINITY ? 0.f : m_run[mt][r];
        float sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float& x = s[mt][nt][r * 2 + e];
            x = fast_exp2(fmaf(x, mul, -base));  // one FFMA + one MUFU per element
            sum += x;
          }
        l_run[mt][r] = l_run[mt][r] * corr[mt][r] + sum;
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

    if constexpr (!Tr::kEarlyK) {
      wait_v_load_next_k(n, n0);
    }
    warp_gemm_rs<kMT, kDT, kBN, true, LK>(o, s, sV, 0);
  }

  // Epilogue: normalize, store O (pairs of elements) and lse.
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
      if (i < sp.sq) {
        T* orow = o_ptr + i * p.out_st.s;
#pragma unroll
        for (int dt = 0; dt < kDT; ++dt) {
          const int c = dt * 8 + qc;
          if (c < dv_valid)
            *reinterpret_cast<uint32_t*>(orow + c) =
                ptx::pack2<T>(o[mt][dt][r * 2] * inv, o[mt][dt][r * 2 + 1] * inv);
        }
        if (p.lse != nullptr && (lane % 4) == 0) {
          p.lse[b * p.lse_st.b + h * p.lse_st.h + (sp.q_start + i) * p.lse_st.s] =
              l > 0.f ? m_run[mt][r] * kLn2 + logf(l) : -INFINITY;
        }
      }
    }
  }
}

}  // namespace attnkit::flash
