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

/// 2 log2(e): tanh(z) = tanh_exp2(z * kTwoLog2e).
inline constexpr float kTwoLog2e = 2.885390081777926815f;

}  // namespace attnkit::cuda
