#include "backends/cudnn/support.hpp"

#include <algorithm>

namespace attnkit::cudnn {

int64_t bucket_seqlen(int64_t s) {
  int64_t b = 64;
  while (b < s)
    b *= 2;
  return b;
}

GraphDims graph_dims(const Params& p) {
  GraphDims g;
  g.b = p.batch;
  g.hq = p.heads_q;
  g.hkv = p.heads_kv;
  g.sq = p.varlen ? bucket_seqlen(p.seqlen_q) : p.seqlen_q;
  g.sk = p.varlen ? bucket_seqlen(p.seqlen_k) : p.seqlen_k;
  g.d = p.head_dim;
  g.dv = p.head_dim_v;
  return g;
}

bool stats_direct(const Params& p) {
  return !p.varlen && p.lse != nullptr && p.lse_st.s == 1 && p.lse_st.h == p.seqlen_q &&
         (p.batch == 1 || p.lse_st.b == p.heads_q * p.seqlen_q);
}

Mapping map_call(const Params& p) {
  Mapping m;
  if (p.seqlen_q == 0 || p.seqlen_k == 0) {
    m.empty = true;
    return m;
  }
  const bool window = p.window_left >= 0 || p.window_right >= 0;
  // Top-left and bottom-right coincide when every sequence has Sq == Sk (not knowable for varlen).
  const bool square = !p.varlen && p.seqlen_q == p.seqlen_k;
  const bool mixed_alignment = p.causal == Causal::top_left && window && !square;

  m.padding = p.varlen;
  if (p.has_mask() || mixed_alignment) {
    m.bias = true;
    m.bias_structural = p.causal != Causal::none || window;
    m.bias_b = (p.has_mask() && p.mask_st.b != 0) ? p.batch : 1;
    m.bias_h = (p.has_mask() && p.mask_st.h != 0) ? p.heads_q : 1;
    m.may_have_empty_rows = true;
    return m;
  }
  if (p.causal == Causal::none && !window) {
    m.may_have_empty_rows = p.varlen;  // a varlen sequence may have sk = 0
    return m;
  }

  m.band = true;
  const bool br = p.causal == Causal::bottom_right || (p.causal == Causal::none && window);
  m.align = (br && !square) ? Align::bottom_right : Align::top_left;
  if (p.causal != Causal::none) m.right_bound = 0;
  if (p.window_right >= 0)
    m.right_bound =
        m.right_bound ? std::min<int64_t>(*m.right_bound, p.window_right) : p.window_right;
  if (p.window_left >= 0) m.left_bound = p.window_left + 1;
  // cuDNN shifts a bottom-right band by the per-sequence lengths only with a padding mask; it
  // also rejects Sq > Sk without one. The lengths are constants here (filled by aux_kernels).
  if (m.align == Align::bottom_right) m.padding = true;
  // Empty rows: a window can leave a row without keys; so can bottom-right causal when Sq > Sk
  // (or any varlen sequence with sq > sk, or sk = 0).
  m.may_have_empty_rows =
      window || p.varlen || (p.causal == Causal::bottom_right && p.seqlen_q > p.seqlen_k);
  return m;
}

namespace {

bool aligned16(const void* ptr) {
  return (reinterpret_cast<uintptr_t>(ptr) & 15u) == 0;
}

void check_view(const char* name, const void* ptr, const Strides4& st, bool varlen,
                std::vector<std::string>& r) {
  if (ptr == nullptr) return;
  if (st.d != 1)
    r.push_back(std::string(name) + ": cuDNN needs a unit stride along the head dim (stride " +
                std::to_string(st.d) + ")");
  // 16-byte alignment of every row start: strides of f16/bf16 elements in multiples of 8.
  const int64_t others[3] = {varlen ? 0 : st.b, st.s, st.h};
  for (int64_t s : others)
    if (s % 8 != 0) {
      r.push_back(std::string(name) +
                  ": cuDNN needs strides in multiples of 8 elements (16 bytes)");
      break;
    }
  if (!aligned16(ptr)) r.push_back(std::string(name) + ": cuDNN needs a 16-byte aligned pointer");
}

}  // namespace

void cudnn_reasons(const Params& p, int arch, std::vector<std::string>& r) {
  // Head dims: multiples of 8; up to 256 on Hopper, 128 elsewhere (cuDNN 9 fused SDPA).
  if (p.head_dim % 8 != 0 || p.head_dim_v % 8 != 0)
    r.push_back("cuDNN needs head dims that are multiples of 8 (D = " + std::to_string(p.head_dim) +
                ", Dv = " + std::to_string(p.head_dim_v) + ")");
  if (arch != 0) {
    const int64_t max_d = (arch >= 90 && arch < 100) ? 256 : 128;
    if (p.head_dim > max_d || p.head_dim_v > max_d)
      r.push_back("cuDNN supports head dims up to " + std::to_string(max_d) + " on sm" +
                  std::to_string(arch));
  }
  const bool window = p.window_left >= 0 || p.window_right >= 0;
  if (p.varlen && p.causal == Causal::top_left && window)
    r.push_back(
        "varlen with top_left causal and a (bottom-right aligned) window: cuDNN has one diagonal "
        "alignment per graph");
  if (p.is_backward && !p.varlen && p.seqlen_q == 1 && p.seqlen_k == 1)
    r.push_back("backward with Sq = Sk = 1: cuDNN's SDPA backward rejects s_q = s_kv = 1");
  if (p.has_dropout())
    r.push_back("dropout: cuDNN's RNG does not reproduce attnkit's Philox keep mask");
  if (p.softcap > 0)
    r.push_back("softcap: cuDNN applies score modifiers only without masks, not supported here");
  if (p.alibi)
    r.push_back("ALiBi: cuDNN's ALiBi uses its own fixed slopes (top-left only), not the caller's");
  if (p.mask_kind == MaskKind::additive && p.mask_dtype != p.dtype)
    r.push_back(std::string("additive mask of dtype ") + dtype_name(p.mask_dtype) +
                ": cuDNN takes the bias in the input dtype (" + dtype_name(p.dtype) +
                "), rounding the mask would change the result (H200: lse off by 4e-3 for an f32 "
                "mask with bf16 inputs)");

  check_view("q", p.q, p.q_st, p.varlen, r);
  check_view("k", p.k, p.k_st, p.varlen, r);
  check_view("v", p.v, p.v_st, p.varlen, r);
  check_view("out", p.out, p.out_st, p.varlen, r);
  if (p.is_backward) {
    check_view("dout", p.dout, p.dout_st, p.varlen, r);
    check_view("dq", p.dq, p.dq_st, p.varlen, r);
    check_view("dk", p.dk, p.dk_st, p.varlen, r);
    check_view("dv", p.dv, p.dv_st, p.varlen, r);
  }

  const Mapping m = map_call(p);
  if (m.bias) {
    const double bytes =
        2.0 * double(m.bias_b) * double(m.bias_h) * double(p.seqlen_q) * double(p.seqlen_k);
    if (bytes > double(kMaxBiasBytes))
      r.push_back("mask/causal combination needs a materialized bias of " +
                  std::to_string(int64_t(bytes / (1 << 20))) + " MiB (limit " +
                  std::to_string(kMaxBiasBytes >> 20) + " MiB)");
  }
  if (p.varlen) {
    // Ragged offsets are int32 element offsets: bound the largest one.
    const int64_t strides[4] = {p.q_st.s, p.k_st.s, p.v_st.s, p.out_st.s};
    for (int64_t s : strides)
      if (double(p.batch) * double(p.seqlen_q > p.seqlen_k ? p.seqlen_q : p.seqlen_k) * double(s) >
          2147483647.0) {
        r.push_back("varlen: packed tensors beyond 2^31 elements (int32 ragged offsets)");
        break;
      }
  }
}

}  // namespace attnkit::cudnn
