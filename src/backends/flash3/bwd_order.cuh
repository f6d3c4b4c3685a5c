// Sectioned CTA order of the flash3 D 256 backward's main kernels (session 49, helper
// f3bwdorder49; bench/bwd_causal_order_model.py, bench/notes/bwd-order-s49.md; which launches run
// it: bwd_order_rule.hpp). D 64 / 128's bwd_kernel does not use this decode (it cost that kernel
// 7-9 % at D 128, session 49 call 5): since session 50 twins of D 128's default structures take
// power-of-two sections of kv heads within a batch from the grid itself, without divisions
// (bwd_kernel.cuh kOrd, BwdArgs::order_shift, bench/notes/bwd-order-shift-s50.md); D 64 keeps the
// hardware's order.
#pragma once

namespace attnkit::flash3::bwd {

/// A main backward CTA's work: key block x, kv head g, batch b.
struct BwdCta {
  unsigned x;
  int g, b;
};

/// The grid is (N key blocks, Hkv, B), one CTA per key block, launched non-persistent: the
/// hardware dispatches CTAs in linear blockIdx order (x fastest) as SMs free up (about one CTA
/// per SM). In a causal call key block x visits the query blocks at or below it, so within a
/// (kv head, batch) pair the work falls with x and the pairs follow one another: a greedy model
/// of that dispatch (bench/bwd_causal_order_model.py, 132 SMs) puts the busiest SM 6-8 % above
/// the mean at D 128 causal 1k-8k (4k: 1.064) and D 256 1k-4k, 3-4 % at D 64; 16k is even.
/// sec > 0 (BwdArgs::order_sec) dispatches x-major within sections of `sec` pairs instead: all
/// pairs of a section take key block 0, then key block 1, ... (model: 1.00-1.01). Sections and
/// not all pairs at once, so that a section's Q / dO stay in L2 (the forward's lesson,
/// lpt_schedule.hpp: ordering over all heads at once cost 20 %).
///   linear = x + X (y + Y z), P = Y Z pairs; s = linear / (sec X), r = linear % (sec X),
///   hs = min(sec, P - s sec) (the last section may be partial), x = r / hs,
///   pair = s sec + r % hs, g = pair % Y, b = pair / Y.
/// A bijection onto the grid's (x, g, b), so N = gridDim.x stays the key-block count.
/// sec <= 0: the hardware's order (blockIdx itself; one uniform, predictable branch).
__device__ __forceinline__ BwdCta bwd_cta(int sec) {
  if (sec <= 0) return {blockIdx.x, static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z)};
  const unsigned nx = gridDim.x, ny = gridDim.y, pairs = gridDim.y * gridDim.z;
  const unsigned linear = blockIdx.x + nx * (blockIdx.y + ny * blockIdx.z);
  const unsigned usec = static_cast<unsigned>(sec), span = usec * nx;
  const unsigned s = linear / span, r = linear - s * span;
  const unsigned left = pairs - s * usec, hs = left < usec ? left : usec;
  const unsigned x = r / hs, pair = s * usec + (r - x * hs);
  const unsigned b = pair / ny;
  return {x, static_cast<int>(pair - b * ny), static_cast<int>(b)};
}

}  // namespace attnkit::flash3::bwd
