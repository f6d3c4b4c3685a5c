// attnkit::Error — the one exception type. Messages name the argument, the expectation and the
// actual value: "k.shape[3] = 96, expected 128 (= q.shape[3])".
#pragma once

#include <stdexcept>
#include <string>

namespace attnkit {

enum class ErrorCode : int {
  kInvalidArgument = 1,  // bad input: shapes, dtypes, strides, options
  kUnsupported = 2,      // valid call, but the chosen backend cannot run it (reasons listed)
  kNotBuilt = 3,         // known backend name, not compiled into this binary
  kUnknownBackend = 4,   // name not known at all
  kTooLarge = 5,         // exceeds a memory cap (e.g. math's score matrix)
  kCudaError = 6,        // a CUDA runtime / driver / library call failed
  kNumericalError = 7,   // ATTNKIT_CHECKS=1 found NaN/Inf
  kInternal = 8,         // a bug in attnkit
};

const char* error_code_name(ErrorCode code);

class Error : public std::runtime_error {
 public:
  Error(ErrorCode code, const std::string& message) : std::runtime_error(message), code_(code) {}
  ErrorCode code() const noexcept { return code_; }

 private:
  ErrorCode code_;
};

}  // namespace attnkit
