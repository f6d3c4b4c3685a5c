// The dispatcher through the public API: guards, defaults, explain, names — on the CPU with the
// math oracle (always built).
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "attnkit/attnkit.hpp"

namespace attnkit {
namespace {

struct Tiny {
  std::vector<float> q = std::vector<float>(1 * 3 * 2 * 4, 0.5f), k = q, v = q, out = q;
  ForwardArgs args;
  Tiny() {
    args.q = TensorView::contiguous(q.data(), DType::f32, {1, 3, 2, 4});
    args.k = TensorView::contiguous(k.data(), DType::f32, {1, 3, 2, 4});
    args.v = TensorView::contiguous(v.data(), DType::f32, {1, 3, 2, 4});
    args.out = TensorView::contiguous(out.data(), DType::f32, {1, 3, 2, 4});
  }
};

TEST(Dispatch, ExplainListsEveryKnownBackend) {
  Tiny t;
  const Explanation ex = explain(t.args);
  EXPECT_EQ(ex.backends.size(), list_backends().size());
  bool math_ok = false;
  for (const auto& b : ex.backends) {
    if (b.name == "math") math_ok = b.ok;
    if (!b.ok) {
      EXPECT_FALSE(b.reasons.empty()) << b.name << " is not ok but gives no reason";
    }
  }
  EXPECT_TRUE(math_ok);
  EXPECT_FALSE(ex.selected.empty());
  EXPECT_NE(ex.str().find("selected: "), std::string::npos);
}

TEST(Dispatch, GuardsNestAndUnwind) {
  Tiny t;
  EXPECT_EQ(explain(t.args).rule, "auto");
  {
    BackendGuard outer("_native_math");
    EXPECT_EQ(explain(t.args).selected, "math");
    EXPECT_EQ(explain(t.args).rule, "scoped guard");
    {
      BackendGuard inner("auto");
      EXPECT_EQ(explain(t.args).rule, "scoped guard");  // explicit auto at the innermost scope
    }
    EXPECT_EQ(explain(t.args).selected, "math");
  }
  EXPECT_EQ(explain(t.args).rule, "auto");
}

TEST(Dispatch, GuardIsThreadLocal) {
  Tiny t;
  BackendGuard g("math");
  std::string other_rule;
  std::thread th([&] { other_rule = explain(t.args).rule; });
  th.join();
  EXPECT_EQ(other_rule, "auto");
  EXPECT_EQ(explain(t.args).rule, "scoped guard");
}

TEST(Dispatch, GuardRejectsUnknownNameImmediately) {
  try {
    BackendGuard g("nope");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnknownBackend);
  }
}

TEST(Dispatch, ProcessDefaultAndPerCallPrecedence) {
  Tiny t;
  set_default_backend("math");
  EXPECT_EQ(default_backend(), "math");
  EXPECT_EQ(explain(t.args).rule, "process default");
  Options o;
  o.backend = "math";
  EXPECT_EQ(explain(t.args, o).rule, "per-call");
  set_default_backend("");
  EXPECT_EQ(explain(t.args).rule, "auto");
  EXPECT_THROW(set_default_backend("bogus"), Error);
}

TEST(Dispatch, CanonicalNames) {
  EXPECT_EQ(canonical_backend_name("_native_math"), "math");
  EXPECT_EQ(canonical_backend_name("_sdpa_cudnn"), "cudnn");
  EXPECT_THROW(canonical_backend_name("bogus"), Error);
}

TEST(Dispatch, ListBackendsMarksBuiltAndReasons) {
  for (const auto& b : list_backends()) {
    if (b.built) {
      EXPECT_FALSE(b.caps.dtypes.empty()) << b.name;
    } else {
      EXPECT_FALSE(b.not_built_reason.empty()) << b.name;
    }
  }
  EXPECT_TRUE(list_backends().back().built);  // math, the oracle, is always built
}

TEST(Dispatch, ThreadsSetting) {
  set_num_threads(3);
  EXPECT_EQ(num_threads(), 3);
  set_num_threads(0);
  EXPECT_GE(num_threads(), 1);
  EXPECT_THROW(set_num_threads(-1), Error);
}

}  // namespace
}  // namespace attnkit
