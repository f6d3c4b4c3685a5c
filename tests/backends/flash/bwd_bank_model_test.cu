// Host model of the shared-memory bank conflicts of the fused backward (bwd_fused_kernel,
// bench/notes/flash.md "Session 4, round 2 (helper flashbwd8)"): for every warp of the CTA, the
// 32 lanes' byte addresses of every shared-memory instruction of one item (query block) and of
// the CTA's K / V load, from the same formulas as the kernel (SmemLayout::off(), the ldmatrix
// lane offsets of warp_mma.cuh, store_c_smem_split, bwd_p_ds's stats reads, load_q_do's HOIST
// cp.async, the packed-stats cp.async), counted as the hardware serves them:
//   ldmatrix.x4 (.trans): 4 phases of 8 lanes, each lane one 16-byte row;
//   32-bit LDS / STS: one phase of 32 lanes; 128-bit (LDGSTS.128): 4 phases of 8 lanes;
//   a phase takes max over the 32 banks of the distinct 4-byte words it touches in that bank
//   (same word = broadcast), i.e. its 128-byte wavefronts.
// Ideal = bytes / 128 per phase, rounded up (1 for a 32-bit access with 8 distinct words).
// The split / warp-origin address forms the kernel issues equal off() (smem_layout_test.cu), so
// off() is what is modeled. Host only, no GPU needed. Asserts: no pattern has a conflict at
// D = 64 / 128 / 256 (nor 96 / 192), the per-item instruction counts match the ncu run of
// session 4 (D = 128: 144 LDSM, 8 LDS, 32 STS per warp and item), and the model finds the
// 8-way conflicts of an unswizzled layout (negative control).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "backends/flash/smem_layout.hpp"
#include "backends/flash/traits.hpp"

namespace attnkit::flash {
namespace {

struct Access {
  uint32_t addr;  // byte address in the CTA's dynamic shared memory
  int bytes;      // 4, 16
};

// Wavefronts of one phase: max over banks of the distinct words touched in that bank.
int phase_wavefronts(const std::vector<Access>& ph) {
  std::set<uint32_t> words[32];
  for (const Access& a : ph)
    for (int w = 0; w < a.bytes / 4; ++w) {
      const uint32_t word = a.addr / 4 + static_cast<uint32_t>(w);
      words[word % 32].insert(word);
    }
  size_t m = 0;
  for (const auto& s : words)
    m = std::max(m, s.size());
  return static_cast<int>(m);
}
int phase_ideal(const std::vector<Access>& ph) {
  std::set<uint32_t> words;
  for (const Access& a : ph)
    for (int w = 0; w < a.bytes / 4; ++w)
      words.insert(a.addr / 4 + static_cast<uint32_t>(w));
  return static_cast<int>((words.size() + 31) / 32);
}

// One warp instruction: 32 lanes; lanes_per_phase 8 (ldmatrix, 128-bit) or 32 (32-bit).
struct Inst {
  Access lane[32];
  int lanes_per_phase;
  int active = 32;  // lanes [0, active) take part (cp.async of the stats: kBM / 2 threads)
};
void count(const Inst& in, int& wf, int& ideal) {
  wf = ideal = 0;
  for (int p0 = 0; p0 < in.active; p0 += in.lanes_per_phase) {
    std::vector<Access> ph(in.lane + p0, in.lane + std::min(in.active, p0 + in.lanes_per_phase));
    wf += phase_wavefronts(ph);
    ideal += phase_ideal(ph);
  }
}

// Per pattern, summed over the CTA's warps (and the item's instructions of that pattern).
struct Tally {
  int64_t execs = 0;  // warp instructions per item (all warps)
  int64_t wf = 0, ideal = 0;
  int worst = 0;  // most excess wavefronts of one instruction
};
using Table = std::map<std::string, Tally>;
void add(Table& t, const std::string& name, const Inst& in) {
  int wf = 0, ideal = 0;
  count(in, wf, ideal);
  Tally& e = t[name];
  ++e.execs;
  e.wf += wf;
  e.ideal += ideal;
  e.worst = std::max(e.worst, wf - ideal);
}

// ldmatrix.x4 lane rows (element (row, col) of a tile) as warp_mma.cuh's load_* functions.
enum class Frag { a, a_t, b_nk, b_kn };
void frag_rc(Frag f, int l, int x0, int y0, int& r, int& c) {
  switch (f) {
    case Frag::a:  // A stored [m][k]: x0 = m0, y0 = k0
      r = x0 + (l & 15);
      c = y0 + ((l >> 4) << 3);
      return;
    case Frag::a_t:  // A stored [k][m]: x0 = m0, y0 = k0
      r = y0 + ((l >> 4) << 3) + (l & 7);
      c = x0 + (((l >> 3) & 1) << 3);
      return;
    case Frag::b_nk:  // B stored [n][k]: x0 = n0, y0 = k0
      r = x0 + ((l >> 4) << 3) + (l & 7);
      c = y0 + (((l >> 3) & 1) << 3);
      return;
    case Frag::b_kn:  // B stored [k][n]: x0 = n0, y0 = k0
      r = y0 + (((l >> 3) & 1) << 3) + (l & 7);
      c = x0 + ((l >> 4) << 3);
      return;
  }
}
template <typename L>
Inst ldsm(uint32_t base, Frag f, int x0, int y0) {
  Inst in{};
  in.lanes_per_phase = 8;
  for (int l = 0; l < 32; ++l) {
    int r = 0, c = 0;
    frag_rc(f, l, x0, y0, r, c);
    in.lane[l] = Access{base + 2u * static_cast<uint32_t>(L::off(r, c)), 16};
  }
  return in;
}

// warp_gemm_ss_wo's loads: per k-slice, MT A fragments then NT / 2 B fragments.
template <int MT, int NT, int K, bool A_T, bool B_KN, typename LA, typename LB>
void gemm(Table& t, const std::string& name, uint32_t sa, uint32_t sb, int m0, int n0) {
  for (int kk = 0; kk < K / 16; ++kk) {
    for (int mt = 0; mt < MT; ++mt)
      add(t, name + " A", ldsm<LA>(sa, A_T ? Frag::a_t : Frag::a, m0 + mt * 16, kk * 16));
    for (int np = 0; np < NT / 2; ++np)
      add(t, name + " B", ldsm<LB>(sb, B_KN ? Frag::b_kn : Frag::b_nk, n0 + np * 16, kk * 16));
  }
}

// The fused kernel's item (stage `stage`) and K / V load, every warp. LQ / LK / LP: the layouts
// (SmemLayout in the kernel; another layout with off() for the negative control).
template <int D, typename LQ, typename LK, typename LP>
Table model_fused(int stage) {
  using Tr = BwdFusedTraits<D>;
  constexpr int kBM = Tr::kBM, kBN = Tr::kBN;
  // bwd_fused_kernel's smem carve-up, bytes.
  const uint32_t sK = 0, sV = sK + 2 * LK::kSize, sP = sV + 2 * LK::kSize, sdS = sP + 2 * LP::kSize;
  const uint32_t sQ0 = sdS + 2 * LP::kSize;
  const uint32_t sL0 = sQ0 + Tr::kStages * 2 * 2 * LQ::kSize;
  const uint32_t sQ = sQ0 + stage * 2 * 2 * LQ::kSize, sdO = sQ + 2 * LQ::kSize;
  const uint32_t sL = sL0 + stage * 2 * kBM * 4;
  Table t;
  for (int warp = 0; warp < Tr::kWarps; ++warp) {
    const int s_m0 = (warp / Tr::kSdpWC) * 16 * Tr::kSMT;
    const int s_n0 = (warp % Tr::kSdpWC) * 8 * Tr::kSNT;
    const int k_m0 = (warp / Tr::kKvWC) * 16 * Tr::kKMT;
    const int k_n0 = (warp % Tr::kKvWC) * 8 * Tr::kKNT;
    const int q_m0 = (warp / Tr::kDqWC) * 16 * Tr::kQMT;
    const int q_n0 = (warp % Tr::kDqWC) * 8 * Tr::kQNT;
    gemm<Tr::kSMT, Tr::kSNT, D, false, false, LQ, LK>(t, "1 S = Q K^T", sQ, sK, s_m0, s_n0);
    gemm<Tr::kSMT, Tr::kSNT, D, false, false, LQ, LK>(t, "2 dP = dO V^T", sdO, sV, s_m0, s_n0);
    // bwd_p_ds's stats reads (STATS_WS: lse2 then delta per (mt, r)).
    for (int mt = 0; mt < Tr::kSMT; ++mt)
      for (int r = 0; r < 2; ++r)
        for (int which = 0; which < 2; ++which) {
          Inst in{};
          in.lanes_per_phase = 32;
          for (int l = 0; l < 32; ++l) {
            const int i = s_m0 + mt * 16 + l / 4 + r * 8;
            in.lane[l] = Access{sL + 4u * static_cast<uint32_t>(which * kBM + i), 4};
          }
          add(t, "3 LDS lse2 / delta", in);
        }
    // store_c_smem_split of P and dS: one 32-bit store per (nt, mt, r).
    for (int tile = 0; tile < 2; ++tile)
      for (int nt = 0; nt < Tr::kSNT; ++nt)
        for (int mt = 0; mt < Tr::kSMT; ++mt)
          for (int r = 0; r < 2; ++r) {
            Inst in{};
            in.lanes_per_phase = 32;
            for (int l = 0; l < 32; ++l) {
              const int row = s_m0 + mt * 16 + r * 8 + l / 4, col = s_n0 + nt * 8 + (l % 4) * 2;
              in.lane[l] =
                  Access{(tile ? sdS : sP) + 2u * static_cast<uint32_t>(LP::off(row, col)), 4};
            }
            add(t, "4 STS P / dS", in);
          }
    gemm<Tr::kKMT, Tr::kKNT, kBM, true, true, LP, LQ>(t, "5 dV += P^T dO", sP, sdO, k_m0, k_n0);
    gemm<Tr::kKMT, Tr::kKNT, kBM, true, true, LP, LQ>(t, "6 dK += dS^T Q", sdS, sQ, k_m0, k_n0);
    for (int ch = 0; ch < Tr::kDqChunks; ++ch)
      gemm<Tr::kQMT, Tr::kQNT, kBN, false, true, LP, LK>(t, "7 dQ = dS K", sdS, sK, q_m0,
                                                         ch * (D / Tr::kDqChunks) + q_n0);
    // load_q_do: chunk idx = it kThreads + tid is row idx / (D / 8), column (idx % (D / 8)) 8
    // (load_tile_async; HOIST's form, thread row r0 + it kR, is the same chunks where it runs).
    constexpr int kCpr = D / 8, kIts = kBM * kCpr / Tr::kThreads;
    for (int tensor = 0; tensor < 2; ++tensor)
      for (int it = 0; it < kIts; ++it) {
        Inst in{};
        in.lanes_per_phase = 8;
        for (int l = 0; l < 32; ++l) {
          const int idx = it * Tr::kThreads + warp * 32 + l;
          in.lane[l] = Access{(tensor ? sdO : sQ) +
                                  2u * static_cast<uint32_t>(LQ::off(idx / kCpr, (idx % kCpr) * 8)),
                              16};
        }
        add(t, "8 LDGSTS Q / dO", in);
      }
    // Packed stats (STATS_WS): threads < kBM / 2 copy 16 bytes each.
    if (warp * 32 < kBM / 2) {
      Inst in{};
      in.lanes_per_phase = 8;
      in.active = std::min(32, kBM / 2 - warp * 32);
      for (int l = 0; l < in.active; ++l)
        in.lane[l] = Access{sL + 16u * static_cast<uint32_t>(warp * 32 + l), 16};
      add(t, "9 LDGSTS stats", in);
    }
  }
  return t;
}

// The CTA's K / V load (load_tile_async, once per CTA): per warp and chunk iteration.
template <int D, typename LK>
Table model_kv() {
  using Tr = BwdFusedTraits<D>;
  constexpr int kCpr = D / 8, kIts = LK::kRows * kCpr / Tr::kThreads;
  Table t;
  for (int tensor = 0; tensor < 2; ++tensor)
    for (int warp = 0; warp < Tr::kWarps; ++warp)
      for (int it = 0; it < kIts; ++it) {
        Inst in{};
        in.lanes_per_phase = 8;
        for (int l = 0; l < 32; ++l) {
          const int idx = it * Tr::kThreads + warp * 32 + l;
          in.lane[l] = Access{static_cast<uint32_t>(tensor * 2 * LK::kSize) +
                                  2u * static_cast<uint32_t>(LK::off(idx / kCpr, (idx % kCpr) * 8)),
                              16};
        }
        add(t, "K / V LDGSTS (per CTA)", in);
      }
  return t;
}

void print(int D, const Table& t) {
  std::printf(
      "D = %d: pattern | warp instr per item (CTA) | ideal / modeled wavefronts per "
      "instr | excess per item | worst instr\n",
      D);
  for (const auto& [name, e] : t)
    std::printf("  %-24s | %5lld | %.2f / %.2f | %lld | %d\n", name.c_str(),
                static_cast<long long>(e.execs), static_cast<double>(e.ideal) / e.execs,
                static_cast<double>(e.wf) / e.execs, static_cast<long long>(e.wf - e.ideal),
                e.worst);
}

int64_t excess(const Table& t) {
  int64_t x = 0;
  for (const auto& kv : t)
    x += kv.second.wf - kv.second.ideal;
  return x;
}

// kLdgstsExcess: the excess wavefronts the model finds in the Q / dO cp.async per item and in
// the K / V cp.async per CTA (only D = 96: 12 chunks per row, 8 in the 64-wide panel and 4 in
// the 32-wide one, so a quarter-warp's 8 chunks can straddle rows of both panels; LDGSTS only,
// not a benchmarked head dim).
template <int D>
void check_dim(int64_t q_do_excess = 0, int64_t kv_excess = 0) {
  using Tr = BwdFusedTraits<D>;
  using LQ = SmemLayout<Tr::kBM, D>;
  using LK = SmemLayout<Tr::kBN, D>;
  using LP = SmemLayout<Tr::kBM, Tr::kBN>;
  for (int stage = 0; stage < Tr::kStages; ++stage) {
    const Table t = model_fused<D, LQ, LK, LP>(stage);
    if (stage == 0) print(D, t);
    for (const auto& [name, e] : t)
      EXPECT_EQ(e.wf - e.ideal, name == "8 LDGSTS Q / dO" ? q_do_excess : 0)
          << "D " << D << " stage " << stage << ": " << name << " (worst instruction +" << e.worst
          << ")";
  }
  const Table kv = model_kv<D, LK>();
  print(D, kv);
  EXPECT_EQ(excess(kv), kv_excess) << "D " << D << ": K / V load";
}

TEST(FlashBwdBankModel, FusedItemConflictFree) {
  check_dim<64>();
  check_dim<96>(64, 128);
  check_dim<128>();
  check_dim<192>();
  check_dim<256>();
}

// The model's counts against ncu's (session 4, bench/results/2026-11-22-h200-flash-bwd7-run2-s4:
// D = 128, S = 4k, 2048 CTAs x 64 items x 8 warps = 1.05 M warp-items; 151.0 M LDSM, 8.39 M LDS,
// 33.55 M STS, 35.13 M LDGSTS wavefronts incl. K / V; memory_l1_wavefronts_shared = its ideal).
TEST(FlashBwdBankModel, CountsMatchNcuAtD128) {
  using Tr = BwdFusedTraits<128>;
  using LQ = SmemLayout<Tr::kBM, 128>;
  using LK = SmemLayout<Tr::kBN, 128>;
  using LP = SmemLayout<Tr::kBM, Tr::kBN>;
  const Table t = model_fused<128, LQ, LK, LP>(0);
  int64_t ldsm = 0;
  for (const auto& [name, e] : t)
    if (name[0] >= '1' && name[0] <= '7' && name[0] != '3' && name[0] != '4') ldsm += e.execs;
  EXPECT_EQ(ldsm, 144 * 8);
  EXPECT_EQ(t.at("3 LDS lse2 / delta").execs, 8 * 8);
  EXPECT_EQ(t.at("4 STS P / dS").execs, 32 * 8);
  // LDGSTS wavefronts per CTA-item: Q / dO 256 + stats 4; per CTA: K / V 512.
  EXPECT_EQ(t.at("8 LDGSTS Q / dO").ideal + t.at("9 LDGSTS stats").ideal, 260);
  const Table kv = model_kv<128, LK>();
  EXPECT_EQ(kv.at("K / V LDGSTS (per CTA)").ideal, 512);
  // 2048 CTAs x (64 items x (260 + 8 x (144 x 4 + 8 + 32)) + 512) = ncu's 681.05 M wavefronts.
  EXPECT_EQ(2048LL * (64 * (260 + 8 * (144 * 4 + 8 + 32)) + 512), 681050112LL);
}

/// One warp tile (origin m0, n0; MT x NT m16n8 fragments) stored by store_c_smem_stsm into layout
/// L: each stmatrix.x4 goes into `t` under `label`; every packed C pair's address must be
/// 2 off(row, col) and none written twice (`written`, shared by the warps of a tile).
template <typename L>
void model_stsm_warp_tile(Table& t, const char* label, std::set<uint32_t>& written, int d, int warp,
                          int m0, int n0, int mt_count, int nt_count) {
  for (int mt = 0; mt < mt_count; ++mt)
    for (int np = 0; np < nt_count / 2; ++np) {
      // The kernel's lane address: o ^ (np << 4) + 16 mt rows, o from lane row / column.
      Inst in{};
      in.lanes_per_phase = 8;
      uint32_t row_addr[32];
      for (int l = 0; l < 32; ++l) {
        const int o = L::off(m0 + (((l >> 3) & 1) << 3) + (l & 7), n0 + ((l >> 4) << 3));
        row_addr[l] = 2u * static_cast<uint32_t>((o ^ (np << 4)) + mt * 16 * 64);
        in.lane[l] = Access{row_addr[l], 16};
      }
      add(t, label, in);
      for (int th = 0; th < 32; ++th)
        for (int j = 0; j < 4; ++j) {
          const uint32_t got = row_addr[8 * j + th / 4] + 4u * static_cast<uint32_t>(th % 4);
          const int row = m0 + mt * 16 + (j & 1) * 8 + th / 4;
          const int col = n0 + (2 * np + (j >> 1)) * 8 + (th % 4) * 2;
          ASSERT_EQ(got, 2u * static_cast<uint32_t>(L::off(row, col)))
              << "D " << d << " warp " << warp << " mt " << mt << " np " << np << " thread " << th
              << " register " << j;
          ASSERT_TRUE(written.insert(got).second) << "D " << d << ": written twice";
        }
    }
}

// ATTNKIT_FLASH_BWD_STSM (store_c_smem_stsm): one stmatrix.x4 per (mt, n16 pair np) of the warp's
// S / dP tile. Lane l gives the row address of matrix l / 8, row l % 8; thread t's register j
// (matrix j's row t / 4, bytes 4 (t % 4)..+3) holds the packed C pair (mt, nt = 2 np + j / 2,
// r = j % 2) of rows qr + 8 r. Checked: every such pair lands where store_c_smem_split writes it
// (2 off(row, col), the tile's layout unchanged, so every element of the warp tile exactly once),
// and each stmatrix is 4 conflict-free wavefronts (8 rows x 16 B per phase).
template <int D>
void check_stsm() {
  using Tr = BwdFusedTraits<D>;
  using LP = SmemLayout<Tr::kBM, Tr::kBN>;
  constexpr int MT = Tr::kSMT, NT = Tr::kSNT;
  static_assert((NT & (NT - 1)) == 0 && NT >= 2 && 8 * NT <= 64, "store_c_smem_stsm's shapes");
  Table t;
  std::set<uint32_t> written;
  for (int warp = 0; warp < Tr::kWarps; ++warp) {
    const int m0 = (warp / Tr::kSdpWC) * 16 * MT, n0 = (warp % Tr::kSdpWC) * 8 * NT;
    model_stsm_warp_tile<LP>(t, "STSM (one tile, P or dS)", written, D, warp, m0, n0, MT, NT);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_EQ(static_cast<int64_t>(written.size()) * 2, static_cast<int64_t>(LP::kSize))
      << "D " << D << ": the warps' stores cover the (kBM, kBN) tile";
  print(D, t);
  EXPECT_EQ(t.at("STSM (one tile, P or dS)").wf, t.at("STSM (one tile, P or dS)").ideal)
      << "D " << D;
  EXPECT_EQ(t.at("STSM (one tile, P or dS)").execs, Tr::kWarps * MT * NT / 2) << "D " << D;
}
TEST(FlashBwdBankModel, StmatrixStoresMatchAndConflictFree) {
  check_stsm<64>();
  check_stsm<96>();
  check_stsm<128>();
  check_stsm<192>();
  check_stsm<256>();
}

// Session 6 (helper flashbwd10): the fused kernel's epilogue with ATTNKIT_FLASH_BWD_SMEM_EPILOGUE
// (store_dk_dv_smem: the dK / dV warp tiles (origin k_m0, k_n0) into the (kBN, D) tile of sK / sV
// by store_c_smem_stsm, then 16-byte chunks idx = it * kThreads + tid read back at off(idx / kCpr,
// 8 (idx % kCpr))) and ATTNKIT_FLASH_BWD_EARLY_KV's load_kv_fast (thread tid's chunk it at row
// tid / kCpr + it * kR, column 8 (tid % kCpr), smem byte offset 2 off(row0, c0) + it * kR * 128).
// Checked: the stmatrix pairs cover the tile once, conflict-free; the read-back and
// load_kv_fast's chunks are load_tile_async's, at the same offsets, conflict-free.
template <int D>
void check_epilogue_and_kv() {
  using Tr = BwdFusedTraits<D>;
  using LK = SmemLayout<Tr::kBN, D>;
  constexpr int MT = Tr::kKMT, NT = Tr::kKNT;
  static_assert((NT & (NT - 1)) == 0 && NT >= 2 && 8 * NT <= 64 && !LK::kHasHalfPanel,
                "store_c_smem_stsm's shapes");
  Table t;
  std::set<uint32_t> written;
  for (int warp = 0; warp < Tr::kWarps; ++warp) {
    const int m0 = (warp / Tr::kKvWC) * 16 * MT, n0 = (warp % Tr::kKvWC) * 8 * NT;
    model_stsm_warp_tile<LK>(t, "epilogue STSM dK or dV", written, D, warp, m0, n0, MT, NT);
    if (::testing::Test::HasFatalFailure()) return;
  }
  EXPECT_EQ(static_cast<int64_t>(written.size()) * 2, static_cast<int64_t>(LK::kSize))
      << "D " << D << ": the warps' dK / dV stores cover the (kBN, D) tile";
  constexpr int kCpr = D / 8, kIts = LK::kRows * kCpr / Tr::kThreads, kR = Tr::kThreads / kCpr;
  static_assert(Tr::kThreads % kCpr == 0 && kR % 8 == 0, "load_kv_fast's shape");
  std::set<uint32_t> read;
  for (int warp = 0; warp < Tr::kWarps; ++warp)
    for (int it = 0; it < kIts; ++it) {
      Inst in{};
      in.lanes_per_phase = 8;
      for (int l = 0; l < 32; ++l) {
        const int tid = warp * 32 + l, idx = it * Tr::kThreads + tid;
        const int r = idx / kCpr, c = (idx % kCpr) * 8;
        const uint32_t a = 2u * static_cast<uint32_t>(LK::off(r, c));
        in.lane[l] = Access{a, 16};
        ASSERT_TRUE(read.insert(a).second) << "D " << D << ": chunk read twice";
        // load_kv_fast: row tid / kCpr + it * kR, column 8 (tid % kCpr), smem + it * kR rows.
        ASSERT_EQ(tid / kCpr + it * kR, r) << "D " << D;
        ASSERT_EQ((tid % kCpr) * 8, c) << "D " << D;
        ASSERT_EQ(2u * static_cast<uint32_t>(LK::off(tid / kCpr, c)) +
                      static_cast<uint32_t>(it * kR * 64 * 2),
                  a)
            << "D " << D << " tid " << tid << " it " << it;
      }
      add(t, "epilogue LDS.128 / K, V LDGSTS", in);
    }
  EXPECT_EQ(static_cast<int64_t>(read.size()) * 8, static_cast<int64_t>(LK::kSize)) << "D " << D;
  print(D, t);
  EXPECT_EQ(excess(t), 0) << "D " << D;
}
TEST(FlashBwdBankModel, SmemEpilogueAndFastKvLoad) {
  check_epilogue_and_kv<64>();
  check_epilogue_and_kv<128>();
  check_epilogue_and_kv<256>();
}

// Negative control: the same tiles without the XOR swizzle (row-major 64-wide panels): every
// ldmatrix phase reads 8 rows of one 16-byte column = 8 words per bank.
template <int ROWS, int COLS>
struct PlainLayout {
  static constexpr int kSize = ROWS * COLS;
  static int off(int r, int c) { return (c >> 6) * ROWS * 64 + r * 64 + (c & 63); }
};
TEST(FlashBwdBankModel, FindsConflictsOfUnswizzledLayout) {
  using Tr = BwdFusedTraits<128>;
  const Table t = model_fused<128, PlainLayout<Tr::kBM, 128>, PlainLayout<Tr::kBN, 128>,
                              PlainLayout<Tr::kBM, Tr::kBN>>(0);
  EXPECT_EQ(t.at("1 S = Q K^T A").worst, 4 * 7);  // 4 phases, 8 wavefronts each instead of 1
  EXPECT_EQ(t.at("5 dV += P^T dO A").worst, 4 * 7);
  EXPECT_GT(t.at("4 STS P / dS").worst, 0);
}

}  // namespace
}  // namespace attnkit::flash
