#include "check/host_tensor.hpp"

#include <algorithm>

#include "core/dtype_convert.hpp"

namespace attnkit::check::detail {

HostTensor HostTensor::make(DType dtype, std::vector<int64_t> shape, std::vector<int> order,
                            bool pad) {
  HostTensor t;
  t.dtype = dtype;
  t.rank = static_cast<int>(shape.size());
  t.shape = std::move(shape);
  t.stride.assign(t.shape.size(), 0);
  int64_t st = 1;
  for (int p = t.rank - 1; p >= 0; --p) {  // innermost physical dim first
    const int dim = order[static_cast<size_t>(p)];
    t.stride[static_cast<size_t>(dim)] = st;
    const int64_t extent =
        t.shape[static_cast<size_t>(dim)] + (pad ? (p == t.rank - 1 ? 3 : 1) : 0);
    st *= extent;
  }
  const int64_t elems = std::max<int64_t>(st, 1);
  t.bytes.assign(static_cast<size_t>(elems * dtype_size(dtype)), kPoisonByte);
  return t;
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t s : shape)
    n *= s;
  return n;
}

std::vector<int64_t> HostTensor::offsets() const {
  std::vector<int64_t> out;
  const int64_t n = numel();
  out.reserve(static_cast<size_t>(n));
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t e = 0; e < n; ++e) {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      off += idx[d] * stride[d];
    out.push_back(off);
    for (int d = rank - 1; d >= 0; --d) {  // row-major increment
      if (++idx[static_cast<size_t>(d)] < shape[static_cast<size_t>(d)]) break;
      idx[static_cast<size_t>(d)] = 0;
    }
  }
  return out;
}

std::vector<double> HostTensor::values() const {
  std::vector<double> out;
  for (int64_t off : offsets())
    out.push_back(load_as_double(bytes.data(), off, dtype));
  return out;
}

int64_t HostTensor::changed_padding_bytes() const {
  std::vector<uint8_t> logical(bytes.size(), 0);
  const int sz = dtype_size(dtype);
  for (int64_t off : offsets())
    for (int c = 0; c < sz; ++c)
      logical[static_cast<size_t>(off * sz + c)] = 1;
  int64_t changed = 0;
  for (size_t i = 0; i < bytes.size(); ++i)
    changed += !logical[i] && bytes[i] != kPoisonByte;
  return changed;
}

void HostTensor::fill_normal(std::mt19937_64& gen, double sigma) {
  poison();
  std::normal_distribution<double> n(0.0, sigma);
  for (int64_t off : offsets())
    store_from_double(bytes.data(), off, dtype, n(gen));
}

void HostTensor::set(int64_t logical_index, double v) {
  int64_t off = 0, rem = logical_index;
  for (int d = rank - 1; d >= 0; --d) {
    off += (rem % shape[static_cast<size_t>(d)]) * stride[static_cast<size_t>(d)];
    rem /= shape[static_cast<size_t>(d)];
  }
  store_from_double(bytes.data(), off, dtype, v);
}

void HostTensor::expand(int dim, int64_t size) {
  shape[static_cast<size_t>(dim)] = size;
  stride[static_cast<size_t>(dim)] = 0;
}

TensorView HostTensor::view(void* data, Device device) const {
  TensorView v;
  v.data = data;
  v.dtype = dtype;
  v.device = device;
  v.rank = rank;
  for (int i = 0; i < rank; ++i) {
    v.shape[static_cast<size_t>(i)] = shape[static_cast<size_t>(i)];
    v.stride[static_cast<size_t>(i)] = stride[static_cast<size_t>(i)];
  }
  return v;
}

DeviceCopy::DeviceCopy(const HostTensor& t, Device d) : buffer_(t.bytes.size(), d) {
  device_runtime(d.type).copy_to_device(buffer_.get(), t.bytes.data(), t.bytes.size(), d);
  view_ = t.view(buffer_.get(), d);
}

void DeviceCopy::copy_back(HostTensor& t) const {
  device_runtime(buffer_.device().type)
      .copy_to_host(t.bytes.data(), buffer_.get(), t.bytes.size(), buffer_.device());
}

}  // namespace attnkit::check::detail
