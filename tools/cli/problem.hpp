// One attention problem built from command-line options: shapes, dtype, device, options, and the
// buffers (allocated on the target device, inputs random N(0,1)). Shared by explain and bench.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "args.hpp"
#include "attnkit/attnkit.hpp"
#include "core/device_runtime.hpp"

namespace attnkit::cli {

/// Option specs every shape-taking command accepts.
std::vector<OptionSpec> problem_option_specs();

struct ProblemShape {
  int64_t b = 2, sq = 1024, sk = 1024, hq = 16, hkv = 16, d = 64, dv = 64;
  DType dtype = DType::bf16;
  Device device = Device::cpu();
  bool bhsd = false;
  Options opts;      // causal, window, softcap, dropout, backend
  std::string mask;  // "", "bool", "additive"
  bool alibi = false;
  bool varlen = false;  // b sequences of length sq/sk each, packed
  std::string describe() const;
  /// FLOPs of the forward pass: 4·B·Hq·Sq·Sk·D (with D = (D + Dv) / 2 when they differ), halved
  /// for causal with Sq == Sk (BENCHMARKS.md). Backward = 2.5×.
  double forward_flops() const;
};

/// Reads the shape options; --device "cuda" picks cuda:0.
ProblemShape shape_from_args(const Args& a);

class Problem {
 public:
  Problem(const ProblemShape& s, bool with_backward, uint64_t seed);
  const ProblemShape& shape() const { return s_; }
  ForwardArgs forward_args() const;
  BackwardArgs backward_args() const;
  Options options() const;
  size_t bytes() const;  // device bytes allocated for the problem

 private:
  TensorView view(const DeviceBuffer& buf, DType dt, int64_t s, int64_t h, int64_t d) const;
  ProblemShape s_;
  DeviceBuffer q_, k_, v_, out_, lse_, dout_, dq_, dk_, dv_, mask_, alibi_, cuq_, cuk_;
};

}  // namespace attnkit::cli
