// flash3's varlen forward (session 24, launch.cuh launch_forward_score_mod<D, BF16, true>:
// packed sequences, each tile bounded by its own sequence in the kernel) through the public API
// and the check harness, against `cuda_math` on the same GPU (the sequences here are too long for
// the CPU oracle). The hostile harness (flash3_hostile_test.cu) already runs the small varlen
// cases (empty sequences, lengths 1, Sq != Sk per sequence) against `math`; these add sequences
// of many tiles, every head dim, both causal alignments, windows, softcap and ALiBi per sequence,
// GQA, both layouts with padded strides, sequences past 32 m blocks (the dynamic schedule) and a
// batch of many short sequences. Also checks the forward's slot (kVarlenSlot), so a varlen call
// cannot silently run another kernel. The backward (session 25, bwd_kernel.cuh kVarlen) on the
// same kinds of sequences at D 64, 128 and (session 30, bwd_kernel_d256.cuh kVarlen) 256 (dq, dk,
// dv against cuda_math's).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "attnkit/backend_info.hpp"
#include "backends/flash3/launch.hpp"
#include "check/check.hpp"
#include "common/case_printing.hpp"
#include "common/check_expect.hpp"
#include "common/cuda_skip.hpp"
#include "common/scoped_env.hpp"

namespace attnkit::testing {
namespace {

check::Case varlen(DType dt, int64_t d, std::vector<int64_t> lq, std::vector<int64_t> lk,
                   int64_t hq, int64_t hkv, Causal cz) {
  return check::varlen_shape_case(dt, std::move(lq), std::move(lk), hq, hkv, d, cz, false);
}

/// 40 short sequences (1-150 queries, 1-170 keys) and a long one (1100 / 900) last: most tiles
/// of the longest sequence's grid are past their own sequence's end.
check::Case many_short(DType dt, int64_t d, Causal cz) {
  std::vector<int64_t> lq, lk;
  for (int i = 0; i < 40; ++i) {
    lq.push_back((i * 37) % 150 + 1);
    lk.push_back((i * 53) % 170 + 1);
  }
  lq.push_back(1100);
  lk.push_back(900);
  return varlen(dt, d, lq, lk, 2, 2, cz);
}

/// Windows, softcap and ALiBi per sequence ([B, Hq] slopes: one row per sequence) on `c`'s
/// sequences: a left window with bottom-right causal, both edges without, softcap 30, ALiBi with
/// top-left causal, then softcap 50 with a window (127, 0) (ALiBi still on).
std::vector<check::Case> score_mod_cases(check::Case c) {
  std::vector<check::Case> v;
  c.causal = Causal::bottom_right;
  c.window_left = 100;
  v.push_back(c);
  c.window_right = 40;
  c.causal = Causal::none;
  v.push_back(c);
  c.window_left = c.window_right = -1;
  c.softcap = 30.0;
  v.push_back(c);
  c.softcap = 0.0;
  c.alibi = true;
  c.alibi_per_batch = true;
  c.causal = Causal::top_left;
  v.push_back(c);
  c.softcap = 50.0;
  c.window_left = 127;
  c.window_right = 0;
  v.push_back(c);
  return v;
}

std::vector<check::Case> varlen_cases() {
  std::vector<check::Case> v;
  for (DType dt : {DType::bf16, DType::f16}) {
    for (int64_t d : {64, 128, 256}) {
      // Lengths of several tiles, partial tiles, 1 and 0, Sq != Sk per sequence; every causal
      // alignment (bottom-right leaves rows without keys where Sq > Sk).
      for (Causal cz : {Causal::none, Causal::top_left, Causal::bottom_right})
        v.push_back(varlen(dt, d, {1000, 1, 0, 257, 129, 64}, {700, 5, 3, 257, 300, 0}, 4, 2, cz));
    }
  }
  // Every sequence of the same length (the launch keeps the dense calls' schedule for these).
  v.push_back(varlen(DType::bf16, 128, {300, 300, 300}, {300, 300, 300}, 4, 2, Causal::top_left));
  v.push_back(varlen(DType::bf16, 64, {256, 256}, {512, 512}, 2, 2, Causal::none));
  // Windows, softcap and ALiBi per sequence; the last case at D 256 and 64 instead.
  {
    std::vector<check::Case> m = score_mod_cases(
        varlen(DType::bf16, 128, {600, 33, 384}, {700, 33, 200}, 4, 1, Causal::none));
    check::Case c = m.back();
    m.pop_back();
    v.insert(v.end(), m.begin(), m.end());
    c.d = c.dv = 256;
    v.push_back(c);
    c.d = c.dv = 64;
    v.push_back(c);
  }
  // BHSD (physical [H, total, D]) with padded strides, GQA 4.
  {
    check::Case c = varlen(DType::bf16, 128, {300, 129, 1}, {517, 128, 2}, 8, 2, Causal::none);
    c.layout = check::Layout::bhsd;
    c.noncontiguous = true;
    v.push_back(c);
    c.causal = Causal::bottom_right;
    c.d = c.dv = 64;
    v.push_back(c);
  }
  // Past 32 m blocks of 128 rows (causal: the dynamic schedule) next to short sequences; the
  // maxima read from cu_seqlens.
  {
    check::Case c = varlen(DType::bf16, 128, {4500, 300, 4200, 7}, {4500, 290, 4300, 7}, 2, 1,
                           Causal::top_left);
    c.varlen_max_given = false;
    v.push_back(c);
  }
  v.push_back(many_short(DType::f16, 128, Causal::bottom_right));
  return v;
}

class Flash3Varlen : public ::testing::TestWithParam<check::Case> {};

TEST_P(Flash3Varlen, MatchesCudaMath) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!backend_built("cuda_math")) GTEST_SKIP() << "cuda_math not built in this binary";
  const check::Case& c = GetParam();
  flash3::set_last_forward_slot(-1);
  const check::Report r = check::run_case_against(c, "flash3", "cuda_math", Device::cuda(0), 7,
                                                  check::default_tolerance(c.dtype));
  ATTNKIT_EXPECT_CHECK_PASSES(r);
  if (!r.skipped) EXPECT_EQ(flash3::last_forward_slot(), flash3::kVarlenSlot);
}

INSTANTIATE_TEST_SUITE_P(Fwd, Flash3Varlen, ::testing::ValuesIn(varlen_cases()), CaseParamName{});

/// The static schedule (ATTNKIT_FLASH3_VARLEN_STATIC=1; the default is dynamic since session 24)
/// on mixed lengths, causal and not.
TEST(Flash3VarlenStatic, MatchesCudaMath) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!backend_built("cuda_math")) GTEST_SKIP() << "cuda_math not built in this binary";
  const ScopedEnv env("ATTNKIT_FLASH3_VARLEN_STATIC", "1");
  for (Causal cz : {Causal::none, Causal::bottom_right}) {
    const check::Case c =
        varlen(DType::bf16, 128, {1000, 1, 0, 257, 129, 64}, {700, 5, 3, 257, 300, 0}, 4, 2, cz);
    ATTNKIT_EXPECT_CHECK_PASSES(check::run_case_against(c, "flash3", "cuda_math", Device::cuda(0),
                                                        9, check::default_tolerance(c.dtype)));
  }
}

/// Backward cases (session 25): each sequence's keys and queries bounded by its own lengths, its
/// dQ rows in its own workspace rows (padded per sequence to 128), dK / dV rows stored only up
/// to its keys. Lengths 0 and 1, partial blocks, Sq != Sk per sequence, both causal alignments,
/// windows / softcap / ALiBi per sequence, GQA, BHSD with padded strides, many short sequences.
std::vector<check::Case> varlen_backward_cases() {
  std::vector<check::Case> v;
  for (DType dt : {DType::bf16, DType::f16}) {
    for (int64_t d : {64, 128, 256}) {
      for (Causal cz : {Causal::none, Causal::top_left, Causal::bottom_right}) {
        check::Case c =
            varlen(dt, d, {1000, 1, 0, 257, 129, 64}, {700, 5, 3, 257, 300, 0}, 4, 2, cz);
        c.backward = true;
        v.push_back(c);
      }
    }
  }
  // (D 256: plain calls on the RS layout, score mods on the split kMod kernel, both with kVarlen.)
  for (int64_t d : {64, 128, 256}) {
    check::Case c = varlen(DType::bf16, d, {600, 33, 384}, {700, 33, 200}, 4, 1, Causal::none);
    c.backward = true;
    for (const check::Case& m : score_mod_cases(c))
      v.push_back(m);
    // BHSD with padded strides, GQA 4.
    c = varlen(DType::bf16, d, {300, 129, 1}, {517, 128, 2}, 8, 2, Causal::bottom_right);
    c.backward = true;
    c.layout = check::Layout::bhsd;
    c.noncontiguous = true;
    v.push_back(c);
  }
  // Many short sequences next to a long one.
  {
    check::Case c = many_short(DType::f16, 128, Causal::none);
    c.backward = true;
    v.push_back(c);
    c.d = c.dv = 64;
    c.causal = Causal::bottom_right;
    v.push_back(c);
    c.d = c.dv = 256;
    v.push_back(c);
  }
  return v;
}

class Flash3VarlenBackward : public ::testing::TestWithParam<check::Case> {};

TEST_P(Flash3VarlenBackward, MatchesCudaMath) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!backend_built("cuda_math")) GTEST_SKIP() << "cuda_math not built in this binary";
  const check::Case& c = GetParam();
  ATTNKIT_EXPECT_CHECK_PASSES(check::run_case_against(c, "flash3", "cuda_math", Device::cuda(0), 11,
                                                      check::default_tolerance(c.dtype)));
}

INSTANTIATE_TEST_SUITE_P(Bwd, Flash3VarlenBackward, ::testing::ValuesIn(varlen_backward_cases()),
                         CaseParamName{});

/// D = 64 on 64-row query blocks (ATTNKIT_FLASH3_BWD_MOD_BM64=1; the default is 128-row).
TEST(Flash3VarlenBackwardBm64, MatchesCudaMath) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!backend_built("cuda_math")) GTEST_SKIP() << "cuda_math not built in this binary";
  const ScopedEnv env("ATTNKIT_FLASH3_BWD_MOD_BM64", "1");
  for (Causal cz : {Causal::none, Causal::bottom_right}) {
    check::Case c =
        varlen(DType::bf16, 64, {1000, 1, 0, 257, 129, 64}, {700, 5, 3, 257, 300, 0}, 4, 2, cz);
    c.backward = true;
    ATTNKIT_EXPECT_CHECK_PASSES(check::run_case_against(c, "flash3", "cuda_math", Device::cuda(0),
                                                        13, check::default_tolerance(c.dtype)));
  }
}

/// Varlen without score modifications runs the tuned structures' kVarlen builds; env
/// ATTNKIT_FLASH3_BWD_VARLEN_MOD=1 puts it on the score-mod kernel (as with modifications).
TEST(Flash3VarlenBackwardOnMod, MatchesCudaMath) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!backend_built("cuda_math")) GTEST_SKIP() << "cuda_math not built in this binary";
  const ScopedEnv env("ATTNKIT_FLASH3_BWD_VARLEN_MOD", "1");
  for (int64_t d : {64, 128}) {
    check::Case c = varlen(DType::bf16, d, {1000, 1, 0, 257, 129, 64}, {700, 5, 3, 257, 300, 0}, 4,
                           2, Causal::top_left);
    c.backward = true;
    ATTNKIT_EXPECT_CHECK_PASSES(check::run_case_against(c, "flash3", "cuda_math", Device::cuda(0),
                                                        17, check::default_tolerance(c.dtype)));
  }
}

/// D = 256's varlen backward (session 30) runs on the RS layout whatever
/// ATTNKIT_FLASH3_BWD_D256_LAYOUT says (the split layout has no plain varlen build): the same
/// answer with the switch set.
TEST(Flash3VarlenBackward256, SplitSwitchIgnored) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!backend_built("cuda_math")) GTEST_SKIP() << "cuda_math not built in this binary";
  const ScopedEnv env("ATTNKIT_FLASH3_BWD_D256_LAYOUT", "split");
  check::Case c = varlen(DType::bf16, 256, {100, 50, 200}, {100, 60, 130}, 2, 2, Causal::none);
  c.backward = true;
  ATTNKIT_EXPECT_CHECK_PASSES(check::run_case_against(c, "flash3", "cuda_math", Device::cuda(0), 3,
                                                      check::default_tolerance(c.dtype)));
}

}  // namespace
}  // namespace attnkit::testing
