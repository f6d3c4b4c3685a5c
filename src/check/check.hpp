// The check harness: runs one attention case on a backend and on the `math` oracle with the same
// inputs, and compares forward out, lse and (optionally) dq/dk/dv. Used by every backend's tests
// and by `attnkit check`. Outputs are poisoned (NaN) before each run, so an unwritten element
// fails; NaN never passes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attnkit/options.hpp"
#include "attnkit/tensor.hpp"

namespace attnkit::check {

enum class Layout : uint8_t { bshd, bhsd };
enum class MaskCase : uint8_t { none, keep_bool, additive };
/// Which mask dims are broadcast (size 1): bit 0 = batch, bit 1 = head, bit 2 = query rows.
/// Bit 3 (kMaskExpanded): those dims are given as expanded views instead (full size, stride 0).
using MaskBroadcast = uint8_t;
inline constexpr MaskBroadcast kMaskExpanded = 8;

struct Case {
  int64_t b = 1, sq = 1, sk = 1, hq = 1, hkv = 1, d = 64, dv = 64;
  DType dtype = DType::f32;
  Layout layout = Layout::bshd;
  bool noncontiguous = false;  // inputs/outputs padded: last-dim stride 1, others enlarged
  Causal causal = Causal::none;
  int64_t window_left = -1, window_right = -1;
  double softcap = 0.0;
  bool alibi = false;  // slopes [Hq] (alibi_per_batch: [B, Hq])
  bool alibi_per_batch = false;
  MaskCase mask = MaskCase::none;
  MaskBroadcast mask_broadcast = 0;
  std::optional<DType> mask_dtype;  // additive mask element type; default: dtype
  double dropout_p = 0.0;
  bool varlen = false;  // then seqlens_q/k give the per-sequence lengths (b ignored)
  std::vector<int64_t> seqlens_q, seqlens_k;
  bool varlen_max_given = true;  // false: max_seqlen_q/k = -1 (the resolver reads cu_seqlens)
  bool lse = true;
  bool backward = false;
  bool deterministic = false;
  std::optional<double> scale;
  /// Readable id usable in gtest names: letters, digits and '_' only.
  std::string name() const;
};

struct Tolerance {
  double out_rel = 0;  // ||x - ref|| / ||ref|| bound
  double out_abs = 0;  // max |x - ref| bound
  double lse_abs = 0;
  double grad_rel = 0;
};
/// Default bounds per dtype: f32 rel 1e-5 (grads 1e-4), f16/bf16 rel 1e-2 (grads 2e-2).
Tolerance default_tolerance(DType t, bool exact_tier = true);

struct Metric {
  std::string what;  // "out", "lse", "dq", "dk", "dv"
  double rel = 0, max_abs = 0;
  int64_t nonfinite = 0;  // NaN/Inf where the reference is finite (or vice versa)
  bool pass = true;
};

struct Report {
  std::string backend, case_name;
  bool pass = false;
  bool skipped = false;  // backend cannot run this case (reasons in detail)
  std::string detail;    // failure description or unsupported reasons
  std::vector<Metric> metrics;
};

/// Runs `c` on `backend` (canonical name or alias) on `device`, compares with `math`.
/// Inputs are drawn from N(0,1) with `seed` (then rounded to c.dtype); both sides see the same
/// bits. Unsupported calls return skipped=true. Never throws for a failing comparison.
Report run_case(const Case& c, const std::string& backend, Device device, uint64_t seed,
                const Tolerance& tol);
inline Report run_case(const Case& c, const std::string& backend, Device device,
                       uint64_t seed = 1) {
  return run_case(c, backend, device, seed, default_tolerance(c.dtype));
}

/// Like run_case, but the reference is `reference` (e.g. "cuda_math" for shapes too large for
/// the CPU oracle) running on the same device.
Report run_case_against(const Case& c, const std::string& backend, const std::string& reference,
                        Device device, uint64_t seed, const Tolerance& tol);

/// The foundation's hostile shapes (DESIGN.md §5), forward and backward variants: odd and prime
/// lengths, Sq != Sk with both causal alignments, lengths 0 and 1, varlen with empty sequences,
/// GQA 1/2/8, D in {32, 64, 80, 96, 128, 192, 256}, Dv != D, non-contiguous strides, both
/// layouts, masks broadcast every way, all-masked rows, window, softcap, ALiBi, dropout.
/// `dtype` sets every case's dtype; `max_d` drops cases with larger head dims.
std::vector<Case> hostile_cases(DType dtype, int max_d = 256);

/// A plain case of one shape (d = dv, every other option at its default).
Case shape_case(DType dtype, int64_t b, int64_t sq, int64_t sk, int64_t hq, int64_t hkv, int64_t d,
                Causal causal, bool backward);

/// A plain packed (varlen) case: sequence lengths lq / lk (batch = their count, sq / sk their
/// maxima), d = dv, every other option at its default.
Case varlen_shape_case(DType dtype, std::vector<int64_t> lq, std::vector<int64_t> lk, int64_t hq,
                       int64_t hkv, int64_t d, Causal causal, bool backward);

/// Larger random cases for GPU backends, checked against cuda_math when the oracle is too slow.
std::vector<Case> large_cases(DType dtype);

}  // namespace attnkit::check
