// Exact host conversions between f32 and the narrow float formats, round-to-nearest-even, NaN
// and Inf preserved where the format has them.
// Shared by the oracle, the CPU backends, the test harness and the CLI. Device code has its own
// (cuda_fp16/cuda_bf16 intrinsics); the tests check both agree.
#pragma once

#include <cstdint>
#include <cstring>

#include "attnkit/tensor.hpp"

namespace attnkit {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// bf16: upper 16 bits of f32, RNE; NaN stays a (quiet) NaN.
inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  const uint32_t rounding = 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>((u + rounding) >> 16);
}
inline float bf16_to_f32(uint16_t h) {
  return f32_from_bits(static_cast<uint32_t>(h) << 16);
}

float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);  // RNE, overflow -> Inf, NaN stays NaN
/// OCP FP8 E4M3 ("e4m3fn"): no Inf, max finite 448, NaN = S.1111.111. Non-saturating: a value
/// whose rounded magnitude exceeds 448, or +-Inf, becomes NaN.
float f8e4m3_to_f32(uint8_t b);
uint8_t f32_to_f8e4m3(float f);
/// OCP FP8 E5M2: IEEE-like, with Inf; overflow -> Inf.
float f8e5m2_to_f32(uint8_t b);
uint8_t f32_to_f8e5m2(float f);

/// Element `idx` (in elements from `base`) of a tensor of dtype t, as double.
double load_as_double(const void* base, int64_t idx, DType t);
/// Stores v (rounded RNE to t) at element idx.
void store_from_double(void* base, int64_t idx, DType t, double v);
/// Rounds v to the nearest value representable in t (identity for f32 beyond f32 rounding).
double round_to_dtype(double v, DType t);

}  // namespace attnkit
