// dtype names and exact host conversions (RNE). Tested on every f16/bf16 bit pattern in
// tests/cpu/dtype_test.cpp.
#include <cmath>
#include <string>

#include "attnkit/error.hpp"
#include "attnkit/tensor.hpp"
#include "core/dtype_convert.hpp"

namespace attnkit {

int dtype_size(DType t) {
  switch (t) {
    case DType::f32:
    case DType::i32:
      return 4;
    case DType::f16:
    case DType::bf16:
      return 2;
    case DType::f8e4m3:
    case DType::f8e5m2:
    case DType::i8:
    case DType::b8:
      return 1;
  }
  return 0;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32:
      return "f32";
    case DType::f16:
      return "f16";
    case DType::bf16:
      return "bf16";
    case DType::f8e4m3:
      return "f8e4m3";
    case DType::f8e5m2:
      return "f8e5m2";
    case DType::i8:
      return "i8";
    case DType::i32:
      return "i32";
    case DType::b8:
      return "bool";
  }
  return "?";
}

DType dtype_from_name(const std::string& n) {
  if (n == "f32" || n == "float32" || n == "float") return DType::f32;
  if (n == "f16" || n == "float16" || n == "half" || n == "fp16") return DType::f16;
  if (n == "bf16" || n == "bfloat16") return DType::bf16;
  if (n == "f8e4m3" || n == "float8_e4m3fn" || n == "e4m3") return DType::f8e4m3;
  if (n == "f8e5m2" || n == "float8_e5m2" || n == "e5m2") return DType::f8e5m2;
  if (n == "i8" || n == "int8") return DType::i8;
  if (n == "i32" || n == "int32") return DType::i32;
  if (n == "bool" || n == "b8") return DType::b8;
  throw Error(ErrorCode::kInvalidArgument,
              "dtype = '" + n + "', expected one of f32, f16, bf16, f8e4m3, f8e5m2, i8, i32, bool");
}

bool is_float(DType t) {
  return t == DType::f32 || t == DType::f16 || t == DType::bf16 || t == DType::f8e4m3 ||
         t == DType::f8e5m2;
}

float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f) return f32_from_bits(sign | 0x7f800000u | (man << 13));  // Inf / NaN
  if (exp == 0) {
    // zero or subnormal: man * 2^-24, exact in f32
    const float mag = std::ldexp(static_cast<float>(man), -24);
    return sign ? -mag : mag;
  }
  return f32_from_bits(sign | ((exp + 112u) << 23) | (man << 13));
}

// Generic RNE conversion of a finite f32 to a small float format with `man_bits` mantissa bits,
// exponent bias `bias`, and largest finite magnitude `max_finite`. Returns sign-less bit pattern
// and sets `overflow` when the rounded magnitude exceeds max_finite.
static uint32_t round_small_float(float a, int man_bits, int bias, double max_finite,
                                  bool& overflow) {
  overflow = false;
  const double x = std::fabs(static_cast<double>(a));
  if (x == 0.0) return 0;
  int e;
  std::frexp(x, &e);  // x = f * 2^e, f in [0.5, 1)
  int exp_unbiased = e - 1;
  const int min_normal_exp = 1 - bias;
  if (exp_unbiased < min_normal_exp) exp_unbiased = min_normal_exp;  // subnormal spacing
  const double quantum = std::ldexp(1.0, exp_unbiased - man_bits);
  const double q = std::nearbyint(x / quantum);  // RNE (default rounding mode)
  const double r = q * quantum;
  if (r > max_finite) {
    overflow = true;
    return 0;
  }
  if (r == 0.0) return 0;
  int er;
  std::frexp(r, &er);
  int eu = er - 1;
  if (eu < min_normal_exp) {  // subnormal
    return static_cast<uint32_t>(r / std::ldexp(1.0, min_normal_exp - man_bits));
  }
  const uint32_t man = static_cast<uint32_t>(r / std::ldexp(1.0, eu - man_bits)) - (1u << man_bits);
  return (static_cast<uint32_t>(eu + bias) << man_bits) | man;
}

uint16_t f32_to_f16(float f) {
  const uint32_t u = f32_bits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  if (std::isnan(f)) return static_cast<uint16_t>(sign | 0x7e00u);
  if (std::isinf(f)) return static_cast<uint16_t>(sign | 0x7c00u);
  bool overflow;
  const uint32_t bits = round_small_float(f, 10, 15, 65504.0, overflow);
  if (overflow) return static_cast<uint16_t>(sign | 0x7c00u);
  return static_cast<uint16_t>(sign | bits);
}

float f8e4m3_to_f32(uint8_t b) {
  const bool neg = b & 0x80;
  const int exp = (b >> 3) & 0xf;
  const int man = b & 0x7;
  float mag;
  if (exp == 0xf && man == 0x7) return neg ? -NAN : NAN;
  if (exp == 0)
    mag = std::ldexp(static_cast<float>(man), -9);  // 2^-6 * man/8
  else
    mag = std::ldexp(1.0f + man / 8.0f, exp - 7);
  return neg ? -mag : mag;
}

uint8_t f32_to_f8e4m3(float f) {
  const uint8_t sign = (f32_bits(f) >> 24) & 0x80;
  if (std::isnan(f) || std::isinf(f)) return sign | 0x7f;
  bool overflow;
  const uint32_t bits = round_small_float(f, 3, 7, 448.0, overflow);
  if (overflow) return sign | 0x7f;
  return static_cast<uint8_t>(sign | bits);
}

float f8e5m2_to_f32(uint8_t b) {
  return f16_to_f32(static_cast<uint16_t>(b) << 8);  // e5m2 is the top byte of an f16
}

uint8_t f32_to_f8e5m2(float f) {
  const uint8_t sign = (f32_bits(f) >> 24) & 0x80;
  if (std::isnan(f)) return sign | 0x7e;
  if (std::isinf(f)) return sign | 0x7c;
  bool overflow;
  const uint32_t bits = round_small_float(f, 2, 15, 57344.0, overflow);
  if (overflow) return sign | 0x7c;
  return static_cast<uint8_t>(sign | bits);
}

double load_as_double(const void* base, int64_t idx, DType t) {
  switch (t) {
    case DType::f32:
      return static_cast<const float*>(base)[idx];
    case DType::f16:
      return f16_to_f32(static_cast<const uint16_t*>(base)[idx]);
    case DType::bf16:
      return bf16_to_f32(static_cast<const uint16_t*>(base)[idx]);
    case DType::f8e4m3:
      return f8e4m3_to_f32(static_cast<const uint8_t*>(base)[idx]);
    case DType::f8e5m2:
      return f8e5m2_to_f32(static_cast<const uint8_t*>(base)[idx]);
    case DType::i8:
      return static_cast<const int8_t*>(base)[idx];
    case DType::i32:
      return static_cast<const int32_t*>(base)[idx];
    case DType::b8:
      return static_cast<const uint8_t*>(base)[idx] ? 1.0 : 0.0;
  }
  return 0.0;
}

void store_from_double(void* base, int64_t idx, DType t, double v) {
  const float f = static_cast<float>(v);
  switch (t) {
    case DType::f32:
      static_cast<float*>(base)[idx] = f;
      return;
    case DType::f16:
      static_cast<uint16_t*>(base)[idx] = f32_to_f16(f);
      return;
    case DType::bf16:
      static_cast<uint16_t*>(base)[idx] = f32_to_bf16(f);
      return;
    case DType::f8e4m3:
      static_cast<uint8_t*>(base)[idx] = f32_to_f8e4m3(f);
      return;
    case DType::f8e5m2:
      static_cast<uint8_t*>(base)[idx] = f32_to_f8e5m2(f);
      return;
    case DType::i8:
      static_cast<int8_t*>(base)[idx] = static_cast<int8_t>(std::nearbyint(v));
      return;
    case DType::i32:
      static_cast<int32_t*>(base)[idx] = static_cast<int32_t>(std::nearbyint(v));
      return;
    case DType::b8:
      static_cast<uint8_t*>(base)[idx] = v != 0.0;
      return;
  }
}

double round_to_dtype(double v, DType t) {
  unsigned char tmp[4];
  store_from_double(tmp, 0, t, v);
  return load_as_double(tmp, 0, t);
}

}  // namespace attnkit
