// DLPack import: views, not copies; NULL strides are row-major; byte_offset applies; bad dtypes,
// lanes, devices and ranks are errors naming the argument.
#if defined(ATTNKIT_WITH_DLPACK)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "attnkit/attnkit.hpp"
#include "attnkit/dlpack.hpp"

namespace attnkit {
namespace {

DLTensor make(void* data, std::vector<int64_t>& shape, int64_t* strides, DLDataTypeCode code,
              int bits, DLDeviceType dev = kDLCPU) {
  DLTensor t{};
  t.data = data;
  t.device = DLDevice{dev, 0};
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = DLDataType{static_cast<uint8_t>(code), static_cast<uint8_t>(bits), 1};
  t.shape = shape.data();
  t.strides = strides;
  return t;
}

TEST(DLPack, NullStridesAreRowMajor) {
  std::vector<float> buf(2 * 3 * 4 * 5);
  std::vector<int64_t> shape{2, 3, 4, 5};
  const TensorView v = from_dlpack(make(buf.data(), shape, nullptr, kDLFloat, 32));
  EXPECT_EQ(v.rank, 4);
  EXPECT_EQ(v.dtype, DType::f32);
  EXPECT_EQ(v.stride[0], 60);
  EXPECT_EQ(v.stride[3], 1);
  EXPECT_EQ(v.data, buf.data());
  EXPECT_TRUE(v.is_contiguous());
}

TEST(DLPack, StridesAndByteOffsetAreKept) {
  std::vector<uint16_t> buf(64);
  std::vector<int64_t> shape{2, 4, 2, 2};
  int64_t strides[4] = {16, 2, 8, 1};  // a BHSD buffer viewed as BSHD
  DLTensor t = make(buf.data(), shape, strides, kDLBfloat, 16, kDLCUDA);
  t.byte_offset = 6;
  t.device.device_id = 1;
  const TensorView v = from_dlpack(t);
  EXPECT_EQ(v.dtype, DType::bf16);
  EXPECT_EQ(v.device, Device::cuda(1));
  EXPECT_EQ(v.data, reinterpret_cast<char*>(buf.data()) + 6);
  EXPECT_EQ(v.stride[1], 2);
  EXPECT_EQ(v.stride[2], 8);
}

TEST(DLPack, ImportedViewsRunThroughTheApi) {
  // q = k = v = ones [1, 3, 1, 2]: every output element is 1.
  std::vector<float> q(6, 1.0f), out(6, -7.0f);
  std::vector<int64_t> shape{1, 3, 1, 2};
  ForwardArgs a;
  a.q = from_dlpack(make(q.data(), shape, nullptr, kDLFloat, 32), "q");
  a.k = a.q;
  a.v = a.q;
  a.out = from_dlpack(make(out.data(), shape, nullptr, kDLFloat, 32), "out");
  Options o;
  o.backend = "math";
  forward(a, o);
  for (float x : out)
    EXPECT_FLOAT_EQ(x, 1.0f);
}

TEST(DLPack, RejectsWhatItCannotView) {
  std::vector<float> buf(32);
  std::vector<int64_t> shape{2, 2, 2, 2, 2};
  try {
    from_dlpack(make(buf.data(), shape, nullptr, kDLFloat, 32), "q");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("q.ndim = 5, expected 0..4"), std::string::npos);
  }
  std::vector<int64_t> s4{2, 2, 2, 2};
  DLTensor t = make(buf.data(), s4, nullptr, kDLFloat, 64);
  try {
    from_dlpack(t, "k");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("k.dtype = (code 2, bits 64)"), std::string::npos)
        << e.what();
  }
  t.dtype = DLDataType{kDLFloat, 32, 4};
  EXPECT_THROW(from_dlpack(t, "v"), Error);
  t.dtype = DLDataType{kDLFloat, 32, 1};
  t.device.device_type = kDLOpenCL;
  try {
    from_dlpack(t, "out");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("out.device_type"), std::string::npos);
  }
}

}  // namespace
}  // namespace attnkit
#endif  // ATTNKIT_WITH_DLPACK
