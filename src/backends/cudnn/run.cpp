// Executes one call: plan lookup (built once per PlanKey), per-call scratch (cuDNN workspace,
// stats/bias/sequence arrays, one stream-ordered allocation), aux kernels, cuDNN execute.
#include "backends/cudnn/run.hpp"

#include <cuda_runtime.h>

#include <cmath>
#include <unordered_map>

#include "attnkit/error.hpp"
#include "backends/cudnn/aux_kernels.hpp"
#include "backends/cudnn/graphs.hpp"
#include "backends/cudnn/plan_key.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/workspace.hpp"

namespace attnkit::cudnn {
namespace {

/// The call's scratch: one block from the CUDA layer's per-(device, stream) workspace, carved
/// into 256-byte aligned pieces (cuDNN workspace, stats, bias, sequence arrays).
class Scratch {
 public:
  size_t reserve(int64_t bytes) {
    const size_t at = size_;
    size_ += (static_cast<size_t>(bytes) + 255) & ~size_t(255);
    return at;
  }
  void allocate(int device, cudaStream_t s) { base_ = cuda::workspace(size_, device, s); }
  template <typename T>
  T* at(size_t offset) const {
    return reinterpret_cast<T*>(static_cast<char*>(base_) + offset);
  }

 private:
  size_t size_ = 0;
  void* base_ = nullptr;
};

std::shared_ptr<Plan> get_plan(const Params& p, const Mapping& m, bool with_stats,
                               cudnnHandle_t handle) {
  const PlanKey key = make_plan_key(p, m, with_stats);
  auto plan = plan_cache().get_or_build(key, [&] { return build_plan(p, m, with_stats, handle); });
  if (!plan->graph)
    throw Error(ErrorCode::kUnsupported, "cudnn: cuDNN cannot run this call: " + plan->error);
  return plan;
}

/// Sequence arrays (padding mask) and ragged offsets (varlen) for the tensors of this pass.
struct SeqPlan {
  SeqArrays arrays;
  size_t seq_at = 0;
  size_t ragged_at[SeqArrays::kMaxRagged] = {};
};

SeqPlan plan_seq_arrays(const Params& p, const Mapping& m, Scratch& scratch) {
  SeqPlan s;
  if (m.padding) s.seq_at = scratch.reserve(2 * p.batch * 4);
  if (!p.varlen) return s;
  auto add = [&](int64_t stride, bool q_side) {
    const int t = s.arrays.n_ragged++;
    s.arrays.token_stride[t] = stride;
    s.arrays.q_side[t] = q_side;
    s.ragged_at[t] = scratch.reserve((p.batch + 1) * 4);
  };
  // Order matches ragged_uids() below.
  add(p.q_st.s, true);
  add(p.k_st.s, false);
  add(p.v_st.s, false);
  add(p.out_st.s, true);
  if (p.is_backward) {
    add(p.dout_st.s, true);
    add(p.dq_st.s, true);
    add(p.dk_st.s, false);
    add(p.dv_st.s, false);
  }
  return s;
}

constexpr Uid kRaggedUids[SeqArrays::kMaxRagged] = {kRagQ,  kRagK,  kRagV,  kRagO,
                                                    kRagDO, kRagDQ, kRagDK, kRagDV};

void bind_seq_arrays(const Params& p, const Mapping& m, SeqPlan& s, const Scratch& scratch,
                     std::unordered_map<int64_t, void*>& pack, cudaStream_t stream) {
  if (!m.padding && !p.varlen) return;
  if (m.padding) {
    s.arrays.seq_q = scratch.at<int32_t>(s.seq_at);
    s.arrays.seq_k = s.arrays.seq_q + p.batch;
    pack[kSeqQ] = s.arrays.seq_q;
    pack[kSeqK] = s.arrays.seq_k;
  }
  for (int t = 0; t < s.arrays.n_ragged; ++t) {
    s.arrays.ragged[t] = scratch.at<int32_t>(s.ragged_at[t]);
    pack[kRaggedUids[t]] = s.arrays.ragged[t];
  }
  launch_seq_arrays(p, s.arrays, stream);
}

void execute(Plan& plan, cudnnHandle_t handle, cudaStream_t stream,
             std::unordered_map<int64_t, void*>& pack, void* workspace) {
  const cudnnStatus_t st = cudnnSetStream(handle, stream);
  if (st != CUDNN_STATUS_SUCCESS)
    throw Error(ErrorCode::kCudaError,
                std::string("cudnn: cudnnSetStream failed: ") + cudnnGetErrorString(st));
  std::lock_guard<std::mutex> lock(plan.exec_mutex);
  auto e = plan.graph->execute(handle, pack, workspace);
  if (e.is_bad()) throw Error(ErrorCode::kCudaError, "cudnn: execute failed: " + e.get_message());
}

void* mut(const void* p) {
  return const_cast<void*>(p);
}

}  // namespace

void run_forward(const Params& p) {
  cuda::DeviceGuard device(p.device.index);
  const cudaStream_t stream = static_cast<cudaStream_t>(p.stream);
  const Mapping m = map_call(p);
  if (m.empty) {  // Sk = 0: no row sees a key (Sq = 0: nothing to write)
    if (p.seqlen_q > 0) {
      launch_zero_rows(p, p.out, p.out_st, p.seqlen_q, p.heads_q, p.head_dim_v, true, stream);
      launch_fill_lse_neg_inf(p, stream);
    }
    return;
  }
  const GraphDims g = graph_dims(p);
  const bool direct = stats_direct(p);
  const bool with_stats = p.lse != nullptr || m.may_have_empty_rows;
  cudnnHandle_t handle = thread_handle(p.device.index);
  std::shared_ptr<Plan> plan = get_plan(p, m, with_stats, handle);

  Scratch scratch;
  const size_t ws_at = scratch.reserve(plan->workspace_bytes);
  const bool temp_stats = with_stats && !direct;
  const size_t stats_at = temp_stats ? scratch.reserve(g.b * g.hq * g.sq * 4) : 0;
  const size_t bias_at = m.bias ? scratch.reserve(m.bias_b * m.bias_h * g.sq * g.sk * 2) : 0;
  SeqPlan seq = plan_seq_arrays(p, m, scratch);
  scratch.allocate(p.device.index, stream);

  float scale = p.scale;  // pass-by-value: read by cuDNN at execute time (host)
  std::unordered_map<int64_t, void*> pack = {
      {kQ, mut(p.q)}, {kK, mut(p.k)}, {kV, mut(p.v)}, {kO, p.out}, {kScale, &scale}};
  float* stats = nullptr;
  if (with_stats) {
    stats = temp_stats ? scratch.at<float>(stats_at) : p.lse;
    pack[kStats] = stats;
  }
  if (m.bias) {
    void* bias = scratch.at<void>(bias_at);
    launch_build_bias(p, m, bias, stream);
    pack[kBias] = bias;
  }
  bind_seq_arrays(p, m, seq, scratch, pack, stream);
  execute(*plan, handle, stream, pack, scratch.at<void>(ws_at));
  if (with_stats && (temp_stats || m.may_have_empty_rows))
    launch_stats_epilogue(p, stats, g.sq, m.may_have_empty_rows, stream);
}

void run_backward(const Params& p) {
  cuda::DeviceGuard device(p.device.index);
  const cudaStream_t stream = static_cast<cudaStream_t>(p.stream);
  const Mapping m = map_call(p);
  if (m.empty) {  // no (row, key) pair: gradients are 0 wherever they have rows
    if (p.seqlen_q > 0)
      launch_zero_rows(p, p.dq, p.dq_st, p.seqlen_q, p.heads_q, p.head_dim, true, stream);
    if (p.seqlen_k > 0) {
      launch_zero_rows(p, p.dk, p.dk_st, p.seqlen_k, p.heads_kv, p.head_dim, false, stream);
      launch_zero_rows(p, p.dv, p.dv_st, p.seqlen_k, p.heads_kv, p.head_dim_v, false, stream);
    }
    return;
  }
  const GraphDims g = graph_dims(p);
  const bool direct = stats_direct(p) && !m.may_have_empty_rows;
  cudnnHandle_t handle = thread_handle(p.device.index);
  std::shared_ptr<Plan> plan = get_plan(p, m, true, handle);

  Scratch scratch;
  const size_t ws_at = scratch.reserve(plan->workspace_bytes);
  const size_t stats_at = direct ? 0 : scratch.reserve(g.b * g.hq * g.sq * 4);
  const size_t bias_at = m.bias ? scratch.reserve(m.bias_b * m.bias_h * g.sq * g.sk * 2) : 0;
  SeqPlan seq = plan_seq_arrays(p, m, scratch);
  scratch.allocate(p.device.index, stream);

  float scale = p.scale;
  std::unordered_map<int64_t, void*> pack = {{kQ, mut(p.q)}, {kK, mut(p.k)},     {kV, mut(p.v)},
                                             {kO, p.out},    {kDO, mut(p.dout)}, {kDQ, p.dq},
                                             {kDK, p.dk},    {kDV, p.dv},        {kScale, &scale}};
  if (direct) {
    pack[kStats] = p.lse;
  } else {
    float* stats = scratch.at<float>(stats_at);
    launch_stats_prologue(p, stats, g.sq, stream);
    pack[kStats] = stats;
  }
  if (m.bias) {
    void* bias = scratch.at<void>(bias_at);
    launch_build_bias(p, m, bias, stream);
    pack[kBias] = bias;
  }
  bind_seq_arrays(p, m, seq, scratch, pack, stream);
  execute(*plan, handle, stream, pack, scratch.at<void>(ws_at));
  if (p.varlen) {
    // cuDNN does not write the gradient rows of a sequence whose other side is empty (measured:
    // NaN/-inf left in dk/dv of sq = 0 sequences); their true value is 0.
    launch_zero_rows(p, p.dq, p.dq_st, p.seqlen_q, p.heads_q, p.head_dim, true, stream, true);
    launch_zero_rows(p, p.dk, p.dk_st, p.seqlen_k, p.heads_kv, p.head_dim, false, stream, true);
    launch_zero_rows(p, p.dv, p.dv_st, p.seqlen_k, p.heads_kv, p.head_dim_v, false, stream, true);
  }
}

}  // namespace attnkit::cudnn
