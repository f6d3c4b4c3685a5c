// The `math` Backend object: capabilities, the f32/f16/bf16 element path (exact reads, RNE
// writes), and the memory cap (extra_reasons, kTooLarge, set_math_max_bytes, env).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "attnkit/error.hpp"
#include "attnkit/math.hpp"
#include "backends/math/f64_problem.hpp"
#include "core/dtype_convert.hpp"
#include "dispatch/backend.hpp"

namespace attnkit {
Backend& backend_math();
}

namespace attnkit::testing {
namespace {

TEST(MathBackend, DescribesEveryCapability) {
  const BackendDescription& d = backend_math().description();
  EXPECT_EQ(d.name, "math");
  EXPECT_EQ(d.aliases, (std::vector<std::string>{"_native_math"}));
  const Capabilities& c = d.caps;
  EXPECT_EQ(c.dtypes, (std::vector<DType>{DType::f32, DType::f16, DType::bf16}));
  EXPECT_TRUE(c.head_dims.empty());
  EXPECT_EQ(c.max_head_dim, 512);
  EXPECT_EQ(c.device, DeviceType::cpu);
  EXPECT_TRUE(c.head_dim_v_differs && c.causal_top_left && c.causal_bottom_right && c.window &&
              c.softcap && c.alibi && c.mask_bool && c.mask_additive && c.gqa && c.varlen &&
              c.lse && c.dropout && c.backward && c.deterministic);
  EXPECT_EQ(c.tier, AccuracyTier::exact);
}

// Converts the fp64 problem's q/k/v/dout to `t` (rounded), runs the backend on those buffers, and
// checks every output equals the fp64 core's result on the rounded inputs, rounded once more.
void expect_dtype_path_exact(DType t) {
  F64Problem x = F64Problem::dense(2, 6, 9, 4, 2, 5, 3);
  x.fill_random(71);
  x.p.causal = Causal::bottom_right;
  x.p.softcap = 3.0f;
  x.use_dropout(0.1, 5, 0);
  auto narrow = [t](std::vector<double>& src) {
    std::vector<uint8_t> bytes(src.size() * dtype_size(t));
    for (size_t e = 0; e < src.size(); ++e) {
      store_from_double(bytes.data(), static_cast<int64_t>(e), t, src[e]);
      src[e] = load_as_double(bytes.data(), static_cast<int64_t>(e), t);  // the exact input
    }
    return bytes;
  };
  std::vector<uint8_t> q = narrow(x.q), k = narrow(x.k), v = narrow(x.v), dout = narrow(x.dout);
  x.forward();
  x.backward();

  Params p = x.p;
  p.dtype = t;
  p.q = q.data();
  p.k = k.data();
  p.v = v.data();
  p.dout = dout.data();
  std::vector<uint8_t> out(x.out.size() * dtype_size(t)), dq(q.size()), dk(k.size()), dv(v.size());
  std::vector<float> lse(x.lse.size());
  p.out = out.data();
  p.lse = lse.data();
  p.dq = dq.data();
  p.dk = dk.data();
  p.dv = dv.data();
  backend_math().forward(p);
  p.is_backward = true;
  backend_math().backward(p);

  auto expect_rounded = [t](const std::vector<uint8_t>& got, const std::vector<double>& ref,
                            const char* what) {
    for (size_t e = 0; e < ref.size(); ++e)
      ASSERT_EQ(load_as_double(got.data(), static_cast<int64_t>(e), t), round_to_dtype(ref[e], t))
          << what << "[" << e << "] " << dtype_name(t);
  };
  expect_rounded(out, x.out, "out");
  expect_rounded(dq, x.dq, "dq");
  expect_rounded(dk, x.dk, "dk");
  expect_rounded(dv, x.dv, "dv");
  for (size_t e = 0; e < lse.size(); ++e)
    EXPECT_EQ(lse[e], static_cast<float>(x.lse[e]));
}

TEST(MathBackend, F32PathIsExactlyRoundedFp64) {
  expect_dtype_path_exact(DType::f32);
}
TEST(MathBackend, F16PathIsExactlyRoundedFp64) {
  expect_dtype_path_exact(DType::f16);
}
TEST(MathBackend, Bf16PathIsExactlyRoundedFp64) {
  expect_dtype_path_exact(DType::bf16);
}

class MathCap : public ::testing::Test {
 protected:
  void TearDown() override {
    set_math_max_bytes(0);
    unsetenv("ATTNKIT_MATH_MAX_BYTES");
  }
};

TEST_F(MathCap, DefaultIsFourGiB) {
  unsetenv("ATTNKIT_MATH_MAX_BYTES");
  set_math_max_bytes(0);
  EXPECT_EQ(math_max_bytes(), uint64_t{4} << 30);
}

TEST_F(MathCap, EnvironmentAndSetterPrecedence) {
  setenv("ATTNKIT_MATH_MAX_BYTES", "64K", 1);
  EXPECT_EQ(math_max_bytes(), 65536u);
  setenv("ATTNKIT_MATH_MAX_BYTES", "3000", 1);
  EXPECT_EQ(math_max_bytes(), 3000u);
  set_math_max_bytes(12345);  // the setter wins over the environment
  EXPECT_EQ(math_max_bytes(), 12345u);
  set_math_max_bytes(0);
  EXPECT_EQ(math_max_bytes(), 3000u);
  setenv("ATTNKIT_MATH_MAX_BYTES", "lots", 1);
  try {
    (void)math_max_bytes();
    FAIL() << "a malformed ATTNKIT_MATH_MAX_BYTES must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("lots"), std::string::npos);
  }
}

TEST_F(MathCap, OverCapIsAReasonAndThrowsTooLarge) {
  F64Problem x = F64Problem::dense(1, 100, 200, 1, 1, 4, 4);
  // Forward worker: Sq*Sk + Sq*(D+Dv+1) + Sk*(D+Dv+1) doubles (include/attnkit/math.hpp).
  const uint64_t need = (100 * 200 + 100 * 9 + 200 * 9) * 8;
  EXPECT_EQ(math_core::worker_bytes(x.p, false), need);
  set_math_max_bytes(need - 1);
  std::vector<std::string> reasons;
  backend_math().extra_reasons(x.p, reasons);
  ASSERT_EQ(reasons.size(), 1u);
  EXPECT_NE(reasons[0].find(std::to_string(need)), std::string::npos) << reasons[0];
  EXPECT_NE(reasons[0].find(std::to_string(need - 1)), std::string::npos) << reasons[0];
  EXPECT_NE(reasons[0].find("ATTNKIT_MATH_MAX_BYTES"), std::string::npos) << reasons[0];

  Params p = x.p;  // f64 buffers are big enough for f32 elements
  p.q = x.q.data();
  p.k = x.k.data();
  p.v = x.v.data();
  p.out = x.out.data();
  x.out.assign(x.out.size(), 7.0);
  try {
    backend_math().forward(p);
    FAIL() << "expected kTooLarge";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kTooLarge);
  }
  for (double o : x.out)
    EXPECT_EQ(o, 7.0) << "nothing written on error";

  set_math_max_bytes(need);
  reasons.clear();
  backend_math().extra_reasons(x.p, reasons);
  EXPECT_TRUE(reasons.empty());
  EXPECT_NO_THROW(backend_math().forward(p));
}

TEST_F(MathCap, ThreadsAreReducedToFitTheCap) {
  F64Problem x = F64Problem::dense(4, 10, 10, 2, 2, 4, 4);
  x.p.num_threads = 8;
  const uint64_t per = math_core::worker_bytes(x.p, true);
  EXPECT_EQ(math_core::worker_count(x.p, true, per * 3), 3);
  EXPECT_EQ(math_core::worker_count(x.p, true, per * 100), 8);
  x.p.num_threads = 100;  // never more workers than (sequence, kv head) tasks
  EXPECT_EQ(math_core::worker_count(x.p, true, per * 1000), 8);
}

}  // namespace
}  // namespace attnkit::testing
