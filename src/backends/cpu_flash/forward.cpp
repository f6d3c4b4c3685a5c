// cpu_flash forward: tiled online softmax (FlashAttention-2 order on the CPU).
//
// Work item = (sequence b, query head h, query tile of kBq rows); items are independent and write
// disjoint rows of out/lse, so results do not depend on the thread count. Per item:
//   Qs  [kBq][dp]   scale * q rows, fp32                      (per-thread scratch)
//   for each key block kb the tile's rows can see (tile_key_range; the rest is never touched):
//     S = Qs K^T       [kBq][kBk]   gemm, depth dp
//     policy (masks, causal/window edges, softcap, ALiBi) only where tile_needs_policy
//     online softmax: m, l, alpha per row; S <- P
//     dropout on P (l is not affected: lse ignores dropout)
//     O = alpha*O + P V  [kBq][dvp]  gemm, depth = keys in the block
//   out = O / l (0 for an empty row), lse = m + log l (-inf for an empty row).
// Memory: packed K^T and V in fp32 (O(B*Hkv*Sk*D)) plus ~(2*kBq*dp + kBq*kBk) floats per thread.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu_flash/cpu_flash.hpp"
#include "backends/cpu_flash/isa.hpp"
#include "backends/cpu_flash/score_tile.hpp"
#include "backends/cpu_flash/thread_pool.hpp"
#include "backends/cpu_flash/tiles.hpp"

namespace attnkit::cpu_flash {
namespace {

struct FwdScratch {
  std::vector<float> q, s, o, m, l, alpha;
};

struct FwdItem {
  int64_t b, h, qt, cost;
};

}  // namespace

void run_forward(const Params& p) {
  const KernelTable& kt = active_kernels();
  const int threads = resolve_threads(p);
  const Geometry geo = make_geometry(p);
  const int64_t dp = geo.dp, dvp = geo.dvp;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();

  // Items, heaviest first (the key blocks each must visit), so dynamic scheduling balances causal
  // and windowed work.
  std::vector<FwdItem> items;
  for (int64_t b = 0; b < p.batch; ++b) {
    const SeqSpan& sp = geo.spans[b];
    for (int64_t qt = 0; qt < ceil_div(sp.sq, kBq); ++qt) {
      const int64_t i0 = qt * kBq, rows = std::min(kBq, sp.sq - i0);
      const KeyRange kr = tile_key_range(p, sp, i0, rows);
      const int64_t cost = kr.lo <= kr.hi ? kr.hi / kBk - kr.lo / kBk + 1 : 0;
      for (int64_t h = 0; h < p.heads_q; ++h) items.push_back({b, h, qt, cost});
    }
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const FwdItem& x, const FwdItem& y) { return x.cost > y.cost; });

  PackWhat what;
  what.kt = what.v = true;
  const PackedKV pk = pack_kv(p, geo, what, threads);

  std::vector<FwdScratch> scratch(std::min<int64_t>(threads, std::max<int64_t>(1, items.size())));
  parallel_for(static_cast<int64_t>(items.size()), threads, [&](int64_t n, int worker) {
    const FwdItem& it = items[n];
    FwdScratch& w = scratch[worker];
    if (w.q.empty()) {
      w.q.resize(kBq * dp);
      w.s.resize(kBq * kBk);
      w.o.resize(kBq * dvp);
      w.m.resize(kBq);
      w.l.resize(kBq);
      w.alpha.resize(kBq);
    }
    const int64_t b = it.b, h = it.h, g = h / p.group;
    const SeqSpan& sp = geo.spans[b];
    const int64_t i0 = it.qt * kBq, rows = std::min(kBq, sp.sq - i0);

    for (int64_t r = 0; r < rows; ++r)
      load_row(p.q, p.dtype, row_offset(p.q_st, b, sp.q_start, i0 + r, h), p.q_st.d, p.head_dim,
               dp, p.scale, w.q.data() + r * dp);
    std::fill(w.o.begin(), w.o.end(), 0.0f);
    std::fill(w.m.begin(), w.m.end(), kNegInf);
    std::fill(w.l.begin(), w.l.end(), 0.0f);

    const KeyRange kr = tile_key_range(p, sp, i0, rows);
    if (kr.lo <= kr.hi) {
      for (int64_t kb = kr.lo / kBk; kb <= kr.hi / kBk; ++kb) {
        const int64_t j0 = kb * kBk, kcols = std::min(kBk, sp.sk - j0);
        const int64_t gkb = geo.kblock_start[b] + kb;
        kt.gemm(w.s.data(), kBk, w.q.data(), dp, 1, pk.kt_block(gkb, g), kBk, rows, kBk, dp,
                false);
        if (tile_needs_policy(p, sp, i0, rows, j0))
          apply_score_policy(p, sp, b, h, i0, rows, j0, w.s.data(), kBk, nullptr);
        kt.softmax_step(w.s.data(), kBk, rows, kBk, w.m.data(), w.l.data(), w.alpha.data());
        for (int64_t r = 0; r < rows; ++r)
          if (w.alpha[r] != 1.0f) kt.scale_row(w.o.data() + r * dvp, dvp, w.alpha[r]);
        if (p.has_dropout())
          apply_dropout(p, b, h, i0, rows, j0, kcols, w.s.data(), kBk, nullptr);
        kt.gemm(w.o.data(), dvp, w.s.data(), kBk, 1, pk.v_block(gkb, g), dvp, rows, dvp, kcols,
                true);
      }
    }

    for (int64_t r = 0; r < rows; ++r) {
      const bool empty = !(w.l[r] > 0.0f);
      const float inv = empty ? 0.0f : 1.0f / w.l[r];
      float* orow = w.o.data() + r * dvp;
      if (empty) std::fill(orow, orow + dvp, 0.0f);
      store_row(p.out, p.dtype, row_offset(p.out_st, b, sp.q_start, i0 + r, h), p.out_st.d,
                p.head_dim_v, orow, inv);
      if (p.lse) {
        const float lse = empty ? kNegInf : w.m[r] + std::log(w.l[r]);
        p.lse[b * p.lse_st.b + h * p.lse_st.h + (sp.q_start + i0 + r) * p.lse_st.s] = lse;
      }
    }
  });
}

}  // namespace attnkit::cpu_flash
