// Tensor views over caller memory. attnkit never owns or copies tensors it is given: a view is a
// data pointer, a dtype, a device, a shape (rank 0..4) and 64-bit element strides (any strides,
// including 0 for broadcast dims). BSHD ("NHD") and BHSD ("HND") are stride patterns of one
// logical shape [B, S, H, D], never copies.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

namespace attnkit {

enum class DType : uint8_t { f32, f16, bf16, f8e4m3, f8e5m2, i8, i32, b8 };

/// Bytes per element.
int dtype_size(DType t);
/// "f32", "f16", "bf16", "f8e4m3", "f8e5m2", "i8", "i32", "bool".
const char* dtype_name(DType t);
/// Inverse of dtype_name (also accepts "float32", "float16", "bfloat16", "bool", "int8", "int32").
/// Throws Error(kInvalidArgument) for unknown names.
DType dtype_from_name(const std::string& name);
bool is_float(DType t);  // f32/f16/bf16/f8*

enum class DeviceType : uint8_t { cpu, cuda };

struct Device {
  DeviceType type = DeviceType::cpu;
  int index = 0;  // cuda ordinal; 0 for cpu

  static Device cpu() { return {DeviceType::cpu, 0}; }
  static Device cuda(int i = 0) { return {DeviceType::cuda, i}; }
  bool is_cuda() const { return type == DeviceType::cuda; }
  bool operator==(const Device&) const = default;
  std::string str() const;  // "cpu", "cuda:0"
};

inline constexpr int kMaxRank = 4;

struct TensorView {
  void* data = nullptr;
  DType dtype = DType::f32;
  Device device{};
  int rank = 0;
  std::array<int64_t, kMaxRank> shape{};   // only [0, rank) meaningful
  std::array<int64_t, kMaxRank> stride{};  // in elements

  /// True when this view describes a tensor (rank > 0 or data set). An empty TensorView{} means
  /// "argument not given" for optional inputs (mask, lse, alibi slopes, cu_seqlens).
  bool defined() const { return data != nullptr || rank > 0; }
  int64_t numel() const;
  bool is_contiguous() const;
  std::string shape_str() const;  // "[2, 128, 8, 64]"

  /// Row-major contiguous view.
  static TensorView contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape,
                               Device device = Device::cpu());
  /// Logical [B, S, H, D] view over a buffer laid out as [B, H, S, D] ("HND").
  static TensorView bhsd(void* data, DType dtype, int64_t b, int64_t s, int64_t h, int64_t d,
                         Device device = Device::cpu());
};

}  // namespace attnkit
