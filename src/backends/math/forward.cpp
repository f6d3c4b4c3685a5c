// Forward of the oracle: for each (sequence, kv head) task and each query head of its group,
// materialize the [sq, sk] scores, softmax them in fp64, apply the dropout multipliers, and
// multiply by V.
#include <cmath>
#include <vector>

#include "attnkit/math.hpp"
#include "backends/math/head_ops.hpp"
#include "backends/math/math_core.hpp"

namespace attnkit::math_core {

void forward(const Params& p, Storage storage, double* lse_f64) {
  const ElemIO io{storage, p.dtype};
  const int64_t d = p.head_dim, dv = p.head_dim_v;
  const int workers = worker_count(p, /*backward=*/false, math_max_bytes());

  // Per-worker scratch, sized for the maximum lengths (see math.hpp for the byte count).
  struct Scratch {
    std::vector<double> q, k, v, o, s, lse, f;
  };
  std::vector<Scratch> scratch(static_cast<size_t>(workers));

  for_each_task(task_count(p), workers, [&](int64_t task_index, int worker) {
    const Task t = make_task(p, task_index);
    const int64_t sq = t.span.sq, sk = t.span.sk;
    if (sq == 0) return;
    Scratch& w = scratch[static_cast<size_t>(worker)];
    w.q.resize(static_cast<size_t>(sq * d));
    w.k.resize(static_cast<size_t>(sk * d));
    w.v.resize(static_cast<size_t>(sk * dv));
    w.o.resize(static_cast<size_t>(sq * dv));
    w.s.resize(static_cast<size_t>(sq * sk));
    w.lse.resize(static_cast<size_t>(sq));
    w.f.resize(static_cast<size_t>(sk));
    gather_rows(io, p.k, p.k_st, t.b, t.span.k_start, sk, t.g, d, w.k.data());
    gather_rows(io, p.v, p.v_st, t.b, t.span.k_start, sk, t.g, dv, w.v.data());

    for (int64_t r = 0; r < p.group; ++r) {
      const int64_t h = t.g * p.group + r;
      gather_rows(io, p.q, p.q_st, t.b, t.span.q_start, sq, h, d, w.q.data());
      head_scores(p, t, h, w.q.data(), w.k.data(), w.s.data(), nullptr);
      softmax_rows(w.s.data(), sq, sk, w.lse.data());
      // out_i = sum_j P_ij * f_ij * v_j, f = dropout multiplier; P_ij = 0 where invisible, so a
      // row with no visible key gets exactly 0.
      for (int64_t i = 0; i < sq; ++i) {
        double* oi = w.o.data() + i * dv;
        for (int64_t c = 0; c < dv; ++c)
          oi[c] = 0.0;
        dropout_row(p, t, h, i, w.f.data());
        const double* pi = w.s.data() + i * sk;
        for (int64_t j = 0; j < sk; ++j) {
          const double a = pi[j] * w.f[j];
          if (a == 0.0) continue;
          const double* vj = w.v.data() + j * dv;
          for (int64_t c = 0; c < dv; ++c)
            oi[c] += a * vj[c];
        }
      }
      scatter_rows(io, p.out, p.out_st, t.b, t.span.q_start, sq, h, dv, w.o.data());
      for (int64_t i = 0; i < sq; ++i) {
        const int64_t idx = t.b * p.lse_st.b + h * p.lse_st.h + (t.span.q_start + i) * p.lse_st.s;
        if (p.lse) p.lse[idx] = static_cast<float>(w.lse[i]);
        if (lse_f64) lse_f64[idx] = w.lse[i];
      }
    }
  });
}

}  // namespace attnkit::math_core
