// Transcendentals on the SFU (MUFU) for the attention kernels' score transforms, with their
// error bounds. Device code only.
#pragma once

namespace attnkit::cuda {

/// 2^x: ex2.approx.ftz (relative error 2^-22; 2^-inf = 0, 2^+inf = +inf; denormals flushed).
__device__ __forceinline__ float ex2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// log2(x): lg2.approx.ftz (absolute error 2^-22.6 on [0.5, 2], relative 2^-22 elsewhere;
/// log2(0) = -inf, log2(+inf) = +inf, negative or NaN x gives NaN).
__device__ __forceinline__ float lg2_approx(float x) {
  float y;
  asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// 1 / x: rcp.approx.ftz (1 ulp; 1 / +inf = 0).
__device__ __forceinline__ float rcp_approx(float x) {
  float y;
  asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

/// tanh(z) from y = 2 log2(e) z, as 1 - 2 / (1 + 2^y): 2 MUFU + 2 FMA-pipe instructions, absolute
/// error ~2e-7 (softcap's logit c tanh(z) to ~1e-5 at c = 50; tanh.approx.f32 would be one MUFU
/// but 2^-11, ~0.025 on that logit; libm's tanhf is exact to an ulp but ~20 instructions with
/// branches). Saturates exactly (2^y = +inf gives 1, 0 gives -1); NaN stays NaN.
__device__ __forceinline__ float tanh_exp2(float y) {
  return fmaf(-2.f, rcp_approx(1.f + ex2_approx(y)), 1.f);
}

/// tanh_exp2 with the reciprocal on the FMA pipe instead of the SFU (1 MUFU + 11 FMA/ALU-pipe
/// instructions instead of 2 + 3): for kernels whose MUFU is the bottleneck (flash3's softcapped
/// softmax: 3 MUFU per score). 1 / x for x = 1 + 2^y in [1, 2^64 + 1] (y clamped at 64 by a
/// NaN-propagating min: tanh is 1 to float precision long before): the exponent-flip guess
/// 0x7EF311C3 - bits(x) (relative error <= 1/8) and three Newton steps r <- r (2 - x r)
/// (1/8 -> 2^-6 -> 2^-12 -> 2^-24). Same saturation as tanh_exp2: 2^y = 0 gives -1; NaN stays NaN.
__device__ __forceinline__ float tanh_exp2_fma_rcp(float y) {
  float yc;
  asm("min.NaN.f32 %0, %1, 64.0;" : "=f"(yc) : "f"(y));
  const float x = 1.f + ex2_approx(yc);
  float r = __int_as_float(0x7EF311C3 - __float_as_int(x));
#pragma unroll
  for (int k = 0; k < 3; ++k)
    r = fmaf(r, fmaf(-x, r, 1.f), r);
  return fmaf(-2.f, r, 1.f);
}

/// 2 log2(e): tanh(z) = tanh_exp2(z * kTwoLog2e).
inline constexpr float kTwoLog2e = 2.885390081777926815f;

}  // namespace attnkit::cuda
