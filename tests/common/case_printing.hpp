// gtest support for check::Case: readable parameter printing and test names.
//   INSTANTIATE_TEST_SUITE_P(Hostile, MyTest, ::testing::ValuesIn(cases),
//                            attnkit::testing::CaseParamName{});
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>

#include "check/check.hpp"

namespace attnkit::check {
/// Found by gtest through ADL: prints the case's name() (which lists every parameter).
void PrintTo(const Case& c, std::ostream* os);
}  // namespace attnkit::check

namespace attnkit::testing {

/// Test-name generator: the case's name(), which is gtest-safe and unique within hostile_cases().
struct CaseParamName {
  std::string operator()(const ::testing::TestParamInfo<check::Case>& info) const {
    return info.param.name();
  }
};

}  // namespace attnkit::testing
