// Test helpers for the flash backend: random problems, device buffers, and a comparison of the
// flash backend (GPU, f16/bf16) with the `math` oracle (CPU, fp64 accumulation) on the very same
// rounded inputs, through the public attnkit::forward / attnkit::backward API.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <vector>

#include "attnkit/attention.hpp"
#include "attnkit/error.hpp"
#include "backends/flash/flash_head_dims.hpp"  // the same head-dim list the backend was built with
#include "backends/flash/launch.hpp"           // last_fwd_tail_tiles (the split tail)

namespace attnkit::flash_test {

struct Cfg {
  std::string tag;
  int64_t b = 1, sq = 1, sk = 1, hq = 1, hkv = 1, d = 64;
  DType dt = DType::bf16;
  Causal causal = Causal::none;
  int64_t wl = -1, wr = -1;
  double softcap = 0.0;
  int alibi = 0;  // 0 none, 1 slopes [Hq], 2 slopes [B, Hq]
  int mask = 0;   // 0 none, 1 bool [B, Hq, Sq, Sk], 2 additive f32 [Sq, Sk] (broadcast)
  double dropout = 0.0;
  std::vector<int64_t> lens_q, lens_k;  // varlen when non-empty
  bool bhsd = false;
  bool padded = false;  // inputs with enlarged (b, s, h) strides
  bool bwd = false;
  bool det = false;  // deterministic backward (atomic-free kernels instead of FA-2's schedule)
  // The forward's split tail: env ATTNKIT_FLASH_FWD_TAIL during the flash call ("" = unset) and
  // whether the launch must have split (1), must not have (0), or either (-1).
  std::string tail_env;
  int expect_tail = -1;
  std::string name() const {
    std::string n = tag + "_d" + std::to_string(d) + (dt == DType::bf16 ? "_bf16" : "_f16");
    return n + (bwd ? "_bwd" : "_fwd") + (det ? "_det" : "");
  }
};

/// gtest prints the case name instead of a byte dump.
inline void PrintTo(const Cfg& c, std::ostream* os) {
  *os << c.name();
}

inline float round_to(DType dt, float x) {
  if (dt == DType::bf16) return __bfloat162float(__float2bfloat16(x));
  return __half2float(__float2half(x));
}
inline uint16_t bits_of(DType dt, float x) {
  uint16_t r;
  if (dt == DType::bf16) {
    __nv_bfloat16 h = __float2bfloat16(x);
    std::memcpy(&r, &h, 2);
  } else {
    __half h = __float2half(x);
    std::memcpy(&r, &h, 2);
  }
  return r;
}
inline float from_bits(DType dt, uint16_t r) {
  if (dt == DType::bf16) {
    __nv_bfloat16 h;
    std::memcpy(&h, &r, 2);
    return __bfloat162float(h);
  }
  __half h;
  std::memcpy(&h, &r, 2);
  return __half2float(h);
}

/// Owning device buffer.
struct DevBuf {
  void* p = nullptr;
  size_t bytes = 0;
  explicit DevBuf(size_t n) : bytes(n) {
    if (n) EXPECT_EQ(cudaMalloc(&p, n), cudaSuccess);
  }
  ~DevBuf() {
    if (p) cudaFree(p);
  }
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
};

/// One q/k/v-like tensor: logical [B, S, H, D] (or varlen [total, H, D]) with host f32 values
/// (already rounded to the test dtype) and a device copy in that dtype.
struct Tensor {
  int rank = 4;
  std::array<int64_t, 4> shape{}, stride{};  // device strides (host copy is contiguous)
  std::vector<float> host;                   // contiguous, logical order
  std::unique_ptr<DevBuf> dev;
  int64_t numel() const {
    int64_t n = 1;
    for (int i = 0; i < rank; ++i)
      n *= shape[i];
    return n;
  }
  TensorView host_view() {
    TensorView t;
    t.data = host.data();
    t.dtype = DType::f32;
    t.rank = rank;
    t.shape = shape;
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; --i) {
      t.stride[i] = s;
      s *= shape[i];
    }
    return t;
  }
  TensorView dev_view(DType dt) const {
    TensorView t;
    t.data = dev->p;
    t.dtype = dt;
    t.device = Device::cuda(0);
    t.rank = rank;
    t.shape = shape;
    t.stride = stride;
    return t;
  }
};

/// Device strides for a tensor of `shape`: contiguous, BHSD (rank 4: S and H swapped) or padded.
inline size_t make_strides(Tensor& t, bool bhsd, bool padded) {
  const int r = t.rank;
  std::array<int64_t, 4> ext = t.shape;
  if (padded) ext[r - 1] += 8;  // row pitch D + 8: (b, s, h) strides stay multiples of 8
  if (bhsd && r == 4) {
    // memory order [B, H, S, D]
    t.stride[3] = 1;
    t.stride[1] = ext[3];
    t.stride[2] = ext[3] * ext[1];
    t.stride[0] = ext[3] * ext[1] * ext[2];
    return static_cast<size_t>(ext[0] * ext[1] * ext[2] * ext[3]);
  }
  int64_t s = 1;
  for (int i = r - 1; i >= 0; --i) {
    t.stride[i] = s;
    s *= ext[i];
  }
  return static_cast<size_t>(s);
}

/// Uploads t.host into a fresh device buffer (poisoning padding with NaN bits).
inline void upload(Tensor& t, DType dt, bool bhsd, bool padded) {
  const size_t elems = make_strides(t, bhsd, padded);
  t.dev = std::make_unique<DevBuf>(elems * 2);
  std::vector<uint16_t> buf(elems, 0x7fff);  // NaN in both f16 and bf16
  std::array<int64_t, 4> idx{};
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t rem = n, off = 0;
    for (int i = t.rank - 1; i >= 0; --i) {
      idx[i] = rem % t.shape[i];
      rem /= t.shape[i];
      off += idx[i] * t.stride[i];
    }
    buf[off] = bits_of(dt, t.host[n]);
  }
  ASSERT_EQ(cudaMemcpy(t.dev->p, buf.data(), elems * 2, cudaMemcpyHostToDevice), cudaSuccess);
}
/// Downloads the device tensor into logical-order floats.
inline std::vector<float> download(const Tensor& t, DType dt) {
  std::vector<uint16_t> buf(t.dev->bytes / 2);
  EXPECT_EQ(cudaMemcpy(buf.data(), t.dev->p, t.dev->bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<float> out(t.numel());
  for (int64_t n = 0; n < t.numel(); ++n) {
    int64_t rem = n, off = 0;
    for (int i = t.rank - 1; i >= 0; --i) {
      off += (rem % t.shape[i]) * t.stride[i];
      rem /= t.shape[i];
    }
    out[n] = from_bits(dt, buf[off]);
  }
  return out;
}

struct Err {
  double rel = 0, max_abs = 0;
  int64_t nonfinite = 0;
};
inline Err compare(const std::vector<float>& x, const std::vector<float>& ref) {
  Err e;
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const bool fx = std::isfinite(x[i]), fr = std::isfinite(ref[i]);
    if (!fr || !fx) {
      if (!(x[i] == ref[i])) ++e.nonfinite;  // both -inf is fine; NaN never passes
      continue;
    }
    const double d = static_cast<double>(x[i]) - ref[i];
    num += d * d;
    den += static_cast<double>(ref[i]) * ref[i];
    e.max_abs = std::max(e.max_abs, std::fabs(d));
  }
  e.rel = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return e;
}

}  // namespace attnkit::flash_test
