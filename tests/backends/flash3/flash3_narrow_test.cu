// flash3's head dims 96 and 192 through the public API and the check harness, against the `math`
// oracle: partial tiles, Sq != Sk, GQA, both causal alignments, a window, softcap and ALiBi, BHSD
// with padded strides, f16 and bf16.
// Forward (session 25, launch.cuh kNarrow): the D 128 / 256 score-mod kernel with tensor maps of
// the call's D, so TMA zero-fills the missing columns, and an epilogue that stores only D
// columns; every case checks that the narrow kernel ran (kNarrowSlot).
// Backward (session 38, bwd_launch.cuh narrow_kv_floats): the D 128 / 256 backward kernels with
// the same maps, dK / dV through padded scratch and a copy of D columns, dQ converted over D
// columns; the same cases (forward, lse, dQ, dK, dV against the oracle) and a deterministic one
// run twice (bitwise equal).
// Varlen and masks at these head dims since session 38, in both passes (the forward's kNarrow
// kernel built with kVarVarlen / kVarMask; the backward's varlen and mask kernels through the
// scratch). The harness poisons every output before each run, so a column past D written as
// garbage, or a gradient column left unwritten, fails. A mask with softcap in the backward: at
// D 192 on the D 256 kernel (session 38), at D 96 on the D 128 kModMaskSoftcap (session 39).
#include <gtest/gtest.h>

#include <vector>

#include "backends/flash3/bwd_launch.hpp"
#include "backends/flash3/launch.hpp"
#include "check/check.hpp"
#include "common/case_printing.hpp"
#include "common/check_expect.hpp"
#include "common/cuda_skip.hpp"

namespace attnkit::testing {
namespace {

std::vector<check::Case> narrow_cases(bool backward) {
  std::vector<check::Case> v;
  for (DType dt : {DType::bf16, DType::f16}) {
    for (int64_t d : {96, 192}) {
      v.push_back(check::shape_case(dt, 2, 300, 517, 4, 2, d, Causal::none, backward));
      v.push_back(check::shape_case(dt, 1, 517, 300, 4, 1, d, Causal::bottom_right, backward));
      check::Case c = check::shape_case(dt, 2, 257, 257, 2, 2, d, Causal::top_left, backward);
      c.window_left = 64;
      c.softcap = 30.0;
      c.alibi = true;
      v.push_back(c);
      c = check::shape_case(dt, 1, 200, 333, 4, 2, d, Causal::none, backward);
      c.layout = check::Layout::bhsd;
      c.noncontiguous = true;
      v.push_back(c);
      // Session 38: varlen (mixed lengths, an empty sequence, GQA) and masks (bool broadcast over
      // batch and heads with causal; additive with a window).
      c = check::varlen_shape_case(dt, {130, 0, 257, 64}, {200, 17, 257, 1}, 4, 2, d,
                                   Causal::bottom_right, backward);
      v.push_back(c);
      c = check::shape_case(dt, 2, 200, 333, 4, 2, d, Causal::top_left, backward);
      c.mask = check::MaskCase::keep_bool;
      c.mask_broadcast = 3;
      v.push_back(c);
      c = check::shape_case(dt, 1, 300, 300, 2, 1, d, Causal::none, backward);
      c.mask = check::MaskCase::additive;
      c.window_left = 90;
      c.window_right = 10;
      v.push_back(c);
      if (backward) {  // a mask with softcap (D 96: kModMaskSoftcap; D 192: the D 256 kMod)
        c = check::shape_case(dt, 1, 190, 260, 2, 2, d, Causal::none, true);
        c.mask = check::MaskCase::keep_bool;
        c.softcap = 30.0;
        v.push_back(c);
        c.mask = check::MaskCase::additive;
        c.causal = Causal::top_left;
        v.push_back(c);
      }
      if (backward) {
        // Softcap alone (its own backward kernel kind), a window alone (another), and the
        // deterministic dQ order, run twice and compared bitwise by the harness.
        c = check::shape_case(dt, 1, 384, 384, 2, 1, d, Causal::top_left, true);
        c.softcap = 20.0;
        v.push_back(c);
        c = check::shape_case(dt, 2, 260, 700, 2, 2, d, Causal::none, true);
        c.window_left = 100;
        c.window_right = 30;
        v.push_back(c);
        c = check::shape_case(dt, 2, 333, 333, 4, 2, d, Causal::bottom_right, true);
        c.deterministic = true;
        v.push_back(c);
      }
    }
  }
  return v;
}

class Flash3Narrow : public ::testing::TestWithParam<check::Case> {};

TEST_P(Flash3Narrow, MatchesOracle) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  flash3::set_last_forward_slot(-1);
  const check::Report r = check::run_case(GetParam(), "flash3", Device::cuda(0), 19);
  ATTNKIT_EXPECT_CHECK_PASSES(r);
  if (!r.skipped) EXPECT_EQ(flash3::last_forward_slot(), flash3::kNarrowSlot);
}

INSTANTIATE_TEST_SUITE_P(Fwd, Flash3Narrow, ::testing::ValuesIn(narrow_cases(false)),
                         CaseParamName{});
INSTANTIATE_TEST_SUITE_P(Bwd, Flash3Narrow, ::testing::ValuesIn(narrow_cases(true)),
                         CaseParamName{});

/// D 96's two dK / dV routes (session 38, bwd_launch.cuh narrow_kv_floats): a plain call (every
/// Bwd case above; at any length since session 45, up to 4096 keys before) stores through TMA maps
/// of 96 columns (+tmakv), which clip the rest of each 128-column row; with +tmakv off
/// (BwdTuning::tmakv = 0, or dK / dV that no map can describe) the register epilogue writes
/// 128-column rows into scratch and a copy kernel takes 96 of them. (The score-mod and
/// deterministic cases take the scratch route either way.)
class Flash3NarrowRegisterEpilogue : public ::testing::TestWithParam<check::Case> {};

TEST_P(Flash3NarrowRegisterEpilogue, MatchesOracle) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  flash3::BwdTuning& t = flash3::bwd_tuning();
  const int old = t.tmakv;
  t.tmakv = 0;
  const check::Report r = check::run_case(GetParam(), "flash3", Device::cuda(0), 23);
  t.tmakv = old;
  ATTNKIT_EXPECT_CHECK_PASSES(r);
}

std::vector<check::Case> d96_backward_cases() {
  std::vector<check::Case> v;
  for (const check::Case& c : narrow_cases(true))
    if (c.d == 96) v.push_back(c);
  return v;
}
INSTANTIATE_TEST_SUITE_P(Bwd, Flash3NarrowRegisterEpilogue,
                         ::testing::ValuesIn(d96_backward_cases()), CaseParamName{});

}  // namespace
}  // namespace attnkit::testing
