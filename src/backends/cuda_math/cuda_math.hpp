// cuda_math's host entry points (no CUDA types: included by backend.cpp, compiled as C++).
//
// Algorithm (correctness first, bounded memory, no atomics):
//   The query rows of every (b, h) are cut into row blocks of kRows = 64 rows; flat block id
//   t = (b * Hq + h) * nrb + rb, nrb = ceil(Sq / 64). Row blocks are processed in chunks of
//   consecutive ids; for each chunk the scores of its rows against ALL keys are materialized as
//   fp32 in a workspace W[chunk_rows, Sk] (so memory is chunk_rows * Sk * 4 bytes, bounded by
//   kWorkspaceBudget, never Sq * Sk):
//   forward : W = scores -> W = dropout(softmax(W)) (+ lse) -> out = W . V
//   backward: delta_i = rowsum(dO_i * O_i) once; per chunk W1 = dropout(P), W2 = dS (fused with
//             the recomputation of P from lse), dq = W2 . K, and dK/dV accumulated in fp32
//             buffers by dK[j] += sum_i W2[i, j] q_i, dV[j] += sum_i W1[i, j] dO_i — each output
//             element owned by one thread, chunks in stream order: bit-identical run to run.
#pragma once

#include <cstddef>
#include <string>

#include "core/params.hpp"

namespace attnkit::cuda_math {

void forward(const Params& p);
void backward(const Params& p);

/// True when this binary holds kernels runnable on `device`; else false with the reason.
bool kernels_available(int device, std::string* why);

/// Tests only: cap the score-tile workspace at `bytes` (at least one row block is always used),
/// so small problems run through many chunks. 0 restores the default (512 MiB).
void set_workspace_budget_for_testing(size_t bytes);

}  // namespace attnkit::cuda_math
