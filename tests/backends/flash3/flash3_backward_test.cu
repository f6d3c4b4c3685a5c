// flash3 backward (dq, dk, dv) against the `math` oracle through the check harness, on shapes
// chosen for the backward kernel's structure (bwd_traits.hpp; since session 24 also softcap, ALiBi
// and windows, Flash3BackwardScoreMod): several 128-key CTAs and 64-row
// query blocks with partial last blocks, Sq != Sk with both causal alignments (Sq > Sk bottom-
// right has rows with no visible key: their dq must be 0, not NaN), GQA/MQA (one CTA loops over
// the group's q heads), BHSD layout, D = 64, 128 and 256 (session 26: 64-key CTAs,
// bwd_kernel_d256.cuh), bf16 and f16. The hostile cases (flash3_hostile_test.cu) add lengths 0/1
// and the small odd shapes.
//
// On an sm90 device these cases must RUN: a skip there fails (so a capability regression cannot
// turn the test green). Outputs are poisoned before each run by the harness; NaN never passes.
// Also checked: what explain() says for backward calls flash3 declares unsupported.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "attnkit/attention.hpp"
#include "attnkit/backend_info.hpp"
#include "backends/flash3/bwd_kernel.cuh"
#include "backends/flash3/bwd_launch.cuh"
#include "backends/flash3/bwd_launch.hpp"
#include "check/check.hpp"
#include "check/execute.hpp"
#include "check/inputs.hpp"
#include "common/case_printing.hpp"
#include "common/check_expect.hpp"
#include "common/cuda_skip.hpp"
#include "common/scoped_env.hpp"
#include "device_views.hpp"

namespace attnkit::testing {
namespace {

/// env_variant(d, v) on `spec` as ATTNKIT_FLASH3_BWD_VARIANT, the variable restored afterwards:
/// run_backward reads it once, at its first call, so no test may leave it changed.
bool parse_variant(const char* spec, int d, flash3::bwd::Variant& v) {
  const char* prev = std::getenv("ATTNKIT_FLASH3_BWD_VARIANT");
  const std::string saved = prev != nullptr ? prev : "";
  setenv("ATTNKIT_FLASH3_BWD_VARIANT", spec, 1);
  const bool ok = flash3::bwd::env_variant(d, v);
  if (prev != nullptr)
    setenv("ATTNKIT_FLASH3_BWD_VARIANT", saved.c_str(), 1);
  else
    unsetenv("ATTNKIT_FLASH3_BWD_VARIANT");
  return ok;
}

/// One backward case (dv = d).
check::Case bwd_case(DType dt, int64_t b, int64_t sq, int64_t sk, int64_t hq, int64_t hkv,
                     int64_t d, Causal cz, check::Layout layout = check::Layout::bshd) {
  check::Case c = check::shape_case(dt, b, sq, sk, hq, hkv, d, cz, /*backward=*/true);
  c.layout = layout;
  return c;
}

std::vector<check::Case> backward_cases() {
  std::vector<check::Case> v;
  auto add = [&](DType dt, int64_t b, int64_t sq, int64_t sk, int64_t hq, int64_t hkv, int64_t d,
                 Causal cz, check::Layout layout = check::Layout::bshd) {
    v.push_back(bwd_case(dt, b, sq, sk, hq, hkv, d, cz, layout));
  };
  for (DType dt : {DType::bf16, DType::f16}) {
    for (int64_t d : {64, 128, 256}) {  // (256: bwd_kernel_d256.cuh, session 26)
      // Partial key and query blocks, Sq < Sk, every causal alignment, GQA 2.
      for (Causal cz : {Causal::none, Causal::top_left, Causal::bottom_right})
        add(dt, 1, 300, 517, 4, 2, d, cz);
      // Sq > Sk: bottom-right leaves the first Sq - Sk rows with no visible key.
      add(dt, 2, 517, 300, 2, 1, d, Causal::bottom_right);
      add(dt, 2, 517, 300, 2, 1, d, Causal::top_left);
      // Exact block multiples (no partial tiles), no GQA.
      add(dt, 1, 256, 384, 2, 2, d, Causal::none);
    }
  }
  // MQA (8 q heads per CTA), long-ish causal, D = 64.
  add(DType::bf16, 1, 1000, 1000, 8, 1, 64, Causal::bottom_right);
  // BHSD layout, GQA 2, D = 128, top-left causal with Sq < Sk.
  add(DType::bf16, 2, 200, 333, 4, 2, 128, Causal::top_left, check::Layout::bhsd);
  // Longer non-causal D = 128 (8 key blocks x 12 query blocks per head).
  add(DType::bf16, 1, 777, 1024, 2, 1, 128, Causal::none);
  add(DType::f16, 1, 1024, 777, 2, 2, 128, Causal::bottom_right);
  // Causal with exact block multiples (session 5, kMaskHoist): only the diagonal items take the
  // masked copy of the P^T loop, with no key-padding mask next to the causal one.
  add(DType::bf16, 1, 512, 512, 2, 2, 64, Causal::top_left);
  add(DType::bf16, 1, 512, 512, 2, 2, 128, Causal::top_left);
  // D = 256 (64-key CTAs; MatchesOracle runs the RS layout, MatchesOracleD256Split the split
  // one): MQA causal over many key blocks, a longer non-causal GQA call, exact multiples.
  add(DType::bf16, 1, 1000, 1000, 8, 1, 256, Causal::bottom_right);
  add(DType::bf16, 1, 777, 1024, 4, 2, 256, Causal::none);
  add(DType::f16, 1, 512, 512, 2, 2, 256, Causal::top_left);
  return v;
}

class Flash3Backward : public ::testing::TestWithParam<check::Case> {};

/// Runs the case on flash3 and `reference` (the CPU oracle by default; "cuda_math" for lengths too
/// long for it); on sm90 with the head dim built it must run and pass.
void expect_backward_passes(const check::Case& c, const std::string& reference = "math",
                            uint64_t seed = 23) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!device_is_sm90()) GTEST_SKIP() << "device 0 is not sm90 (flash3 needs sm_90a)";
  if (!flash3_built_with(static_cast<int>(c.d)))
    GTEST_SKIP() << "flash3 built without head dim " << c.d;
  const check::Report r = check::run_case_against(c, "flash3", reference, Device::cuda(0), seed,
                                                  check::default_tolerance(c.dtype));
  ASSERT_FALSE(r.skipped) << "flash3 must run this backward case on sm90: " << r.detail;
  EXPECT_TRUE(r.pass) << r.case_name << ": " << r.detail << "\n  " << describe_metrics(r);
  // The gradients were compared (not only the forward).
  for (const char* g : {"dq", "dk", "dv"})
    EXPECT_TRUE(std::any_of(r.metrics.begin(), r.metrics.end(),
                            [&](const check::Metric& m) { return m.what == g; }))
        << g << " missing from the report";
}

/// Sets flash3::bwd_tuning() (every knob; -1 = the default variant's choice) for one scope.
struct TuningScope {
  flash3::BwdTuning saved;
  TuningScope(int dq_mode, int decoupled, int block_m = -1, int dq_first = -1, int stat_mode = -1,
              int kv_regs = -1, int dq_vec4 = -1, int item_rot = -1, int wait_ns = -1,
              int dv_early = -1, int prep_vec = -1, int conv_vec = -1, int idiet = -1,
              int tmakv = -1)
      : saved(flash3::bwd_tuning()) {
    flash3::bwd_tuning().dq_mode = dq_mode;
    flash3::bwd_tuning().decoupled = decoupled;
    flash3::bwd_tuning().block_m = block_m;
    flash3::bwd_tuning().dq_first = dq_first;
    flash3::bwd_tuning().stat_mode = stat_mode;
    flash3::bwd_tuning().kv_regs = kv_regs;
    flash3::bwd_tuning().dq_vec4 = dq_vec4;
    flash3::bwd_tuning().item_rot = item_rot;
    flash3::bwd_tuning().wait_ns = wait_ns;
    flash3::bwd_tuning().dv_early = dv_early;
    flash3::bwd_tuning().prep_vec = prep_vec;
    flash3::bwd_tuning().conv_vec = conv_vec;
    flash3::bwd_tuning().idiet = idiet;
    flash3::bwd_tuning().tmakv = tmakv;
  }
  ~TuningScope() { flash3::bwd_tuning() = saved; }
};

/// Sets bwd_tuning().d256_layout (0 split, 1 RS) for one scope.
struct D256LayoutScope {
  int saved = flash3::bwd_tuning().d256_layout;
  explicit D256LayoutScope(int layout) { flash3::bwd_tuning().d256_layout = layout; }
  ~D256LayoutScope() { flash3::bwd_tuning().d256_layout = saved; }
};

/// Case c against the oracle on the two non-default lse2 / delta sources a coupled dQ-first knob
/// (+idiet, +tmakv) is built for, under the tuning scope scope(dq_mode, block_m, stat_mode)
/// returns: D = 128 (64-row blocks, default kStat 3) bulk dQ + kStat 2, then atomic dQ + kStat 0;
/// D = 64 (128-row blocks, default kStat 2 since session 43) atomic dQ + kStat 0 (the default's
/// kernel before session 43, which its GPU run of these tests passed), then the shuffles
/// (kStat 1). (D = 64's bulk path runs in MatchesOracleTmaKV with the default source.)
template <typename Scope>
void expect_other_sources_pass(const check::Case& c, const Scope& scope) {
  const bool d128 = c.d == 128;
  const int block_m = d128 ? 64 : 128;
  {
    const TuningScope t = scope(d128 ? 1 : 0, block_m, d128 ? 2 : 0);
    expect_backward_passes(c);
  }
  const TuningScope t2 = scope(0, block_m, d128 ? 0 : 1);
  expect_backward_passes(c);
}

/// Case c twice on the same inputs (seed 23), under the tuning scope tune(0) returns and then
/// under tune(1)'s: the forward must be bitwise reproducible (else the comparison is void) and
/// dK / dV (no atomics) bitwise equal. `what` names the knob in the failure messages.
template <typename Tune>
void expect_dk_dv_bitwise_equal(const check::Case& c, const Tune& tune, const std::string& what) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!device_is_sm90()) GTEST_SKIP() << "device 0 is not sm90 (flash3 needs sm_90a)";
  if (!flash3_built_with(static_cast<int>(c.d)))
    GTEST_SKIP() << "flash3 built without head dim " << c.d;
  const check::detail::Inputs in = check::detail::build_inputs(c, 23);
  auto run = [&](int which) {
    const TuningScope t = tune(which);
    std::string stage;
    return check::detail::execute(c, in, "flash3", Device::cuda(0), stage);
  };
  const check::detail::Outputs a = run(0), b = run(1);
  ASSERT_TRUE(a.has_grads && b.has_grads);
  ASSERT_EQ(a.out.bytes, b.out.bytes) << "forward not bitwise reproducible: comparison void";
  ASSERT_EQ(a.lse.bytes, b.lse.bytes) << "forward not bitwise reproducible: comparison void";
  EXPECT_TRUE(a.dk.bytes == b.dk.bytes) << "dK differs with " << what;
  EXPECT_TRUE(a.dv.bytes == b.dv.bytes) << "dV differs with " << what;
}

// Default variant per call (bwd_launch.cuh default_variant, session 5: D = 64 128-row blocks +
// atomics + dQ-first, causal too (kD64CausalM128; session 4: causal decoupled + atomics + K/V in
// registers) + lse2 / delta prefetched (stat 2, session 43); D = 128 coupled + atomics +
// dQ-first + prefetched lse2/delta with the late refill
// (+pfl, session 6), on 80-row blocks non-causal (session 44; causal from 4k keys since session 46,
// 8k before; no case here reaches either); float4 dQ layout).
TEST_P(Flash3Backward, MatchesOracle) {
  TuningScope t(-1, -1);
  expect_backward_passes(GetParam());
}

// The D 256 backward's split layout (bwd_kernel_d256.cuh: S^T / dP^T split by queries; the
// plain calls' default until session 29, the score mods' kernel still), on the D 256 cases. The
// default (the RS layout, bwd_d256_rs.cuh) runs in MatchesOracle.
TEST_P(Flash3Backward, MatchesOracleD256Split) {
  if (GetParam().d != 256) GTEST_SKIP() << "the split layout is the D 256 kernel's";
  const D256LayoutScope t(0);
  expect_backward_passes(GetParam());
}

// The alternatives kept for A/B measurements and as fallbacks, on the same cases (a knob set
// here overrides that field of the default variant): each dQ path, the decoupled and coupled
// warpgroups with either GEMM order, the 128-row query blocks (D = 64 only: skipped for D = 128)
// with each dQ path and lse2 / delta source, and the prefetched lse2 / delta.
TEST_P(Flash3Backward, MatchesOracleDqAtomics) {
  TuningScope t(0, -1);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleDqBulk) {
  TuningScope t(1, -1);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleDecoupled) {
  TuningScope t(-1, 1, 64, 0, 0, 0);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleCoupled) {
  TuningScope t(-1, 0, 64, 0, 0);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleCoupledDqFirst) {
  TuningScope t(1, 0, 64, 1, 0);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleDecoupledDqFirst) {
  if (GetParam().d != 64) GTEST_SKIP() << "dQ-first with decoupled warpgroups: D = 64 only";
  TuningScope t(0, 1, 64, 1, 0);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleBm128) {
  if (GetParam().d != 64) GTEST_SKIP() << "128-row query blocks: D = 64 only";
  TuningScope t(0, -1, 128, 0, 0);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleBm128DqFirstBulk) {
  if (GetParam().d != 64) GTEST_SKIP() << "128-row query blocks: D = 64 only";
  TuningScope t(1, -1, 128, 1, 0);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleBm128DqFirstShfl) {
  if (GetParam().d != 64) GTEST_SKIP() << "128-row query blocks: D = 64 only";
  TuningScope t(0, -1, 128, 1, 1);
  expect_backward_passes(GetParam());
}
// Session 44: 80-row query blocks at D = 128 (bwd_traits.hpp kDqTrans: S^T / dP^T m64n80, dS
// stored [query][key] by stmatrix.trans, dQ^T = K^T dS, its own workspace order and conversion
// 3t), with the STG and the TMA dK / dV epilogues, on every D = 128 case (partial query blocks of
// 80: Sq 300, 517, 777, 1024; causal both ways, rows with no visible key, GQA, BHSD, f16) and a
// head dim of 96 on the same kernel.
TEST_P(Flash3Backward, MatchesOracleBm80) {
  if (GetParam().d != 128) GTEST_SKIP() << "80-row query blocks: D = 128 only";
  for (const int tmakv : {0, 1}) {
    TuningScope t(-1, -1, 80, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, tmakv);
    expect_backward_passes(GetParam());
  }
}
TEST(Flash3BackwardBm80, HeadDim96MatchesOracle) {
  for (const Causal cz : {Causal::none, Causal::bottom_right})
    for (const int tmakv : {0, 1}) {
      TuningScope t(-1, -1, 80, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, tmakv);
      expect_backward_passes(bwd_case(DType::bf16, 1, 300, 517, 4, 2, 96, cz));
    }
}
// The hostile lengths (check::hostile_cases runs them at D 64 only) at D = 128 around the 80-row
// block: length 1, odd ones, 79 / 80 / 81 / 161 (a last block of 1 row); the default variant (80
// rows non-causal, 64 causal below 4k keys) and 80 rows forced; bf16, GQA 2. Length 0 is not
// here: a [2, 0, 4, 128] tensor's b-stride is 0, which flash3 declares unsupported (TMA), so the
// dispatcher falls back (Flash3Hostile shows those skips). Added after session 44's GPU runs; its
// first run (session 45) had lengths 0 and failed on exactly that.
TEST(Flash3BackwardBm80, HostileLengthsMatchOracle) {
  struct L {
    int64_t sq, sk;
  };
  for (const L l :
       {L{1, 1}, L{1, 80}, L{80, 1}, L{13, 31}, L{79, 67}, L{80, 80}, L{81, 161}, L{161, 81}})
    for (const Causal cz : {Causal::none, Causal::top_left, Causal::bottom_right})
      for (const int bm : {-1, 80}) {
        TuningScope t(-1, -1, bm);
        SCOPED_TRACE("block_m " + std::to_string(bm));
        expect_backward_passes(bwd_case(DType::bf16, 2, l.sq, l.sk, 4, 2, 128, cz));
      }
}
// D 128's default structures over several waves of main-kernel CTAs on 132 SMs (512, 512, 512 and
// 256 CTAs; the cases above fit in one), against cuda_math, three seeds each: 80 rows + 3t
// non-causal, 64 rows + 3w causal, GQA 1 and 4, partial last query blocks. With
// ATTNKIT_FLASH3_BWD_EARLY_CONV=1 (bwd_traits.hpp) these are the calls whose conversion runs beside
// the main kernel's last wave (session 53 helper).
TEST(Flash3BackwardMultiWave, MatchesCudaMath) {
  if (!backend_built("cuda_math")) GTEST_SKIP() << "cuda_math not built in this binary";
  struct S {
    int64_t b, sq, sk, hq, hkv;
    Causal cz;
  };
  for (const S x :
       {S{4, 1024, 1024, 16, 16, Causal::none}, S{4, 1024, 1024, 16, 16, Causal::top_left},
        S{4, 2000, 2000, 32, 8, Causal::none}, S{8, 777, 1024, 16, 4, Causal::bottom_right}})
    for (const uint64_t seed : {23u, 24u, 25u}) {
      SCOPED_TRACE("seed " + std::to_string(seed));
      flash3::last_backward_early_conv() = -7;
      expect_backward_passes(bwd_case(DType::bf16, x.b, x.sq, x.sk, x.hq, x.hkv, 128, x.cz),
                             "cuda_math", seed);
      // (The switch on: these calls must have taken the early conversion, or the test is void.)
      if (!::testing::Test::IsSkipped() && flash3_built_with(128))
        EXPECT_EQ(flash3::last_backward_early_conv(), flash3::bwd::kBwdEarlyConv ? 1 : 0);
    }
}
TEST_P(Flash3Backward, MatchesOraclePrefetch) {
  TuningScope t(-1, -1, -1, -1, 2);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleKVRegs) {
  if (GetParam().d != 64) GTEST_SKIP() << "K / V in registers: D = 64 only";
  TuningScope t(0, 1, 64, 0, 0, 1);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleKVRegsBulkDqFirst) {
  if (GetParam().d != 64) GTEST_SKIP() << "K / V in registers: D = 64 only";
  TuningScope t(1, 1, 64, 1, 0, 1);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleDecoupledBulkPrefetch) {
  TuningScope t(1, 1, 64, 0, 2);
  expect_backward_passes(GetParam());
}

// Session 4: the float4 dQ workspace layout and the rotated item order, on the default variant
// of every case (D = 64 non-causal: 128-row blocks + bulk; D = 64 causal: decoupled + atomics;
// D = 128: coupled + atomics), on the other dQ path, and on decoupled D = 64 with K / V in
// registers.
TEST_P(Flash3Backward, MatchesOracleV4Rot) {
  TuningScope t(-1, -1, -1, -1, -1, -1, 1, 1);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleV4RotOtherDq) {
  const bool bulk_default = GetParam().d == 64 && GetParam().causal == Causal::none;
  TuningScope t(bulk_default ? 0 : 1, -1, -1, -1, -1, -1, 1, 1);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleNoV4NoRot) {  // the session-3 float2 layout and item order
  TuningScope t(-1, -1, -1, -1, -1, -1, 0, 0);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleRot) {
  TuningScope t(-1, -1, -1, -1, -1, -1, 0, 1);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleKVRegsV4Rot) {
  if (GetParam().d != 64) GTEST_SKIP() << "K / V in registers: D = 64 only";
  TuningScope t(0, 1, 64, 0, 0, 1, 1, 1);
  expect_backward_passes(GetParam());
}

// Session 5: the default variant of every case with the producer's try_wait suspend hint (+sl),
// and (D = 64) with it on the other two structures; a missed wake-up would hang, not pass.
TEST_P(Flash3Backward, MatchesOracleWaitHint) {
  TuningScope t(-1, -1, -1, -1, -1, -1, -1, -1, static_cast<int>(flash3::bwd::kProducerWaitNs));
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleWaitHintOther) {
  if (GetParam().d != 64) GTEST_SKIP() << "D = 64: the other default structure";
  const bool m128_default = GetParam().causal == Causal::none;
  TuningScope t(0, m128_default ? 1 : 0, m128_default ? 64 : 128, m128_default ? 0 : 1, -1, -1, -1,
                -1, static_cast<int>(flash3::bwd::kProducerWaitNs));
  expect_backward_passes(GetParam());
}

// Session 5 round 2: dV issued before the dS^T stretch (+dve, bwd_kernel.cuh kDvEarly) on every
// case's default variant (D = 64: the 128-row kernel, whose dS^T takes P^T from its 16-bit copy),
// and on the other coupled dQ-first structures: D = 128 with the direct lse2 / delta and the bulk
// dQ path, D = 64 with 64-row blocks, and the 128-row kernel's prefetched and shuffled sources.
TEST_P(Flash3Backward, MatchesOracleDvEarly) {
  TuningScope t(-1, -1, -1, -1, -1, -1, -1, -1, -1, 1);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleDvEarlyOther) {
  const bool d64 = GetParam().d == 64;
  TuningScope t(1, 0, 64, 1, 0, -1, -1, -1, -1, 1);
  expect_backward_passes(GetParam());
  if (d64) {
    TuningScope t2(1, 0, 128, 1, 2, -1, -1, -1, -1, 1);
    expect_backward_passes(GetParam());
    TuningScope t3(0, 0, 128, 1, 1, -1, -1, -1, -1, 1);
    expect_backward_passes(GetParam());
  }
}
// The late prefetch refill (+pfl, kStat 3: coupled 64-row dQ-first only) with and without +dve,
// atomics and bulk dQ.
TEST_P(Flash3Backward, MatchesOraclePrefetchLate) {
  TuningScope t(0, 0, 64, 1, 3, -1, -1, -1, -1, 0);
  expect_backward_passes(GetParam());
  TuningScope t2(1, 0, 64, 1, 3, -1, -1, -1, -1, 1);
  expect_backward_passes(GetParam());
}
// With 64-row blocks +dve changes only the issue order: same arithmetic, same per-accumulator
// order, so dK and dV (no atomics) must be bitwise equal to the kernel without it (D = 128: the
// causal default, coupled + dQ-first + prefetched lse2 / delta, on 64-row blocks also where the
// default takes 80 (session 44: no +dve there); D = 64: coupled 64-row + dQ-first). The forward
// runs again for each call and is bitwise reproducible (one CTA per tile, no split).
TEST_P(Flash3Backward, DvEarlyDkDvBitwiseEqual) {
  const check::Case& c = GetParam();
  const int bm = 64, dec = c.d == 64 ? 0 : -1, dqf = c.d == 64 ? 1 : -1;
  expect_dk_dv_bitwise_equal(
      c, [&](int dv_early) { return TuningScope(-1, dec, bm, dqf, -1, -1, -1, -1, -1, dv_early); },
      "+dve");
}

// Session 6 (helper f3bwd8): the pre / post kernels on every case's default variant (the BHSD
// case included): the scalar preprocess 1 (the default is 1v since session 6), the 16-byte dQ
// conversion 3v (+vcv, off by default) with 1v, and with the float2 dQ layout (vectorised
// preprocess, scalar conversion: 3v needs the float4 layout) on the bulk path.
TEST_P(Flash3Backward, MatchesOraclePrepVec) {
  {
    TuningScope t(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 0, 0);
    expect_backward_passes(GetParam());
  }
  {
    TuningScope t(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, 1);
    expect_backward_passes(GetParam());
  }
  TuningScope t2(1, -1, -1, -1, -1, -1, 0, -1, -1, -1, 1, 1);
  expect_backward_passes(GetParam());
}

// Session 7 (helper f3bwd11): the item loop without per-item divisions (+idiet, bwd_kernel.cuh
// kIdiet: the (q head, query block) walk and workspace row carried from item to item, the mask test
// hoisted) on every case's default variant (D = 128: coupled + dQ-first + kStat 3; D = 64: the
// 128-row kernel, lse2 / delta prefetched, kStat 2), with the rotated item order (+rot: the walk
// wraps from the group's last item to its first), and on the other sources it is built for: D =
// 128 kStat 2 with the bulk dQ path and the direct loads (kStat 0); D = 64 128-row direct loads
// (kStat 0) and the shuffles.
// The cases cover GQA groups (h4x2), causal top-left / bottom-right (m_begin > 0), Sq and Sk not
// multiples of the blocks, Sq > Sk and Sq < Sk.
TEST_P(Flash3Backward, MatchesOracleIdiet) {
  {
    TuningScope t(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1);
    expect_backward_passes(GetParam());
  }
  TuningScope t2(-1, -1, -1, -1, -1, -1, -1, 1, -1, -1, -1, -1, 1);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleIdietOther) {
  expect_other_sources_pass(GetParam(), [](int dq, int block_m, int stat) {
    return TuningScope(dq, 0, block_m, 1, stat, -1, -1, -1, -1, -1, -1, -1, 1);
  });
}
// +idiet visits the same items in the same order with the same addresses and masks: dK and dV (no
// atomics) must be bitwise equal to the kernel without it, for the default variant of every case
// (D = 128 on 64-row blocks: the 80-row kernel is built with the diet only) and with the rotated
// item order (the cursor's wrap to the first item).
TEST_P(Flash3Backward, IdietDkDvBitwiseEqual) {
  const int bm = GetParam().d == 128 ? 64 : -1;
  for (const int rot : {-1, 1})
    expect_dk_dv_bitwise_equal(
        GetParam(),
        [&](int idiet) {
          return TuningScope(-1, -1, bm, -1, -1, -1, -1, rot, -1, -1, -1, -1, idiet);
        },
        "+idiet (rot = " + std::to_string(rot) + ")");
}

// Session 9 (helper f3bwd13): the dK / dV epilogue through shared memory + TMA stores (+tmakv,
// bwd_kernel.cuh kTmaKV: each warp stmatrix-es its 16 rows of dK into its WG's dQ stage and of dV
// into its WG's V rows, lane 0 TMA-stores them, rows >= Sk clipped by the maps) on every case's
// default variant (D = 128: coupled + dQ-first + idiet + kStat 3; D = 64: the 128-row kernel),
// with the rotated item order, and with the bulk dQ path (its stage is the dK staging: the WG
// barrier after the last reduce); and on the other sources it is built for: D = 128 kStat 2 + bulk
// and kStat 0; D = 64 128-row kStat 0 and the shuffles. The cases cover partial key blocks
// (warps wholly past Sk issue no store, the one across it is clipped), CTAs with no item (causal
// top-left, Sq < Sk: dK = dV = 0 stored through the same path), GQA, BHSD.
TEST_P(Flash3Backward, MatchesOracleTmaKV) {
  {
    TuningScope t(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1);
    expect_backward_passes(GetParam());
  }
  {
    TuningScope t(-1, -1, -1, -1, -1, -1, -1, 1, -1, -1, -1, -1, -1, 1);
    expect_backward_passes(GetParam());
  }
  TuningScope t2(1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1);
  expect_backward_passes(GetParam());
}
TEST_P(Flash3Backward, MatchesOracleTmaKVOther) {
  // (D = 64: the epilogue's kernels for the other sources are built without the diet, which is
  // D 64's default since session 45.)
  const int idiet = GetParam().d == 64 ? 0 : -1;
  expect_other_sources_pass(GetParam(), [idiet](int dq, int block_m, int stat) {
    return TuningScope(dq, 0, block_m, 1, stat, -1, -1, -1, -1, -1, -1, -1, idiet, 1);
  });
}
// +tmakv stores the same 16-bit values (stage_acc_rows: the STG path's products and pack2) to the
// same rows: dK and dV must be bitwise equal to the default's, with the atomic and the bulk dQ
// path.
TEST_P(Flash3Backward, TmaKVDkDvBitwiseEqual) {
  for (const int dq : {-1, 1})
    expect_dk_dv_bitwise_equal(
        GetParam(),
        [&](int tmakv) {
          return TuningScope(dq, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, tmakv);
        },
        "+tmakv (dq_mode = " + std::to_string(dq) + ")");
}

// Session 45: the item diet and the TMA dK / dV epilogue forced in each combination on every
// case (D = 64: the 128-row kernel with both, built for kStat 2 only, the default since session
// 45; with the diet alone; with the epilogue alone, the 1k default before; D = 128 on 64 / 80
// rows as the case's default, where the epilogue needs the diet), and the epilogue's dK / dV
// bitwise equal to the STG one's under the diet.
TEST_P(Flash3Backward, MatchesOracleIdietTmaKV) {
  if (GetParam().d == 256) GTEST_SKIP() << "D = 256: no item diet";
  for (const auto [idiet, tmakv] : {std::pair{1, 1}, std::pair{1, 0}, std::pair{0, 1}}) {
    TuningScope t(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, idiet, tmakv);
    SCOPED_TRACE("idiet " + std::to_string(idiet) + " tmakv " + std::to_string(tmakv));
    expect_backward_passes(GetParam());
  }
}
TEST_P(Flash3Backward, IdietTmaKVDkDvBitwiseEqual) {
  if (GetParam().d == 256) GTEST_SKIP() << "D = 256: no item diet";
  expect_dk_dv_bitwise_equal(
      GetParam(),
      [&](int tmakv) {
        return TuningScope(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1, tmakv);
      },
      "+tmakv under +idiet");
}

INSTANTIATE_TEST_SUITE_P(Cases, Flash3Backward, ::testing::ValuesIn(backward_cases()),
                         CaseParamName{});

// ---- softcap, ALiBi, sliding window (session 24, bwd_kernel.cuh kMod) ------------------------

/// Backward cases with score modifications. Softcap 1 and 5 put the scaled scores (~N(0, 1) here)
/// well into tanh's curve, so 1 - t^2 is far from 1 and a missing or wrong derivative fails;
/// windows on either edge, both, with causal, Sq != Sk both ways (empty rows); ALiBi [Hq] and
/// [B, Hq] slopes; everything at once; GQA.
std::vector<check::Case> score_mod_backward_cases() {
  std::vector<check::Case> v;
  for (DType dt : {DType::bf16, DType::f16}) {
    for (int64_t d : {64, 128, 256}) {  // (256: bwd_kernel_d256.cuh kMod, session 26)
      check::Case c = bwd_case(dt, 1, 300, 517, 4, 2, d, Causal::none);
      c.softcap = 1.0;
      v.push_back(c);
      c.causal = Causal::bottom_right;
      c.softcap = 5.0;
      v.push_back(c);
      c = bwd_case(dt, 1, 517, 300, 2, 1, d, Causal::bottom_right);
      c.window_left = 100;
      c.window_right = 20;
      v.push_back(c);
      c = bwd_case(dt, 1, 300, 517, 4, 2, d, Causal::none);
      c.window_left = 64;  // left edge only
      v.push_back(c);
      c.window_left = -1;
      c.window_right = 0;  // right edge only (the diagonal, bottom-right aligned)
      v.push_back(c);
      c = bwd_case(dt, 2, 200, 333, 4, 2, d, Causal::top_left);
      c.alibi = true;
      c.alibi_per_batch = true;
      v.push_back(c);
    }
  }
  for (int64_t d : {64, 128, 256}) {
    check::Case c = bwd_case(DType::bf16, 1, 777, 1024, 4, 1, d, Causal::bottom_right);
    c.softcap = 2.0;
    c.window_left = 128;
    c.window_right = 0;
    c.alibi = true;
    v.push_back(c);
    c = bwd_case(DType::bf16, 2, 256, 384, 2, 2, d, Causal::none, check::Layout::bhsd);
    c.softcap = 3.0;
    c.alibi = true;
    v.push_back(c);
  }
  return v;
}

class Flash3BackwardScoreMod : public ::testing::TestWithParam<check::Case> {};

TEST_P(Flash3BackwardScoreMod, MatchesOracle) {
  TuningScope t(-1, -1);
  expect_backward_passes(GetParam());
}

// D = 64 runs 128-row query blocks by default; ATTNKIT_FLASH3_BWD_MOD_BM64=1 the 64-row kernel
// (D = 128's structure; kept for A/Bs).
TEST_P(Flash3BackwardScoreMod, MatchesOracleBm64) {
  if (GetParam().d != 64) GTEST_SKIP() << "D = 128 runs 64-row blocks by default (above)";
  const ScopedEnv env("ATTNKIT_FLASH3_BWD_MOD_BM64", "1");
  TuningScope t(-1, -1);
  expect_backward_passes(GetParam());
}

INSTANTIATE_TEST_SUITE_P(Cases, Flash3BackwardScoreMod,
                         ::testing::ValuesIn(score_mod_backward_cases()), CaseParamName{});

// Both D 256 layouts (split, RS), bf16 and f16, on the hostile suite's small shapes (a single query
// and key, Sk < 16, GQA 3, Sq and Sk not multiples of 64, both causal alignments; Sq 5 / Sk 150
// top-left gives key blocks without an item).
TEST(Flash3BackwardD256Layouts, SmallShapes) {
  for (const auto& [sq, sk, hq, hkv, cz] :
       {std::tuple<int64_t, int64_t, int64_t, int64_t, Causal>{1, 1, 2, 1, Causal::none},
        {13, 13, 2, 1, Causal::top_left},
        {40, 17, 6, 2, Causal::bottom_right},
        {5, 150, 3, 3, Causal::top_left},
        {130, 70, 3, 1, Causal::none}}) {
    for (int layout : {0, 1})
      for (DType dt : {DType::bf16, DType::f16}) {
        SCOPED_TRACE("sq " + std::to_string(sq) + " sk " + std::to_string(sk) + " layout " +
                     std::to_string(layout) + (dt == DType::f16 ? " f16" : " bf16"));
        const D256LayoutScope t(layout);
        expect_backward_passes(bwd_case(dt, 2, sq, sk, hq, hkv, 256, cz));
      }
  }
}

/// Sets bwd_tuning().order_sections (session 49, bwd_order.cuh) for one scope.
struct OrderScope {
  int saved = flash3::bwd_tuning().order_sections;
  explicit OrderScope(int sections) { flash3::bwd_tuning().order_sections = sections; }
  ~OrderScope() { flash3::bwd_tuning().order_sections = saved; }
};

/// The sections a D 128 launch of a kernel with the kOrd twin runs for a forced request
/// (bwd_order_rule.hpp bwd_order_shift, session 50): the largest power of two <= sec dividing Hkv;
/// 1 (no sectioning) reports 0.
int pow2_sections(int sec, int64_t hkv) {
  int s = 1;
  while (2 * s <= sec && hkv % (2 * s) == 0)
    s *= 2;
  return s > 1 ? s : 0;
}

/// Runs the case (expect_backward_passes against `reference`) and, where flash3 has the head dim,
/// checks the sections of the CTA order the launch ran (last_backward_order_sections, poisoned
/// first).
void expect_backward_order(const check::Case& c, int want, const std::string& reference = "math",
                           uint64_t seed = 23) {
  flash3::last_backward_order_sections() = -7;
  expect_backward_passes(c, reference, seed);
  if (flash3_built_with(static_cast<int>(c.d)))
    EXPECT_EQ(flash3::last_backward_order_sections(), want);
}

// The sectioned CTA order (BwdTuning::order_sections): causal dense calls take their (key block,
// kv head, batch) x-major within sections. D 256 (session 49, bwd_order.cuh bwd_cta, both
// layouts): sections of (kv head, batch) pairs, B 2 x Hkv 3 = 6 pairs: sections of 2 (three full
// ones), 4 (a partial last section of 2) and 8 (one partial section: x-major over all pairs). D 128
// (session 50, bwd_kernel.cuh kOrd twins, division-free): sections of 2^sh kv heads within a
// batch, the largest power of two <= the request dividing Hkv: Hkv 3 runs the hardware's order
// (0), Hkv 4 sections of 2 / 4 / 4, Hkv 6 sections of 2 for every request, Hkv 8 sections of 8 for
// requests 8 / 16, Hkv 16 sections of 8 / 16 (since session 51 the auto asks for 8 at D 128 from
// 2k keys while they fit 28 MiB: AutoByShapeMatchesCudaMath). GQA 2; Sq != Sk both
// ways with both causal alignments (Sq > Sk bottom-right: rows without keys) and exact multiples.
// Only D 128's TMA-epilogue item-diet kernels (the defaults) have the sectioned twin (kOrd): D 64
// ignores the request (0). Then, D 128 at Hkv 4 with sections of 4 and knobs: the rotated item
// order in a causal call (its start x * items / N with N the true key-block count, gridDim.x >>
// sh) and 80-row blocks below 4k (both twins: 4), decoupled warpgroups and the STG dK / dV
// epilogue (no twin: the hardware's order, 0). Last, every D: a softcap call, a deterministic one,
// a varlen one (those kernels keep the hardware's order) and a non-causal one (the rule gives 0).
// Checked against the oracle as every case
// (the dQ fp32 adds come in another order: not bitwise), and last_backward_order_sections (poisoned
// before each call) against the sections that should have run.
TEST(Flash3BackwardOrder, SectionedMatchesOracle) {
  // (expect_backward_passes' skips end only that helper: the order checks below need a device,
  // and a head dim this build lacks is left out here, so that a reduced build reads PASSED.)
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!device_is_sm90()) GTEST_SKIP() << "device 0 is not sm90 (flash3 needs sm_90a)";
  int ran = 0;
  struct Heads {
    int64_t hq, hkv;
  };
  for (const int64_t d : {64, 128, 256})
    for (const Heads hh : {Heads{6, 3}, Heads{8, 4}, Heads{12, 6}, Heads{16, 8}, Heads{32, 16}})
      for (const auto& [sq, sk, cz] :
           {std::tuple<int64_t, int64_t, Causal>{300, 517, Causal::top_left},
            {517, 300, Causal::bottom_right},
            {300, 517, Causal::bottom_right},
            {512, 512, Causal::top_left}})
        for (const int sec : {2, 4, 8, 16})
          for (const int layout : d == 256 ? std::vector<int>{0, 1} : std::vector<int>{-1}) {
            if (d == 256 && (hh.hkv != 3 || sec == 16)) continue;  // D 256: partial sections
            if (d == 128 && hh.hkv == 3 && sec != 4) continue;     // Hkv 3: always 0
            // D 128 Hkv 4 / 6: requests 2 / 4 / 8; Hkv 8 / 16 (sh 3 / 4): 8 / 16 only
            if (d == 128 && (hh.hkv == 4 || hh.hkv == 6) && sec == 16) continue;
            if (d == 128 && hh.hkv >= 8 && sec < 8) continue;
            if (d == 64 && (hh.hkv != 4 || sec != 4)) continue;  // D 64: no twin, always 0
            if (!flash3_built_with(static_cast<int>(d))) continue;
            SCOPED_TRACE("d " + std::to_string(d) + " hq " + std::to_string(hh.hq) + " hkv " +
                         std::to_string(hh.hkv) + " sq " + std::to_string(sq) + " sk " +
                         std::to_string(sk) + " sections " + std::to_string(sec) + " layout " +
                         std::to_string(layout));
            const OrderScope o(sec);
            const D256LayoutScope t(layout);
            expect_backward_order(bwd_case(DType::bf16, 2, sq, sk, hh.hq, hh.hkv, d, cz),
                                  d == 256   ? sec
                                  : d == 128 ? pow2_sections(sec, hh.hkv)
                                             : 0);
            ++ran;
          }
  if (flash3_built_with(128)) {
    const int64_t d = 128;
    // decoupled, block_m, item_rot, tmakv (-1: the default's); want: the sections that run
    struct Knobs {
      const char* what;
      int decoupled, block_m, item_rot, tmakv, want;
    };
    for (const Knobs k :
         {Knobs{"item_rot", -1, -1, 1, -1, 4}, Knobs{"decoupled", 1, -1, -1, -1, 0},
          Knobs{"block_m", -1, 80, -1, -1, 4}, Knobs{"stg epilogue", -1, -1, -1, 0, 0}})
      for (const auto& [sq, sk, cz] :
           {std::tuple<int64_t, int64_t, Causal>{300, 517, Causal::top_left},
            {517, 300, Causal::bottom_right},
            {700, 700, Causal::top_left}}) {
        SCOPED_TRACE("d " + std::to_string(d) + " " + k.what + " sq " + std::to_string(sq) +
                     " sk " + std::to_string(sk) + " sections 4");
        const TuningScope t(-1, k.decoupled, k.block_m, -1, -1, -1, -1, k.item_rot, -1, -1, -1, -1,
                            -1, k.tmakv);
        const OrderScope o(4);
        expect_backward_order(bwd_case(DType::bf16, 2, sq, sk, 8, 4, d, cz), k.want);
        ++ran;
      }
  }
  if (flash3_built_with(128)) {
    // A head dim of 96 runs D 128's kernels (the TMA dK / dV epilogue clips columns 96-127), so
    // its default structure takes the twin too (review of session 50).
    SCOPED_TRACE("d 96 sections 4");
    const OrderScope o(4);
    expect_backward_order(bwd_case(DType::bf16, 2, 517, 300, 8, 4, 96, Causal::bottom_right), 4);
  }
  for (const int64_t d : {64, 128, 256}) {
    if (!flash3_built_with(static_cast<int>(d))) continue;
    SCOPED_TRACE("d " + std::to_string(d) +
                 " softcap / deterministic / varlen / non-causal, sections 4");
    const OrderScope o(4);
    check::Case c = bwd_case(DType::bf16, 2, 517, 300, 8, 4, d, Causal::bottom_right);
    c.softcap = 5.0;
    {
      // (D 256's score-mod kernel runs the hardware's order and its launcher reports 0 since
      // session 49's last commit.)
      SCOPED_TRACE("softcap: the kMod order");
      expect_backward_order(c, 0);
    }
    check::Case det = bwd_case(DType::bf16, 2, 300, 517, 8, 4, d, Causal::top_left);
    det.deterministic = true;
    expect_backward_order(det, 0);
    check::Case vl = bwd_case(DType::bf16, 1, 300, 517, 8, 4, d, Causal::bottom_right);
    vl.varlen = true;
    vl.seqlens_q = {300, 170, 41};
    vl.seqlens_k = {517, 200, 90};
    expect_backward_order(vl, 0);
    expect_backward_order(bwd_case(DType::f16, 2, 300, 517, 8, 4, d, Causal::none), 0);
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "flash3 built without D 64 / 128 / 256";
}

// D 128's 80-row default causal kernel (from kM80MinSkCausal = 4096 keys) with the division-free
// sectioned order (session 50, its kOrd twin), against cuda_math on the same GPU (the lengths are
// long for the CPU oracle): forced sections of 4 at B 2 x Hkv 4 (sections of 4), B 1 x Hkv 6
// bottom-right with Sq 4200 / Sk 4160 (neither a multiple of the 80-row or key block; sections of
// 2) in bf16 and f16, B 2 x Hkv 3 (odd: the hardware's order); GQA 2; then the auto (sections of 4
// with kBwdOrderAutoD128). D 64 (no twin) runs the hardware's order, forced or auto. Checks the
// order each launch ran (last_backward_order_sections, poisoned before).
TEST(Flash3BackwardOrder, LongCausalSectionedMatchesCudaMath) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!device_is_sm90()) GTEST_SKIP() << "device 0 is not sm90 (flash3 needs sm_90a)";
  if (!backend_built("cuda_math")) GTEST_SKIP() << "cuda_math not built in this binary";
  struct Shape {
    int64_t d, b, sq, sk, hq, hkv;
    Causal cz;
    DType dt;
    int request, want;
  };
  const Causal tl = Causal::top_left, br = Causal::bottom_right;
  const int auto128 = flash3::kBwdOrderAutoD128 ? flash3::kBwdOrderAutoSections : 0;
  int ran = 0;
  for (const Shape s : {Shape{128, 2, 4096, 4096, 8, 4, tl, DType::bf16, 4, 4},
                        Shape{128, 1, 4200, 4160, 12, 6, br, DType::bf16, 4, 2},
                        Shape{128, 1, 4200, 4160, 12, 6, br, DType::f16, 4, 2},
                        Shape{128, 2, 4096, 4096, 6, 3, tl, DType::bf16, 4, 0},
                        Shape{128, 2, 4096, 4096, 8, 4, tl, DType::bf16, -1, auto128},
                        Shape{64, 2, 4096, 4096, 8, 4, tl, DType::bf16, 4, 0},
                        Shape{64, 2, 4096, 4096, 8, 4, tl, DType::bf16, -1, 0}}) {
    if (!flash3_built_with(static_cast<int>(s.d))) continue;
    SCOPED_TRACE("d " + std::to_string(s.d) + " b " + std::to_string(s.b) + " sq " +
                 std::to_string(s.sq) + " sk " + std::to_string(s.sk) + " hq " +
                 std::to_string(s.hq) + " hkv " + std::to_string(s.hkv) +
                 (s.dt == DType::f16 ? " f16" : " bf16") + " request " + std::to_string(s.request));
    if (s.d == 128) ASSERT_EQ(flash3::bwd::default_variant(128, true, s.sk).block_m, 80);
    const OrderScope o(s.request);
    expect_backward_order(bwd_case(s.dt, s.b, s.sq, s.sk, s.hq, s.hkv, s.d, s.cz), s.want,
                          "cuda_math", 5);
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "flash3 built without D 64 / 128";
}

// The auto (BwdTuning::order_sections -1, the default; bwd_order_rule.hpp): sections of 4 at D 256
// causal from 3072 keys while a section's Q / dO / dQ fit 32 MiB, else the hardware's order (below
// 3072 keys, non-causal, GQA 2 at 3200 query rows: 52 MB; D 64 always). D 128 with
// kBwdOrderAutoD128 (on since session 50): from 1280 keys (session 52) sections of 8 while they fit
// 28 MiB (session 51; Hkv 8: 8 run), else of 4 (GQA 2 at 3072: 48 MiB of 8, 4 asked, Hkv 2: 2 run);
// below 1280 keys (2048 before session 52) the hardware's order. Checks the order each launch ran
// (last_backward_order_sections, poisoned before) and the gradients against cuda_math on the same
// GPU (the lengths are long for the CPU oracle).
TEST(Flash3BackwardOrder, AutoByShapeMatchesCudaMath) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!device_is_sm90()) GTEST_SKIP() << "device 0 is not sm90 (flash3 needs sm_90a)";
  if (!backend_built("cuda_math")) GTEST_SKIP() << "cuda_math not built in this binary";
  struct Shape {
    int64_t d, sq, sk, hq, hkv;
    Causal cz;
    int want;
  };
  const Causal tl = Causal::top_left, br = Causal::bottom_right;
  int ran = 0;
  for (const Shape s :
       {Shape{256, 3000, 3200, 2, 2, br, 4}, Shape{256, 3200, 3100, 2, 2, tl, 4},
        Shape{256, 2048, 2048, 2, 2, tl, 0}, Shape{256, 3072, 3072, 2, 2, Causal::none, 0},
        Shape{256, 3200, 3100, 4, 2, tl, 0},
        Shape{128, 3072, 3072, 4, 2, tl, flash3::kBwdOrderAutoD128 ? 2 : 0},  // Hkv 2: 2 a section
        Shape{128, 2304, 2200, 8, 8, br, flash3::kBwdOrderAutoD128 ? 8 : 0},  // 18 MiB of 8
        Shape{128, 2100, 2000, 8, 8, br, flash3::kBwdOrderAutoD128 ? 8 : 0},  // 16 MiB of 8
        Shape{128, 1300, 1200, 8, 8, br, 0},                                  // below 1280 keys
        Shape{64, 3072, 3072, 2, 2, tl, 0}}) {
    if (!flash3_built_with(static_cast<int>(s.d))) continue;
    SCOPED_TRACE("d " + std::to_string(s.d) + " sq " + std::to_string(s.sq) + " sk " +
                 std::to_string(s.sk) + " hq " + std::to_string(s.hq) + " hkv " +
                 std::to_string(s.hkv));
    const OrderScope o(-1);
    expect_backward_order(bwd_case(DType::bf16, 1, s.sq, s.sk, s.hq, s.hkv, s.d, s.cz), s.want,
                          "cuda_math", 5);
    ++ran;
  }
  if (ran == 0) GTEST_SKIP() << "flash3 built without D 64 / 128 / 256";
}

// The D 256 plain dense backward's dQ conversion (3w, bwd_dq_convert_rows_kernel, session 31),
// bf16 and f16: a single query and key; Sq / Sk not multiples of 64; GQA 3; bottom-right with
// Sq - Sk = 40 (rows 0-39 see no key, their dQ is 0) and 217 (a query block without any key);
// key blocks without an item (Sq 5 / Sk 150 top-left); several key and query blocks per head in
// both layouts (BHSD: dq rows strided). (Session 31 ran these shapes with dQ converted inside
// the main kernel too, kConv, measured slower and kept on branch wip/f3conv31.)
TEST(Flash3BackwardD256Conversion, Shapes) {
  struct Shape {
    int64_t b, sq, sk, hq, hkv;
    Causal cz;
    check::Layout layout;
  };
  const check::Layout bshd = check::Layout::bshd, bhsd = check::Layout::bhsd;
  for (const Shape& s :
       {Shape{2, 1, 1, 2, 1, Causal::none, bshd}, Shape{2, 13, 13, 2, 1, Causal::top_left, bshd},
        Shape{2, 100, 60, 6, 2, Causal::bottom_right, bshd},
        Shape{2, 517, 300, 2, 1, Causal::bottom_right, bshd},
        Shape{2, 5, 150, 3, 3, Causal::top_left, bshd},
        Shape{1, 300, 517, 4, 2, Causal::none, bshd},
        Shape{2, 300, 517, 3, 1, Causal::bottom_right, bhsd},
        Shape{1, 1000, 1000, 2, 2, Causal::top_left, bshd}})
    for (DType dt : {DType::bf16, DType::f16}) {
      SCOPED_TRACE("sq " + std::to_string(s.sq) + " sk " + std::to_string(s.sk) +
                   (dt == DType::f16 ? " f16" : " bf16"));
      expect_backward_passes(bwd_case(dt, s.b, s.sq, s.sk, s.hq, s.hkv, 256, s.cz, s.layout));
    }
}

// The dQ conversion kernels: 3w (bwd_dq_convert_rows_kernel, session 31, the default where dq has
// 16-byte rows) is what every other test runs; here kernel 3 (ATTNKIT_FLASH3_BWD_CONV_ROWS=0), at
// each head dim, on a partial last tile, GQA and BHSD.
TEST(Flash3BackwardConvRows, OldKernelStillRight) {
  const ScopedEnv rows("ATTNKIT_FLASH3_BWD_CONV_ROWS", "0");
  for (int64_t d : {64, 128, 256})
    for (const auto& [sq, sk, cz, layout] :
         {std::tuple<int64_t, int64_t, Causal, check::Layout>{300, 517, Causal::none,
                                                              check::Layout::bshd},
          {517, 300, Causal::bottom_right, check::Layout::bhsd}}) {
      SCOPED_TRACE("d " + std::to_string(d) + " sq " + std::to_string(sq));
      expect_backward_passes(bwd_case(DType::bf16, 2, sq, sk, 4, 2, d, cz, layout));
    }
}

// +tmakv on the small shapes of the hostile suite: one partial warp (Sk 1, 13, 17), a single
// query, GQA 3 with Sk < 16 (every warp but one issues no store), against the oracle and bitwise
// against the default.
TEST(Flash3BackwardTmaKV, SmallShapes) {
  for (int64_t d : {64, 128})
    for (const auto& [sq, sk, hq, hkv, cz] :
         {std::tuple<int64_t, int64_t, int64_t, int64_t, Causal>{1, 1, 2, 1, Causal::none},
          {13, 13, 2, 1, Causal::top_left},
          {40, 17, 6, 2, Causal::bottom_right},
          {5, 150, 3, 3, Causal::top_left}}) {
      const check::Case c = bwd_case(DType::bf16, 2, sq, sk, hq, hkv, d, cz);
      SCOPED_TRACE("d " + std::to_string(d) + " sq " + std::to_string(sq) + " sk " +
                   std::to_string(sk));
      {
        TuningScope t(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, 1);
        expect_backward_passes(c);
      }
      expect_dk_dv_bitwise_equal(
          c,
          [&](int tmakv) {
            return TuningScope(-1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, -1, tmakv);
          },
          "+tmakv");
    }
}

// ---- variant names (host-only; runs without a GPU) ---------------------------------------------

// "+dve" (session 5 round 2) parses into Variant::dv_early next to the other tokens ("+pfl" into
// stat 3), and no
// library default turns it on yet (kDvEarlyDefault). The env variable is restored before any
// backward call: run_backward reads it once, at its first call.
TEST(Flash3BackwardVariant, DvEarlyTokenAndDefaultOff) {
  const char* spec = "128:coupled+atomic+dqf+v4+pf+dve;64:m128+atomic+dqf+v4";
  flash3::bwd::Variant v128, v64, v_order;
  const bool ok128 = parse_variant(spec, 128, v128);
  const bool ok64 = parse_variant(spec, 64, v64);
  const bool ok_order = parse_variant("128:coupled+atomic+dve+dqf+pfl", 128, v_order);
  ASSERT_TRUE(ok128 && ok64 && ok_order);
  EXPECT_TRUE(v128.dv_early && v128.dq_first && !v128.decoupled && v128.stat == 2 && v128.dq_vec4);
  EXPECT_FALSE(v64.dv_early);
  EXPECT_EQ(v64.block_m, 128);
  EXPECT_TRUE(v_order.dv_early && v_order.dq_first && v_order.stat == 3);
  for (int d : {64, 128})
    for (bool causal : {false, true})
      EXPECT_FALSE(flash3::bwd::default_variant(d, causal).dv_early) << d << " " << causal;
  // Session 6: D = 128 defaults to the late refill (+pfl, stat 3) in both causal modes.
  for (bool causal : {false, true})
    EXPECT_EQ(flash3::bwd::default_variant(128, causal).stat, 3) << causal;
  // Session 43: D = 64 (128-row blocks) prefetches lse2 / delta one item ahead (stat 2).
  for (bool causal : {false, true})
    EXPECT_EQ(flash3::bwd::default_variant(64, causal).stat, 2) << causal;
}

// "m80" (session 44) parses into 80-row coupled blocks; the D = 128 default takes them
// non-causal, and causal from 4k keys (bwd_traits.hpp kM80MinSkCausal; 8k until session 46);
// D = 64 never.
TEST(Flash3BackwardVariant, M80TokenAndDefaults) {
  flash3::bwd::Variant v, v_bad;
  ASSERT_TRUE(parse_variant("128:m80+atomic+dqf+v4+pfl+idiet", 128, v));
  EXPECT_TRUE(v.block_m == 80 && !v.decoupled && v.dq_first && v.stat == 3 && v.idiet);
  EXPECT_FALSE(parse_variant("128:atomic+m80", 128, v_bad));  // (the structure comes first)
  using flash3::bwd::default_variant;
  for (int64_t sk : {0, 1024, 2048, 4095, 4096, 8192, 16384}) {
    EXPECT_EQ(default_variant(128, false, sk).block_m, 80) << sk;
    EXPECT_EQ(default_variant(128, true, sk).block_m, sk >= 4096 ? 80 : 64) << sk;
    for (bool causal : {false, true})
      EXPECT_EQ(default_variant(64, causal, sk).block_m, 128) << sk << " " << causal;
  }
}

// "+vpp" / "+vcv" (session 6) parse into Variant::prep_vec / conv_vec, the defaults take 1v and
// not 3v (kPrepVecDefault / kConvVecDefault), and the eligibility tests of the 16-byte kernels
// refuse what they cannot read or write.
TEST(Flash3BackwardVariant, PrepVecTokenEligibilityAndDefaults) {
  const char* spec = "128:coupled+atomic+dqf+v4+pfl+vpp;64:m128+atomic+dqf+vcv";
  flash3::bwd::Variant v, v64;
  const bool ok = parse_variant(spec, 128, v) && parse_variant(spec, 64, v64);
  ASSERT_TRUE(ok);
  EXPECT_TRUE(v.prep_vec && !v.conv_vec && v.stat == 3 && v.dq_vec4);
  EXPECT_TRUE(!v64.prep_vec && v64.conv_vec);
  for (int d : {64, 128})
    for (bool causal : {false, true}) {
      EXPECT_TRUE(flash3::bwd::default_variant(d, causal).prep_vec) << d << " " << causal;
      EXPECT_FALSE(flash3::bwd::default_variant(d, causal).conv_vec) << d << " " << causal;
    }
  alignas(16) static uint16_t buf[64];
  Params p;
  const Strides4 st{1024 * 128, 8 * 128, 128, 1};
  p.out = p.dq = buf;
  p.dout = buf;
  p.out_st = p.dout_st = p.dq_st = st;
  EXPECT_TRUE(flash3::bwd::prep_vec_ok(p));
  EXPECT_TRUE(flash3::bwd::convert_vec_ok(p, true));
  EXPECT_FALSE(flash3::bwd::convert_vec_ok(p, false));  // float2 workspace layout
  p.dout = buf + 1;                                     // 2-byte aligned
  EXPECT_FALSE(flash3::bwd::prep_vec_ok(p));
  p.dout = buf;
  p.out_st.s = 130;  // rows 260 bytes apart
  EXPECT_FALSE(flash3::bwd::prep_vec_ok(p));
  p.out_st = st;
  p.dq_st.d = 2;  // strided d
  EXPECT_FALSE(flash3::bwd::convert_vec_ok(p, true));
}

// "+idiet" (session 7) parses into Variant::idiet next to the other tokens; the library
// default runs it at D = 128 (session 8: kIdietDefault) and, since session 45, at D = 64
// (kIdietDefault64), at every length.
TEST(Flash3BackwardVariant, IdietTokenAndDefaults) {
  const char* spec = "128:coupled+atomic+dqf+v4+pfl+vpp+idiet;64:m128+atomic+dqf+v4+vpp+idiet";
  flash3::bwd::Variant v128, v64, v_off, v_bad;
  const bool ok = parse_variant(spec, 128, v128) && parse_variant(spec, 64, v64);
  const bool ok_off = parse_variant("128:coupled+atomic+dqf+v4+pfl", 128, v_off);
  const bool ok_bad = parse_variant("128:coupled+atomic+idietx", 128, v_bad);
  ASSERT_TRUE(ok && ok_off);
  EXPECT_FALSE(ok_bad);
  EXPECT_TRUE(v128.idiet && v128.dq_first && !v128.decoupled && v128.stat == 3 && v128.prep_vec);
  EXPECT_TRUE(v64.idiet && v64.block_m == 128 && v64.dq_first && v64.prep_vec);
  EXPECT_FALSE(v_off.idiet);
  for (bool causal : {false, true}) {
    EXPECT_EQ(flash3::bwd::default_variant(128, causal).idiet, flash3::bwd::kIdietDefault)
        << causal;
    EXPECT_FALSE(flash3::bwd::default_variant(64, causal).idiet && !flash3::bwd::kIdietDefault64)
        << causal;
    for (int64_t sk : {1, 1024, 2048, 16384}) {
      EXPECT_TRUE(flash3::bwd::default_variant(64, causal, sk).idiet) << sk;
      EXPECT_TRUE(flash3::bwd::default_variant(128, causal, sk).idiet) << sk;
    }
  }
}

// "+tmakv" (session 9) parses into Variant::tmakv next to the other tokens ("tmakvx" does not),
// the library defaults carry it as bwd_traits.hpp says (kTmaKvDefault64 / kTmaKvDefault; D = 128
// at every length since session 45, when it lost its 1k-key cap), and the TMA-store test refuses
// the dK / dV
// that a tensor map cannot describe (the backend asks only 4-byte alignment of them: those calls
// run the STG epilogue).
TEST(Flash3BackwardVariant, TmaKvTokenDefaultsAndMapTest) {
  const char* spec =
      "128:coupled+atomic+dqf+v4+pfl+vpp+idiet+tmakv;64:m128+atomic+dqf+v4+vpp+tmakv";
  flash3::bwd::Variant v128, v64, v_off, v_bad;
  const bool ok = parse_variant(spec, 128, v128) && parse_variant(spec, 64, v64);
  const bool ok_off = parse_variant("128:coupled+atomic+dqf+v4+pfl+idiet", 128, v_off);
  const bool ok_bad = parse_variant("128:coupled+atomic+dqf+tmakvx", 128, v_bad);
  ASSERT_TRUE(ok && ok_off);
  EXPECT_FALSE(ok_bad);
  EXPECT_TRUE(v128.tmakv && v128.idiet && v128.dq_first && !v128.decoupled && v128.stat == 3);
  EXPECT_TRUE(v64.tmakv && v64.block_m == 128 && v64.dq_first && !v64.idiet);
  EXPECT_FALSE(v_off.tmakv);
  for (int d : {64, 128})
    for (bool causal : {false, true})
      for (int64_t sk : {0, 1024, 1025, 4096, 16384})
        EXPECT_EQ(flash3::bwd::default_variant(d, causal, sk).tmakv,
                  d == 64 ? flash3::bwd::kTmaKvDefault64 : flash3::bwd::kTmaKvDefault)
            << d << " " << causal << " " << sk;
  alignas(16) static uint16_t buf[64];
  const Strides4 st{1024 * 8 * 128, 8 * 128, 128, 1};  // [B, S = 1024, H = 8, D = 128]
  const auto kv_store_map_ok = flash3::store_map_ok;   // dK / dV (and O) TMA store targets
  EXPECT_TRUE(kv_store_map_ok(buf, st, 2, 1024, 8));
  EXPECT_FALSE(kv_store_map_ok(buf + 2, st, 2, 1024, 8));  // 4-byte aligned only
  Strides4 odd = st;
  odd.s = 8 * 128 + 2;  // rows 4 bytes apart from a 16-byte multiple
  EXPECT_FALSE(kv_store_map_ok(buf, odd, 2, 1024, 8));
  EXPECT_TRUE(kv_store_map_ok(buf, odd, 2, 1, 8));  // one row: its stride is never used
  odd = st;
  odd.h = -128;
  EXPECT_FALSE(kv_store_map_ok(buf, odd, 2, 1024, 8));
  odd = st;
  odd.d = 2;
  EXPECT_FALSE(kv_store_map_ok(buf, odd, 2, 1024, 8));
}

// ---- dQ workspace tile layout (host-only; runs without a GPU) ----------------------------------

// The consumers store accumulator element dq[4 j + 2 r + e] of thread tid at
// ((2 j + r) * 128 + tid) * 2 + e of their part, or (float4 layout) (j * 128 + tid) * 4 + 2 r + e
// (bwd_kernel.cuh); the conversion kernel reads
// element (row, col) at dq_tile_offset. The two must agree, and the map must be a permutation
// of the 64 x D tile (each workspace float written by exactly one element).
template <int kN>
void check_dq_layout(int D, bool v4) {
  std::vector<int> hits(64 * D, 0);
  for (int row = 0; row < 64; ++row)
    for (int col = 0; col < D; ++col) {
      const int off = flash3::bwd::dq_tile_offset<kN>(row, col, v4);
      ASSERT_GE(off, 0);
      ASSERT_LT(off, 64 * D);
      ++hits[off];
    }
  for (int i = 0; i < 64 * D; ++i)
    ASSERT_EQ(hits[i], 1) << "offset " << i << " (kN " << kN << ", D " << D << ")";
  for (int part = 0; part < D / kN; ++part)
    for (int tid = 0; tid < 128; ++tid)
      for (int j = 0; j < kN / 8; ++j)
        for (int r = 0; r < 2; ++r)
          for (int e = 0; e < 2; ++e) {
            const int row = 16 * (tid / 32) + (tid % 32) / 4 + 8 * r;
            const int col = part * kN + 8 * j + 2 * (tid % 4) + e;
            ASSERT_EQ(flash3::bwd::dq_tile_offset<kN>(row, col, v4),
                      part * 64 * kN +
                          (v4 ? (j * 128 + tid) * 4 + 2 * r : ((2 * j + r) * 128 + tid) * 2) + e)
                << "tid " << tid << " j " << j << " r " << r << " e " << e;
          }
}

TEST(Flash3BackwardLayout, DqTileOffsetMatchesRegisterStores) {
  for (bool v4 : {false, true}) {   // float2 runs, float4 runs (kDqVec4)
    check_dq_layout<64>(64, v4);    // D = 64 (both variants)
    check_dq_layout<128>(128, v4);  // D = 128 decoupled: one 64 x 128 part per warpgroup
    check_dq_layout<64>(128, v4);   // D = 128 coupled: two 64 x 64 column parts
  }
}

// ---- explain(): backward calls flash3 must decline --------------------------------------------

std::vector<std::string> flash3_reasons(const Explanation& e) {
  for (const auto& b : e.backends)
    if (b.name == "flash3") return b.reasons;
  ADD_FAILURE() << "flash3 missing from explain()";
  return {};
}

/// cuDNN is built and explain() gives it no reason to decline the call.
bool cudnn_can_run(const Explanation& e) {
  for (const auto& b : e.backends)
    if (b.name == "cudnn") return b.built && b.ok;
  return false;
}

bool mentions(const std::vector<std::string>& reasons, const std::string& what) {
  return std::any_of(reasons.begin(), reasons.end(),
                     [&](const std::string& r) { return r.find(what) != std::string::npos; });
}

/// A bf16 BSHD call of B = 1, H = 2, S rows at head dim d on device buffers (contents unset: for
/// explain() only), with the fp32 lse [B, H, S] the backward requires.
struct ExplainCall {
  DeviceBuffer q, k, v, o, lse;
  ForwardArgs fa;
  ExplainCall(int64_t s, int64_t d)
      : q(static_cast<size_t>(2 * s * d) * 2),
        k(q.bytes),
        v(q.bytes),
        o(q.bytes),
        lse(static_cast<size_t>(2 * s) * 4) {
    const int64_t b = 1, h = 2;
    fa = ForwardArgs{bshd_view(q.p, DType::bf16, b, s, h, d),
                     bshd_view(k.p, DType::bf16, b, s, h, d),
                     bshd_view(v.p, DType::bf16, b, s, h, d),
                     bshd_view(o.p, DType::bf16, b, s, h, d),
                     {}};
    fa.lse.data = lse.p;
    fa.lse.dtype = DType::f32;
    fa.lse.device = Device::cuda(0);
    fa.lse.rank = 3;
    fa.lse.shape = {b, h, s};
    fa.lse.stride = {h * s, s, 1};
  }
};

TEST(Flash3BackwardReasons, DeterministicAndHeadDims) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!device_is_sm90()) GTEST_SKIP() << "device 0 is not sm90";
  for (int64_t d : {64, 128, 256}) {
    const ExplainCall call(64, d);
    const ForwardArgs& fa = call.fa;
    Options opts;
    const auto plain = flash3_reasons(explain(fa, opts, /*backward=*/true));
    if (flash3_built_with(static_cast<int>(d))) {  // (D 256 since session 26)
      EXPECT_TRUE(plain.empty()) << "D = " << d << " backward should be supported, reasons: "
                                 << (plain.empty() ? "" : plain[0]);
    }
    // Deterministic (since session 26, bwd_kernel.cuh kDet; D 256 since session 30,
    // bwd_kernel_d256.cuh kDet): the plain call runs; with softcap it is declined, naming why.
    opts.deterministic = true;
    const auto det = flash3_reasons(explain(fa, opts, /*backward=*/true));
    const bool built = flash3_built_with(static_cast<int>(d));
    EXPECT_FALSE(mentions(det, "deterministic")) << "D = " << d;
    opts.softcap = 30.0;
    const auto det_cap = flash3_reasons(explain(fa, opts, /*backward=*/true));
    if (built) EXPECT_TRUE(mentions(det_cap, "deterministic")) << "D = " << d;
    opts.softcap = 0.0;
    // The forward is unaffected by the deterministic flag.
    const auto fwd = flash3_reasons(explain(fa, opts, /*backward=*/false));
    if (flash3_built_with(static_cast<int>(d)))
      EXPECT_TRUE(fwd.empty()) << (fwd.empty() ? "" : fwd[0]);
  }
}

// ---- auto: the dense backwards where flash3 leads cuDNN (session 30, dispatch/api.cpp) ----------

// Plain D 256 (both causal modes) and causal D 64 backwards go to flash3 under auto, even with
// cuDNN built, deterministic ones too (flash3's D 256 kDet since session 30); a D 256 window keeps
// the table's order (cuDNN first wherever it can run the call).
TEST(Flash3AutoBackward, PrefersFlash3WhereFaster) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!device_is_sm90()) GTEST_SKIP() << "device 0 is not sm90";
  for (const auto& [d, cz] : {std::pair<int64_t, Causal>{256, Causal::none},
                              {256, Causal::bottom_right},
                              {64, Causal::top_left}}) {
    if (!flash3_built_with(static_cast<int>(d))) continue;
    const ExplainCall call(256, d);
    const ForwardArgs& fa = call.fa;
    Options opts;
    opts.causal = cz;
    const Explanation e = explain(fa, opts, /*backward=*/true);
    EXPECT_EQ(e.selected, "flash3") << "D = " << d << "\n" << e.str();
    EXPECT_EQ(e.rule, "auto");
    // At S 256 (below the forward's measured range, Flash3AutoForward) the forward keeps the
    // table's order: cuDNN first wherever it can run the call.
    const Explanation f = explain(fa, opts, /*backward=*/false);
    if (cudnn_can_run(f)) EXPECT_EQ(f.selected, "cudnn") << f.str();
    if (d == 256) {
      opts.deterministic = true;  // a plain call too (flash3's kDet since session 30)
      const Explanation det = explain(fa, opts, /*backward=*/true);
      EXPECT_EQ(det.selected, "flash3") << det.str();
      opts.deterministic = false;
      opts.window_left = 100;  // not a plain call: the table's order
      const Explanation w = explain(fa, opts, /*backward=*/true);
      if (cudnn_can_run(w)) EXPECT_EQ(w.selected, "cudnn") << w.str();
    }
  }
}

// Session 34: plain D 128 (both causal modes) and non-causal D 64 backwards at S >= 1k go to
// flash3 too; below 1k (not measured), deterministic ones (not timed against cuDNN's) and
// windowed ones keep the table's order.
TEST(Flash3AutoBackward, PrefersFlash3AtD128AndD64NonCausalFrom1k) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!device_is_sm90()) GTEST_SKIP() << "device 0 is not sm90";
  for (const auto& [d, cz] : {std::pair<int64_t, Causal>{128, Causal::none},
                              {128, Causal::top_left},
                              {64, Causal::none}}) {
    if (!flash3_built_with(static_cast<int>(d))) continue;
    Options opts;
    opts.causal = cz;
    {
      const ExplainCall call(1024, d);
      const Explanation e = explain(call.fa, opts, /*backward=*/true);
      EXPECT_EQ(e.selected, "flash3") << "D = " << d << "\n" << e.str();
      EXPECT_EQ(e.rule, "auto");
      opts.deterministic = true;
      const Explanation det = explain(call.fa, opts, /*backward=*/true);
      if (cudnn_can_run(det)) EXPECT_EQ(det.selected, "cudnn") << det.str();
      opts.deterministic = false;
      opts.window_left = 100;
      const Explanation w = explain(call.fa, opts, /*backward=*/true);
      if (cudnn_can_run(w)) EXPECT_EQ(w.selected, "cudnn") << w.str();
      opts.window_left = -1;
    }
    const ExplainCall short_call(512, d);
    const Explanation s = explain(short_call.fa, opts, /*backward=*/true);
    if (cudnn_can_run(s)) EXPECT_EQ(s.selected, "cudnn") << "S = 512, D = " << d << "\n" << s.str();
  }
}

// Session 56: plain dense forwards go to flash3 under auto where it measured faster than cuDNN
// (dispatch/flash3_preference.hpp; H200, 1.04-1.17x): D 128 from 1k, D 64 non-causal from 1k and
// causal from 2k, D 256 causal from 1k and non-causal from 2k. The ties at 1k (D 64 causal 0.97x,
// D 256 non-causal 0.98-1.03x), shorter calls, windows and dropout keep the table's order
// (cuDNN first wherever it can run the call).
TEST(Flash3AutoForward, PrefersFlash3WhereFaster) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!device_is_sm90()) GTEST_SKIP() << "device 0 is not sm90";
  struct Case {
    int64_t d;
    Causal causal;
    int64_t s;
    bool flash3;
  };
  const Causal nc = Causal::none, tl = Causal::top_left, br = Causal::bottom_right;
  for (const Case& k :
       {Case{128, nc, 1024, true}, Case{128, br, 1024, true}, Case{128, nc, 512, false},
        Case{64, nc, 1024, true}, Case{64, tl, 1024, false}, Case{64, tl, 2048, true},
        Case{256, tl, 1024, true}, Case{256, nc, 1024, false}, Case{256, nc, 2048, true}}) {
    if (!flash3_built_with(static_cast<int>(k.d))) continue;
    const ExplainCall call(k.s, k.d);
    Options opts;
    opts.causal = k.causal;
    const Explanation f = explain(call.fa, opts, /*backward=*/false);
    const std::string what = "D = " + std::to_string(k.d) + ", S = " + std::to_string(k.s) +
                             ", causal " + std::to_string(static_cast<int>(k.causal)) + "\n";
    if (k.flash3) {
      EXPECT_EQ(f.selected, "flash3") << what << f.str();
      EXPECT_EQ(f.rule, "auto");
      opts.window_left = 100;  // not a plain call: the table's order
      const Explanation w = explain(call.fa, opts, /*backward=*/false);
      if (cudnn_can_run(w)) EXPECT_EQ(w.selected, "cudnn") << what << w.str();
      opts.window_left = -1;
      opts.dropout_p = 0.1;  // dropout: not compared with cuDNN's
      const Explanation dr = explain(call.fa, opts, /*backward=*/false);
      if (cudnn_can_run(dr)) EXPECT_EQ(dr.selected, "cudnn") << what << dr.str();
    } else if (cudnn_can_run(f)) {
      EXPECT_EQ(f.selected, "cudnn") << what << f.str();
    }
  }
}

// ---- 3v against 3 (session 6, +vpp) ----------------------------------------------------------

// The 16-byte dQ conversion (bwd_kernel.cuh 3v) against the scalar one on a random float4-layout
// workspace: same arithmetic (scale * v rounded to nearest), so the dQ bytes must be equal, padding
// columns / rows past Sq untouched (poisoned). Sq = 300: a partial last tile; D = 64 and both
// D = 128 part widths (coupled 64, decoupled 128).
template <int D, int kN>
void check_convert_vec() {
  const int b = 2, h = 3, sq = 300, sq_pad = 320;
  const size_t ws_n = static_cast<size_t>(b) * h * sq_pad * D;
  const size_t dq_n = static_cast<size_t>(b) * sq * h * D;
  std::vector<float> ws(ws_n);
  uint32_t x = 12345u;
  for (float& f : ws) {
    x = x * 1664525u + 1013904223u;
    f = static_cast<float>(x >> 8) * (1.f / 16777216.f) - 0.5f;
  }
  DeviceBuffer d_ws(ws_n * 4), d_a(dq_n * 2), d_b(dq_n * 2);
  ASSERT_EQ(cudaMemcpy(d_ws.p, ws.data(), ws_n * 4, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemset(d_a.p, 0x7f, dq_n * 2), cudaSuccess);
  ASSERT_EQ(cudaMemset(d_b.p, 0x7f, dq_n * 2), cudaSuccess);
  Params p;
  p.batch = b;
  p.seqlen_q = sq;
  p.heads_q = h;
  p.head_dim = D;
  p.scale = 0.0883883f;
  p.dq_st = {static_cast<int64_t>(sq) * h * D, h * D, D, 1};
  const float* wsp = static_cast<const float*>(d_ws.p);
  p.dq = d_a.p;
  flash3::bwd::bwd_dq_convert_kernel<D, kN, true>
      <<<dim3((sq + 7) / 8, h, b), 256>>>(p, sq_pad, wsp, 1);
  p.dq = d_b.p;
  ASSERT_TRUE(flash3::bwd::convert_vec_ok(p, true));
  flash3::bwd::bwd_dq_convert_vec_kernel<D, kN, true>
      <<<dim3((sq + 63) / 64 * (D / 64), h, b), 256>>>(p, sq_pad, wsp);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  std::vector<uint16_t> a(dq_n), v(dq_n);
  ASSERT_EQ(cudaMemcpy(a.data(), d_a.p, dq_n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(v.data(), d_b.p, dq_n * 2, cudaMemcpyDeviceToHost), cudaSuccess);
  size_t bad = 0, first = dq_n;
  for (size_t i = 0; i < dq_n; ++i)
    if (a[i] != v[i]) {
      ++bad;
      first = std::min(first, i);
    }
  EXPECT_EQ(bad, 0u) << "D " << D << " kN " << kN << ": first difference at element " << first;
}

TEST(Flash3BackwardLayout, ConvertVecBitwiseEqual) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  if (!device_is_sm90()) GTEST_SKIP() << "device 0 is not sm90";
  check_convert_vec<64, 64>();
  check_convert_vec<128, 64>();
  check_convert_vec<128, 128>();
}

}  // namespace
}  // namespace attnkit::testing
