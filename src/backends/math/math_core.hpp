// The fp64 core of the `math` oracle. The backend (backend.cpp) is a thin wrapper over it; tests
// call it directly with fp64 tensors (Storage::f64) to take finite differences of the exact
// function without rounding to f32/f16/bf16.
//
// Semantics are exactly those of Params and core/score_policy.hpp (DESIGN.md §2). Work is split
// over (sequence b, kv head g) tasks; each task writes disjoint outputs (out/lse/dq rows of the
// group's query heads, dk/dv rows of head g), so results do not depend on the thread count.
#pragma once

#include <cstdint>
#include <vector>

#include "core/params.hpp"

namespace attnkit::math_core {

/// How the core reads q/k/v/dout and writes out/dq/dk/dv (masks, ALiBi slopes, cu_seqlens and
/// lse always have their Params types).
enum class Storage : uint8_t {
  params_dtype,  // elements of p.dtype: read exactly, written rounded to nearest even
  f64,           // every one of those pointers points to double
};

/// Forward: writes out, and lse (f32, at p.lse with p.lse_st) when p.lse is set. When `lse_f64`
/// is given, also writes the fp64 lse there with the same strides (p.lse_st).
void forward(const Params& p, Storage storage, double* lse_f64 = nullptr);

/// Backward: writes dq, dk, dv — the exact gradient of sum(dout * out(q, k, v)). Recomputes the
/// probabilities from q and k; p.out and p.lse are not read.
void backward(const Params& p, Storage storage);

/// Bytes one worker allocates (see include/attnkit/math.hpp for the formula).
uint64_t worker_bytes(const Params& p, bool backward);

/// Number of (sequence, kv head) tasks: batch * heads_kv.
int64_t task_count(const Params& p);

/// Worker threads used for `p` under `cap` bytes: min(requested, tasks, cap / worker_bytes), at
/// least 1. Requested = p.num_threads, or hardware_concurrency() when 0.
int worker_count(const Params& p, bool backward, uint64_t cap);

/// Host-readable cu_seqlens (the resolver's host copy when it made one, else the pointer itself:
/// on the CPU both are host memory).
const int32_t* host_cu_seqlens_q(const Params& p);
const int32_t* host_cu_seqlens_k(const Params& p);

}  // namespace attnkit::math_core
