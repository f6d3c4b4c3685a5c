// cpu_flash against the `math` oracle (fp64 accumulation): forward out and lse, backward dq/dk/dv,
// every dtype, every option, hostile shapes; plus thread-count invariance, determinism, and each
// SIMD kernel set the CPU supports.
//
// Tolerances (relative L2 error ||x - ref|| / ||ref||; lse: max abs error):
//   f32:      out 1e-5, grads 1e-4, lse 1e-4   (fp32 accumulation vs fp64; grads sum ~S terms)
//   f16/bf16: out 1e-2, grads 2e-2, lse 1e-3   (both sides round outputs to the dtype, so the
//             difference is up to one output ulp: bf16 2^-8, f16 2^-11 relative)
// Any NaN, or an Inf that the oracle does not have at the same place, fails.
#include <gtest/gtest.h>

#include <atomic>
#include <sstream>
#include <string>
#include <vector>

#include "attnkit/attention.hpp"
#include "backends/cpu_flash/isa.hpp"
#include "backends/cpu_flash/oracle_pair.hpp"
#include "backends/cpu_flash/thread_pool.hpp"

namespace attnkit::testing {
namespace {

using check::Case;
using check::Layout;
using check::MaskCase;

struct Tol {
  double out, grad, lse;
};
Tol tol_for(DType t) {
  return t == DType::f32 ? Tol{1e-5, 1e-4, 1e-4} : Tol{1e-2, 2e-2, 1e-3};
}

std::string case_id(const Case& c) {
  std::ostringstream os;
  os << dtype_name(c.dtype) << "_b" << c.b << "_sq" << c.sq << "_sk" << c.sk << "_h" << c.hq << "x"
     << c.hkv << "_d" << c.d << "v" << c.dv;
  if (c.layout == Layout::bhsd) os << "_bhsd";
  if (c.noncontiguous) os << "_strided";
  if (c.causal != Causal::none) os << "_" << causal_name(c.causal);
  if (c.window_left >= 0 || c.window_right >= 0)
    os << "_win" << (c.window_left < 0 ? std::string("inf") : std::to_string(c.window_left)) << "_"
       << (c.window_right < 0 ? std::string("inf") : std::to_string(c.window_right));
  if (c.softcap > 0) os << "_softcap";
  if (c.alibi) os << (c.alibi_per_batch ? "_alibiBH" : "_alibiH");
  if (c.mask == MaskCase::keep_bool) os << "_boolmask" << int(c.mask_broadcast);
  if (c.mask == MaskCase::additive) os << "_addmask" << int(c.mask_broadcast);
  if (c.dropout_p > 0) os << "_dropout";
  if (c.scale) os << "_scale" << static_cast<int>(*c.scale * 1000);
  if (c.varlen) {
    os << "_varlen";
    for (size_t i = 0; i < c.seqlens_q.size(); ++i)
      os << "_" << c.seqlens_q[i] << "x" << c.seqlens_k[i];
  }
  if (c.backward) os << "_bwd";
  return os.str();
}

// Shapes chosen to cross tile edges at every size (kBq = kBk = 128 now, 64 before): lengths 1,
// primes, 63/65, 130+, 300.
std::vector<Case> base_cases() {
  std::vector<Case> v;
  auto add = [&](Case c) { v.push_back(c); };
  Case c;
  c = Case{};
  c.b = 2, c.sq = 37, c.sk = 53, c.hq = 4, c.hkv = 2;
  add(c);
  c = Case{};
  c.sq = 1, c.sk = 1, c.hq = 2, c.hkv = 2;
  add(c);
  // MQA, one sequence: the backward splits the key blocks into chunks (3 here) and reduces dq.
  c = Case{};
  c.sq = 300, c.sk = 300, c.hq = 4, c.hkv = 1, c.causal = Causal::top_left;
  add(c);
  c = Case{};
  c.sq = 131, c.sk = 131, c.hq = 2, c.hkv = 1, c.causal = Causal::top_left;
  add(c);
  for (Causal cz : {Causal::top_left, Causal::bottom_right})
    for (auto [sq, sk] : {std::pair<int64_t, int64_t>{70, 130}, {130, 70}}) {
      c = Case{};
      c.sq = sq, c.sk = sk, c.hq = 2, c.hkv = 2, c.causal = cz;
      add(c);
    }
  c = Case{};
  c.sq = 97, c.sk = 150, c.hq = 2, c.hkv = 1, c.window_left = 17, c.window_right = 5;
  add(c);
  c = Case{};
  c.sq = 80, c.sk = 80, c.hq = 1, c.hkv = 1, c.window_left = 30, c.causal = Causal::bottom_right;
  add(c);
  c = Case{};
  c.sq = 65, c.sk = 63, c.hq = 2, c.hkv = 1, c.softcap = 5.0;
  add(c);
  c = Case{};
  c.b = 2, c.sq = 41, c.sk = 77, c.hq = 4, c.hkv = 4, c.alibi = true,
  c.causal = Causal::bottom_right;
  add(c);
  c.alibi_per_batch = true;
  add(c);
  for (uint8_t bc : {uint8_t{0}, uint8_t{2}, uint8_t{5}}) {
    c = Case{};
    c.b = 2, c.sq = 45, c.sk = 70, c.hq = 2, c.hkv = 1, c.mask = MaskCase::keep_bool,
    c.mask_broadcast = bc;
    add(c);
    c.mask = MaskCase::additive;
    c.causal = Causal::top_left;
    add(c);
  }
  c = Case{};
  c.sq = 67, c.sk = 90, c.hq = 2, c.hkv = 2, c.dropout_p = 0.2;
  add(c);
  c = Case{};
  c.sq = 33, c.sk = 71, c.hq = 8, c.hkv = 1, c.causal = Causal::bottom_right;
  add(c);
  for (auto [d, dv] :
       {std::pair<int64_t, int64_t>{32, 32}, {80, 48}, {96, 96}, {256, 256}, {17, 5}}) {
    c = Case{};
    c.sq = 40, c.sk = 70, c.hq = 2, c.hkv = 1, c.d = d, c.dv = dv;
    add(c);
  }
  c = Case{};
  c.b = 2, c.sq = 50, c.sk = 66, c.hq = 4, c.hkv = 2, c.layout = Layout::bhsd,
  c.noncontiguous = true, c.causal = Causal::top_left;
  add(c);
  // Full 128-key blocks without policy: the fused S = Q K^T + softmax kernel (AVX-512 sets), with
  // Q and V read in place (bhsd, D % 16 == 0), strided in place (bshd), or copied (D = 40), the
  // next block's K^T/V prefetch (incl. a partial last block), a 4-row last tile, and large
  // scores (scale 4: exponents far below the row max, the exp's clamp).
  c = Case{};
  c.sq = 260, c.sk = 390, c.hq = 2, c.hkv = 1, c.layout = Layout::bhsd;
  add(c);
  c.scale = 4.0;
  add(c);
  c = Case{};
  c.sq = 258, c.sk = 256, c.hq = 2, c.hkv = 2, c.d = 80, c.dv = 48;
  add(c);
  c = Case{};
  c.sq = 132, c.sk = 256, c.hq = 1, c.hkv = 1, c.d = 40, c.dv = 40;
  add(c);
  c = Case{};
  c.varlen = true, c.hq = 4, c.hkv = 2, c.seqlens_q = {5, 0, 70, 9}, c.seqlens_k = {9, 3, 66, 0};
  add(c);
  c.causal = Causal::bottom_right;
  c.dropout_p = 0.1;
  add(c);
  return v;
}

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (bool bwd : {false, true})
      for (Case c : base_cases()) {
        c.dtype = t;
        c.backward = bwd;
        out.push_back(c);
      }
  return out;
}

void expect_close(const char* what, const std::vector<double>& got, const std::vector<double>& ref,
                  double rel_tol) {
  const Diff d = compare(got, ref);
  EXPECT_EQ(d.mismatched_nonfinite, 0) << what << ": NaN or misplaced Inf";
  EXPECT_LE(d.rel, rel_tol) << what << ": relative L2 error (max abs " << d.max_abs << ")";
}

class CpuFlashVsOracle : public ::testing::TestWithParam<Case> {};

TEST_P(CpuFlashVsOracle, MatchesMath) {
  const Case& c = GetParam();
  const Tol tol = tol_for(c.dtype);
  PairRunner run(c);
  const Outputs ref = run.run("math");
  const Outputs got = run.run("cpu_flash");
  expect_close("out", got.out, ref.out, tol.out);
  const Diff l = compare(got.lse, ref.lse);
  EXPECT_EQ(l.mismatched_nonfinite, 0) << "lse: NaN or misplaced -inf";
  EXPECT_LE(l.max_abs, tol.lse) << "lse";
  if (c.backward) {
    expect_close("dq", got.dq, ref.dq, tol.grad);
    expect_close("dk", got.dk, ref.dk, tol.grad);
    expect_close("dv", got.dv, ref.dv, tol.grad);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CpuFlashVsOracle, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& i) { return case_id(i.param); });

// One worker per item vs several: items write disjoint outputs with fixed internal order, so the
// bits must not change; deterministic backward must also repeat bit for bit.
Case threading_case(DType t) {
  Case c;
  c.dtype = t;
  c.b = 2, c.sq = 200, c.sk = 190, c.hq = 4, c.hkv = 2, c.causal = Causal::bottom_right;
  c.dropout_p = 0.1;
  c.backward = true;
  return c;
}

class CpuFlashThreads : public ::testing::TestWithParam<DType> {
 protected:
  void TearDown() override { set_num_threads(0); }
};

TEST_P(CpuFlashThreads, OneAndManyThreadsBitIdentical) {
  Case c = threading_case(GetParam());
  PairRunner run(c);
  set_num_threads(1);
  const Outputs one = run.run("cpu_flash");
  set_num_threads(3);
  const Outputs many = run.run("cpu_flash");
  EXPECT_EQ(one.out, many.out);
  EXPECT_EQ(one.lse, many.lse);
  EXPECT_EQ(one.dq, many.dq);
  EXPECT_EQ(one.dk, many.dk);
  EXPECT_EQ(one.dv, many.dv);
  // and the outputs are real (not all zero/poison)
  EXPECT_GT(compare(one.out, std::vector<double>(one.out.size(), 0.0)).rel, 0.0);
}

// Non-causal forward: items of equal cost run under Schedule::segmented.
TEST_P(CpuFlashThreads, NonCausalForwardOneAndManyThreadsBitIdentical) {
  Case c = threading_case(GetParam());
  c.causal = Causal::none;
  c.dropout_p = 0.0;
  c.backward = false;
  c.sq = 600, c.sk = 300;  // 5 query tiles per head: 40 items
  PairRunner run(c);
  set_num_threads(1);
  const Outputs one = run.run("cpu_flash");
  for (int t : {2, 3, 7}) {
    set_num_threads(t);
    const Outputs many = run.run("cpu_flash");
    EXPECT_EQ(one.out, many.out) << t;
    EXPECT_EQ(one.lse, many.lse) << t;
  }
}

// Schedule::segmented runs every item exactly once, also when workers steal (uneven items).
TEST(CpuFlashPool, SegmentedRunsEachItemOnce) {
  for (int threads : {2, 3, 5})
    for (int64_t n : {1, 2, 3, 7, 64, 1001}) {
      std::vector<std::atomic<int>> hits(n);
      cpu_flash::parallel_for(
          n, threads,
          [&](int64_t i, int worker) {
            ASSERT_GE(worker, 0);
            ASSERT_LT(worker, threads);
            if (worker == 0 && i % 5 == 0) {  // a slow worker: the others steal its range
              volatile double x = 0;
              for (int k = 0; k < 20000; ++k)
                x = x + k;
            }
            hits[i].fetch_add(1);
          },
          cpu_flash::Schedule::segmented);
      for (int64_t i = 0; i < n; ++i)
        EXPECT_EQ(hits[i].load(), 1) << "threads " << threads << " n " << n << " item " << i;
    }
}

TEST_P(CpuFlashThreads, DeterministicBackwardRepeats) {
  Case c = threading_case(GetParam());
  c.deterministic = true;
  PairRunner run(c);
  set_num_threads(2);
  const Outputs a = run.run("cpu_flash");
  set_num_threads(5);
  const Outputs b = run.run("cpu_flash");
  const Outputs b2 = run.run("cpu_flash");
  EXPECT_EQ(a.dq, b.dq);
  EXPECT_EQ(a.dk, b.dk);
  EXPECT_EQ(a.dv, b.dv);
  EXPECT_EQ(b.dq, b2.dq);
  EXPECT_EQ(b.dk, b2.dk);
  EXPECT_EQ(b.dv, b2.dv);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, CpuFlashThreads,
                         ::testing::Values(DType::f32, DType::bf16, DType::f16),
                         [](const ::testing::TestParamInfo<DType>& i) {
                           return std::string(dtype_name(i.param));
                         });

// Every kernel set this CPU can run (portable always) on a case that uses each kernel: masks,
// tails, GQA, dropout, backward.
class CpuFlashIsa : public ::testing::TestWithParam<std::string> {
 protected:
  void TearDown() override { cpu_flash::force_isa(""); }
};

TEST_P(CpuFlashIsa, MatchesMath) {
  ASSERT_TRUE(cpu_flash::force_isa(GetParam()));
  EXPECT_EQ(std::string(cpu_flash::active_kernels().name), GetParam());
  for (DType t : {DType::f32, DType::bf16}) {
    Case c;
    c.dtype = t;
    c.b = 2, c.sq = 77, c.sk = 130, c.hq = 4, c.hkv = 2, c.d = 80, c.dv = 48;
    c.causal = Causal::bottom_right, c.softcap = 4.0, c.dropout_p = 0.15, c.backward = true;
    const Tol tol = tol_for(t);
    PairRunner run(c);
    const Outputs ref = run.run("math");
    const Outputs got = run.run("cpu_flash");
    expect_close("out", got.out, ref.out, tol.out);
    expect_close("dq", got.dq, ref.dq, tol.grad);
    expect_close("dk", got.dk, ref.dk, tol.grad);
    expect_close("dv", got.dv, ref.dv, tol.grad);
  }
}

INSTANTIATE_TEST_SUITE_P(Supported, CpuFlashIsa, ::testing::ValuesIn(cpu_flash::supported_isas()));

TEST(CpuFlashIsa, UnknownNameRefused) {
  EXPECT_FALSE(cpu_flash::force_isa("avx1024"));
  EXPECT_TRUE(cpu_flash::force_isa(""));
}

}  // namespace
}  // namespace attnkit::testing
