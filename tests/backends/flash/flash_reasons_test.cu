// Capabilities and extra_reasons: what `explain` says about calls flash cannot run.
#include <gtest/gtest.h>

#include <algorithm>

#include "attnkit/backend_info.hpp"
#include "common/cuda_skip.hpp"
#include "flash_test_util.cuh"

namespace attnkit::flash_test {
namespace {

bool mentions(const std::vector<std::string>& reasons, const std::string& what) {
  return std::any_of(reasons.begin(), reasons.end(),
                     [&](const std::string& r) { return r.find(what) != std::string::npos; });
}

std::vector<std::string> flash_reasons(const Explanation& e) {
  for (const auto& b : e.backends)
    if (b.name == "flash") return b.reasons;
  ADD_FAILURE() << "flash missing from explain()";
  return {};
}

TEST(FlashCapabilities, ReportsBuiltHeadDimsOnly) {
  for (const auto& d : list_backends()) {
    if (d.name != "flash") continue;
    ASSERT_TRUE(d.built);
    const int max_built = flash::kBuiltHeadDims[sizeof(flash::kBuiltHeadDims) / sizeof(int) - 1];
    EXPECT_EQ(d.caps.max_head_dim, max_built);
    for (int hd : d.caps.head_dims)
      EXPECT_LE(hd, max_built);
    EXPECT_EQ(d.caps.min_arch, 80);
    EXPECT_TRUE(std::find(d.aliases.begin(), d.aliases.end(), "flash_varlen") != d.aliases.end());
    return;
  }
  FAIL() << "flash not listed";
}

TEST(FlashReasons, F32AndLastDimStride) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  const int64_t d = flash::kBuiltHeadDims[0];
  DevBuf buf(4 * 2 * 16 * 2 * d * 4);
  auto view = [&](DType dt, int64_t sd) {
    TensorView t;
    t.data = buf.p;
    t.dtype = dt;
    t.device = Device::cuda(0);
    t.rank = 4;
    t.shape = {1, 16, 2, d};
    t.stride = {16 * 2 * d * sd, 2 * d * sd, d * sd, sd};
    return t;
  };
  Options o;
  const Explanation e32 = explain(
      {view(DType::f32, 1), view(DType::f32, 1), view(DType::f32, 1), view(DType::f32, 1), {}}, o);
  EXPECT_TRUE(mentions(flash_reasons(e32), "dtype f32")) << e32.str();
  // Outputs must not overlap inputs: give out its own buffer region via a different view.
  DevBuf obuf(16 * 2 * d * 2);
  TensorView out = view(DType::bf16, 1);
  out.data = obuf.p;
  const Explanation es =
      explain({view(DType::bf16, 2), view(DType::bf16, 2), view(DType::bf16, 2), out, {}}, o);
  EXPECT_TRUE(mentions(flash_reasons(es), "last-dim stride")) << es.str();
}

}  // namespace
}  // namespace attnkit::flash_test
