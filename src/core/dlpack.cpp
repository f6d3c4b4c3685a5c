// DLPack import (include/attnkit/dlpack.hpp). Compiled only where dlpack/dlpack.h exists.
#if defined(ATTNKIT_WITH_DLPACK)
#include "attnkit/dlpack.hpp"

#include <string>

#include "attnkit/error.hpp"

namespace attnkit {
namespace {

[[noreturn]] void fail(const char* name, const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, std::string(name) + what);
}

DType dtype_of(const DLDataType& d, const char* name) {
  if (d.lanes != 1)
    fail(name, ".dtype.lanes = " + std::to_string(d.lanes) + ", expected 1 (no vector types)");
  const int code = d.code, bits = d.bits;
  if (code == kDLFloat && bits == 32) return DType::f32;
  if (code == kDLFloat && bits == 16) return DType::f16;
  if (code == kDLBfloat && bits == 16) return DType::bf16;
  if (code == kDLInt && bits == 8) return DType::i8;
  if (code == kDLInt && bits == 32) return DType::i32;
  if (code == kDLUInt && bits == 8) return DType::b8;  // DLPack < 0.8 spells bool as uint8
#if defined(DLPACK_VERSION) && DLPACK_VERSION >= 80
  if (code == kDLBool && bits == 8) return DType::b8;
#endif
  fail(name, ".dtype = (code " + std::to_string(code) + ", bits " + std::to_string(bits) +
                 "), expected float32/float16/bfloat16, int8, int32 or bool");
}

Device device_of(const DLDevice& d, const char* name) {
  switch (d.device_type) {
    case kDLCPU:
    case kDLCUDAHost:  // pinned host memory: the CPU reads it directly
      return Device::cpu();
    case kDLCUDA:
    case kDLCUDAManaged:
      return Device::cuda(d.device_id);
    default:
      fail(name, ".device_type = " + std::to_string(static_cast<int>(d.device_type)) +
                     ", expected CPU, CUDA, CUDA host or CUDA managed memory");
  }
}

}  // namespace

TensorView from_dlpack(const DLTensor& t, const char* name) {
  if (t.ndim < 0 || t.ndim > kMaxRank)
    fail(name, ".ndim = " + std::to_string(t.ndim) + ", expected 0..4");
  TensorView v;
  v.dtype = dtype_of(t.dtype, name);
  v.device = device_of(t.device, name);
  v.rank = t.ndim;
  v.data = t.data ? static_cast<char*>(t.data) + t.byte_offset : nullptr;
  int64_t contiguous = 1;
  for (int i = v.rank - 1; i >= 0; --i) {
    v.shape[i] = t.shape[i];
    v.stride[i] = t.strides ? t.strides[i] : contiguous;
    contiguous *= t.shape[i];
  }
  return v;
}

}  // namespace attnkit
#endif  // ATTNKIT_WITH_DLPACK
