// The attention call: forward, backward, explain, and backend selection.
//
// Shapes (logical; any strides):
//   q    [B, Sq, Hq, D]    k [B, Sk, Hkv, D]    v [B, Sk, Hkv, Dv]    out [B, Sq, Hq, Dv]
//   lse  f32 [B, Hq, Sq]   natural log of sum_j exp(scaled score) over visible keys
//   varlen: q [total_q, Hq, D], k [total_k, Hkv, D], v [total_k, Hkv, Dv], out [total_q, Hq, Dv],
//           lse f32 [Hq, total_q]
// Backward takes (dout, q, k, v, out, lse) and writes dq, dk, dv (shapes of q, k, v).
#pragma once

#include <string>
#include <vector>

#include "attnkit/options.hpp"
#include "attnkit/tensor.hpp"

namespace attnkit {

struct ForwardArgs {
  TensorView q, k, v, out;
  TensorView lse;  // optional output
};

struct BackwardArgs {
  TensorView dout, q, k, v, out, lse;  // lse: the forward's (required)
  TensorView dq, dk, dv;
};

/// Runs attention forward. Returns the canonical name of the backend that ran.
/// Throws attnkit::Error; on error nothing is written.
std::string forward(const ForwardArgs& args, const Options& opts = {});
/// Runs attention backward. Returns the canonical name of the backend that ran.
std::string backward(const BackwardArgs& args, const Options& opts = {});

/// One line per known backend: "ok" or the reasons it cannot run this call.
struct BackendVerdict {
  std::string name;
  bool built = false;
  bool ok = false;
  std::vector<std::string> reasons;
};
struct Explanation {
  std::string selected;  // canonical name that would run, or "" if none can
  std::string rule;  // "per-call", "scoped guard", "process default", "env ATTNKIT_BACKEND", "auto"
  std::vector<BackendVerdict> backends;
  std::string str() const;  // human-readable table
};
/// Validates the call (throws on bad input like forward does) and explains selection.
Explanation explain(const ForwardArgs& args, const Options& opts = {}, bool backward = false);

/// Process default backend ("" or "auto" to clear). Overrides env ATTNKIT_BACKEND.
void set_default_backend(const std::string& name);
std::string default_backend();

/// Thread-local RAII scope: the C++ form of `with attention_backend("flash"):`. Nests.
class BackendGuard {
 public:
  explicit BackendGuard(const std::string& name);
  ~BackendGuard();
  BackendGuard(const BackendGuard&) = delete;
  BackendGuard& operator=(const BackendGuard&) = delete;
};

/// Threads used by CPU backends: n > 0 fixes the count; 0 restores the default
/// (env ATTNKIT_NUM_THREADS, else all cores). num_threads() returns the count in effect.
void set_num_threads(int n);
int num_threads();

/// Maps any known name or alias to its canonical name; throws kUnknownBackend otherwise.
std::string canonical_backend_name(const std::string& name_or_alias);

}  // namespace attnkit
