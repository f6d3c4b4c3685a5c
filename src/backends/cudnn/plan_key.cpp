#include "backends/cudnn/plan_key.hpp"

namespace attnkit::cudnn {

size_t PlanKeyHash::operator()(const PlanKey& k) const noexcept {
  // FNV-1a over the 64-bit fields.
  uint64_t h = 1469598103934665603ull;
  for (int64_t x : k.v) {
    h ^= static_cast<uint64_t>(x);
    h *= 1099511628211ull;
  }
  return static_cast<size_t>(h);
}

PlanKey make_plan_key(const Params& p, const Mapping& m, bool with_stats) {
  const GraphDims g = graph_dims(p);
  PlanKey k;
  auto& v = k.v;
  v.reserve(64);
  auto push_st = [&](const Strides4& st) {
    v.push_back(p.varlen ? 0 : st.b);
    v.push_back(st.s);
    v.push_back(st.h);
    v.push_back(st.d);
  };
  v.push_back(p.is_backward);
  v.push_back(static_cast<int64_t>(p.dtype));
  v.push_back(p.device.index);
  v.push_back(g.b);
  v.push_back(g.hq);
  v.push_back(g.hkv);
  v.push_back(g.sq);
  v.push_back(g.sk);
  v.push_back(g.d);
  v.push_back(g.dv);
  v.push_back(p.varlen);
  push_st(p.q_st);
  push_st(p.k_st);
  push_st(p.v_st);
  push_st(p.out_st);
  const bool direct = stats_direct(p);
  v.push_back(with_stats);
  v.push_back(direct);
  if (direct) {
    v.push_back(p.lse_st.b);
    v.push_back(p.lse_st.h);
  }
  if (p.is_backward) {
    push_st(p.dout_st);
    push_st(p.dq_st);
    push_st(p.dk_st);
    push_st(p.dv_st);
    v.push_back(p.deterministic);
  }
  v.push_back(m.band);
  v.push_back(static_cast<int64_t>(m.align));
  v.push_back(m.left_bound.value_or(-1));
  v.push_back(m.right_bound.value_or(-1));
  v.push_back(m.padding);
  v.push_back(m.bias);
  v.push_back(m.bias_b);
  v.push_back(m.bias_h);
  return k;
}

std::string describe(const PlanKey& k) {
  std::string s = "{";
  for (size_t i = 0; i < k.v.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(k.v[i]);
  }
  s += '}';
  return s;
}

}  // namespace attnkit::cudnn
