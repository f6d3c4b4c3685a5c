#include "backends/cuda_math/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "core/dtype_convert.hpp"
#include "core/philox.hpp"

namespace attnkit::cmtest {

std::string Spec::name() const {
  return label + "_" + dtype_name(dtype);
}

int64_t HostProblem::q_start(int64_t b) const {
  return s.varlen() ? cu_q[b] : b * s.sq;
}
int64_t HostProblem::k_start(int64_t b) const {
  return s.varlen() ? cu_k[b] : b * s.sk;
}
int64_t HostProblem::len_q(int64_t b) const {
  return s.varlen() ? cu_q[b + 1] - cu_q[b] : s.sq;
}
int64_t HostProblem::len_k(int64_t b) const {
  return s.varlen() ? cu_k[b + 1] - cu_k[b] : s.sk;
}

HostProblem make_problem(const Spec& s, uint64_t seed) {
  HostProblem p;
  p.s = s;
  if (s.varlen()) {
    p.s.b = static_cast<int64_t>(s.lens_q.size());
    p.cu_q = {0};
    p.cu_k = {0};
    for (size_t i = 0; i < s.lens_q.size(); ++i) {
      p.cu_q.push_back(p.cu_q.back() + static_cast<int32_t>(s.lens_q[i]));
      p.cu_k.push_back(p.cu_k.back() + static_cast<int32_t>(s.lens_k[i]));
    }
    p.s.sq = *std::max_element(s.lens_q.begin(), s.lens_q.end());
    p.s.sk = *std::max_element(s.lens_k.begin(), s.lens_k.end());
    p.tq = p.cu_q.back();
    p.tk = p.cu_k.back();
  } else {
    p.tq = s.b * s.sq;
    p.tk = s.b * s.sk;
  }
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> normal(0.0, 1.0);
  auto fill = [&](std::vector<double>& x, int64_t n) {
    x.resize(static_cast<size_t>(n));
    for (auto& e : x)
      e = round_to_dtype(normal(rng), s.dtype);
  };
  fill(p.q, p.tq * s.hq * s.d);
  fill(p.k, p.tk * s.hkv * s.d);
  fill(p.v, p.tk * s.hkv * s.dv);
  fill(p.dout, p.tq * s.hq * s.dv);
  if (s.mask != Mask::none) {
    p.mb = s.mask_bcast_b ? 1 : p.s.b;
    p.mh = s.mask_bcast_h ? 1 : s.hq;
    p.mi = s.mask_bcast_i ? 1 : p.s.sq;
    p.mask.resize(static_cast<size_t>(p.mb * p.mh * p.mi * p.s.sk));
    std::uniform_real_distribution<double> u(0.0, 1.0);
    for (int64_t e = 0; e < static_cast<int64_t>(p.mask.size()); ++e) {
      const int64_t row = e / p.s.sk;          // (mb, mh, mi) flattened
      const bool hidden_row = (row % 7) == 3;  // some rows fully hidden: out 0, lse -inf
      if (s.mask == Mask::keep_bool) {
        p.mask[e] = (!hidden_row && u(rng) < 0.7) ? 1.0 : 0.0;
      } else {
        const double r = u(rng);
        p.mask[e] = hidden_row || r < 0.2 ? -std::numeric_limits<double>::infinity()
                                          : round_to_dtype(2.0 * (r - 0.6), DType::bf16);
      }
    }
  }
  if (s.alibi) {
    const int64_t n = (s.alibi == 2 ? p.s.b : 1) * s.hq;
    for (int64_t e = 0; e < n; ++e)
      p.slopes.push_back(std::ldexp(1.0f, -static_cast<int>(1 + e % 8)));
  }
  p.seed = 0x1234567890abcdefull ^ seed;
  p.offset = 977 + seed;
  p.scale = 1.0 / std::sqrt(static_cast<double>(s.d));
  return p;
}

Reference reference(const HostProblem& p, bool backward, const RowFilter& only) {
  const Spec& s = p.s;
  const double ninf = -std::numeric_limits<double>::infinity();
  Reference r;
  r.out.assign(static_cast<size_t>(p.tq * s.hq * s.dv), 0.0);
  r.lse.assign(static_cast<size_t>(p.tq * s.hq), ninf);
  if (backward) {
    r.dq.assign(p.q.size(), 0.0);
    r.dk.assign(p.k.size(), 0.0);
    r.dv.assign(p.v.size(), 0.0);
  }
  const uint32_t threshold = dropout_threshold_for(s.dropout);
  const double rescale = s.dropout > 0 ? 1.0 / (1.0 - s.dropout) : 1.0;
  const int64_t group = s.hq / s.hkv;
  std::vector<double> sc, tanh_v, prob, dpv;
  for (int64_t b = 0; b < s.b; ++b) {
    const int64_t sq = p.len_q(b), sk = p.len_k(b);
    for (int64_t h = 0; h < s.hq; ++h) {
      const int64_t g = h / group;
      for (int64_t i = 0; i < sq; ++i) {
        if (only && !only(b, h, i)) continue;
        const int64_t qrow = p.q_start(b) + i;
        const double* qi = &p.q[(qrow * s.hq + h) * s.d];
        sc.assign(sk, ninf);
        tanh_v.assign(sk, 0.0);
        double m = ninf;
        for (int64_t j = 0; j < sk; ++j) {
          const int64_t diag = i + sk - sq;
          bool vis = true;
          if (s.causal == Causal::top_left && j > i) vis = false;
          if (s.causal == Causal::bottom_right && j > diag) vis = false;
          if (s.wl >= 0 && j < diag - s.wl) vis = false;
          if (s.wr >= 0 && j > diag + s.wr) vis = false;
          double madd = 0.0;
          if (s.mask != Mask::none) {
            const int64_t mi = (p.mb == 1 ? 0 : b) * p.mh * p.mi + (p.mh == 1 ? 0 : h) * p.mi +
                               (p.mi == 1 ? 0 : i);
            const double mv = p.mask[mi * s.sk + j];
            if (s.mask == Mask::keep_bool) {
              if (mv == 0.0) vis = false;
            } else {
              madd = mv;
            }
          }
          if (!vis) continue;
          const double* kj = &p.k[((p.k_start(b) + j) * s.hkv + g) * s.d];
          double dot = 0;
          for (int64_t e = 0; e < s.d; ++e)
            dot += qi[e] * kj[e];
          double x = p.scale * dot;
          if (s.softcap > 0) {
            tanh_v[j] = std::tanh(x / s.softcap);
            x = s.softcap * tanh_v[j];
          }
          if (s.alibi) {
            const double slope = p.slopes[(s.alibi == 2 ? b * s.hq : 0) + h];
            x += -slope * std::fabs(static_cast<double>(i + sk - sq - j));
          }
          x += madd;
          sc[j] = x;
          m = std::max(m, x);
        }
        if (m == ninf) continue;  // no visible key: out 0, lse -inf, no gradient
        double l = 0;
        for (int64_t j = 0; j < sk; ++j)
          l += std::exp(sc[j] - m);
        const double lse = m + std::log(l);
        r.lse[h * p.tq + qrow] = lse;
        prob.assign(sk, 0.0);
        double* oi = &r.out[(qrow * s.hq + h) * s.dv];
        for (int64_t j = 0; j < sk; ++j) {
          if (sc[j] == ninf) continue;
          prob[j] = std::exp(sc[j] - lse);
          const bool keep =
              threshold == 0 || dropout_keep(p.seed, p.offset, b, h, s.hq, i, j, threshold);
          if (!keep) continue;
          const double* vj = &p.v[((p.k_start(b) + j) * s.hkv + g) * s.dv];
          for (int64_t e = 0; e < s.dv; ++e)
            oi[e] += prob[j] * rescale * vj[e];
        }
        if (!backward) continue;
        const double* doi = &p.dout[(qrow * s.hq + h) * s.dv];
        dpv.assign(sk, 0.0);
        double delta = 0;
        for (int64_t j = 0; j < sk; ++j) {
          if (prob[j] == 0.0) continue;
          const bool keep =
              threshold == 0 || dropout_keep(p.seed, p.offset, b, h, s.hq, i, j, threshold);
          if (!keep) continue;
          const double* vj = &p.v[((p.k_start(b) + j) * s.hkv + g) * s.dv];
          double dot = 0;
          for (int64_t e = 0; e < s.dv; ++e)
            dot += doi[e] * vj[e];
          dpv[j] = dot * rescale;
          delta += prob[j] * dpv[j];
          double* dvj = &r.dv[((p.k_start(b) + j) * s.hkv + g) * s.dv];
          for (int64_t e = 0; e < s.dv; ++e)
            dvj[e] += prob[j] * rescale * doi[e];
        }
        double* dqi = &r.dq[(qrow * s.hq + h) * s.d];
        for (int64_t j = 0; j < sk; ++j) {
          if (prob[j] == 0.0) continue;
          double ds = prob[j] * (dpv[j] - delta);
          if (s.softcap > 0) ds *= 1.0 - tanh_v[j] * tanh_v[j];
          ds *= p.scale;
          const double* kj = &p.k[((p.k_start(b) + j) * s.hkv + g) * s.d];
          double* dkj = &r.dk[((p.k_start(b) + j) * s.hkv + g) * s.d];
          for (int64_t e = 0; e < s.d; ++e) {
            dqi[e] += ds * kj[e];
            dkj[e] += ds * qi[e];
          }
        }
      }
    }
  }
  return r;
}

}  // namespace attnkit::cmtest
