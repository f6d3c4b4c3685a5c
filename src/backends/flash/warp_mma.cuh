// Warp-level fragment loads from swizzled shared tiles (ldmatrix) for mma.m16n8k16, in the four
// storage orders the forward and backward GEMMs need. "A stored [m][k]" means the tile's rows are
// the MMA's M index; "A stored [k][m]" means the tile holds A transposed (e.g. P stored [q][key]
// read as the A operand of dV = P^T dO). B fragments come in pairs of n8 tiles: r[0..1] are
// b0/b1 of n-tile n0/8, r[2..3] those of n-tile n0/8 + 1.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backends/flash/smem_layout.hpp"
#include "backends/flash/traits.hpp"
#include "cuda/ptx_sm80.hpp"

namespace attnkit::flash {

__device__ __forceinline__ int lane_id() {
  return static_cast<int>(threadIdx.x) & 31;
}

/// A (16x16) at rows m0.., cols k0.. of a tile stored [m][k].
template <typename L, typename T>
__device__ __forceinline__ void load_a(uint32_t (&a)[4], const T* s, int m0, int k0) {
  const int l = lane_id();
  ptx::ldmatrix_x4(a, ptx::smem_addr(s + L::off(m0 + (l & 15), k0 + ((l >> 4) << 3))));
}
/// A (16x16) = rows m0.., cols k0.. of A, from a tile storing A^T, i.e. [k][m].
template <typename L, typename T>
__device__ __forceinline__ void load_a_t(uint32_t (&a)[4], const T* s, int m0, int k0) {
  const int l = lane_id();
  ptx::ldmatrix_x4_trans(
      a, ptx::smem_addr(s + L::off(k0 + ((l >> 4) << 3) + (l & 7), m0 + (((l >> 3) & 1) << 3))));
}
/// B (16 x 16 = two n8 tiles) at k0.., n0.. from a tile stored [n][k] (e.g. K for Q K^T).
template <typename L, typename T>
__device__ __forceinline__ void load_b_nk(uint32_t (&b)[4], const T* s, int n0, int k0) {
  const int l = lane_id();
  ptx::ldmatrix_x4(
      b, ptx::smem_addr(s + L::off(n0 + ((l >> 4) << 3) + (l & 7), k0 + (((l >> 3) & 1) << 3))));
}
/// B (16 x 16 = two n8 tiles) at k0.., n0.. from a tile stored [k][n] (e.g. V for P V).
template <typename L, typename T>
__device__ __forceinline__ void load_b_kn(uint32_t (&b)[4], const T* s, int n0, int k0) {
  const int l = lane_id();
  ptx::ldmatrix_x4_trans(
      b, ptx::smem_addr(s + L::off(k0 + (((l >> 3) & 1) << 3) + (l & 7), n0 + ((l >> 4) << 3))));
}

// A lane's (row, col) inside the 16x16 block each ldmatrix.x4 kind reads (the offsets the
// load_* functions above add to the block origin).
__device__ __forceinline__ int lane_r_a() {
  return lane_id() & 15;
}  // load_a
__device__ __forceinline__ int lane_c_a() {
  return (lane_id() >> 4) << 3;
}
__device__ __forceinline__ int lane_r_t() {
  return ((lane_id() >> 4) << 3) + (lane_id() & 7);
}
__device__ __forceinline__ int lane_c_t() {
  return ((lane_id() >> 3) & 1) << 3;
}  // load_a_t, _b_nk
__device__ __forceinline__ int lane_r_kn() {
  return (((lane_id() >> 3) & 1) << 3) + (lane_id() & 7);
}
__device__ __forceinline__ int lane_c_kn() {
  return (lane_id() >> 4) << 3;
}  // load_b_kn

/// B's per-lane shared-memory address for mma_b_slice, computed once per GEMM: a FragAddr
/// (ATTNKIT_FLASH_SPLIT_ADDR) or an unused placeholder (mma_b_slice then swizzles sb per load).
template <bool B_KN, typename LB, typename T>
__device__ __forceinline__ auto b_frag_addr(const T* sb) {
#if ATTNKIT_FLASH_SPLIT_ADDR
  return FragAddr<LB>(sb, B_KN ? lane_r_kn() : lane_r_t(), B_KN ? lane_c_kn() : lane_c_t());
#else
  (void)sb;
  return 0;
#endif
}

/// acc[MT][NT] += a (k-slice kk of the A fragments, one per m-tile) * B k-slice kk, columns
/// n0 .. n0 + 8 NT: the B half of warp_gemm_ss / warp_gemm_rs. fb: B's FragAddr
/// (ATTNKIT_FLASH_SPLIT_ADDR; otherwise unused, sb's full swizzle per load).
template <int MT, int NT, bool B_KN, typename LB, typename T, typename FB>
__device__ __forceinline__ void mma_b_slice(float (&acc)[MT][NT][4], const uint32_t (&a)[MT][4],
                                            const FB& fb, const T* sb, int kk, int n0) {
#pragma unroll
  for (int np = 0; np < NT / 2; ++np) {
    uint32_t b[4];
#if ATTNKIT_FLASH_SPLIT_ADDR
    (void)sb;
    if constexpr (B_KN) {
      ptx::ldmatrix_x4_trans(b, fb.at(kk * 16, n0 + np * 16));
    } else {
      ptx::ldmatrix_x4(b, fb.at(n0 + np * 16, kk * 16));
    }
#else
    (void)fb;
    if constexpr (B_KN) {
      load_b_kn<LB>(b, sb, n0 + np * 16, kk * 16);
    } else {
      load_b_nk<LB>(b, sb, n0 + np * 16, kk * 16);
    }
#endif
    const uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      ptx::mma_m16n8k16<T>(acc[mt][2 * np], a[mt], b0);
      ptx::mma_m16n8k16<T>(acc[mt][2 * np + 1], a[mt], b1);
    }
  }
}

/// acc[MT][NT] (warp tile (16*MT, 8*NT) at rows m0, cols n0) += A (m0.., 0..K) * B (0..K, n0..).
/// A_T: tile stores A as [k][m]; B_KN: tile stores B as [k][n] (else [n][k]). UNROLL: unroll
/// of the k loop (traits' kKUnroll). Addresses: each operand's lane offset is computed once
/// (FragAddr); a load then costs one XOR + adds (ATTNKIT_FLASH_SPLIT_ADDR = 0: the full swizzle
/// per load, as before).
template <int MT, int NT, int K, bool A_T, bool B_KN, typename LA, typename LB, int UNROLL,
          typename T>
__device__ __forceinline__ void warp_gemm_ss(float (&acc)[MT][NT][4], const T* sa, const T* sb,
                                             int m0, int n0) {
  static_assert(NT % 2 == 0 && K % 16 == 0, "warp tile: NT even, K a multiple of 16");
#if ATTNKIT_FLASH_SPLIT_ADDR
  const FragAddr<LA> fa(sa, A_T ? lane_r_t() : lane_r_a(), A_T ? lane_c_t() : lane_c_a());
#endif
  const auto fb = b_frag_addr<B_KN, LB>(sb);
#pragma unroll UNROLL
  for (int kk = 0; kk < K / 16; ++kk) {
    uint32_t a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#if ATTNKIT_FLASH_SPLIT_ADDR
      if constexpr (A_T) {
        ptx::ldmatrix_x4_trans(a[mt], fa.at(kk * 16, m0 + mt * 16));
      } else {
        ptx::ldmatrix_x4(a[mt], fa.at(m0 + mt * 16, kk * 16));
      }
#else
      if constexpr (A_T) {
        load_a_t<LA>(a[mt], sa, m0 + mt * 16, kk * 16);
      } else {
        load_a<LA>(a[mt], sa, m0 + mt * 16, kk * 16);
      }
#endif
    }
    mma_b_slice<MT, NT, B_KN, LB>(acc, a, fb, sb, kk, n0);
  }
}

/// x, made to depend on the fp32 value `c` through a select that never fires: c's bits are never
/// 0xffffffff (an MMA writes NaN as 0x7fffffff; a sum of exp2 results is >= 0, +inf or the
/// canonical NaN). Compared as an integer in PTX: nvcc and ptxas both fold a float compare of
/// exp2 sums (>= 0) away. Uses: an ldmatrix address that must wait for the MMA that wrote c
/// (warp_gemm_ss_wo's kFence), P's last slice that must wait for the row sums (fwd_kernel).
__device__ __forceinline__ uint32_t dep_fence(uint32_t x, float c) {
  uint32_t y;
  asm("{\n .reg .pred q;\n setp.eq.b32 q, %1, -1;\n selp.b32 %0, 0, %2, q;\n}\n"
      : "=r"(y)
      : "r"(__float_as_uint(c)), "r"(x));
  return y;
}

/// A lane's fragment addresses from the warp tile's origin (Rw, Cw) folded in once: base =
/// shared address of element (r + Rw, c + Cw); at(R, C) = (base ^ xor_of(C)) + add_of(R, C) for
/// compile-time R % 8 == 0, C % 16 == 0. Exact (== 2 * off(r + Rw + R, c + Cw + C) + tile) for
/// 64-wide panels when C's chunk bits and those of (c + Cw) % 64 are disjoint and C stays in
/// the panel or Cw == 0 (warp_gemm_ss_wo's conditions), and the tile address has no bits 4..6
/// (tiles are multiples of 512 bytes from a 128-byte-aligned base). Host test:
/// tests/backends/flash/smem_layout_test.cu (BackwardHoistedAddresses).
template <typename L>
struct WarpFragAddr {
  uint32_t base;
  __device__ __forceinline__ WarpFragAddr(const void* s, int r, int c)
      : base(ptx::smem_addr(s) + 2u * static_cast<uint32_t>(L::off(r, c))) {}
  /// From a base the caller computed (and kept) itself.
  __device__ __forceinline__ explicit WarpFragAddr(uint32_t b) : base(b) {}
  __device__ __forceinline__ uint32_t at(int R, int C) const {
    return (base ^ L::xor_of(C)) + L::add_of(R, C);
  }
};

/// The k loop of warp_gemm_ss_wo / warp_gemm_ss_fa over prepared lane addresses (FragAddr or
/// WarpFragAddr): `am` / `bn` are the row / column origins at() still adds. kFence > 0
/// (WarpFragAddr only): both bases pass through dep_fence on the accumulator at k slice kFence.
template <int MT, int NT, int K, bool A_T, bool B_KN, int UNROLL, int kFence, typename T,
          typename FA, typename FB>
__device__ __forceinline__ void warp_gemm_frag(float (&acc)[MT][NT][4], FA fa, FB fb, int am,
                                               int bn) {
#pragma unroll UNROLL
  for (int kk = 0; kk < K / 16; ++kk) {
    if constexpr (kFence > 0) {
      if (kk == kFence) {
        fa.base = dep_fence(fa.base, acc[0][0][0]);
        fb.base = dep_fence(fb.base, acc[0][0][0]);
      }
    }
    uint32_t a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
      if constexpr (A_T) {
        ptx::ldmatrix_x4_trans(a[mt], fa.at(kk * 16, am + mt * 16));
      } else {
        ptx::ldmatrix_x4(a[mt], fa.at(am + mt * 16, kk * 16));
      }
    }
#pragma unroll
    for (int np = 0; np < NT / 2; ++np) {
      uint32_t b[4];
      if constexpr (B_KN) {
        ptx::ldmatrix_x4_trans(b, fb.at(kk * 16, bn + np * 16));
      } else {
        ptx::ldmatrix_x4(b, fb.at(bn + np * 16, kk * 16));
      }
      const uint32_t b0[2] = {b[0], b[1]}, b1[2] = {b[2], b[3]};
#pragma unroll
      for (int mt = 0; mt < MT; ++mt) {
        ptx::mma_m16n8k16<T>(acc[mt][2 * np], a[mt], b0);
        ptx::mma_m16n8k16<T>(acc[mt][2 * np + 1], a[mt], b1);
      }
    }
  }
}

/// warp_gemm_ss with each operand's warp origin folded into its lane address once
/// (WarpFragAddr), so that every ldmatrix of the unrolled k loop is one XOR per k-slice phase
/// plus an immediate (the backward's fused kernel; ATTNKIT_FLASH_BWD_HOIST). An operand falls
/// back to FragAddr where its tile has a 32-wide panel or where the warp's offset along the
/// tile's columns (m0 for A_T, n0 for B_KN) is not a multiple of a power-of-two extent <= 64
/// (the caller's warp origins are multiples of the warp tile: 16 MT rows, 8 NT columns).
/// kEnable false: both operands through FragAddr, i.e. warp_gemm_ss's split-address form.
/// kFence > 0 (both operands WarpFragAddr, full unroll): the ldmatrix of k slices >= kFence wait
/// for slice kFence - 1's first MMA (their lane bases made to depend on acc[0][0][0] by
/// dep_fence), bounding ptxas's ldmatrix run-ahead, hence the fragments it keeps live, without
/// the loop of a partial unroll (ATTNKIT_FLASH_BWD_DQ_FENCE_128).
template <bool kEnable, int MT, int NT, int K, bool A_T, bool B_KN, typename LA, typename LB,
          int UNROLL, int kFence = 0, typename T>
__device__ __forceinline__ void warp_gemm_ss_wo(float (&acc)[MT][NT][4], const T* sa, const T* sb,
                                                int m0, int n0) {
  static_assert(NT % 2 == 0 && K % 16 == 0, "warp tile: NT even, K a multiple of 16");
  constexpr bool kPow2M = (MT & (MT - 1)) == 0 && 16 * MT <= 64;
  constexpr bool kPow2N = ((NT / 2) & (NT / 2 - 1)) == 0 && 8 * NT <= 64;
  constexpr bool kWoA = kEnable && !LA::kHasHalfPanel && (!A_T || kPow2M);
  constexpr bool kWoB = kEnable && !LB::kHasHalfPanel && (!B_KN || kPow2N);
  const int ra = A_T ? lane_r_t() : lane_r_a(), ca = A_T ? lane_c_t() : lane_c_a();
  const int rb = B_KN ? lane_r_kn() : lane_r_t(), cb = B_KN ? lane_c_kn() : lane_c_t();
  using FA = std::conditional_t<kWoA, WarpFragAddr<LA>, FragAddr<LA>>;
  using FB = std::conditional_t<kWoB, WarpFragAddr<LB>, FragAddr<LB>>;
  FA fa = kWoA ? FA(sa, ra + (A_T ? 0 : m0), ca + (A_T ? m0 : 0)) : FA(sa, ra, ca);
  FB fb = kWoB ? FB(sb, rb + (B_KN ? 0 : n0), cb + (B_KN ? n0 : 0)) : FB(sb, rb, cb);
  const int am = kWoA ? 0 : m0, bn = kWoB ? 0 : n0;  // what at() still adds
  static_assert(kFence == 0 || (kWoA && kWoB && kFence < K / 16), "kFence: WarpFragAddr only");
  warp_gemm_frag<MT, NT, K, A_T, B_KN, UNROLL, kFence, T>(acc, fa, fb, am, bn);
}

/// warp_gemm_ss_wo<true, MT, NT, K, false, false, LA, LB, UNROLL> (A [m][k], B [n][k], both
/// operands WarpFragAddr, column origins 0) from the caller's lane bases, so that a loop can
/// keep them in registers (ptxas otherwise re-derives them from %tid per call under pressure).
/// Same ldmatrix addresses (for bases built as warp_gemm_ss_wo builds them), same MMA order.
template <int MT, int NT, int K, typename LA, typename LB, int UNROLL, typename T>
__device__ __forceinline__ void warp_gemm_ss_fa(float (&acc)[MT][NT][4], const WarpFragAddr<LA> fa,
                                                const WarpFragAddr<LB> fb) {
  static_assert(NT % 2 == 0 && K % 16 == 0, "warp tile: NT even, K a multiple of 16");
  static_assert(!LA::kHasHalfPanel && !LB::kHasHalfPanel, "WarpFragAddr: 64-wide panels");
  warp_gemm_frag<MT, NT, K, false, false, UNROLL, 0, T>(acc, fa, fb, 0, 0);
}

/// The A fragment of k-slice kk built from C accumulators (16 x 8 tiles 2kk and 2kk+1): FA-2's
/// register reuse of P (or dS) as the next GEMM's left operand.
template <typename T, int NT>
__device__ __forceinline__ void c_to_a(uint32_t (&a)[4], const float (&c)[NT][4], int kk) {
  a[0] = ptx::pack2<T>(c[2 * kk][0], c[2 * kk][1]);
  a[1] = ptx::pack2<T>(c[2 * kk][2], c[2 * kk][3]);
  a[2] = ptx::pack2<T>(c[2 * kk + 1][0], c[2 * kk + 1][1]);
  a[3] = ptx::pack2<T>(c[2 * kk + 1][2], c[2 * kk + 1][3]);
}

/// acc[MT][NT] += A (registers: C layout, (16*MT, K)) * B (tile stored [k][n] or [n][k]).
template <int MT, int NT, int K, bool B_KN, typename LB, typename T>
__device__ __forceinline__ void warp_gemm_rs(float (&acc)[MT][NT][4],
                                             const float (&a_c)[MT][K / 8][4], const T* sb,
                                             int n0) {
  const auto fb = b_frag_addr<B_KN, LB>(sb);
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk) {
    uint32_t a[MT][4];
#pragma unroll
    for (int mt = 0; mt < MT; ++mt)
      c_to_a<T, K / 8>(a[mt], a_c[mt], kk);
    mma_b_slice<MT, NT, B_KN, LB>(acc, a, fb, sb, kk, n0);
  }
}

/// warp_gemm_rs with A already packed (a_p[kk][mt] = c_to_a of m-tile mt's C accumulators): the
/// forward's P kept as 16-bit pairs from its exp2 on (FwdTraits::kPackP), half the registers
/// of the fp32 C tiles. Same MMAs in the same order, so the same bits as warp_gemm_rs.
template <int MT, int NT, int K, bool B_KN, typename LB, typename T>
__device__ __forceinline__ void warp_gemm_rp(float (&acc)[MT][NT][4],
                                             const uint32_t (&a_p)[K / 16][MT][4], const T* sb,
                                             int n0) {
  const auto fb = b_frag_addr<B_KN, LB>(sb);
#pragma unroll
  for (int kk = 0; kk < K / 16; ++kk)
    mma_b_slice<MT, NT, B_KN, LB>(acc, a_p[kk], fb, sb, kk, n0);
}

template <int MT, int NT>
__device__ __forceinline__ void zero(float (&acc)[MT][NT][4]) {
#pragma unroll
  for (int i = 0; i < MT; ++i)
#pragma unroll
    for (int j = 0; j < NT; ++j)
#pragma unroll
      for (int e = 0; e < 4; ++e)
        acc[i][j][e] = 0.f;
}

}  // namespace attnkit::flash
