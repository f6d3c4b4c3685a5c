#include "attnkit/error.hpp"

namespace attnkit {

const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::kInvalidArgument:
      return "invalid_argument";
    case ErrorCode::kUnsupported:
      return "unsupported";
    case ErrorCode::kNotBuilt:
      return "not_built";
    case ErrorCode::kUnknownBackend:
      return "unknown_backend";
    case ErrorCode::kTooLarge:
      return "too_large";
    case ErrorCode::kCudaError:
      return "cuda_error";
    case ErrorCode::kNumericalError:
      return "numerical_error";
    case ErrorCode::kInternal:
      return "internal";
  }
  return "unknown";
}

}  // namespace attnkit
