// tests/common helpers: the CUDA skip reason and Case printing.
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "common/case_printing.hpp"
#include "common/cuda_skip.hpp"

namespace attnkit::testing {
namespace {

TEST(CudaSkip, SaysWhyCudaIsUnavailable) {
  std::string why;
  const bool ok = cuda_available(&why);
#if defined(ATTNKIT_WITH_CUDA)
  if (!ok) {
    EXPECT_FALSE(why.empty());
  }
#else
  EXPECT_FALSE(ok);
  EXPECT_NE(why.find("without CUDA"), std::string::npos) << why;
#endif
}

TEST(CudaSkip, MacroSkipsOnlyWithoutCuda) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  EXPECT_TRUE(cuda_available(nullptr));  // reached only with a usable device
}

TEST(CasePrinting, PrintToWritesTheName) {
  check::Case c;
  c.sq = 7;
  c.causal = Causal::bottom_right;
  std::ostringstream os;
  check::PrintTo(c, &os);
  EXPECT_EQ(os.str(), c.name());
  EXPECT_NE(os.str().find("sq7"), std::string::npos);
  EXPECT_NE(os.str().find("causalBR"), std::string::npos);
}

}  // namespace
}  // namespace attnkit::testing
