// Backward of the oracle: the exact gradient of L = sum(dout * out) with respect to q, k, v,
// recomputed from the inputs (p.out and p.lse are not trusted). For one query head, row i:
//   P  = softmax(s_i)          f_ij = dropout multiplier (0, 1/(1-p), or 1)
//   out_i = sum_j P_ij f_ij v_j
//   dv_j  += P_ij f_ij dout_i
//   dP_ij  = f_ij <dout_i, v_j>
//   ds_ij  = P_ij (dP_ij - sum_l P_il dP_il)             (softmax Jacobian)
//   draw   = ds_ij * (1 - tanh^2(raw/c)) with softcap, else ds_ij  (ALiBi and masks are additive
//                                                                  constants: derivative 1)
//   dq_i  += scale * draw * k_j      dk_j += scale * draw * q_i
// Invisible keys have P = 0 and contribute nothing; a row with no visible key gets dq = 0.
// GQA: dk/dv of kv head g sum over the group's query heads, inside one task (no races).
#include <vector>

#include "attnkit/math.hpp"
#include "backends/math/head_ops.hpp"
#include "backends/math/math_core.hpp"

namespace attnkit::math_core {

void backward(const Params& p, Storage storage) {
  const ElemIO io{storage, p.dtype};
  const int64_t d = p.head_dim, dv = p.head_dim_v;
  const bool softcap = p.softcap > 0.0f;
  const double scale = p.scale;
  const int workers = worker_count(p, /*backward=*/true, math_max_bytes());

  struct Scratch {
    std::vector<double> q, dq, dout, k, v, dk, dv, s, tanh_deriv, lse, f, dp;
  };
  std::vector<Scratch> scratch(static_cast<size_t>(workers));

  for_each_task(task_count(p), workers, [&](int64_t task_index, int worker) {
    const Task t = make_task(p, task_index);
    const int64_t sq = t.span.sq, sk = t.span.sk;
    Scratch& w = scratch[static_cast<size_t>(worker)];
    w.q.resize(static_cast<size_t>(sq * d));
    w.dq.resize(static_cast<size_t>(sq * d));
    w.dout.resize(static_cast<size_t>(sq * dv));
    w.k.resize(static_cast<size_t>(sk * d));
    w.v.resize(static_cast<size_t>(sk * dv));
    w.dk.assign(static_cast<size_t>(sk * d), 0.0);
    w.dv.assign(static_cast<size_t>(sk * dv), 0.0);
    w.s.resize(static_cast<size_t>(sq * sk));
    w.tanh_deriv.resize(softcap ? static_cast<size_t>(sq * sk) : 0);
    w.lse.resize(static_cast<size_t>(sq));
    w.f.resize(static_cast<size_t>(sk));
    w.dp.resize(static_cast<size_t>(sk));
    gather_rows(io, p.k, p.k_st, t.b, t.span.k_start, sk, t.g, d, w.k.data());
    gather_rows(io, p.v, p.v_st, t.b, t.span.k_start, sk, t.g, dv, w.v.data());

    for (int64_t r = 0; r < p.group; ++r) {
      const int64_t h = t.g * p.group + r;
      gather_rows(io, p.q, p.q_st, t.b, t.span.q_start, sq, h, d, w.q.data());
      gather_rows(io, p.dout, p.dout_st, t.b, t.span.q_start, sq, h, dv, w.dout.data());
      head_scores(p, t, h, w.q.data(), w.k.data(), w.s.data(),
                  softcap ? w.tanh_deriv.data() : nullptr);
      softmax_rows(w.s.data(), sq, sk, w.lse.data());
      for (int64_t i = 0; i < sq; ++i) {
        const double* pi = w.s.data() + i * sk;
        const double* doi = w.dout.data() + i * dv;
        const double* qi = w.q.data() + i * d;
        double* dqi = w.dq.data() + i * d;
        for (int64_t c = 0; c < d; ++c)
          dqi[c] = 0.0;
        dropout_row(p, t, h, i, w.f.data());
        double row_dot = 0.0;  // sum_l P_il dP_il
        for (int64_t j = 0; j < sk; ++j) {
          w.dp[j] = 0.0;
          if (pi[j] == 0.0) continue;
          const double* vj = w.v.data() + j * dv;
          double dot = 0.0;
          for (int64_t c = 0; c < dv; ++c)
            dot += doi[c] * vj[c];
          w.dp[j] = w.f[j] * dot;
          row_dot += pi[j] * w.dp[j];
          const double a = pi[j] * w.f[j];
          double* dvj = w.dv.data() + j * dv;
          for (int64_t c = 0; c < dv; ++c)
            dvj[c] += a * doi[c];
        }
        for (int64_t j = 0; j < sk; ++j) {
          if (pi[j] == 0.0) continue;
          double draw = pi[j] * (w.dp[j] - row_dot);
          if (softcap) draw *= w.tanh_deriv[i * sk + j];
          const double g = scale * draw;
          const double* kj = w.k.data() + j * d;
          double* dkj = w.dk.data() + j * d;
          for (int64_t c = 0; c < d; ++c) {
            dqi[c] += g * kj[c];
            dkj[c] += g * qi[c];
          }
        }
      }
      scatter_rows(io, p.dq, p.dq_st, t.b, t.span.q_start, sq, h, d, w.dq.data());
    }
    scatter_rows(io, p.dk, p.dk_st, t.b, t.span.k_start, sk, t.g, d, w.dk.data());
    scatter_rows(io, p.dv, p.dv_st, t.b, t.span.k_start, sk, t.g, dv, w.dv.data());
  });
}

}  // namespace attnkit::math_core
