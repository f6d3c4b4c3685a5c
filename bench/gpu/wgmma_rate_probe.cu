// Tensor-core rate of the wgmma sequences the flash3 forward issues, measured alone: no softmax,
// no TMA pipeline, so what a "turn" costs the tensor cores and the shared-memory operand path.
//
// Question (session 15): the D = 256 forward's mainloop runs at ~82 % of the GEMM rate (clock64
// trace, session 14: 2.5k cycles per 64-key block against ~2.05k). Its Q K^T is 16 SS
// m64n64k16 per warpgroup and block: A (Q) 2 KB + B (K) 2 KB per 64 x 64 x 16 MACs, i.e. 128 B
// per 32 tensor clocks at 2048 MAC/clk/SM = all of the 128 B/clk shared memory delivers, before
// the TMA writes of K / V (~32 B/clk). m64n128k16 (cuDNN's 128-key D = 256 tiles) asks 96 B/clk,
// the RS P V m64n256k16 64 B/clk. If shared memory is the limit, the 64-key turn measures below
// the 128-key one here, and more so with the writes on.
//
// Per CTA (1 per SM, 132 of them): WG0 = writer (thread 0 bulk-copies `wbytes` from an L2-resident
// global buffer into a private 32 KB shared region every `period` clocks, 2 copies in flight at
// most), WG1 .. WGn = issuers. A turn of one issuer = one sequence below, then commit + wait(0);
// the issuers are not synchronised with each other (the tensor cores interleave them).
//   qk64    16 x SS m64n64k16   (D 256 Q K^T, 64 keys)            1 M MAC
//   qk80    16 x SS m64n80k16   (D 256 Q K^T, 80 keys: FA3)        1.25 M
//   qk128   16 x SS m64n128k16  (D 256 Q K^T, 128 keys)            2 M
//   pv64     4 x RS m64n256k16  (D 256 P V, 64 keys)               1 M
//   t256_64  qk64 + pv64        (one D 256 block, 64 keys)         2 M
//   t256_80  qk80 + 5 x RS m64n256k16                              2.5 M
//   (no t256_128 = qk128 + 8 x RS m64n256k16: with S (64 registers) and O (128) in one
//   function ptxas 13.0 serialises every wgmma (C7512) and spills, split or not, even with a
//   255-register cap, as in the flash3 128-key D = 256 kernel (session 3); its rate follows from
//   qk128 and pv64)
//   t128     8 x SS m64n128k16 + 8 x RS m64n128k16 (D 128 block)   2 M
//   ss128k / ss128t / rs128k / rs128t  8 x m64n128k16, A from shared memory (ss) or registers
//            (rs), B K-major (k) or MN-major (t, as V in P V): which part costs    1 M
//   gemm     16 x SS m64n256k16 (cuBLAS-like large tile reference) 4 M
//   st32 / dkv / bwd256  the D 256 backward's GEMMs (probe_bwd below)  1 M / 1.5 M / 2.5 M
// Mixed modes also as "/s" (split): the Q K^T group waited before the P V group is issued.
// Reported per config: clock64 cycles per turn (issuer 0 of each CTA, averaged), MAC/clk/SM
// (clock-independent), TFLOP/s (events) and the share of the `gemm` rate measured with the same
// issuer count and writes.
//
// Build and run (device): nvcc -std=c++20 -O3 -I src --generate-code=arch=compute_90a,code=sm_90a
//   bench/gpu/wgmma_rate_probe.cu -o /tmp/wgmma_rate_probe && /tmp/wgmma_rate_probe [--json f]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/flash3/bwd_wgmma_ops.hpp"
#include "backends/flash3/wgmma_ops.hpp"
#include "cuda/ptx_sm90.hpp"

namespace {

namespace ptx = attnkit::cuda::sm90;
using attnkit::flash3::Wgmma;
using attnkit::flash3::bwd::BwdWgmma;

#define CHECK(x)                                                                              \
  do {                                                                                        \
    cudaError_t e_ = (x);                                                                     \
    if (e_ != cudaSuccess) {                                                                  \
      std::fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x, cudaGetErrorString(e_)); \
      std::exit(1);                                                                           \
    }                                                                                         \
  } while (0)

enum Mode {
  kQk64,
  kQk80,
  kQk128,
  kPv64,
  kT256x64,
  kT256x80,
  kT128,
  kSsK,
  kSsT,
  kRsK,
  kRsT,     // 8 x m64n128k16: SS / RS (A from registers), B K-major / MN-major
  kSt32,    // D 256 backward: S^T_w + dP^T_w, 2 x 16 x SS m64n32k16 (session 27)
  kDkv,     // D 256 backward: dQ_w + dV_w + dK_w, 3 x 4 x SS m64n128k16
  kBwd256,  // the two above in the kernel's order: one D 256 backward item of one warpgroup
  kGemm,
  kModes
};
constexpr const char* kModeName[kModes] = {"qk64",    "qk80", "qk128",  "pv64",   "t256_64",
                                           "t256_80", "t128", "ss128k", "ss128t", "rs128k",
                                           "rs128t",  "st32", "dkv",    "bwd256", "gemm"};
constexpr double kMacPerTurn[kModes] = {
    1 << 20, 1.25 * (1 << 20), 2 << 20, 1 << 20, 2 << 20,         2.5 * (1 << 20), 2 << 20, 1 << 20,
    1 << 20, 1 << 20,          1 << 20, 1 << 20, 1.5 * (1 << 20), 2.5 * (1 << 20), 4 << 20};

// Shared memory (1024-aligned): per issuer an A region (64 rows x 256 = 32 KB, K-major, 4 chunks
// of [64][64] with the 128-byte swizzle), one B region shared by the issuers (256 rows x 256 =
// 128 KB: K tiles as [N][64] chunks, V tiles MN-major as [keys][64] chunks), the writer's 32 KB.
constexpr int kARegion = 32 * 1024;
constexpr int kBRegion = 128 * 1024;
constexpr int kWRegion = 32 * 1024;
constexpr int kMaxIssuers = 2;
constexpr int kSmem = kMaxIssuers * kARegion + kBRegion + kWRegion + 1024 + 64;

struct Args {
  int iters;                   // turns per issuer
  int issuers;                 // 1 or 2
  uint32_t wbytes;             // writer: bytes per copy (0 = off)
  uint32_t period;             // writer: clocks between copies
  const uint8_t* wsrc;         // writer source (global, 32 KB)
  unsigned long long* cycles;  // [gridDim.x]: issuer 0's clock64 span
  unsigned long long* wdone;   // [gridDim.x]: bytes the writer copied
  float* sink;                 // [128]: check run: accumulator elements != want_s / want_o
  int ones;                    // operands all 1.0 (the check run, one turn)
  float want_s, want_o;        // check run: every S element = the Q K^T depth, O = the keys
};

// SS, K-major A (64 rows) and B (N rows), K = 16 * ksteps; both tiles as [rows][64] chunks.
template <int N>
__device__ __forceinline__ void ss_seq(float (&d)[N / 2], uint32_t a, uint32_t b, int ksteps) {
  const uint64_t da0 = ptx::Sw128Desc::make(a, 16, 1024);
  const uint64_t db0 = ptx::Sw128Desc::make(b, 16, 1024);
#pragma unroll
  for (int ks = 0; ks < 16; ++ks) {
    if (ks >= ksteps) break;
    const uint32_t off_a = (ks / 4) * 64 * 128 + (ks % 4) * 32;
    const uint32_t off_b = (ks / 4) * N * 128 + (ks % 4) * 32;
    // scale-d 1 throughout: a turn that overwrote S (scale-d 0 on its first k-step) would leave
    // the previous turn's wgmmas dead, and ptxas deletes dead wgmmas (the first version of this
    // probe "measured" 2-3x the tensor cores' peak that way).
    Wgmma<N, true>::ss(d, da0 + (off_a >> 4), db0 + (off_b >> 4), 1);
  }
}

// RS, A from registers (P: contents irrelevant to the rate), B MN-major (V: [keys][N] as N / 64
// chunks of [keys][64]), `kk` steps of 16 keys.
template <int N>
__device__ __forceinline__ void rs_seq(float (&d)[N / 2], const uint32_t (&p)[4], uint32_t v,
                                       int keys) {
  const uint64_t db0 = ptx::Sw128Desc::make(v, keys * 128, 1024);
#pragma unroll
  for (int kk = 0; kk < 8; ++kk) {
    if (kk * 16 >= keys) break;
    Wgmma<N, true>::rs(d, p, db0 + ((kk * 2048) >> 4), 1);
  }
}

template <int kMode, bool kSplit>
__global__ void __launch_bounds__(128 * (1 + kMaxIssuers), 1) probe(const Args args) {
  extern __shared__ uint8_t raw[];
  uint8_t* base =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t{1023});
  uint8_t* b_region = base + kMaxIssuers * kARegion;
  uint8_t* w_region = b_region + kBRegion;
  uint64_t* wbar = reinterpret_cast<uint64_t*>(w_region + kWRegion);  // [2]
  // Operand data: small pseudo-random bf16 values (the tensor cores' power, and so the clock,
  // depend on the bits; zeros would flatter the rate).
  for (int i = threadIdx.x; i < (kMaxIssuers * kARegion + kBRegion) / 4; i += blockDim.x) {
    uint32_t x = i * 2654435761u + blockIdx.x;
    x ^= x >> 13;
    const uint32_t lo = 0x3f00u | (x & 0x00ffu), hi = 0xbf00u | ((x >> 8) & 0x00ffu);
    reinterpret_cast<uint32_t*>(base)[i] =
        args.ones ? 0x3f803f80u : (hi << 16) | lo;  // bf16 in [0.5, 2) and (-2, -0.5]
  }
  if (threadIdx.x == 0) {
    ptx::mbar_init(&wbar[0], 1);
    ptx::mbar_init(&wbar[1], 1);
    *reinterpret_cast<volatile int*>(wbar + 2) = 0;  // the writer's stop flag
    ptx::fence_mbar_init();
  }
  ptx::fence_proxy_async_smem();
  __syncthreads();
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    ptx::setmaxnreg_dec<40>();
    if (threadIdx.x != 0 || args.wbytes == 0) return;
    // Writer: runs until issuer 0 is done (it raises the flag in shared memory).
    volatile int* stop = reinterpret_cast<volatile int*>(wbar + 2);
    unsigned long long bytes = 0, next = clock64();
    uint32_t j = 0;
    for (; *stop == 0; ++j) {
      while (clock64() < next) {
      }
      next += args.period;
      const int s = j & 1;
      if (j >= 2) ptx::mbar_wait(&wbar[s], ((j - 2) >> 1) & 1);
      ptx::mbar_arrive_expect_tx(&wbar[s], args.wbytes);
      ptx::bulk_load_g2s(w_region + s * (kWRegion / 2), args.wsrc, args.wbytes, &wbar[s]);
      bytes += args.wbytes;
    }
    for (uint32_t k = j >= 2 ? j - 2 : 0; k < j; ++k)  // none may land after the CTA exits
      ptx::mbar_wait(&wbar[k & 1], (k >> 1) & 1);
    args.wdone[blockIdx.x] = bytes;
    return;
  }
  ptx::setmaxnreg_inc<232>();
  const int issuer = wg - 1;
  if (issuer >= args.issuers) return;
  const uint32_t a = ptx::smem_u32(base + issuer * kARegion);
  const uint32_t bk = ptx::smem_u32(b_region);              // K tile (N rows)
  const uint32_t bv = ptx::smem_u32(b_region + 64 * 1024);  // V tile (up to 128 keys x 256)
  uint32_t p[4];
  for (int i = 0; i < 4; ++i)
    p[i] = args.ones ? 0x3f803f80u : 0x3c003c00u ^ (threadIdx.x * 0x00010001u);
  constexpr int kSN = kMode == kQk80 || kMode == kT256x80 ? 80
                      : kMode == kQk128                   ? 128
                      : kMode == kT128                    ? 128
                      : kMode >= kSsK && kMode <= kRsT    ? 128
                      : kMode == kGemm                    ? 256
                                                          : 64;
  constexpr int kON = kMode == kT128 ? 128 : 256;
  float s[kSN / 2];
  float o[kON / 2];
  for (int i = 0; i < kSN / 2; ++i)
    s[i] = 0.f;
  for (int i = 0; i < kON / 2; ++i)
    o[i] = 0.f;
  const unsigned long long t0 = clock64();
  for (int it = 0; it < args.iters; ++it) {
    ptx::wgmma_fence();
    if constexpr (kMode == kQk64 || kMode == kT256x64) ss_seq<64>(s, a, bk, 16);
    if constexpr (kMode == kQk80 || kMode == kT256x80) ss_seq<80>(s, a, bk, 16);
    if constexpr (kMode == kQk128) ss_seq<128>(s, a, bk, 16);
    if constexpr (kMode == kT128) ss_seq<128>(s, a, bk, 8);
    if constexpr (kMode == kGemm) ss_seq<256>(s, a, bk, 16);
    if constexpr (kMode >= kSsK && kMode <= kRsT) {
      constexpr int kTB = kMode == kSsT || kMode == kRsT ? 1 : 0;
      // K-major B: [128][64] chunks (k-step +32 B); MN-major: [keys][64] chunks, LBO = chunk.
      const uint64_t db0 =
          kTB ? ptx::Sw128Desc::make(bv, 128 * 128, 1024) : ptx::Sw128Desc::make(bk, 16, 1024);
      const uint64_t da0 = ptx::Sw128Desc::make(a, 16, 1024);
#pragma unroll
      for (int ks = 0; ks < 8; ++ks) {
        const uint32_t off_b = kTB ? ks * 2048 : (ks / 4) * 128 * 128 + (ks % 4) * 32;
        const uint32_t off_a = (ks / 4) * 64 * 128 + (ks % 4) * 32;
        using W = BwdWgmma<kSN, true>;  // (kSN = 128 here)
        if constexpr (kMode == kSsK || kMode == kSsT)
          W::template ss<0, kTB>(s, da0 + (off_a >> 4), db0 + (off_b >> 4), 1);
        else
          W::template rs<kTB>(s, p, db0 + (off_b >> 4), 1);
      }
    }
    if constexpr (kSplit) {  // Q K^T waited before P V is issued (cuDNN's order; see top)
      ptx::wgmma_commit();
      ptx::wgmma_wait<0>();
      ptx::wgmma_fence();
    }
    if constexpr (kMode == kPv64 || kMode == kT256x64) rs_seq<256>(o, p, bv, 64);
    if constexpr (kMode == kT256x80) rs_seq<256>(o, p, bv, 80);
    if constexpr (kMode == kT128) rs_seq<128>(o, p, bv, 128);
    ptx::wgmma_commit();
    ptx::wgmma_wait<0>();
  }
  const unsigned long long t1 = clock64();
  float acc = 0.f;
  for (int i = 0; i < kSN / 2; ++i)
    acc += s[i];
  for (int i = 0; i < kON / 2; ++i)
    acc += o[i];
  if (acc == 1234.5f) args.sink[0] = acc;             // practically never; keeps the work
  if (args.ones && issuer == 0 && blockIdx.x == 0) {  // every element, every thread
    int bad = 0;
    for (int i = 0; i < kSN / 2; ++i)
      bad += s[i] != args.want_s;
    for (int i = 0; i < kON / 2; ++i)
      bad += o[i] != args.want_o;
    args.sink[threadIdx.x % 128] = static_cast<float>(bad);
  }
  if (issuer == 0 && threadIdx.x % 128 == 0) {
    args.cycles[blockIdx.x] = t1 - t0;
    *reinterpret_cast<volatile int*>(wbar + 2) = 1;  // writer stops
  }
}

// The D 256 backward's item (bwd_kernel_d256.cuh, session 26) without its softmax, barrier and
// atomics: per warpgroup w (issuer), S^T_w = K Q_w^T and dP^T_w = V dO_w^T (16 + 16 SS m64n32k16,
// A = K / V [64 keys][256] K-major, B = the WG's 32 query rows of Q / dO), waited; then dQ_w
// (4 x SS m64n128k16, both MN-major: the dS^T tile and K's column chunks 2 w, 2 w + 1), dV_w and
// dK_w (4 + 4 x SS m64n128k16, A = the P^T / dS^T tiles K-major, B = dO / Q chunks MN-major).
// Question (session 27): m64n32k16 SS asks 3 KB of operands per 16 tensor clocks (192 B/clk):
// does it run below the tensor rate, and how close does the whole item get to it?
// Shared memory as the kernel's: K, V, Q, dO [64][256] (4 chunks of [64][64], 128B swizzle),
// the P^T and dS^T tiles [64][64].
template <int kMode>
__global__ void __launch_bounds__(128 * (1 + kMaxIssuers), 1) probe_bwd(const Args args) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)  // (BwdWgmma exists in the sm_90a device pass only)
  extern __shared__ uint8_t raw[];
  uint8_t* base =
      reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(raw) + 1023) & ~uintptr_t{1023});
  for (int i = threadIdx.x; i < (kMaxIssuers * kARegion + kBRegion) / 4; i += blockDim.x) {
    uint32_t x = i * 2654435761u + blockIdx.x;
    x ^= x >> 13;
    const uint32_t lo = 0x3f00u | (x & 0x00ffu), hi = 0xbf00u | ((x >> 8) & 0x00ffu);
    reinterpret_cast<uint32_t*>(base)[i] = args.ones ? 0x3f803f80u : (hi << 16) | lo;
  }
  ptx::fence_proxy_async_smem();
  __syncthreads();
  const int wg = threadIdx.x / 128;
  if (wg == 0) {
    ptx::setmaxnreg_dec<24>();
    return;  // (no writer: the backward's loads are not modelled)
  }
  ptx::setmaxnreg_inc<240>();
  const int w = wg - 1;
  if (w >= args.issuers) return;
  constexpr uint32_t kChunk = 64 * 128;  // one [64][64] chunk, 8 KB
  const uint32_t k_s = ptx::smem_u32(base), v_s = k_s + 32768, q_s = k_s + 65536,
                 do_s = k_s + 98304, pt_s = k_s + 131072, ds_s = pt_s + kChunk;
  using WS = BwdWgmma<32, true>;
  using WD = BwdWgmma<128, true>;
  // dV / dK accumulate across turns; S^T / dP^T / dQ are each turn's own (declared in the loop,
  // overwritten: scale-d 0 on their first k-step, as the kernel's) and consumed after their wait
  // (the kernel's softmax and atomics), so the peak is the kernel's: dQ + dV + dK = 192.
  float dv[64], dk[64];
  for (int i = 0; i < 64; ++i)
    dv[i] = dk[i] = 0.f;
  constexpr bool kT = kMode != kDkv, kG = kMode != kSt32;
  float fold = 0.f;
  int bad = 0;  // check run (ones, one turn): S^T / dP^T = 256, dQ / dV / dK = 64
  const unsigned long long t0 = clock64();
  for (int it = 0; it < args.iters; ++it) {
    if constexpr (kT) {
      float st[16], dpt[16];
      auto gemm_t = [&](float(&acc)[16], uint32_t a_s, uint32_t b_s) {  // 16 k-steps over D
#pragma unroll
        for (int ks = 0; ks < 16; ++ks) {
          const uint32_t off = (ks / 4) * kChunk + (ks % 4) * 32;
          const uint32_t offq = (ks / 4) * kChunk + 32 * w * 128 + (ks % 4) * 32;
          WS::template ss<0, 0>(acc, ptx::Sw128Desc::make(a_s + off, 16, 1024),
                                ptx::Sw128Desc::make(b_s + offq, 16, 1024), ks > 0 ? 1 : 0);
        }
      };
      ptx::wgmma_fence();
      gemm_t(st, k_s, q_s);
      gemm_t(dpt, v_s, do_s);
      ptx::wgmma_commit();
      ptx::wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < 16; ++i) {
        fold += st[i] + dpt[i];
        if (args.ones) bad += (st[i] != 256.f) + (dpt[i] != 256.f);
      }
    }
    if constexpr (kG) {
      float dq[64];
      ptx::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        WD::template ss<1, 1>(dq, ptx::Sw128Desc::make(ds_s + kk * 2048, kChunk, 1024),
                              ptx::Sw128Desc::make(k_s + 2 * w * kChunk + kk * 2048, kChunk, 1024),
                              kk > 0 ? 1 : 0);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        WD::template ss<0, 1>(dv, ptx::Sw128Desc::make(pt_s + kk * 32, 16, 1024),
                              ptx::Sw128Desc::make(do_s + 2 * w * kChunk + kk * 2048, kChunk, 1024),
                              1);
#pragma unroll
      for (int kk = 0; kk < 4; ++kk)
        WD::template ss<0, 1>(dk, ptx::Sw128Desc::make(ds_s + kk * 32, 16, 1024),
                              ptx::Sw128Desc::make(q_s + 2 * w * kChunk + kk * 2048, kChunk, 1024),
                              1);
      ptx::wgmma_commit();
      ptx::wgmma_wait<1>();  // (one group: waits for all; the kernel's dQ wait before atomics)
      ptx::wgmma_wait<0>();
#pragma unroll
      for (int i = 0; i < 64; ++i) {
        fold += dq[i];
        if (args.ones) bad += dq[i] != 64.f;
      }
    }
  }
  const unsigned long long t1 = clock64();
  float acc = fold;
  for (int i = 0; i < 64; ++i)
    acc += dv[i] + dk[i];
  if (acc == 1234.5f) args.sink[0] = acc;
  if (args.ones && w == 0 && blockIdx.x == 0) {
    if constexpr (kG)
      for (int i = 0; i < 64; ++i)
        bad += (dv[i] != 64.f) + (dk[i] != 64.f);
    args.sink[threadIdx.x % 128] = static_cast<float>(bad);
  }
  if (w == 0 && threadIdx.x % 128 == 0) args.cycles[blockIdx.x] = t1 - t0;
#endif
}

using Kernel = void (*)(Args);
// [mode][split]: the mixed sequences also split; the pure ones have nothing to split.
constexpr Kernel kKernels[kModes][2] = {{probe<kQk64, false>, nullptr},
                                        {probe<kQk80, false>, nullptr},
                                        {probe<kQk128, false>, nullptr},
                                        {probe<kPv64, false>, nullptr},
                                        {probe<kT256x64, false>, probe<kT256x64, true>},
                                        {probe<kT256x80, false>, probe<kT256x80, true>},
                                        {probe<kT128, false>, probe<kT128, true>},
                                        {probe<kSsK, false>, nullptr},
                                        {probe<kSsT, false>, nullptr},
                                        {probe<kRsK, false>, nullptr},
                                        {probe<kRsT, false>, nullptr},
                                        {probe_bwd<kSt32>, nullptr},
                                        {probe_bwd<kDkv>, nullptr},
                                        {probe_bwd<kBwd256>, nullptr},
                                        {probe<kGemm, false>, nullptr}};

struct Result {
  std::string mode;
  int issuers;
  double w_target;  // B/clk asked of the writer
  double cycles_per_turn, mac_per_clk, tflops, w_measured;
};

}  // namespace

int main(int argc, char** argv) {
  const char* json = nullptr;
  const char* only = nullptr;  // --mode NAME: that mode (and gemm) only, e.g. for a clock sample
  int iters = 2000;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--json") && i + 1 < argc) json = argv[++i];
    if (!std::strcmp(argv[i], "--iters") && i + 1 < argc) iters = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--mode") && i + 1 < argc) only = argv[++i];
  }
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  for (const auto& pair : kKernels)
    for (auto k : pair)
      if (k != nullptr)
        CHECK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  uint8_t* wsrc;
  unsigned long long *cycles, *wdone;
  float* sink;
  CHECK(cudaMalloc(&wsrc, kWRegion));
  CHECK(cudaMemset(wsrc, 0x3c, kWRegion));
  CHECK(cudaMalloc(&cycles, sms * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&wdone, sms * sizeof(unsigned long long)));
  CHECK(cudaMalloc(&sink, 512 * sizeof(float)));
  cudaEvent_t e0, e1;
  CHECK(cudaEventCreate(&e0));
  CHECK(cudaEventCreate(&e1));
  // Check: operands all 1.0, one turn: every S element must be the Q K^T depth (256 at D 256, 128
  // for t128), every O element the keys of the P V (64 / 80 / 128), untouched ones 0: a wgmma
  // that did less than its shape (fewer rows, columns or k) would show here.
  {
    float host[128];
    bool ok = true;
    for (int m = 0; m < kModes; ++m) {
      const Kernel kernel = kKernels[m][0];  // (every mode has its unsplit kernel)
      const float want_s = m == kPv64                               ? 0.f
                           : m == kT128 || (m >= kSsK && m <= kRsT) ? 128.f
                                                                    : 256.f;
      const float want_o = m == kPv64 || m == kT256x64 ? 64.f
                           : m == kT256x80             ? 80.f
                           : m == kT128                ? 128.f
                                                       : 0.f;
      Args a{1, 1, 0, 1, wsrc, cycles, wdone, sink, 1, want_s, want_o};
      kernel<<<sms, 128 * (1 + kMaxIssuers), kSmem>>>(a);
      CHECK(cudaDeviceSynchronize());
      CHECK(cudaMemcpy(host, sink, sizeof(host), cudaMemcpyDeviceToHost));
      int bad = 0;
      for (float v : host)
        bad += static_cast<int>(v);
      std::printf("check %-9s S = %.0f, O = %.0f everywhere? %d elements differ\n", kModeName[m],
                  want_s, want_o, bad);
      ok = ok && bad == 0;
    }
    if (!ok) std::printf("CHECK FAILED: the rates below do not count what they say\n");
  }
  std::vector<Result> out;
  // Writer settings: off, and 16 KB every 512 clocks (32 B/clk: the forward's K / V TMA average).
  const uint32_t wset[2][2] = {{0, 1}, {16384, 512}};
  std::printf("%-9s %3s %6s | %9s %9s %8s %7s %8s\n", "mode", "iss", "w B/c", "clk/turn", "MAC/clk",
              "TFLOP/s", "w meas", "of gemm");
  for (int issuers = 1; issuers <= 2; ++issuers) {
    for (const auto& w : wset) {
      double gemm_rate = 0;
      for (int ms_i = 2 * kModes - 1; ms_i >= 0; --ms_i) {  // gemm first: its group's reference
        const int m = ms_i / 2, split = ms_i % 2;
        const Kernel kernel = kKernels[m][split];
        if (kernel == nullptr) continue;
        if (m >= kSt32 && m <= kBwd256 && w[0] != 0) continue;  // (no writer in probe_bwd)
        if (only != nullptr && m != kGemm && std::string(only) != kModeName[m]) continue;
        Args a{iters, issuers, w[0], w[1], wsrc, cycles, wdone, sink, 0, 0.f, 0.f};
        std::vector<double> ms;
        std::vector<unsigned long long> cyc(sms), wd(sms);
        for (int rep = 0; rep < 4; ++rep) {
          CHECK(cudaMemset(wdone, 0, sms * sizeof(unsigned long long)));
          CHECK(cudaEventRecord(e0));
          kernel<<<sms, 128 * (1 + kMaxIssuers), kSmem>>>(a);
          CHECK(cudaEventRecord(e1));
          CHECK(cudaEventSynchronize(e1));
          CHECK(cudaGetLastError());
          float t = 0;
          CHECK(cudaEventElapsedTime(&t, e0, e1));
          if (rep > 0) ms.push_back(t);  // rep 0 warms up
        }
        std::sort(ms.begin(), ms.end());
        CHECK(cudaMemcpy(cyc.data(), cycles, sms * sizeof(unsigned long long),
                         cudaMemcpyDeviceToHost));
        CHECK(
            cudaMemcpy(wd.data(), wdone, sms * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
        double cyc_mean = 0, wd_mean = 0;
        for (int i = 0; i < sms; ++i)
          cyc_mean += cyc[i], wd_mean += wd[i];
        cyc_mean /= sms, wd_mean /= sms;
        Result r;
        r.mode = std::string(kModeName[m]) + (split ? "/s" : "");
        r.issuers = issuers;
        r.w_target = w[0] == 0 ? 0 : double(w[0]) / w[1];
        r.cycles_per_turn = cyc_mean / iters;
        r.mac_per_clk = kMacPerTurn[m] * issuers / r.cycles_per_turn;
        r.tflops = 2.0 * kMacPerTurn[m] * issuers * iters * sms / (ms[ms.size() / 2] * 1e-3) / 1e12;
        r.w_measured = wd_mean / cyc_mean;
        if (m == kGemm) gemm_rate = r.mac_per_clk;
        std::printf("%-9s %3d %6.1f | %9.1f %9.1f %8.1f %7.1f %8.3f\n", r.mode.c_str(), issuers,
                    r.w_target, r.cycles_per_turn, r.mac_per_clk, r.tflops, r.w_measured,
                    r.mac_per_clk / gemm_rate);
        out.push_back(r);
      }
    }
  }
  if (json != nullptr) {
    FILE* f = std::fopen(json, "w");
    std::fprintf(f, "[\n");
    for (size_t i = 0; i < out.size(); ++i) {
      const Result& r = out[i];
      std::fprintf(f,
                   "  {\"mode\": \"%s\", \"issuers\": %d, \"write_b_per_clk_target\": %.1f, "
                   "\"cycles_per_turn\": %.1f, \"mac_per_clk_sm\": %.1f, \"tflops\": %.1f, "
                   "\"write_b_per_clk\": %.1f}%s\n",
                   r.mode.c_str(), r.issuers, r.w_target, r.cycles_per_turn, r.mac_per_clk,
                   r.tflops, r.w_measured, i + 1 < out.size() ? "," : "");
    }
    std::fprintf(f, "]\n");
    std::fclose(f);
  }
  return 0;
}
