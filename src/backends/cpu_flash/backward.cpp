// cpu_flash backward: recompute P from lse, FlashAttention-2 loop order (key blocks outside, query
// tiles inside), fp32 accumulation.
//
// Work item = (sequence b, kv head g, key chunk c): it owns dk/dv of its key blocks outright. With
// one chunk per (b, g) (B*Hkv >= kMinItems) it also owns dq of the `group` query heads that read
// g and stores it directly. With fewer (b, g) pairs than kMinItems, the key blocks are split into
// `chunks` ranges so that threads have work, each chunk writes its dq contribution into its own
// fp32 slice of a workspace [chunks][B][Hq][Sq][dp], and a second parallel pass sums the slices in
// chunk order. Chunking depends on the problem only (never on the thread count), no two items
// write the same element, and there are no atomics: the backward is deterministic (bit-identical
// run to run and for any thread count) always, and `deterministic` costs nothing.
//
// Per item (per-thread scratch, fp32):
//   Qs [group][sqp][dp] = scale*q, dO [group][sqp][dvp], lse and delta = rowsum(dO*out)
//   [group][sqp], dQacc [group][sqp][dp];  per key block: dKacc [kBk][dp], dVacc [kBk][dvp]. for
//   key block kb:  for head t in group:  for query tile that can see kb:
//     S = Qs K^T; policy; P = exp(S - lse)                          [rows][kBk]
//     dP = dO V^T                                                   [rows][kBk]
//     dropout: Pz = P*z, dP *= z  (z = 0 or 1/(1-p), the forward's keep mask)
//     dVacc += Pz^T dO;  dS = P*(dP - delta) (* (1 - tanh^2) with softcap)
//     dQacc += dS K;  dKacc += dS^T Qs
//   dq = scale * dQacc (scale because S used scale*q; dk already has it through Qs).
// Memory: packed K^T, K, V^T (O(B*Hkv*Sk*D)) + per thread O(group*Sq*D), + with chunks > 1 the dq
// slices, capped at kDqSliceBudget bytes (the allowed O(B*H*S*D) dq workspace).
#include <algorithm>
#include <cmath>
#include <limits>

#include "backends/cpu_flash/cpu_flash.hpp"
#include "backends/cpu_flash/isa.hpp"
#include "backends/cpu_flash/score_tile.hpp"
#include "backends/cpu_flash/thread_pool.hpp"
#include "backends/cpu_flash/tiles.hpp"
#include "core/dtype_convert.hpp"

namespace attnkit::cpu_flash {
namespace {

struct BwdScratch {
  std::vector<float> q, dout, lse, delta, dq;  // whole sequence, all heads of the group
  std::vector<float> s, dp, pz, th, dk, dv;    // tiles (bf16 path: dk, dv hold dK^T, dV^T)
  std::vector<float> row, row2;
  // bf16 path: Q and dO bits as rows [group][sqp][d] and transposed [group][d][sqp]; dS rows and
  // Pz / dS pair-packed over query rows.
  std::vector<uint16_t> qb, qt, dob, dot, sb, pzp, dsp;
};

// Below this many (b, g) pairs the key blocks are split into chunks (2x the cores of a large
// server, so that dynamic scheduling balances; a problem-size constant, not the thread count).
constexpr int64_t kMinItems = 64;
// The dq slices of a split backward never exceed this (bytes); fewer chunks otherwise.
constexpr int64_t kDqSliceBudget = int64_t{512} << 20;

}  // namespace

void run_backward(const Params& p) {
  const KernelTable& kt = active_kernels();
  const int threads = resolve_threads(p);
  const Geometry geo = make_geometry(p);
  const int64_t dp = geo.dp, dvp = geo.dvp, group = p.group;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();
  const bool softcap = p.softcap > 0.0f;

  // bf16 inputs with AVX512-BF16: all five products as VDPBF16PS dot products on the exact bf16
  // inputs (Q, K, V, dO bits) and on P, dS rounded to bf16, fp32 accumulation. dV and dK are
  // accumulated transposed (dV^T = dO^T Pz, dK^T = Q^T dS) so that every A operand is a plain
  // row-major copy made once per item and every B operand is a tile pair-packed by one kernel.
  const bool bf16_dot = p.dtype == DType::bf16 && kt.gemm_bf16 != nullptr;
  PackWhat what;
  what.kt = what.k = what.vt = !bf16_dot;
  what.kt_bf16 = what.vt_bf16 = what.k_bf16 = bf16_dot;
  const PackedKV pk = pack_kv(p, geo, what, threads);

  // Key chunks (see the file comment). max_kb: the most key blocks of any sequence.
  int64_t max_kb = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    max_kb = std::max(max_kb, geo.kblock_start[b + 1] - geo.kblock_start[b]);
  const int64_t pairs = p.batch * p.heads_kv;
  int64_t chunks = std::min<int64_t>(std::max<int64_t>(max_kb, 1), ceil_div(kMinItems, pairs));
  const int64_t slice_floats = p.batch * p.heads_q * p.seqlen_q * dp;  // one chunk's dq slice
  while (chunks > 1 && chunks * slice_floats * 4 > kDqSliceBudget)
    --chunks;
  const int64_t kb_per_chunk = ceil_div(std::max<int64_t>(max_kb, 1), chunks);
  std::vector<float> dq_slices;
  if (chunks > 1) dq_slices.assign(chunks * slice_floats, 0.0f);
  auto slice_row = [&](int64_t c, int64_t b, int64_t h, int64_t i) {
    return dq_slices.data() + c * slice_floats + ((b * p.heads_q + h) * p.seqlen_q + i) * dp;
  };

  const int64_t n_items = pairs * chunks;
  std::vector<BwdScratch> scratch(std::min<int64_t>(threads, std::max<int64_t>(1, n_items)));
  parallel_for(n_items, threads, [&](int64_t n, int worker) {
    const int64_t chunk = n % chunks, b = n / chunks / p.heads_kv, g = n / chunks % p.heads_kv;
    const SeqSpan& sp = geo.spans[b];
    const int64_t nkb = geo.kblock_start[b + 1] - geo.kblock_start[b];
    const int64_t kb_begin = std::min(nkb, chunk * kb_per_chunk);
    const int64_t kb_end = std::min(nkb, kb_begin + kb_per_chunk);
    if (chunks > 1 && kb_begin >= kb_end) return;  // this sequence has fewer key blocks
    BwdScratch& w = scratch[worker];
    const int64_t sqp = round_up(sp.sq, kBq);
    w.q.resize(group * sqp * dp);
    w.dq.assign(group * sqp * dp, 0.0f);
    w.dout.resize(group * sqp * dvp);
    w.lse.resize(group * sqp);
    w.delta.resize(group * sqp);
    w.s.resize(kBq * kBk);
    w.dp.resize(kBq * kBk);
    w.pz.resize(kBq * kBk);
    w.th.resize(softcap ? kBq * kBk : 0);
    w.dk.resize(kBk * dp);
    w.dv.resize(kBk * dvp);
    w.row.resize(dvp);
    w.row2.resize(std::max(dp, dvp));
    if (bf16_dot) {
      w.qb.resize(group * sqp * dp);
      w.qt.resize(group * dp * sqp);
      w.dob.resize(group * sqp * dvp);
      w.dot.resize(group * dvp * sqp);
      w.sb.resize(kBq * kBk);
      w.pzp.resize(kBq * kBk + 2 * kBk);
      w.dsp.resize(kBq * kBk + 2 * kBk);
      w.dk.resize(dp * kBk);
      w.dv.resize(dvp * kBk);
      for (int64_t t = 0; t < group; ++t) {
        const int64_t h = g * group + t;
        for (int64_t i = 0; i < sqp; ++i) {
          uint16_t* qrow = w.qb.data() + (t * sqp + i) * dp;
          uint16_t* drow = w.dob.data() + (t * sqp + i) * dvp;
          if (i >= sp.sq) {
            std::fill(qrow, qrow + dp, uint16_t{0});
            std::fill(drow, drow + dvp, uint16_t{0});
            w.lse[t * sqp + i] = kNegInf;
            w.delta[t * sqp + i] = 0.0f;
          } else {
            load_row_bf16_bits(p.q, row_offset(p.q_st, b, sp.q_start, i, h), p.q_st.d, p.head_dim,
                               dp, qrow);
            load_row_bf16_bits(p.dout, row_offset(p.dout_st, b, sp.q_start, i, h), p.dout_st.d,
                               p.head_dim_v, dvp, drow);
            load_row(p.out, p.dtype, row_offset(p.out_st, b, sp.q_start, i, h), p.out_st.d,
                     p.head_dim_v, dvp, 1.0f, w.row.data());
            float delta = 0.0f;
            for (int64_t c = 0; c < p.head_dim_v; ++c)
              delta += bf16_to_f32(drow[c]) * w.row[c];
            w.delta[t * sqp + i] = delta;
            w.lse[t * sqp + i] =
                p.lse[b * p.lse_st.b + h * p.lse_st.h + (sp.q_start + i) * p.lse_st.s];
          }
          for (int64_t d = 0; d < dp; ++d)
            w.qt[(t * dp + d) * sqp + i] = qrow[d];
          for (int64_t c = 0; c < dvp; ++c)
            w.dot[(t * dvp + c) * sqp + i] = drow[c];
        }
      }
    }

    // Load this item's query-side rows once (converted to fp32).
    for (int64_t t = 0; t < group && !bf16_dot; ++t) {
      const int64_t h = g * group + t;
      for (int64_t i = 0; i < sqp; ++i) {
        float* qrow = w.q.data() + (t * sqp + i) * dp;
        float* drow = w.dout.data() + (t * sqp + i) * dvp;
        if (i >= sp.sq) {  // padding rows: P = 0 through lse = -inf
          std::fill(qrow, qrow + dp, 0.0f);
          std::fill(drow, drow + dvp, 0.0f);
          w.lse[t * sqp + i] = kNegInf;
          w.delta[t * sqp + i] = 0.0f;
          continue;
        }
        load_row(p.q, p.dtype, row_offset(p.q_st, b, sp.q_start, i, h), p.q_st.d, p.head_dim, dp,
                 p.scale, qrow);
        load_row(p.dout, p.dtype, row_offset(p.dout_st, b, sp.q_start, i, h), p.dout_st.d,
                 p.head_dim_v, dvp, 1.0f, drow);
        load_row(p.out, p.dtype, row_offset(p.out_st, b, sp.q_start, i, h), p.out_st.d,
                 p.head_dim_v, dvp, 1.0f, w.row.data());
        float delta = 0.0f;
        for (int64_t c = 0; c < p.head_dim_v; ++c)
          delta += drow[c] * w.row[c];
        w.delta[t * sqp + i] = delta;
        w.lse[t * sqp + i] = p.lse[b * p.lse_st.b + h * p.lse_st.h + (sp.q_start + i) * p.lse_st.s];
      }
    }

    for (int64_t kb = kb_begin; kb < kb_end; ++kb) {
      const int64_t j0 = kb * kBk, kcols = std::min(kBk, sp.sk - j0);
      const int64_t gkb = geo.kblock_start[b] + kb;
      std::fill(w.dk.begin(), w.dk.end(), 0.0f);
      std::fill(w.dv.begin(), w.dv.end(), 0.0f);
      for (int64_t t = 0; t < group; ++t) {
        const int64_t h = g * group + t;
        for (int64_t i0 = 0; i0 < sp.sq; i0 += kBq) {
          const int64_t rows = std::min(kBq, sp.sq - i0);
          const KeyRange kr = tile_key_range(p, sp, i0, rows);
          if (kr.lo > kr.hi || kr.hi < j0 || kr.lo > j0 + kBk - 1) continue;  // never visible
          const float* qs = w.q.data() + (t * sqp + i0) * dp;
          const float* dout = w.dout.data() + (t * sqp + i0) * dvp;
          float* s = w.s.data();
          float* dpt = w.dp.data();
          if (bf16_dot) {
            kt.gemm_bf16(s, kBk, w.qb.data() + (t * sqp + i0) * dp, dp, pk.ktb_block(gkb, g),
                         2 * kBk, rows, kBk, dp, false);
            for (int64_t r = 0; r < rows; ++r)
              kt.scale_row(s + r * kBk, kBk, p.scale);
          } else {
            kt.gemm(s, kBk, qs, dp, 1, pk.kt_block(gkb, g), kBk, rows, kBk, dp, false);
          }
          if (tile_needs_policy(p, sp, i0, rows, j0))
            apply_score_policy(p, sp, b, h, i0, rows, j0, s, kBk, softcap ? w.th.data() : nullptr);
          kt.exp_minus_lse(s, kBk, rows, kBk, w.lse.data() + t * sqp + i0);  // s = P
          if (bf16_dot)
            kt.gemm_bf16(dpt, kBk, w.dob.data() + (t * sqp + i0) * dvp, dvp, pk.vtb_block(gkb, g),
                         2 * kBk, rows, kBk, dvp, false);
          else
            kt.gemm(dpt, kBk, dout, dvp, 1, pk.vt_block(gkb, g), kBk, rows, kBk, dvp, false);
          const float* pz = s;
          if (p.has_dropout()) {
            std::copy(s, s + rows * kBk, w.pz.data());
            apply_dropout(p, b, h, i0, rows, j0, kBk, w.pz.data(), kBk, dpt);
            pz = w.pz.data();
          }
          const int64_t rows2 = round_up(rows, 2);  // bf16 pairs; row i0 + rows exists (sqp)
          // dV[j] += sum_i Pz[i][j] dO[i]: A = Pz^T (row stride 1, depth stride kBk);
          // bf16: dV^T[c][j] += sum_i dO^T[c][i] Pz[i][j]
          if (bf16_dot) {
            kt.to_bf16_pairs(w.pzp.data(), 2 * kBk, pz, kBk, rows, kBk);
            kt.gemm_bf16(w.dv.data(), kBk, w.dot.data() + t * dvp * sqp + i0, sqp, w.pzp.data(),
                         2 * kBk, dvp, kBk, rows2, true);
          } else {
            kt.gemm(w.dv.data(), dvp, pz, 1, kBk, dout, dvp, kcols, dvp, rows, true);
          }
          kt.softmax_grad(dpt, s, kBk, rows, kBk, w.delta.data() + t * sqp + i0);  // dpt = dS
          if (softcap) {
            const float* th = w.th.data();
            for (int64_t e = 0; e < rows * kBk; ++e)
              dpt[e] *= 1.0f - th[e] * th[e];
          }
          if (bf16_dot) {
            kt.to_bf16(w.sb.data(), kBk, dpt, kBk, rows, kBk);
            kt.gemm_bf16(w.dq.data() + (t * sqp + i0) * dp, dp, w.sb.data(), kBk,
                         pk.kpb_block(gkb, g), 2 * dp, rows, dp, round_up(kcols, 2), true);
            kt.to_bf16_pairs(w.dsp.data(), 2 * kBk, dpt, kBk, rows, kBk);
            kt.gemm_bf16(w.dk.data(), kBk, w.qt.data() + t * dp * sqp + i0, sqp, w.dsp.data(),
                         2 * kBk, dp, kBk, rows2, true);
          } else {
            kt.gemm(w.dq.data() + (t * sqp + i0) * dp, dp, dpt, kBk, 1, pk.k_block(gkb, g), dp,
                    rows, dp, kcols, true);
            kt.gemm(w.dk.data(), dp, dpt, 1, kBk, qs, dp, kcols, dp, rows, true);
          }
        }
      }
      for (int64_t jj = 0; jj < kcols; ++jj) {
        const float* dkr = w.dk.data() + jj * dp;
        const float* dvr = w.dv.data() + jj * dvp;
        float dk_scale = 1.0f;
        if (bf16_dot) {  // transposed accumulators; dK^T used unscaled Q
          for (int64_t d = 0; d < dp; ++d)
            w.row2[d] = w.dk[d * kBk + jj];
          for (int64_t c = 0; c < dvp; ++c)
            w.row[c] = w.dv[c * kBk + jj];
          dkr = w.row2.data();
          dvr = w.row.data();
          dk_scale = p.scale;
        }
        store_row(p.dk, p.dtype, row_offset(p.dk_st, b, sp.k_start, j0 + jj, g), p.dk_st.d,
                  p.head_dim, dkr, dk_scale);
        store_row(p.dv, p.dtype, row_offset(p.dv_st, b, sp.k_start, j0 + jj, g), p.dv_st.d,
                  p.head_dim_v, dvr, 1.0f);
      }
    }
    for (int64_t t = 0; t < group; ++t)
      for (int64_t i = 0; i < sp.sq; ++i) {
        const float* acc = w.dq.data() + (t * sqp + i) * dp;
        if (chunks > 1)
          std::copy(acc, acc + dp, slice_row(chunk, b, g * group + t, i));
        else
          store_row(p.dq, p.dtype, row_offset(p.dq_st, b, sp.q_start, i, g * group + t), p.dq_st.d,
                    p.head_dim, acc, p.scale);
      }
  });

  if (chunks > 1) {  // dq = scale * sum over chunks, in chunk order
    parallel_for(p.batch * p.heads_q, threads, [&](int64_t n, int) {
      const int64_t b = n / p.heads_q, h = n % p.heads_q;
      const SeqSpan& sp = geo.spans[b];
      std::vector<float> sum(dp);
      for (int64_t i = 0; i < sp.sq; ++i) {
        std::fill(sum.begin(), sum.end(), 0.0f);
        for (int64_t c = 0; c < chunks; ++c) {
          const float* part = slice_row(c, b, h, i);
          for (int64_t d = 0; d < dp; ++d)
            sum[d] += part[d];
        }
        store_row(p.dq, p.dtype, row_offset(p.dq_st, b, sp.q_start, i, h), p.dq_st.d, p.head_dim,
                  sum.data(), p.scale);
      }
    });
  }
}

}  // namespace attnkit::cpu_flash
