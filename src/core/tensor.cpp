#include <string>

#include "attnkit/tensor.hpp"

namespace attnkit {

std::string Device::str() const {
  return type == DeviceType::cpu ? std::string("cpu") : "cuda:" + std::to_string(index);
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int i = 0; i < rank; ++i)
    n *= shape[i];
  return n;
}

bool TensorView::is_contiguous() const {
  int64_t expect = 1;
  for (int i = rank - 1; i >= 0; --i) {
    if (shape[i] != 1 && stride[i] != expect) return false;
    expect *= shape[i];
  }
  return true;
}

std::string TensorView::shape_str() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

TensorView TensorView::contiguous(void* data, DType dtype, std::initializer_list<int64_t> shape,
                                  Device device) {
  TensorView t;
  t.data = data;
  t.dtype = dtype;
  t.device = device;
  t.rank = static_cast<int>(shape.size());
  int i = 0;
  for (int64_t s : shape)
    t.shape[i++] = s;
  int64_t st = 1;
  for (int d = t.rank - 1; d >= 0; --d) {
    t.stride[d] = st;
    st *= t.shape[d];
  }
  return t;
}

TensorView TensorView::bhsd(void* data, DType dtype, int64_t b, int64_t s, int64_t h, int64_t d,
                            Device device) {
  TensorView t;
  t.data = data;
  t.dtype = dtype;
  t.device = device;
  t.rank = 4;
  t.shape = {b, s, h, d};
  t.stride = {h * s * d, d, s * d, 1};
  return t;
}

}  // namespace attnkit
