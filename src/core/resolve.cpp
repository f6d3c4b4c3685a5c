// Validation: every rule of DESIGN.md §4, each with a message naming argument, expectation and
// actual value. Order: presence → rank → dtype → device → shapes → strides → options → varlen
// offsets. Nothing here touches output memory.
#include "core/resolve.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <thread>

#include "attnkit/error.hpp"
#include "core/device_runtime.hpp"
#include "core/env.hpp"
#include "core/philox.hpp"

namespace attnkit {
namespace {

[[noreturn]] void fail(const std::string& msg) {
  throw Error(ErrorCode::kInvalidArgument, msg);
}

// Numbers in messages are formatted with snprintf, not iostreams: an error raised inside a
// Python process that also loaded torch crashed on the GPU machine in
// ostream::_M_insert<double>; the C formatter has no locale facets to clash.
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// A required tensor argument: defined, rank, non-null data unless empty, strides >= 0.
void require_tensor(const TensorView& t, const char* name, int rank) {
  if (!t.defined())
    fail(std::string(name) + " is missing (an empty TensorView), expected a rank-" +
         std::to_string(rank) + " tensor");
  if (t.rank != rank)
    fail(std::string(name) + ".rank = " + std::to_string(t.rank) + ", expected " +
         std::to_string(rank) + " (shape " + t.shape_str() + ")");
  for (int i = 0; i < t.rank; ++i) {
    if (t.shape[i] < 0)
      fail(std::string(name) + ".shape[" + std::to_string(i) + "] = " + std::to_string(t.shape[i]) +
           ", expected >= 0");
    if (t.stride[i] < 0)
      fail(std::string(name) + ".stride[" + std::to_string(i) + "] = " +
           std::to_string(t.stride[i]) + ", expected >= 0 (negative strides are not supported)");
  }
  if (t.data == nullptr && t.numel() > 0)
    fail(std::string(name) + ".data is null, expected a pointer to " + std::to_string(t.numel()) +
         " elements");
}

/// True when no two index tuples of `t` map to the same element.
bool non_overlapping(const TensorView& t) {
  std::array<int, kMaxRank> order{};
  int n = 0;
  for (int i = 0; i < t.rank; ++i)
    if (t.shape[i] > 1) order[n++] = i;
  for (int a = 1; a < n; ++a)  // insertion sort by stride (n <= 4)
    for (int b = a; b > 0 && t.stride[order[b]] < t.stride[order[b - 1]]; --b)
      std::swap(order[b], order[b - 1]);
  int64_t reach = 0;  // max offset reachable by the dims already placed
  for (int k = 0; k < n; ++k) {
    const int i = order[k];
    if (t.stride[i] <= reach) return false;
    reach += t.stride[i] * (t.shape[i] - 1);
  }
  return true;
}

void require_no_overlap(const TensorView& t, const char* name) {
  if (t.numel() > 1 && !non_overlapping(t)) {
    std::string msg = std::string(name) + ".stride = [";
    for (int i = 0; i < t.rank; ++i) {
      if (i) msg += ", ";
      msg += std::to_string(t.stride[i]);
    }
    msg += "] for shape " + t.shape_str();
    msg += ", expected non-overlapping strides (every element at a distinct address)";
    fail(msg);
  }
}

void require_dim(const TensorView& t, const char* name, int dim, int64_t expected,
                 const std::string& because) {
  if (t.shape[dim] != expected)
    fail(std::string(name) + ".shape[" + std::to_string(dim) +
         "] = " + std::to_string(t.shape[dim]) + ", expected " + std::to_string(expected) +
         " (= " + because + ")");
}

void require_same_dtype(const TensorView& t, const char* name, DType expected, const char* ref) {
  if (t.dtype != expected)
    fail(std::string(name) + ".dtype = " + dtype_name(t.dtype) + ", expected " +
         dtype_name(expected) + " (= " + ref + ".dtype)");
}

void require_same_device(const TensorView& t, const char* name, Device expected, const char* ref) {
  if (!(t.device == expected))
    fail(std::string(name) + ".device = " + t.device.str() + ", expected " + expected.str() +
         " (= " + ref + ".device)");
}

void require_positive(int64_t v, const char* what) {
  if (v <= 0)
    fail(std::string(what) + " = " + std::to_string(v) + ", expected > 0 (zero-size dimension)");
}

Strides4 strides_of(const TensorView& t, bool varlen) {
  // Non-varlen rank 4 [B, S, H, D]; varlen rank 3 [total, H, D] with b stride 0.
  if (varlen) return Strides4{0, t.stride[0], t.stride[1], t.stride[2]};
  return Strides4{t.stride[0], t.stride[1], t.stride[2], t.stride[3]};
}

bool is_quantized_input(DType t) {
  return t == DType::f8e4m3 || t == DType::f8e5m2 || t == DType::i8;
}

/// Reads cu_seqlens (int32 [B+1]) to host and checks: starts at 0, non-decreasing, ends at total.
std::vector<int32_t> read_cu_seqlens(const TensorView& cu, const char* name, int64_t total,
                                     const char* total_name) {
  const int64_t n = cu.shape[0];
  std::vector<int32_t> host(static_cast<size_t>(n));
  if (cu.stride[0] != 1 && n > 1)
    fail(std::string(name) + ".stride[0] = " + std::to_string(cu.stride[0]) +
         ", expected 1 (contiguous)");
  device_runtime(cu.device.type)
      .copy_to_host(host.data(), cu.data, static_cast<size_t>(n) * sizeof(int32_t), cu.device);
  if (host[0] != 0) fail(std::string(name) + "[0] = " + std::to_string(host[0]) + ", expected 0");
  for (int64_t b = 1; b < n; ++b)
    if (host[b] < host[b - 1])
      fail(std::string(name) + " is not monotone: " + name + "[" + std::to_string(b) +
           "] = " + std::to_string(host[b]) + " < " + name + "[" + std::to_string(b - 1) +
           "] = " + std::to_string(host[b - 1]) + ", expected non-decreasing offsets");
  if (host[n - 1] != total)
    fail(std::string(name) + "[" + std::to_string(n - 1) + "] = " + std::to_string(host[n - 1]) +
         ", expected " + std::to_string(total) + " (= " + total_name + ", the packed length)");
  return host;
}

struct Shapes {
  int64_t b, sq, sk, hq, hkv, d, dv;
};

/// The shared part of forward and backward validation: q, k, v, out, lse, options.
Shapes validate_common(const TensorView& q, const TensorView& k, const TensorView& v,
                       const TensorView& out, const TensorView& lse, bool lse_required,
                       const Options& o, ResolvedCall& rc) {
  const bool varlen = o.cu_seqlens_q.defined() || o.cu_seqlens_k.defined();
  const int rank = varlen ? 3 : 4;
  require_tensor(q, "q", rank);
  require_tensor(k, "k", rank);
  require_tensor(v, "v", rank);
  require_tensor(out, "out", rank);

  // dtypes
  const DType dt = q.dtype;
  if (!is_float(dt) && dt != DType::i8)
    fail(std::string("q.dtype = ") + dtype_name(dt) +
         ", expected one of f32, f16, bf16, f8e4m3, f8e5m2, i8");
  require_same_dtype(k, "k", dt, "q");
  require_same_dtype(v, "v", dt, "q");
  if (is_quantized_input(dt)) {
    if (out.dtype != DType::f16 && out.dtype != DType::bf16 && out.dtype != DType::f32)
      fail(std::string("out.dtype = ") + dtype_name(out.dtype) +
           ", expected f16, bf16 or f32 for " + dtype_name(dt) + " inputs");
  } else {
    require_same_dtype(out, "out", dt, "q");
  }
  // devices
  require_same_device(k, "k", q.device, "q");
  require_same_device(v, "v", q.device, "q");
  require_same_device(out, "out", q.device, "q");

  // shapes
  Shapes s{};
  const int o0 = varlen ? 0 : 1;  // offset of the S dim
  if (varlen) {
    s.b = 0;
  } else {
    s.b = q.shape[0];
  }
  s.sq = q.shape[o0];
  s.hq = q.shape[o0 + 1];
  s.d = q.shape[o0 + 2];
  s.sk = k.shape[o0];
  s.hkv = k.shape[o0 + 1];
  s.dv = v.shape[o0 + 2];
  require_positive(s.hq, varlen ? "q.shape[1] (Hq)" : "q.shape[2] (Hq)");
  require_positive(s.d, varlen ? "q.shape[2] (D)" : "q.shape[3] (D)");
  require_positive(s.hkv, varlen ? "k.shape[1] (Hkv)" : "k.shape[2] (Hkv)");
  require_positive(s.dv, varlen ? "v.shape[2] (Dv)" : "v.shape[3] (Dv)");
  if (!varlen) {
    require_dim(k, "k", 0, s.b, "q.shape[0], batch");
    require_dim(v, "v", 0, s.b, "q.shape[0], batch");
    require_dim(out, "out", 0, s.b, "q.shape[0], batch");
  }
  require_dim(k, "k", o0 + 2, s.d, varlen ? "q.shape[2], head dim" : "q.shape[3], head dim");
  require_dim(v, "v", o0, s.sk, varlen ? "k.shape[0], packed keys" : "k.shape[1], keys");
  require_dim(v, "v", o0 + 1, s.hkv, varlen ? "k.shape[1], kv heads" : "k.shape[2], kv heads");
  require_dim(out, "out", o0, s.sq, varlen ? "q.shape[0]" : "q.shape[1]");
  require_dim(out, "out", o0 + 1, s.hq, varlen ? "q.shape[1]" : "q.shape[2]");
  require_dim(out, "out", o0 + 2, s.dv, varlen ? "v.shape[2]" : "v.shape[3]");
  if (s.hq % s.hkv != 0)
    fail("Hq % Hkv = " + std::to_string(s.hq) + " % " + std::to_string(s.hkv) + " = " +
         std::to_string(s.hq % s.hkv) +
         ", expected 0 (GQA/MQA needs the query heads to be a multiple of the kv heads)");
  require_no_overlap(q, "q");
  require_no_overlap(k, "k");
  require_no_overlap(v, "v");
  require_no_overlap(out, "out");

  Params& p = rc.params;
  p = Params{};
  p.dtype = dt;
  p.device = q.device;
  p.heads_q = s.hq;
  p.heads_kv = s.hkv;
  p.group = s.hq / s.hkv;
  p.head_dim = s.d;
  p.head_dim_v = s.dv;
  p.q = q.data;
  p.k = k.data;
  p.v = v.data;
  p.out = out.data;
  p.q_st = strides_of(q, varlen);
  p.k_st = strides_of(k, varlen);
  p.v_st = strides_of(v, varlen);
  p.out_st = strides_of(out, varlen);

  // options
  if (o.scale.has_value()) {
    const double sc = *o.scale;
    if (!std::isfinite(sc) || !(sc > 0))
      fail("scale = " + num(sc) + ", expected a finite value > 0");
    p.scale = static_cast<float>(sc);
  } else {
    p.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(s.d)));
  }
  if (!std::isfinite(o.softcap) || o.softcap < 0)
    fail("softcap = " + num(o.softcap) + ", expected a finite value >= 0 (0 = off)");
  p.softcap = static_cast<float>(o.softcap);
  if (o.causal != Causal::none && o.causal != Causal::top_left && o.causal != Causal::bottom_right)
    fail("causal = " + std::to_string(static_cast<int>(o.causal)) +
         ", expected none, top_left or bottom_right");
  p.causal = o.causal;
  if (o.window_left < -1)
    fail("window_left = " + std::to_string(o.window_left) + ", expected >= -1 (-1 = unbounded)");
  if (o.window_right < -1)
    fail("window_right = " + std::to_string(o.window_right) + ", expected >= -1 (-1 = unbounded)");
  p.window_left = o.window_left;
  p.window_right = o.window_right;
  if (!(o.dropout_p >= 0.0 && o.dropout_p < 1.0))
    fail("dropout_p = " + num(o.dropout_p) + ", expected a value in [0, 1)");
  p.dropout_p = static_cast<float>(o.dropout_p);
  p.dropout_threshold = dropout_threshold_for(o.dropout_p);
  p.dropout_rescale = static_cast<float>(1.0 / (1.0 - o.dropout_p));
  p.seed = o.dropout_seed;
  p.offset = o.dropout_offset;
  p.deterministic = o.deterministic;
  p.stream = o.stream;
  p.num_threads = resolved_num_threads();

  // varlen
  p.varlen = varlen;
  if (varlen) {
    if (!o.cu_seqlens_q.defined() || !o.cu_seqlens_k.defined())
      fail(std::string(o.cu_seqlens_q.defined() ? "cu_seqlens_k" : "cu_seqlens_q") +
           " is missing, expected both cu_seqlens_q and cu_seqlens_k for a varlen call");
    require_tensor(o.cu_seqlens_q, "cu_seqlens_q", 1);
    require_tensor(o.cu_seqlens_k, "cu_seqlens_k", 1);
    for (const auto* cu : {&o.cu_seqlens_q, &o.cu_seqlens_k}) {
      const char* nm = cu == &o.cu_seqlens_q ? "cu_seqlens_q" : "cu_seqlens_k";
      if (cu->dtype != DType::i32)
        fail(std::string(nm) + ".dtype = " + dtype_name(cu->dtype) + ", expected i32");
      require_same_device(*cu, nm, q.device, "q");
      if (cu->shape[0] < 1)
        fail(std::string(nm) + ".shape[0] = 0, expected >= 1 (batch + 1 offsets)");
    }
    require_dim(o.cu_seqlens_k, "cu_seqlens_k", 0, o.cu_seqlens_q.shape[0],
                "cu_seqlens_q.shape[0], batch + 1");
    s.b = o.cu_seqlens_q.shape[0] - 1;
    if (o.max_seqlen_q < -1 || o.max_seqlen_k < -1)
      fail("max_seqlen_q/max_seqlen_k = " + std::to_string(o.max_seqlen_q) + "/" +
           std::to_string(o.max_seqlen_k) + ", expected >= 0, or -1 to read them from cu_seqlens");
    const bool maxima_given = o.max_seqlen_q >= 0 && o.max_seqlen_k >= 0;
    // CPU offsets are always checked; CUDA offsets are read (one sync) only when the maxima are
    // not given — given maxima are the caller's promise, as in FlashAttention.
    if (q.device.type == DeviceType::cpu || !maxima_given) {
      rc.cu_seqlens_q_host = read_cu_seqlens(o.cu_seqlens_q, "cu_seqlens_q", s.sq, "q.shape[0]");
      rc.cu_seqlens_k_host = read_cu_seqlens(o.cu_seqlens_k, "cu_seqlens_k", s.sk, "k.shape[0]");
      int64_t mq = 0, mk = 0;
      for (int64_t b = 0; b < s.b; ++b) {
        mq = std::max<int64_t>(mq, rc.cu_seqlens_q_host[b + 1] - rc.cu_seqlens_q_host[b]);
        mk = std::max<int64_t>(mk, rc.cu_seqlens_k_host[b + 1] - rc.cu_seqlens_k_host[b]);
      }
      if (maxima_given && (o.max_seqlen_q < mq || o.max_seqlen_k < mk))
        fail("max_seqlen_q/max_seqlen_k = " + std::to_string(o.max_seqlen_q) + "/" +
             std::to_string(o.max_seqlen_k) + ", expected >= the longest sequences " +
             std::to_string(mq) + "/" + std::to_string(mk));
      p.cu_seqlens_q_host = rc.cu_seqlens_q_host.data();
      p.cu_seqlens_k_host = rc.cu_seqlens_k_host.data();
      p.seqlen_q = maxima_given ? o.max_seqlen_q : mq;
      p.seqlen_k = maxima_given ? o.max_seqlen_k : mk;
    } else {
      p.seqlen_q = o.max_seqlen_q;
      p.seqlen_k = o.max_seqlen_k;
    }
    p.max_seqlens_given = maxima_given;
    p.total_q = s.sq;
    p.total_k = s.sk;
    p.cu_seqlens_q = static_cast<const int32_t*>(o.cu_seqlens_q.data);
    p.cu_seqlens_k = static_cast<const int32_t*>(o.cu_seqlens_k.data);
    if (q.device.type == DeviceType::cpu) {
      // CPU backends read offsets directly; keep the validated host copy.
      p.cu_seqlens_q = p.cu_seqlens_q_host;
      p.cu_seqlens_k = p.cu_seqlens_k_host;
    }
  } else {
    p.seqlen_q = s.sq;
    p.seqlen_k = s.sk;
  }
  p.batch = s.b;

  // lse
  if (lse.defined()) {
    require_tensor(lse, "lse", varlen ? 2 : 3);
    if (lse.dtype != DType::f32)
      fail(std::string("lse.dtype = ") + dtype_name(lse.dtype) + ", expected f32");
    require_same_device(lse, "lse", q.device, "q");
    if (varlen) {
      require_dim(lse, "lse", 0, s.hq, "Hq");
      require_dim(lse, "lse", 1, s.sq, "q.shape[0], total_q");
      p.lse_st = Strides4{0, lse.stride[1], lse.stride[0], 0};
    } else {
      require_dim(lse, "lse", 0, s.b, "batch");
      require_dim(lse, "lse", 1, s.hq, "Hq");
      require_dim(lse, "lse", 2, s.sq, "Sq");
      p.lse_st = Strides4{lse.stride[0], lse.stride[2], lse.stride[1], 0};
    }
    require_no_overlap(lse, "lse");
    p.lse = static_cast<float*>(lse.data);
  } else if (lse_required) {
    fail(std::string("lse is missing, expected the forward pass's f32 lse ") +
         (varlen ? "[Hq, total_q]" : "[B, Hq, Sq]"));
  }

  // ALiBi slopes: f32 [Hq] or [B, Hq]
  if (o.alibi_slopes.defined()) {
    const TensorView& a = o.alibi_slopes;
    if (a.rank != 1 && a.rank != 2)
      fail("alibi_slopes.rank = " + std::to_string(a.rank) + ", expected 1 ([Hq]) or 2 ([B, Hq])");
    require_tensor(a, "alibi_slopes", a.rank);
    if (a.dtype != DType::f32)
      fail(std::string("alibi_slopes.dtype = ") + dtype_name(a.dtype) + ", expected f32");
    require_same_device(a, "alibi_slopes", q.device, "q");
    require_dim(a, "alibi_slopes", a.rank - 1, s.hq, "Hq");
    if (a.rank == 2) require_dim(a, "alibi_slopes", 0, s.b, "batch");
    p.alibi = static_cast<const float*>(a.data);
    p.alibi_st_h = a.stride[a.rank - 1];
    p.alibi_st_b = a.rank == 2 ? a.stride[0] : 0;
  }

  // mask: bool keep-mask or additive float, broadcastable to [B, Hq, Sq, Sk]
  if (o.mask.defined()) {
    const TensorView& m = o.mask;
    if (varlen)
      fail(
          "mask is given with a varlen call, expected no mask (varlen takes masks as causal/"
          "window only)");
    if (m.rank < 2 || m.rank > 4)
      fail("mask.rank = " + std::to_string(m.rank) + ", expected 2, 3 or 4 (broadcastable to " +
           "[B, Hq, Sq, Sk])");
    require_tensor(m, "mask", m.rank);
    if (m.dtype != DType::b8 && m.dtype != DType::f32 && m.dtype != DType::f16 &&
        m.dtype != DType::bf16)
      fail(std::string("mask.dtype = ") + dtype_name(m.dtype) +
           ", expected bool (keep-mask) or f32/f16/bf16 (additive)");
    require_same_device(m, "mask", q.device, "q");
    const int64_t target[4] = {s.b, s.hq, s.sq, s.sk};
    const char* names[4] = {"B", "Hq", "Sq", "Sk"};
    int64_t st[4] = {0, 0, 0, 0};
    for (int i = 0; i < m.rank; ++i) {
      const int t = 4 - m.rank + i;
      if (m.shape[i] != target[t] && m.shape[i] != 1)
        fail("mask.shape[" + std::to_string(i) + "] = " + std::to_string(m.shape[i]) +
             ", expected " + std::to_string(target[t]) + " (= " + names[t] +
             ") or 1 (broadcast); mask shape " + m.shape_str() + " must broadcast to [" +
             std::to_string(s.b) + ", " + std::to_string(s.hq) + ", " + std::to_string(s.sq) +
             ", " + std::to_string(s.sk) + "]");
      st[t] = m.shape[i] == 1 ? 0 : m.stride[i];
    }
    p.mask = m.data;
    p.mask_dtype = m.dtype;
    p.mask_kind = m.dtype == DType::b8 ? MaskKind::keep_bool : MaskKind::additive;
    // Strides4 fields are declared (b, s, h, d): assign by name, (b, h, i, j) -> (b, h, s, d).
    p.mask_st.b = st[0];
    p.mask_st.h = st[1];
    p.mask_st.s = st[2];
    p.mask_st.d = st[3];
  }
  return s;
}

}  // namespace

int resolved_num_threads();

void resolve_forward(const ForwardArgs& a, const Options& o, ResolvedCall& rc) {
  validate_common(a.q, a.k, a.v, a.out, a.lse, /*lse_required=*/false, o, rc);
  rc.params.is_backward = false;
}

void resolve_backward(const BackwardArgs& a, const Options& o, ResolvedCall& rc) {
  const Shapes s = validate_common(a.q, a.k, a.v, a.out, a.lse, /*lse_required=*/true, o, rc);
  const bool varlen = rc.params.varlen;
  const int rank = varlen ? 3 : 4;
  require_tensor(a.dout, "dout", rank);
  require_tensor(a.dq, "dq", rank);
  require_tensor(a.dk, "dk", rank);
  require_tensor(a.dv, "dv", rank);
  struct Pair {
    const TensorView* t;
    const char* name;
    const TensorView* like;
    const char* like_name;
  };
  const Pair pairs[] = {{&a.dout, "dout", &a.out, "out"},
                        {&a.dq, "dq", &a.q, "q"},
                        {&a.dk, "dk", &a.k, "k"},
                        {&a.dv, "dv", &a.v, "v"}};
  for (const Pair& pr : pairs) {
    require_same_dtype(*pr.t, pr.name, pr.like->dtype, pr.like_name);
    require_same_device(*pr.t, pr.name, pr.like->device, pr.like_name);
    for (int i = 0; i < rank; ++i)
      require_dim(*pr.t, pr.name, i, pr.like->shape[i],
                  std::string(pr.like_name) + ".shape[" + std::to_string(i) + "]");
    require_no_overlap(*pr.t, pr.name);
  }
  (void)s;
  Params& p = rc.params;
  p.is_backward = true;
  p.dout = a.dout.data;
  p.dq = a.dq.data;
  p.dk = a.dk.data;
  p.dv = a.dv.data;
  p.dout_st = strides_of(a.dout, varlen);
  p.dq_st = strides_of(a.dq, varlen);
  p.dk_st = strides_of(a.dk, varlen);
  p.dv_st = strides_of(a.dv, varlen);
}

namespace {
std::atomic<int> g_num_threads{0};
}

void set_num_threads(int n) {
  if (n < 0) fail("num_threads = " + std::to_string(n) + ", expected >= 0 (0 = default)");
  g_num_threads.store(n);
}

int num_threads() {
  return resolved_num_threads();
}

int resolved_num_threads() {
  if (int n = g_num_threads.load(); n > 0) return n;
  if (int n = env::num_threads(); n > 0) return n;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

}  // namespace attnkit
