// Case names and default tolerances.
#include <cmath>
#include <sstream>
#include <string>

#include "check/check.hpp"

namespace attnkit::check {
namespace {

// A number as an identifier fragment: 0.25 -> "0p25", -1 -> "m1".
std::string num(double x) {
  std::ostringstream os;
  os.precision(6);
  os << x;
  std::string s = os.str();
  for (char& ch : s) {
    if (ch == '.')
      ch = 'p';
    else if (ch == '-')
      ch = 'm';
    else if (ch == '+')
      ch = 'P';
  }
  return s;
}

std::string lens(const std::vector<int64_t>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(v[i]);
  }
  return s.empty() ? "none" : s;
}

}  // namespace

std::string Case::name() const {
  std::string n = dtype_name(dtype);
  n += layout == Layout::bhsd ? "_bhsd" : "_bshd";
  if (noncontiguous) n += "_strided";
  if (varlen) {
    n += "_varlen_q" + lens(seqlens_q) + "_k" + lens(seqlens_k);
    if (!varlen_max_given) n += "_nomax";
  } else {
    n += "_b" + std::to_string(b) + "_sq" + std::to_string(sq) + "_sk" + std::to_string(sk);
  }
  n += "_h" + std::to_string(hq) + "x" + std::to_string(hkv);
  n += "_d" + std::to_string(d);
  if (dv != d) n += "_dv" + std::to_string(dv);
  if (causal == Causal::top_left) n += "_causalTL";
  if (causal == Causal::bottom_right) n += "_causalBR";
  if (window_left >= 0 || window_right >= 0)
    n += "_win" + num(static_cast<double>(window_left)) + "_" +
         num(static_cast<double>(window_right));
  if (softcap > 0) n += "_softcap" + num(softcap);
  if (alibi) n += alibi_per_batch ? "_alibiBH" : "_alibiH";
  if (mask != MaskCase::none) {
    n += mask == MaskCase::keep_bool ? "_maskbool" : "_maskadd";
    n += "_bc" + std::to_string(static_cast<int>(mask_broadcast));
    if (mask == MaskCase::additive && mask_dtype && *mask_dtype != dtype)
      n += std::string("_mask") + dtype_name(*mask_dtype);
  }
  if (dropout_p > 0) n += "_drop" + num(dropout_p);
  if (scale) n += "_scale" + num(*scale);
  if (!lse) n += "_nolse";
  n += backward ? "_bwd" : "_fwd";
  if (deterministic) n += "_det";
  return n;
}

// Bounds (DESIGN.md §5). f32: accumulation error of an fp32 kernel is ~1e-6 relative; 1e-5 / 1e-4
// leave an order of magnitude. f16/bf16: outputs are rounded to 2^-11 / 2^-8 relative and P is
// rounded before P·V, so 1e-2 relative (2e-2 for gradients, which add one more rounded matmul)
// holds for every exact kernel; max abs bounds allow a few ulps at |out| ~ 4. lse is fp32 in every
// backend; its error comes from fp32 score arithmetic (and approximate exp/tanh).
// Quantized tier: rel 4.5e-2 corresponds to cosine similarity >= 0.999.
Tolerance default_tolerance(DType t, bool exact_tier) {
  Tolerance tol;
  if (!exact_tier) {
    tol.out_rel = 4.5e-2;
    tol.out_abs = 0.25;
    tol.lse_abs = 5e-2;
    tol.grad_rel = 1e-1;
    return tol;
  }
  switch (t) {
    case DType::f32:
      tol.out_rel = 1e-5;
      tol.out_abs = 1e-4;
      tol.lse_abs = 1e-4;
      tol.grad_rel = 1e-4;
      break;
    case DType::f16:
      tol.out_rel = 1e-2;
      tol.out_abs = 1e-2;
      tol.lse_abs = 2e-3;
      tol.grad_rel = 2e-2;
      break;
    default:  // bf16 (and anything narrower that reaches an exact-tier check)
      tol.out_rel = 1e-2;
      tol.out_abs = 4e-2;
      tol.lse_abs = 2e-3;
      tol.grad_rel = 2e-2;
      break;
  }
  return tol;
}

}  // namespace attnkit::check
