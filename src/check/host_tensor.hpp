// Host-side tensors of the check harness: bytes in a chosen physical layout (optionally padded, so
// strides are not contiguous), the logical view over them, and copies to/from a device.
// Padding bytes hold the NaN pattern 0xFF: a backend that reads outside the view sees NaN, and a
// backend that writes outside it changes bytes the harness then finds.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

#include "attnkit/tensor.hpp"
#include "core/device_runtime.hpp"

namespace attnkit::check::detail {

inline constexpr uint8_t kPoisonByte = 0xFF;  // f32/f16/bf16 0xFF.. patterns are all NaN

struct HostTensor {
  DType dtype = DType::f32;
  int rank = 0;
  std::vector<int64_t> shape;   // logical
  std::vector<int64_t> stride;  // elements, per logical dim
  std::vector<uint8_t> bytes;   // physical storage incl. padding (never empty: data is non-null)

  /// `order`: physical nesting of the logical dims, outermost first (e.g. {0, 2, 1, 3} = BHSD for
  /// a logical [B, S, H, D]). `pad`: innermost physical extent +3, every other extent +1.
  static HostTensor make(DType dtype, std::vector<int64_t> shape, std::vector<int> order, bool pad);
  static HostTensor contiguous(DType dtype, std::vector<int64_t> shape) {
    std::vector<int> order;
    for (int i = 0; i < static_cast<int>(shape.size()); ++i)
      order.push_back(i);
    return make(dtype, std::move(shape), std::move(order), false);
  }

  int64_t numel() const;
  /// Offsets (elements) of every logical element, in logical row-major order.
  std::vector<int64_t> offsets() const;
  /// Logical elements as double, in logical row-major order.
  std::vector<double> values() const;
  /// Bytes outside the logical elements that are no longer kPoisonByte.
  int64_t changed_padding_bytes() const;

  void poison() { std::fill(bytes.begin(), bytes.end(), kPoisonByte); }
  /// Every logical element = N(0, sigma) rounded to dtype; padding poisoned.
  void fill_normal(std::mt19937_64& gen, double sigma = 1.0);
  void set(int64_t logical_index, double v);  // element in logical row-major order
  /// View of size-1 dim `dim` expanded to `size` with stride 0 (input tensors only: offsets()
  /// then repeats elements).
  void expand(int dim, int64_t size);

  TensorView view(void* data, Device device) const;
  TensorView host_view() { return view(bytes.data(), Device::cpu()); }
};

/// A HostTensor's bytes on a device (a plain host copy for the CPU, so the original stays
/// pristine for the reference run).
class DeviceCopy {
 public:
  DeviceCopy(const HostTensor& t, Device d);
  TensorView view() const { return view_; }
  /// Copies the device bytes back into `t` (same shape and size as at construction).
  void copy_back(HostTensor& t) const;

 private:
  DeviceBuffer buffer_;
  TensorView view_;
};

}  // namespace attnkit::check::detail
