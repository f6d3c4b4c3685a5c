// cuDNN SDPA graphs (cudnn-frontend) for one PlanKey: built once, cached in plan_cache, executed
// by run.cpp with a per-call variant pack. Only the cudnn backend's own .cpp files include this.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include <cudnn_frontend.h>

#include "backends/cudnn/handle.hpp"
#include "backends/cudnn/plan_cache.hpp"
#include "backends/cudnn/support.hpp"
#include "core/params.hpp"

namespace attnkit::cudnn {

/// Tensor uids of the variant pack (fixed: the graph and run.cpp agree on them).
enum Uid : int64_t {
  kQ = 1,
  kK,
  kV,
  kO,
  kStats,
  kScale,
  kBias,
  kSeqQ,
  kSeqK,
  kRagQ,
  kRagK,
  kRagV,
  kRagO,
  kDO,
  kDQ,
  kDK,
  kDV,
  kRagDO,
  kRagDQ,
  kRagDK,
  kRagDV,
};

struct Plan {
  std::shared_ptr<cudnn_frontend::graph::Graph> graph;
  int64_t workspace_bytes = 0;
  std::string error;  // non-empty: cuDNN cannot run this configuration (the build's message)
  // cudnn-frontend's Graph::execute is const but not documented as thread-safe: one enqueue at a
  // time per plan (host side only: microseconds; the kernels themselves run asynchronously).
  std::mutex exec_mutex;
};

/// Builds the forward graph (p.is_backward = false) or the backward graph for `p` as mapped by
/// `m`. `with_stats`: the forward outputs stats. Never throws for an unsupported configuration:
/// the returned plan carries the error instead.
std::shared_ptr<Plan> build_plan(const Params& p, const Mapping& m, bool with_stats,
                                 cudnnHandle_t handle);

}  // namespace attnkit::cudnn
