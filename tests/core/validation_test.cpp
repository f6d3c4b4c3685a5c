// Each bad input gets its own error, named argument/expected/actual, before any backend runs —
// and `out` stays untouched (it is filled with a sentinel and checked after every failure).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "attnkit/attnkit.hpp"

namespace attnkit {
namespace {

constexpr float kSentinel = 12345.0f;

struct Call {
  // B=2, Sq=5, Sk=7, Hq=4, Hkv=2, D=8, Dv=6, f32, BSHD contiguous, on the CPU.
  int64_t B = 2, Sq = 5, Sk = 7, Hq = 4, Hkv = 2, D = 8, Dv = 6;
  std::vector<float> q, k, v, out, lse, mask;
  ForwardArgs args;
  Options opts;
  Call() {
    q.assign(B * Sq * Hq * D, 0.5f);
    k.assign(B * Sk * Hkv * D, 0.25f);
    v.assign(B * Sk * Hkv * Dv, 1.0f);
    out.assign(B * Sq * Hq * Dv, kSentinel);
    lse.assign(B * Hq * Sq, kSentinel);
    args.q = TensorView::contiguous(q.data(), DType::f32, {B, Sq, Hq, D});
    args.k = TensorView::contiguous(k.data(), DType::f32, {B, Sk, Hkv, D});
    args.v = TensorView::contiguous(v.data(), DType::f32, {B, Sk, Hkv, Dv});
    args.out = TensorView::contiguous(out.data(), DType::f32, {B, Sq, Hq, Dv});
    args.lse = TensorView::contiguous(lse.data(), DType::f32, {B, Hq, Sq});
    opts.backend = "math";
  }
  bool untouched() const {
    for (float x : out)
      if (x != kSentinel) return false;
    for (float x : lse)
      if (x != kSentinel) return false;
    return true;
  }
};

/// Runs forward on any call fixture (args, opts, untouched()), expects Error(code) whose message
/// contains every `needles` entry, and checks that nothing was written.
template <typename Fixture>
void expect_error(Fixture& c, ErrorCode code, std::vector<std::string> needles) {
  try {
    forward(c.args, c.opts);
    FAIL() << "expected an error containing '" << needles.front() << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    for (const auto& n : needles)
      EXPECT_NE(std::string(e.what()).find(n), std::string::npos)
          << "message '" << e.what() << "' lacks '" << n << "'";
  }
  EXPECT_TRUE(c.untouched()) << "out or lse was written by a failing call";
}

TEST(Validation, ValidCallRunsAndWritesOut) {
  Call c;
  EXPECT_EQ(forward(c.args, c.opts), "math");
  EXPECT_FALSE(c.untouched());
  for (float x : c.out)
    EXPECT_FLOAT_EQ(x, 1.0f);  // v is all ones: softmax-weighted mean = 1
}

TEST(Validation, DeviceMismatch) {
  Call c;
  c.args.k.device = Device::cuda(0);
  expect_error(c, ErrorCode::kInvalidArgument, {"k.device = cuda:0", "expected cpu"});
}

TEST(Validation, DtypeMismatch) {
  Call c;
  c.args.v.dtype = DType::f16;
  expect_error(c, ErrorCode::kInvalidArgument, {"v.dtype = f16", "expected f32"});
}

TEST(Validation, OutDtypeMismatch) {
  Call c;
  c.args.out.dtype = DType::bf16;
  expect_error(c, ErrorCode::kInvalidArgument, {"out.dtype = bf16", "expected f32"});
}

TEST(Validation, HeadDimMismatch) {
  Call c;
  c.args.k.shape[3] = 6;
  expect_error(c, ErrorCode::kInvalidArgument, {"k.shape[3] = 6", "expected 8", "q.shape[3]"});
}

TEST(Validation, OutShapeMismatch) {
  Call c;
  c.args.out.shape[3] = 8;
  expect_error(c, ErrorCode::kInvalidArgument, {"out.shape[3] = 8", "expected 6"});
}

TEST(Validation, HeadsNotDivisible) {
  Call c;
  c.args.k.shape[2] = 3;
  c.args.v.shape[2] = 3;
  expect_error(c, ErrorCode::kInvalidArgument, {"Hq % Hkv = 4 % 3 = 1", "expected 0"});
}

TEST(Validation, WrongRank) {
  Call c;
  c.args.q.rank = 3;
  expect_error(c, ErrorCode::kInvalidArgument, {"q.rank = 3", "expected 4"});
}

TEST(Validation, MaskWrongShape) {
  Call c;
  c.mask.assign(2 * 4 * 5 * 6, 1.0f);
  c.opts.mask = TensorView::contiguous(c.mask.data(), DType::f32, {2, 4, 5, 6});
  expect_error(c, ErrorCode::kInvalidArgument, {"mask.shape[3] = 6", "expected 7", "or 1"});
}

TEST(Validation, MaskWrongDtype) {
  Call c;
  c.mask.assign(5 * 7, 1.0f);
  c.opts.mask = TensorView::contiguous(c.mask.data(), DType::i32, {5, 7});
  expect_error(c, ErrorCode::kInvalidArgument, {"mask.dtype = i32", "bool"});
}

TEST(Validation, MaskWrongRank) {
  Call c;
  c.mask.assign(7, 1.0f);
  c.opts.mask = TensorView::contiguous(c.mask.data(), DType::f32, {7});
  expect_error(c, ErrorCode::kInvalidArgument, {"mask.rank = 1", "expected 2, 3 or 4"});
}

TEST(Validation, NegativeStride) {
  Call c;
  c.args.q.stride[1] = -c.args.q.stride[1];
  expect_error(c, ErrorCode::kInvalidArgument, {"q.stride[1] = -32", "expected >= 0"});
}

TEST(Validation, OverlappingOutputStrides) {
  Call c;
  c.args.out.stride[1] = 1;  // rows alias each other
  expect_error(c, ErrorCode::kInvalidArgument, {"out.stride", "non-overlapping"});
}

TEST(Validation, OverlappingInputStrides) {
  Call c;
  c.args.k.stride[2] = 0;  // an expanded (broadcast) kv head: use GQA instead
  expect_error(c, ErrorCode::kInvalidArgument, {"k.stride", "non-overlapping"});
}

TEST(Validation, NullData) {
  Call c;
  c.args.q.data = nullptr;
  expect_error(c, ErrorCode::kInvalidArgument, {"q.data is null"});
}

TEST(Validation, MissingTensor) {
  Call c;
  c.args.v = TensorView{};
  expect_error(c, ErrorCode::kInvalidArgument, {"v is missing"});
}

TEST(Validation, ZeroSizeHeadDim) {
  Call c;
  c.args.q.shape[3] = 0;
  c.args.k.shape[3] = 0;
  expect_error(c, ErrorCode::kInvalidArgument, {"q.shape[3] (D) = 0", "zero-size"});
}

TEST(Validation, ZeroSizeHeads) {
  Call c;
  c.args.k.shape[2] = 0;
  c.args.v.shape[2] = 0;
  expect_error(c, ErrorCode::kInvalidArgument, {"k.shape[2] (Hkv) = 0", "zero-size"});
}

TEST(Validation, NanScale) {
  Call c;
  c.opts.scale = std::nan("");
  expect_error(c, ErrorCode::kInvalidArgument, {"scale = nan", "finite value > 0"});
}

TEST(Validation, NonPositiveScale) {
  for (double s : {0.0, -0.5}) {
    Call c;
    c.opts.scale = s;
    expect_error(c, ErrorCode::kInvalidArgument, {"scale = ", "finite value > 0"});
  }
}

TEST(Validation, WindowBelowMinusOne) {
  Call c;
  c.opts.window_left = -2;
  expect_error(c, ErrorCode::kInvalidArgument, {"window_left = -2", "expected >= -1"});
  Call d;
  d.opts.window_right = -5;
  expect_error(d, ErrorCode::kInvalidArgument, {"window_right = -5", "expected >= -1"});
}

TEST(Validation, DropoutOutOfRange) {
  for (double p : {1.0, -0.1, 1.5, std::nan("")}) {
    Call c;
    c.opts.dropout_p = p;
    expect_error(c, ErrorCode::kInvalidArgument, {"dropout_p = ", "[0, 1)"});
  }
}

TEST(Validation, SoftcapNegative) {
  Call c;
  c.opts.softcap = -1;
  expect_error(c, ErrorCode::kInvalidArgument, {"softcap = -1", ">= 0"});
}

TEST(Validation, LseWrongDtypeAndShape) {
  Call c;
  c.args.lse.dtype = DType::f16;
  expect_error(c, ErrorCode::kInvalidArgument, {"lse.dtype = f16", "expected f32"});
  Call d;
  d.args.lse.shape[2] = 4;
  expect_error(d, ErrorCode::kInvalidArgument, {"lse.shape[2] = 4", "expected 5"});
}

TEST(Validation, AlibiWrongShape) {
  Call c;
  std::vector<float> slopes(3, 0.5f);
  c.opts.alibi_slopes = TensorView::contiguous(slopes.data(), DType::f32, {3});
  expect_error(c, ErrorCode::kInvalidArgument, {"alibi_slopes.shape[0] = 3", "expected 4"});
}

// ---- varlen offsets ------------------------------------------------------------------------
struct VarlenCall {
  // three sequences, q lengths {2, 0, 3} (total 5), k lengths {4, 1, 2} (total 7)
  std::vector<float> q, k, v, out;
  std::vector<int32_t> cuq{0, 2, 2, 5}, cuk{0, 4, 5, 7};
  ForwardArgs args;
  Options opts;
  VarlenCall() {
    q.assign(5 * 2 * 4, 0.1f);
    k.assign(7 * 2 * 4, 0.2f);
    v.assign(7 * 2 * 4, 1.0f);
    out.assign(5 * 2 * 4, kSentinel);
    args.q = TensorView::contiguous(q.data(), DType::f32, {5, 2, 4});
    args.k = TensorView::contiguous(k.data(), DType::f32, {7, 2, 4});
    args.v = TensorView::contiguous(v.data(), DType::f32, {7, 2, 4});
    args.out = TensorView::contiguous(out.data(), DType::f32, {5, 2, 4});
    opts.backend = "math";
  }
  void bind() {
    opts.cu_seqlens_q = TensorView::contiguous(cuq.data(), DType::i32, {4});
    opts.cu_seqlens_k = TensorView::contiguous(cuk.data(), DType::i32, {4});
  }
  bool untouched() const {
    for (float x : out)
      if (x != kSentinel) return false;
    return true;
  }
  void expect(std::vector<std::string> needles) {
    bind();
    expect_error(*this, ErrorCode::kInvalidArgument, std::move(needles));
  }
};

TEST(Validation, VarlenValidRuns) {
  VarlenCall c;
  c.bind();
  EXPECT_EQ(forward(c.args, c.opts), "math");
  for (float x : c.out)
    EXPECT_FLOAT_EQ(x, 1.0f);
}

TEST(Validation, CuSeqlensNotMonotone) {
  VarlenCall c;
  c.cuq = {0, 3, 2, 5};
  c.expect({"cu_seqlens_q is not monotone", "cu_seqlens_q[2] = 2"});
}

TEST(Validation, CuSeqlensWrongTotal) {
  VarlenCall c;
  c.cuk = {0, 4, 5, 6};
  c.expect({"cu_seqlens_k[3] = 6", "expected 7", "packed length"});
}

TEST(Validation, CuSeqlensNotStartingAtZero) {
  VarlenCall c;
  c.cuq = {1, 2, 2, 5};
  c.expect({"cu_seqlens_q[0] = 1", "expected 0"});
}

TEST(Validation, CuSeqlensWrongDtype) {
  VarlenCall c;
  c.bind();
  c.opts.cu_seqlens_k.dtype = DType::f32;
  try {
    forward(c.args, c.opts);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cu_seqlens_k.dtype = f32"), std::string::npos);
  }
}

TEST(Validation, CuSeqlensMissingOne) {
  VarlenCall c;
  c.bind();
  c.opts.cu_seqlens_k = TensorView{};
  try {
    forward(c.args, c.opts);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cu_seqlens_k is missing"), std::string::npos);
  }
}

TEST(Validation, MaxSeqlenTooSmall) {
  VarlenCall c;
  c.opts.max_seqlen_q = 2;  // longest q sequence is 3
  c.opts.max_seqlen_k = 4;
  c.expect({"max_seqlen_q/max_seqlen_k = 2/4", "3/4"});
}

TEST(Validation, VarlenWithMaskRejected) {
  VarlenCall c;
  std::vector<float> m(35, 0.0f);
  c.opts.mask = TensorView::contiguous(m.data(), DType::f32, {5, 7});
  c.expect({"mask is given with a varlen call"});
}

// ---- backward ------------------------------------------------------------------------------
TEST(Validation, BackwardNeedsLse) {
  Call c;
  std::vector<float> dout(c.out.size(), 1.0f), dq(c.q.size(), kSentinel), dk(c.k.size(), kSentinel),
      dv(c.v.size(), kSentinel);
  BackwardArgs b;
  b.dout = TensorView::contiguous(dout.data(), DType::f32, {2, 5, 4, 6});
  b.q = c.args.q;
  b.k = c.args.k;
  b.v = c.args.v;
  b.out = c.args.out;
  b.dq = TensorView::contiguous(dq.data(), DType::f32, {2, 5, 4, 8});
  b.dk = TensorView::contiguous(dk.data(), DType::f32, {2, 7, 2, 8});
  b.dv = TensorView::contiguous(dv.data(), DType::f32, {2, 7, 2, 6});
  try {
    backward(b, c.opts);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("lse is missing"), std::string::npos) << e.what();
  }
  b.lse = c.args.lse;
  b.dk.shape[1] = 6;
  try {
    backward(b, c.opts);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dk.shape[1] = 6, expected 7"), std::string::npos)
        << e.what();
  }
  for (float x : dq)
    EXPECT_EQ(x, kSentinel);
  for (float x : dk)
    EXPECT_EQ(x, kSentinel);
}

// ---- backend names -------------------------------------------------------------------------
TEST(Validation, UnknownBackendName) {
  Call c;
  c.opts.backend = "flash4";
  expect_error(c, ErrorCode::kUnknownBackend, {"backend = 'flash4'", "_native_math"});
}

TEST(Validation, KnownButNotBuiltIsDistinct) {
  Call c;
  c.opts.backend = "sage";  // a known name with no implementation in this version
  expect_error(c, ErrorCode::kNotBuilt, {"sage: not built"});
}

TEST(Validation, CudaBackendOnCpuTensorsIsUnsupported) {
  const auto all = list_backends();
  for (const auto& b : all) {
    if (!b.built || b.caps.device != DeviceType::cuda) continue;
    Call c;
    c.opts.backend = b.name;
    expect_error(c, ErrorCode::kUnsupported, {"runs on cuda, tensors are on cpu"});
  }
}

}  // namespace
}  // namespace attnkit
