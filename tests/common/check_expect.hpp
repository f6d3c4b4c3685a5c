// gtest glue for check::Report: a skipped case is a visible GTEST_SKIP with the backend's reasons;
// otherwise the case must pass, and a failure prints every metric.
//   TEST_P(MyBackendVsOracle, Matches) {
//     ATTNKIT_EXPECT_CHECK_PASSES(check::run_case(GetParam(), "mine", Device::cuda(0)));
//   }
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "check/check.hpp"

namespace attnkit::testing {

/// "out rel 1.2e-06 max 3e-06 | lse ... " for failure messages.
std::string describe_metrics(const check::Report& r);

}  // namespace attnkit::testing

#define ATTNKIT_EXPECT_CHECK_PASSES(report_expr)                               \
  do {                                                                         \
    const ::attnkit::check::Report attnkit_report_ = (report_expr);            \
    if (attnkit_report_.skipped) GTEST_SKIP() << attnkit_report_.detail;       \
    EXPECT_TRUE(attnkit_report_.pass)                                          \
        << attnkit_report_.backend << " " << attnkit_report_.case_name << ": " \
        << attnkit_report_.detail << "\n  "                                    \
        << ::attnkit::testing::describe_metrics(attnkit_report_);              \
  } while (0)
