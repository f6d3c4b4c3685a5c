// Pieces shared by the oracle's forward and backward: element IO, gathering one head's rows into
// dense fp64 buffers, the score matrix of one (sequence, query head), the row softmax, the
// dropout factor, and the task loop over threads.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "backends/math/math_core.hpp"
#include "core/params.hpp"
#include "core/score_policy.hpp"

namespace attnkit::math_core {

/// Reads/writes the main tensors' elements as double (see Storage).
struct ElemIO {
  Storage storage;
  DType dtype;
  double load(const void* base, int64_t idx) const;
  void store(void* base, int64_t idx, double v) const;
};

/// One (sequence b, kv head g) task: where its rows are and how long it is.
struct Task {
  int64_t b = 0, g = 0;
  SeqSpan span;  // q_start/k_start: first token row (varlen), sq/sk: actual lengths
};
Task make_task(const Params& p, int64_t task_index);

/// dst[r * cols + c] = element (b, row0 + r, head, c) of a [B, S, H, cols] tensor with strides st.
void gather_rows(const ElemIO& io, const void* base, const Strides4& st, int64_t b, int64_t row0,
                 int64_t rows, int64_t head, int64_t cols, double* dst);
/// Inverse of gather_rows (writes rounded to the storage type).
void scatter_rows(const ElemIO& io, void* base, const Strides4& st, int64_t b, int64_t row0,
                  int64_t rows, int64_t head, int64_t cols, const double* src);

/// Final scores of query head h for task t: s[i * sk + j] for i < sq, j < sk, with -inf where the
/// key is not visible (causal/window rule, bool mask false, additive mask -inf).
/// q: [sq, D], k: [sk, D] dense. When `tanh_deriv` is given and softcap is on, also writes
/// 1 - tanh(raw / c)^2 (the derivative of c * tanh(raw / c) with respect to raw) there.
void head_scores(const Params& p, const Task& t, int64_t h, const double* q, const double* k,
                 double* s, double* tanh_deriv);

/// In place: row i of s [sq, sk] becomes softmax probabilities (0 for invisible keys); lse[i] =
/// log sum_j exp(s_ij) over visible keys, -inf for a row with none (its probabilities all 0).
void softmax_rows(double* s, int64_t sq, int64_t sk, double* lse);

/// Dropout multipliers of row i of query head h: f[j] = 0 (dropped), 1/(1-p) (kept), or 1 without
/// dropout. Uses core/philox.hpp's keep rule with the row/column inside the sequence.
void dropout_row(const Params& p, const Task& t, int64_t h, int64_t i, double* f);

/// Runs body(task_index, worker_index) for every task on `workers` threads (the calling thread is
/// one of them). Each worker index is used by one thread at a time, so per-worker scratch is
/// safe. Rethrows the first exception.
void for_each_task(int64_t tasks, int workers, const std::function<void(int64_t, int)>& body);

}  // namespace attnkit::math_core
