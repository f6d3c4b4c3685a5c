// Selection is a pure function: these tests need no backend at all.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dispatch/select.hpp"

namespace attnkit {
namespace {

SelectionCandidate cand(const std::string& name, DeviceType dev,
                        std::vector<std::string> reasons = {},
                        AccuracyTier tier = AccuracyTier::exact) {
  SelectionCandidate c;
  c.name = name;
  c.built = true;
  c.device = dev;
  c.tier = tier;
  c.reasons = std::move(reasons);
  return c;
}

SelectionCandidate not_built(const std::string& name, const std::string& why) {
  SelectionCandidate c;
  c.name = name;
  c.built = false;
  c.not_built_reason = why;
  return c;
}

// Preference order as registry.cpp gives it (subset).
std::vector<SelectionCandidate> gpu_world() {
  return {not_built("flash3", "needs sm90a and CUDA"),
          cand("cudnn", DeviceType::cuda, {"dtype f32 not supported"}),
          cand("flash", DeviceType::cuda),
          cand("sage", DeviceType::cuda, {}, AccuracyTier::quantized),
          cand("cuda_math", DeviceType::cuda),
          cand("cpu_flash", DeviceType::cpu),
          cand("math", DeviceType::cpu)};
}

TEST(Select, AutoTakesFirstSupportingOnDevice) {
  SelectionRequest r;
  r.device = DeviceType::cuda;
  const Selection s = select_backend(r, gpu_world());
  EXPECT_EQ(s.backend, "flash");  // cudnn has a reason, flash3 is not built
  EXPECT_EQ(s.rule, "auto");
  r.device = DeviceType::cpu;
  EXPECT_EQ(select_backend(r, gpu_world()).backend, "cpu_flash");
}

TEST(Select, AutoTriesPreferredFirstThenTheOrder) {
  // The registry's order: cudnn before flash3 (both can run this call).
  std::vector<SelectionCandidate> world = {cand("cudnn", DeviceType::cuda),
                                           cand("flash3", DeviceType::cuda),
                                           cand("flash", DeviceType::cuda)};
  SelectionRequest r;
  r.device = DeviceType::cuda;
  EXPECT_EQ(select_backend(r, world).backend, "cudnn");
  r.prefer = {"flash3"};
  EXPECT_EQ(select_backend(r, world).backend, "flash3");
  world[1].reasons = {"varlen backward not supported"};  // a preferred one that cannot: order
  EXPECT_EQ(select_backend(r, world).backend, "cudnn");
  world[1].reasons.clear();
  r.prefer = {"not_a_backend"};  // unknown names are ignored
  EXPECT_EQ(select_backend(r, world).backend, "cudnn");
  r.prefer = {"flash3"};
  r.per_call = "flash";  // an explicit choice is not affected
  EXPECT_EQ(select_backend(r, world).backend, "flash");
}

TEST(Select, AutoSkipsQuantizedUnlessAllowed) {
  auto world = gpu_world();
  world[1].reasons = {"x"};
  world[2].reasons = {"y"};  // cudnn and flash cannot run: next is sage (quantized)
  SelectionRequest r;
  r.device = DeviceType::cuda;
  EXPECT_EQ(select_backend(r, world).backend, "cuda_math");
  r.allow_quantized = true;
  EXPECT_EQ(select_backend(r, world).backend, "sage");
}

TEST(Select, PrecedencePerCallScopedDefaultEnv) {
  SelectionRequest r;
  r.device = DeviceType::cuda;
  r.env_default = "cuda_math";
  EXPECT_EQ(select_backend(r, gpu_world()).rule, "env ATTNKIT_BACKEND");
  r.process_default = "_native_flash";  // alias of flash
  Selection s = select_backend(r, gpu_world());
  EXPECT_EQ(s.backend, "flash");
  EXPECT_EQ(s.rule, "process default");
  r.scoped = "cuda_math";
  EXPECT_EQ(select_backend(r, gpu_world()).rule, "scoped guard");
  r.per_call = "flash";
  s = select_backend(r, gpu_world());
  EXPECT_EQ(s.backend, "flash");
  EXPECT_EQ(s.rule, "per-call");
}

TEST(Select, ExplicitAutoDoesNotDeferToLowerRules) {
  SelectionRequest r;
  r.device = DeviceType::cuda;
  r.per_call = "auto";
  r.process_default = "cuda_math";
  EXPECT_EQ(select_backend(r, gpu_world()).backend, "flash");
}

TEST(Select, ExplicitUnsupportedListsEveryReasonNoFallback) {
  auto world = gpu_world();
  world[2].reasons = {"head_dim = 80 not in built head dims {64, 128}", "ALiBi not supported"};
  SelectionRequest r;
  r.device = DeviceType::cuda;
  r.per_call = "flash";
  try {
    select_backend(r, world);
    FAIL() << "an explicitly named backend that cannot run must not fall back";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    const std::string m = e.what();
    EXPECT_NE(m.find("head_dim = 80"), std::string::npos) << m;
    EXPECT_NE(m.find("ALiBi not supported"), std::string::npos) << m;
    EXPECT_NE(m.find("per-call"), std::string::npos) << m;
  }
}

TEST(Select, ExplicitNotBuiltSaysWhy) {
  SelectionRequest r;
  r.device = DeviceType::cuda;
  r.scoped = "_flash_3";
  try {
    select_backend(r, gpu_world());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kNotBuilt);
    EXPECT_EQ(std::string(e.what()), "flash3: not built: needs sm90a and CUDA");
  }
}

TEST(Select, UnknownNameIsDistinctFromNotBuilt) {
  SelectionRequest r;
  r.per_call = "flashy";
  try {
    select_backend(r, gpu_world());
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnknownBackend);
    EXPECT_NE(std::string(e.what()).find("backend = 'flashy'"), std::string::npos);
  }
}

TEST(Select, NothingCanRunListsAllReasons) {
  std::vector<SelectionCandidate> world = {
      cand("flash", DeviceType::cuda, {"dtype f32 not supported"}),
      cand("cuda_math", DeviceType::cuda, {"too big"})};
  SelectionRequest r;
  r.device = DeviceType::cuda;
  try {
    select_backend(r, world);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    const std::string m = e.what();
    EXPECT_NE(m.find("flash: dtype f32 not supported"), std::string::npos) << m;
    EXPECT_NE(m.find("cuda_math: too big"), std::string::npos) << m;
  }
}

TEST(Select, LazyReasonsAreAskedOnlyWhereNeeded) {
  std::vector<std::string> asked;
  const ReasonsOf probe = [&](const SelectionCandidate& c) {
    asked.push_back(c.name);
    return c.reasons;
  };
  SelectionRequest r;
  r.device = DeviceType::cuda;
  // auto: cudnn (has a reason), then flash (runs it); nothing after flash, nothing on the CPU.
  EXPECT_EQ(select_backend(r, gpu_world(), probe).backend, "flash");
  EXPECT_EQ(asked, (std::vector<std::string>{"cudnn", "flash"}));
  // explicit: only the named backend.
  asked.clear();
  r.per_call = "cuda_math";
  EXPECT_EQ(select_backend(r, gpu_world(), probe).backend, "cuda_math");
  EXPECT_EQ(asked, (std::vector<std::string>{"cuda_math"}));
  // the eager and lazy forms agree, errors included.
  r.per_call = "cudnn";
  EXPECT_THROW(select_backend(r, gpu_world(), probe), Error);
  EXPECT_THROW(select_backend(r, gpu_world()), Error);
}

TEST(Select, NativeMeansCpuFlashOnCpuAndAutoOnCuda) {
  EXPECT_EQ(resolve_backend_name("native", DeviceType::cpu), "cpu_flash");
  EXPECT_EQ(resolve_backend_name("native", DeviceType::cuda), "auto");
  EXPECT_EQ(resolve_backend_name("", DeviceType::cuda), "auto");
}

struct AliasCase {
  const char* alias;
  const char* canonical;
};
class SelectAlias : public ::testing::TestWithParam<AliasCase> {};
TEST_P(SelectAlias, MapsToCanonical) {
  EXPECT_EQ(resolve_backend_name(GetParam().alias, DeviceType::cuda), GetParam().canonical);
}
INSTANTIATE_TEST_SUITE_P(
    DesignTable, SelectAlias,
    ::testing::Values(AliasCase{"_native_math", "math"}, AliasCase{"flash", "flash"},
                      AliasCase{"flash_varlen", "flash"}, AliasCase{"_native_flash", "flash"},
                      AliasCase{"_flash_3", "flash3"}, AliasCase{"_flash_varlen_3", "flash3"},
                      AliasCase{"_flash_3_hub", "flash3"}, AliasCase{"_native_cudnn", "cudnn"},
                      AliasCase{"_sdpa_cudnn", "cudnn"}, AliasCase{"sage_varlen", "sage"},
                      AliasCase{"_sage_qk_int8_pv_fp16_cuda", "sage"},
                      AliasCase{"_sage_qk_int8_pv_fp8_cuda", "sage"},
                      AliasCase{"_sage_qk_int8_pv_fp8_cuda_sm90", "sage"},
                      AliasCase{"_sage_qk_int8_pv_fp16_triton", "sage"}, AliasCase{"flex", "flex"},
                      AliasCase{"xformers", "efficient"},
                      AliasCase{"_native_efficient", "efficient"},
                      AliasCase{"cuda_math", "cuda_math"}, AliasCase{"cpu_flash", "cpu_flash"},
                      AliasCase{"auto", "auto"}),
    [](const auto& info) {
      std::string n = info.param.alias;
      for (char& ch : n)
        if (!isalnum(static_cast<unsigned char>(ch))) ch = '_';
      return "alias_" + n;
    });

}  // namespace
}  // namespace attnkit
