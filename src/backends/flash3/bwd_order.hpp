// The order in which the flash3 backward's CTAs take their key blocks under causal masking
// (session 28, branch wip/f3d256rs28; not yet run on a GPU).
//
// The main kernels' grid is (key blocks, kv heads, batch) and the hardware starts CTAs in linear
// order, key block fastest. Under top-left or bottom-right causal masking key block 0 has the
// most items (every query block sees it) and the last one the fewest. In the default order the
// last (head, batch) pair's key block 0 starts when only that pair's lighter blocks remain, so
// that one long CTA sets the end of the launch. A list-scheduling simulation over 132 SMs
// (session 28, items + 1.5 per CTA) puts the makespan at 1.07 of the ideal for B 16 H 8 S 1k
// with 64-key CTAs (the D 256 kernel), and 1.13-1.14 with 128-key CTAs (D 64 / 128) at S 1k and
// 4k. At 16k it is 1.00-1.01: the tail is then one pair's light blocks.
//
// lpt_cta maps the launch order onto the heaviest key blocks first. The (head, batch) pairs are
// cut into super-groups of `group` pairs; within a super-group, key block 0 of every pair comes
// first, then key block 1, and so on. Super-groups follow each other, so the working set in L2
// stays at `group` pairs' Q, dO and dQ workspace (the host picks `group` for that). Simulated:
// 1.00-1.03 of the ideal at group >= 16 (bench/bwd_order_sim.py on main). Why bounded: the
// forward's LPT order over all heads (tile_scheduler.cuh, run 3) lost K / V reuse in L2 and made
// short causal launches memory-bound (D 128 S 2k 429 -> 336 TFLOP/s).
#pragma once

#include <cstdint>

#include "core/hd.hpp"

namespace attnkit::flash3::bwd {

struct BwdCta {
  int kblk, g, b;  // key block, kv head, batch
};

/// The CTA launched at linear position x + nx (y + ny z) of an (nx key blocks, ny kv heads,
/// nz batch) grid -> the (key block, kv head, batch) it runs, with super-groups of `group` >= 1
/// (head, batch) pairs (pair index g + ny b). A bijection of the grid; group 1 is the identity.
ATTNKIT_HD BwdCta lpt_cta(int x, int y, int z, int nx, int ny, int nz, int group) {
  const int64_t lin = x + static_cast<int64_t>(nx) * (y + static_cast<int64_t>(ny) * z);
  const int64_t pairs = static_cast<int64_t>(ny) * nz;
  const int64_t per = static_cast<int64_t>(group) * nx;  // CTAs of a full super-group
  const int64_t sg = lin / per, r = lin - sg * per;
  const int64_t g0 = sg * group;
  const int64_t gs = pairs - g0 < group ? pairs - g0 : group;  // pairs in this super-group
  const int64_t pair = g0 + r % gs;
  return {static_cast<int>(r / gs), static_cast<int>(pair % ny), static_cast<int>(pair / ny)};
}

/// Pairs per super-group: as many (kv head, batch) pairs as fit `budget` bytes of L2 with their
/// Q and dO (16 bit), dQ workspace (fp32) and lse2 / delta rows (group q heads each; sq rows, d
/// columns), at least 1, at most all of them.
inline int lpt_group_for(int64_t sq, int d, int64_t q_heads_per_kv, int64_t pairs,
                         int64_t budget = int64_t{24} << 20) {
  const int64_t per_pair = q_heads_per_kv * sq * (static_cast<int64_t>(d) * 8 + 8);
  int64_t g = per_pair > 0 ? budget / per_pair : pairs;
  g = g < 1 ? 1 : g;
  return static_cast<int>(g < pairs ? g : pairs);
}

}  // namespace attnkit::flash3::bwd
