// An independent fp64 host reference for cuda_math's tests (DESIGN.md §2 semantics written out
// directly, not through score_policy.hpp, so a mistake there shows up as a mismatch), and the
// problem description shared by the tests.
//
// Host data is canonical and contiguous: q [B, Sq, Hq, D], k [B, Sk, Hkv, D], v [B, Sk, Hkv, Dv],
// out/dout [B, Sq, Hq, Dv], lse [B, Hq, Sq]; varlen: q [total_q, Hq, D] etc., lse [Hq, total_q].
// Masks are [mb, mh, mi, Sk] with mb/mh/mi = 1 where broadcast (else B/Hq/Sq).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "attnkit/options.hpp"
#include "attnkit/tensor.hpp"

namespace attnkit::cmtest {

enum class Layout : uint8_t { bshd, bhsd, padded };  // padded: BSHD with every stride enlarged
enum class Mask : uint8_t { none, keep_bool, additive };

struct Spec {
  std::string label;  // gtest-safe name
  int64_t b = 1, sq = 1, sk = 1, hq = 1, hkv = 1, d = 64, dv = 64;
  DType dtype = DType::f32;
  Layout layout = Layout::bshd;
  Causal causal = Causal::none;
  int64_t wl = -1, wr = -1;
  double softcap = 0.0;
  int alibi = 0;  // 0 none, 1 slopes [Hq], 2 slopes [B, Hq]
  Mask mask = Mask::none;
  bool mask_bcast_b = false, mask_bcast_h = false, mask_bcast_i = false;
  double dropout = 0.0;
  std::vector<int64_t> lens_q, lens_k;  // non-empty: varlen (b = lens_q.size())
  bool varlen() const { return !lens_q.empty(); }
  std::string name() const;
};

struct HostProblem {
  Spec s;
  int64_t tq = 0, tk = 0;             // rows of q / k in the canonical buffers (B*S or total)
  std::vector<int32_t> cu_q, cu_k;    // varlen prefix sums
  std::vector<double> q, k, v, dout;  // values exactly representable in s.dtype
  std::vector<double> mask;           // additive values, or 1/0 for keep_bool
  int64_t mb = 1, mh = 1, mi = 1;     // mask extents
  std::vector<float> slopes;
  uint64_t seed = 0, offset = 0;
  double scale = 0;
  int64_t q_start(int64_t b) const;  // first canonical row of sequence b (dense: b * Sq)
  int64_t k_start(int64_t b) const;
  int64_t len_q(int64_t b) const;
  int64_t len_k(int64_t b) const;
};

/// Random normal inputs (rounded to the dtype), masks with some fully hidden rows.
HostProblem make_problem(const Spec& s, uint64_t seed);

struct Reference {
  std::vector<double> out, dq, dk, dv;  // canonical layouts
  std::vector<double> lse;              // [Hq, tq] (tq = B * Sq dense, total_q varlen)
};
/// Rows to compute (b, h, i); empty = all. With a filter, dk/dv hold only those rows' share.
using RowFilter = std::function<bool(int64_t, int64_t, int64_t)>;
/// fp64 forward (+ backward with p.dout when `backward`).
Reference reference(const HostProblem& p, bool backward, const RowFilter& only = {});

}  // namespace attnkit::cmtest
