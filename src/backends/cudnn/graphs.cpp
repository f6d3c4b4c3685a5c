// Builds cuDNN SDPA forward/backward graphs with cudnn-frontend (docs/cudnn.md).
//
// Every attnkit view [B, S, H, D] (strides in Params) becomes a cuDNN tensor of dims
// [B, H, S, D] with strides {b, h, s, 1}: BSHD and BHSD are both just stride patterns, no copy.
// Varlen: packed [total, H, D] tensors become [B, H, S_bucket, D] with an int32 ragged-offset
// tensor [B + 1] (element offset of each sequence's first token) and a padding mask from the
// per-sequence lengths [B] (both written per call by aux_kernels from cu_seqlens).
#include <utility>

#include "backends/cudnn/graphs.hpp"

namespace attnkit::cudnn {
namespace {

namespace fe = cudnn_frontend;
using fe::graph::Tensor_attributes;
using TensorPtr = std::shared_ptr<Tensor_attributes>;

fe::DataType_t io_type(DType t) {
  return t == DType::bf16 ? fe::DataType_t::BFLOAT16 : fe::DataType_t::HALF;
}

class GraphBuilder {
 public:
  GraphBuilder(const Params& p, const Mapping& m)
      : p_(p), m_(m), g_(graph_dims(p)), graph_(std::make_shared<fe::graph::Graph>()) {
    graph_->set_io_data_type(io_type(p.dtype))
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
  }

  std::shared_ptr<fe::graph::Graph> graph() const { return graph_; }

  /// [B + 1] int32 ragged offsets (varlen only).
  TensorPtr ragged(const char* name, Uid uid) {
    return graph_->tensor(Tensor_attributes()
                              .set_name(name)
                              .set_uid(uid)
                              .set_dim({g_.b + 1, 1, 1, 1})
                              .set_stride({1, 1, 1, 1})
                              .set_data_type(fe::DataType_t::INT32));
  }

  /// Fills dims/strides/uid of a [B, H, S, D] view (input or output).
  void describe_view(Tensor_attributes& t, const char* name, Uid uid, int64_t h, int64_t s,
                     int64_t d, const Strides4& st, Uid rag_uid) {
    const int64_t b_stride = p_.varlen ? s * st.s : st.b;
    t.set_name(name).set_uid(uid).set_dim({g_.b, h, s, d}).set_stride({b_stride, st.h, st.s, 1});
    if (p_.varlen) t.set_ragged_offset(ragged((std::string(name) + "_ragged").c_str(), rag_uid));
  }

  TensorPtr input(const char* name, Uid uid, int64_t h, int64_t s, int64_t d, const Strides4& st,
                  Uid rag_uid) {
    Tensor_attributes t;
    describe_view(t, name, uid, h, s, d, st, rag_uid);
    return graph_->tensor(t);
  }

  void output(const TensorPtr& t, const char* name, Uid uid, int64_t h, int64_t s, int64_t d,
              const Strides4& st, Uid rag_uid) {
    describe_view(*t, name, uid, h, s, d, st, rag_uid);
    t->set_output(true);
  }

  /// Stats fp32 [B, Hq, Sq, 1], packed (the caller's lse or a temporary).
  void stats_layout(Tensor_attributes& t) {
    t.set_name("stats")
        .set_uid(kStats)
        .set_dim({g_.b, g_.hq, g_.sq, 1})
        .set_stride({g_.hq * g_.sq, g_.sq, 1, 1})
        .set_data_type(fe::DataType_t::FLOAT);
  }

  TensorPtr scale() {
    return graph_->tensor(Tensor_attributes()
                              .set_name("attn_scale")
                              .set_uid(kScale)
                              .set_dim({1, 1, 1, 1})
                              .set_stride({1, 1, 1, 1})
                              .set_is_pass_by_value(true)
                              .set_data_type(fe::DataType_t::FLOAT));
  }

  TensorPtr bias() {
    const int64_t sq = g_.sq, sk = g_.sk;
    return graph_->tensor(Tensor_attributes()
                              .set_name("bias")
                              .set_uid(kBias)
                              .set_dim({m_.bias_b, m_.bias_h, sq, sk})
                              .set_stride({m_.bias_h * sq * sk, sq * sk, sk, 1})
                              .set_data_type(io_type(p_.dtype)));
  }

  TensorPtr seq_len(const char* name, Uid uid) {
    return graph_->tensor(Tensor_attributes()
                              .set_name(name)
                              .set_uid(uid)
                              .set_dim({g_.b, 1, 1, 1})
                              .set_stride({1, 1, 1, 1})
                              .set_data_type(fe::DataType_t::INT32));
  }

  /// Bias, padding and diagonal band: the same on both attribute types.
  template <typename Attr>
  void apply_masking(Attr& a) {
    if (m_.bias) a.set_bias(bias());
    if (m_.padding)
      a.set_padding_mask(true)
          .set_seq_len_q(seq_len("seq_q", kSeqQ))
          .set_seq_len_kv(seq_len("seq_kv", kSeqK));
    if (m_.band) {
      a.set_diagonal_alignment(m_.align == Align::bottom_right
                                   ? fe::DiagonalAlignment_t::BOTTOM_RIGHT
                                   : fe::DiagonalAlignment_t::TOP_LEFT);
      if (m_.left_bound) a.set_diagonal_band_left_bound(static_cast<int>(*m_.left_bound));
      if (m_.right_bound) a.set_diagonal_band_right_bound(static_cast<int>(*m_.right_bound));
    }
  }

  const Params& p_;
  const Mapping& m_;
  const GraphDims g_;

 private:
  std::shared_ptr<fe::graph::Graph> graph_;
};

void build_forward(GraphBuilder& b, bool with_stats) {
  const Params& p = b.p_;
  const GraphDims& g = b.g_;
  auto q = b.input("q", kQ, g.hq, g.sq, g.d, p.q_st, kRagQ);
  auto k = b.input("k", kK, g.hkv, g.sk, g.d, p.k_st, kRagK);
  auto v = b.input("v", kV, g.hkv, g.sk, g.dv, p.v_st, kRagV);
  fe::graph::SDPA_attributes a;
  a.set_name("sdpa_fwd").set_generate_stats(with_stats).set_attn_scale(b.scale());
  b.apply_masking(a);
  auto [o, stats] = b.graph()->sdpa(q, k, v, a);
  b.output(o, "o", kO, g.hq, g.sq, g.dv, p.out_st, kRagO);
  if (with_stats) {
    b.stats_layout(*stats);
    stats->set_output(true);
  }
}

void build_backward(GraphBuilder& b) {
  const Params& p = b.p_;
  const GraphDims& g = b.g_;
  auto q = b.input("q", kQ, g.hq, g.sq, g.d, p.q_st, kRagQ);
  auto k = b.input("k", kK, g.hkv, g.sk, g.d, p.k_st, kRagK);
  auto v = b.input("v", kV, g.hkv, g.sk, g.dv, p.v_st, kRagV);
  auto o = b.input("o", kO, g.hq, g.sq, g.dv, p.out_st, kRagO);
  auto dout = b.input("dout", kDO, g.hq, g.sq, g.dv, p.dout_st, kRagDO);
  Tensor_attributes st;
  b.stats_layout(st);
  auto stats = b.graph()->tensor(st);
  fe::graph::SDPA_backward_attributes a;
  a.set_name("sdpa_bwd").set_attn_scale(b.scale()).set_deterministic_algorithm(p.deterministic);
  b.apply_masking(a);
  auto [dq, dk, dv] = b.graph()->sdpa_backward(q, k, v, o, dout, stats, a);
  b.output(dq, "dq", kDQ, g.hq, g.sq, g.d, p.dq_st, kRagDQ);
  b.output(dk, "dk", kDK, g.hkv, g.sk, g.d, p.dk_st, kRagDK);
  b.output(dv, "dv", kDV, g.hkv, g.sk, g.dv, p.dv_st, kRagDV);
}

}  // namespace

std::shared_ptr<Plan> build_plan(const Params& p, const Mapping& m, bool with_stats,
                                 cudnnHandle_t handle) {
  auto plan = std::make_shared<Plan>();
  GraphBuilder b(p, m);
  if (p.is_backward)
    build_backward(b);
  else
    build_forward(b, with_stats);
  auto graph = b.graph();
  auto step = [&](fe::error_t e, const char* what) {
    if (e.is_bad() && plan->error.empty()) plan->error = std::string(what) + ": " + e.get_message();
    return e.is_good();
  };
  // Heuristics mode A, then the fallback list, as PyTorch's cuDNN attention does.
  if (step(graph->validate(), "validate") &&
      step(graph->build_operation_graph(handle), "build_operation_graph") &&
      step(graph->create_execution_plans({fe::HeurMode_t::A, fe::HeurMode_t::FALLBACK}),
           "create_execution_plans") &&
      step(graph->check_support(handle), "check_support") &&
      step(graph->build_plans(handle, fe::BuildPlanPolicy_t::HEURISTICS_CHOICE), "build_plans")) {
    int64_t ws = 0;
    if (step(graph->get_workspace_size(ws), "get_workspace_size")) {
      plan->workspace_bytes = ws;
      plan->graph = std::move(graph);
    }
  }
  return plan;
}

}  // namespace attnkit::cudnn
