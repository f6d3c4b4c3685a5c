// flash3: Hopper-native (sm_90a) attention. Forward: warp-specialised kernel with TMA loads into
// a 2-stage K/V ring, wgmma for QK^T and PV, online softmax with exp2; softcap, ALiBi, sliding
// windows, varlen and masks in a kernel of their own (launch.cuh launch_forward_score_mod).
// Backward (D = 64, 128): one CTA per key block, TMA + wgmma for all five GEMMs, dQ through an fp32
// workspace with atomics (bwd_kernel.cuh; softcap, ALiBi, windows and varlen: its kMod kernel).
// Everything not implemented is declared unsupported so the dispatcher falls back.
#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <limits>
#include <mutex>
#include <string>
#include <vector>

#include "attnkit/error.hpp"
#include "backends/flash3/bwd_launch.hpp"
#include "backends/flash3/launch.hpp"
#include "backends/flash3/seq_bounds.hpp"
#include "cuda/device_guard.hpp"
#include "dispatch/backend.hpp"

namespace attnkit {
namespace {

/// 96 and 192 run on the 128 and 256 kernels (forward since session 25, launch.cuh kNarrow;
/// backward since session 38, bwd_launch.cuh narrow_kv_floats).
std::vector<int> built_head_dims() {
  std::vector<int> d;
#if defined(ATTNKIT_FLASH3_D64)
  d.push_back(64);
#endif
#if defined(ATTNKIT_FLASH3_D128)
  d.push_back(96);
  d.push_back(128);
#endif
#if defined(ATTNKIT_FLASH3_D256)
  d.push_back(192);
  d.push_back(256);
#endif
  return d;
}

/// Compute capability * 10 of CUDA device `index`, read once per device (0 if unreadable).
int device_arch(int index) {
  static std::mutex mu;
  static std::vector<int> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (index < 0) return 0;
  if (static_cast<size_t>(index) >= cache.size()) cache.resize(index + 1, -1);
  if (cache[index] < 0) {
    cudaDeviceProp prop{};
    cache[index] =
        cudaGetDeviceProperties(&prop, index) == cudaSuccess ? prop.major * 10 + prop.minor : 0;
  }
  return cache[index];
}

/// TMA requirements for one [B, S, H, D] operand: d-stride 1, the other strides of non-trivial
/// dims positive multiples of 16 bytes (8 elements), base 16-byte aligned.
void check_tma_operand(const char* name, const void* ptr, const Strides4& st, int64_t b, int64_t s,
                       int64_t h, std::vector<std::string>& reasons) {
  const std::string n(name);
  if (st.d != 1) reasons.push_back(n + ".stride(d) = " + std::to_string(st.d) + ", flash3 needs 1");
  if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
    reasons.push_back(n + " data pointer not 16-byte aligned (TMA)");
  const int64_t sizes[3] = {s, h, b};
  const int64_t strides[3] = {st.s, st.h, st.b};
  const char* names[3] = {"s", "h", "b"};
  for (int i = 0; i < 3; ++i) {
    if (sizes[i] <= 1) continue;
    if (strides[i] <= 0 || strides[i] % 8 != 0 || strides[i] * 2 >= (int64_t{1} << 40))
      reasons.push_back(n + ".stride(" + names[i] + ") = " + std::to_string(strides[i]) +
                        " elements, flash3 (TMA) needs a positive multiple of 8 below 2^39");
  }
}

/// Features the kernel does not implement. The capability table already excludes them; this is
/// the guard for callers that reach forward() without the dispatcher (tests, benchmarks).
std::vector<std::string> feature_reasons(const Params& p) {
  std::vector<std::string> r;
  if (p.dtype != DType::bf16 && p.dtype != DType::f16) r.push_back("dtype must be bf16 or f16");
  if (p.head_dim != p.head_dim_v) r.push_back("Dv != D");
  bool dim_ok = false;
  for (int d : built_head_dims())
    dim_ok |= d == p.head_dim;
  if (!dim_ok) r.push_back("head_dim " + std::to_string(p.head_dim) + " not built");
  return r;
}

/// Combinations the capability table cannot express (one flag each is fine, together not):
/// part of extra_reasons, so that explain() and auto's choice see them.
void combination_reasons(const Params& p, std::vector<std::string>& r) {
  // Dropout (session 39): every head dim in both passes (launch.cuh kDropout; bwd_kernel.cuh
  // kModDropout / kModMaskDropout at D <= 128, bwd_kernel_d256.cuh's kMod at D 192 / 256), dense
  // or (D 64 / 128 / 256) varlen. `flash` and `cuda_math` run the rest with the same Philox mask
  // (core/philox.hpp), so a flash3 forward and their backward agree, and the other way round.
  if (p.has_dropout() || p.dropout_p > 0.f) {
    if (p.varlen && (p.head_dim == 96 || p.head_dim == 192))
      r.push_back("dropout with varlen at head_dim " + std::to_string(p.head_dim) +
                  " (flash3: dense calls at D 96 / 192)");
    if (p.is_backward && p.has_mask() && p.softcap > 0.f && p.head_dim <= 128)
      r.push_back(
          "dropout with a mask and softcap in the backward (flash3: two of the three at D <= 128; "
          "`flash` runs all three with the same dropout mask)");
  }
  if (p.is_backward && p.deterministic && (p.varlen || flash3::has_element_mod(p)))
    r.push_back(
        "deterministic backward with varlen, softcap, ALiBi, a window, a mask or dropout (flash3's "
        "ordered dQ runs the plain kernels only)");
}

class Flash3Backend final : public Backend {
 public:
  Flash3Backend() {
    desc_.name = "flash3";
    desc_.aliases = {"_flash_3", "_flash_varlen_3", "_flash_3_hub"};
    desc_.summary =
        "Hopper sm90a: wgmma, TMA, warp specialization (bf16/f16; D = 64, 96, 128, 192, 256 "
        "forward and backward, dropout too)";
    desc_.built = true;
    Capabilities& c = desc_.caps;
    c.dtypes = {DType::bf16, DType::f16};
    c.head_dims = built_head_dims();
    c.max_head_dim = 256;
    c.head_dim_v_differs = false;
    c.device = DeviceType::cuda;
    c.min_arch = 90;
    c.max_arch = 90;
    c.causal_top_left = true;
    c.causal_bottom_right = true;
    // Forward: launch.cuh launch_forward_score_mod; backward (since session 24): bwd_kernel.cuh
    // kMod.
    c.window = true;
    c.softcap = true;
    c.alibi = true;
    c.varlen = true;  // forward since session 24 (kVarVarlen), backward since session 25 (kVarlen;
                      // D 256 since session 30)
    // Forward since session 24 (score_mod.cuh apply_mask_tile), backward since session 26
    // (bwd_kernel.cuh kModMask; with softcap since session 39, kModMaskSoftcap).
    c.mask_bool = true;
    c.mask_additive = true;
    c.gqa = true;
    c.lse = true;
    c.backward = true;  // D = 64, 128, 256; 96 / 192 on the 128 / 256 kernels since session 38
    // Since session 25: dQ in key-block order (bwd_kernel.cuh kDet), bit-identical run to run.
    c.deterministic = true;
    // Dropout since session 39 (combination_reasons).
    c.dropout = true;
    // Not implemented (yet): dropout with varlen at D 96 / 192, and with a mask and softcap
    // together in the D <= 128 backward. (Varlen and masks at D 96 / 192 since session 38; a mask
    // with softcap in the D 64 / 96 / 128 backward since session 39.)
    c.tier = AccuracyTier::exact;
  }

  const BackendDescription& description() const override { return desc_; }

  void extra_reasons(const Params& p, std::vector<std::string>& reasons) const override {
    const int arch = device_arch(p.device.index);
    if (arch != 90)
      reasons.push_back("device cuda:" + std::to_string(p.device.index) + " is sm" +
                        std::to_string(arch) + "; flash3 is built for sm_90a only");
    // (Varlen: one packed [total, H, D] tensor each; the b strides are 0.)
    const int64_t nb = p.varlen ? 1 : p.batch;
    const int64_t sq = p.varlen ? p.total_q : p.seqlen_q, sk = p.varlen ? p.total_k : p.seqlen_k;
    check_tma_operand("q", p.q, p.q_st, nb, sq, p.heads_q, reasons);
    check_tma_operand("k", p.k, p.k_st, nb, sk, p.heads_kv, reasons);
    check_tma_operand("v", p.v, p.v_st, nb, sk, p.heads_kv, reasons);
    // The epilogue stores 2-element (4-byte) pairs straight from registers.
    if (p.out_st.d != 1) reasons.push_back("out.stride(d) must be 1 for flash3");
    if (reinterpret_cast<uintptr_t>(p.out) % 4 != 0 || p.out_st.s % 2 || p.out_st.h % 2 ||
        p.out_st.b % 2)
      reasons.push_back("out pointer/strides must be 4-byte aligned for flash3");
    if (std::max(p.seqlen_q, p.total_q) > INT32_MAX / 2 ||
        std::max(p.seqlen_k, p.total_k) > INT32_MAX / 2)
      reasons.push_back(
          "sequence length (varlen: packed rows) above 2^30 (flash3 uses 32-bit "
          "row indices)");
    if (p.heads_q > 65535 || p.batch > 65535)
      reasons.push_back("heads_q and batch must be <= 65535 (flash3 grid)");
    if (p.has_mask()) {  // (element loads of the mask's own size, score_mod.cuh)
      const int bytes = p.mask_kind == MaskKind::keep_bool ? 1 : p.mask_dtype == DType::f32 ? 4 : 2;
      if (reinterpret_cast<uintptr_t>(p.mask) % bytes != 0)
        reasons.push_back("mask data pointer not " + std::to_string(bytes) +
                          "-byte aligned (its element size)");
    }
    combination_reasons(p, reasons);
    if (p.is_backward) backward_reasons(p, reasons);
  }

  /// Backward-only requirements: dout through TMA like q; dk/dv written as 4-byte pairs from
  /// registers (d-stride 1, even strides, 4-byte aligned); dq is written element-wise (any
  /// strides); the backward kernels are built for D = 64, 128 and 256 (96 / 192 run on the 128 /
  /// 256 kernels, bwd_launch.cuh narrow_kv_floats).
  static void backward_reasons(const Params& p, std::vector<std::string>& reasons) {
    // explain(..., backward = true) describes the call before dout/dq/dk/dv exist (null):
    // only the tensors given are checked.
    // Masks since session 26 (bwd_kernel.cuh kModMask); with softcap since session 39
    // (kModMaskSoftcap at D 64 / 96 / 128; bwd_kernel_d256.cuh's kMod at D 192 / 256).
    if (p.dout != nullptr)  // (varlen: one packed [total_q, Hq, D] tensor, b stride 0)
      check_tma_operand("dout", p.dout, p.dout_st, p.varlen ? 1 : p.batch,
                        p.varlen ? p.total_q : p.seqlen_q, p.heads_q, reasons);
    const struct {
      const char* name;
      const void* ptr;
      const Strides4& st;
    } outs[2] = {{"dk", p.dk, p.dk_st}, {"dv", p.dv, p.dv_st}};
    for (const auto& o : outs) {
      if (o.ptr == nullptr) continue;
      if (o.st.d != 1)
        reasons.push_back(std::string(o.name) + ".stride(d) must be 1 for the flash3 backward");
      if (reinterpret_cast<uintptr_t>(o.ptr) % 4 != 0 || o.st.s % 2 || o.st.h % 2 || o.st.b % 2)
        reasons.push_back(std::string(o.name) +
                          " pointer/strides must be 4-byte aligned for the flash3 backward");
    }
    if (p.lse == nullptr) reasons.push_back("backward needs the forward's lse");
    // D = 256 (session 26, bwd_kernel_d256.cuh): score modifications and masks (with softcap
    // too), varlen and (plain calls) deterministic since session 30.
  }

  void forward(const Params& p) override {
    throw_if_unsupported(p, {}, "flash3 cannot run this call:");
    cuda::DeviceGuard device(p.device.index);
    const bool bf16 = p.dtype == DType::bf16;
    switch (p.head_dim) {
#if defined(ATTNKIT_FLASH3_D64)
      case 64:
        return bf16 ? flash3::run_forward<64, true>(p) : flash3::run_forward<64, false>(p);
#endif
#if defined(ATTNKIT_FLASH3_D128)
      case 96:  // (on the 128 kernel: launch.cuh kNarrow)
      case 128:
        return bf16 ? flash3::run_forward<128, true>(p) : flash3::run_forward<128, false>(p);
#endif
#if defined(ATTNKIT_FLASH3_D256)
      case 192:  // (on the 256 kernel)
      case 256:
        return bf16 ? flash3::run_forward<256, true>(p) : flash3::run_forward<256, false>(p);
#endif
      default:
        throw Error(ErrorCode::kUnsupported,
                    "flash3: head_dim " + std::to_string(p.head_dim) + " not built");
    }
  }

  void backward(const Params& p) override {
    std::vector<std::string> r;
    if (!p.is_backward) r.push_back("backward called with params.is_backward = false");
    throw_if_unsupported(p, std::move(r), "flash3 cannot run this backward call:");
    cuda::DeviceGuard device(p.device.index);
    const bool bf16 = p.dtype == DType::bf16;
    switch (p.head_dim) {
#if defined(ATTNKIT_FLASH3_D64)
      case 64:
        return bf16 ? flash3::run_backward<64, true>(p) : flash3::run_backward<64, false>(p);
#endif
#if defined(ATTNKIT_FLASH3_D128)
      case 96:  // (on the 128 kernels: bwd_launch.cuh narrow_kv_floats)
      case 128:
        return bf16 ? flash3::run_backward<128, true>(p) : flash3::run_backward<128, false>(p);
#endif
#if defined(ATTNKIT_FLASH3_D256)
      case 192:  // (on the 256 kernels)
      case 256:
        return bf16 ? flash3::run_backward<256, true>(p) : flash3::run_backward<256, false>(p);
#endif
      default:
        throw Error(ErrorCode::kUnsupported,
                    "flash3: backward head_dim " + std::to_string(p.head_dim) + " not built");
    }
  }

 private:
  /// The dispatcher asked supports() already; a direct call still gets every reason (feature
  /// table, extra_reasons, plus `more`) in one kUnsupported error before anything runs.
  void throw_if_unsupported(const Params& p, std::vector<std::string> more,
                            const char* what) const {
    std::vector<std::string> r = feature_reasons(p);
    extra_reasons(p, r);
    r.insert(r.end(), more.begin(), more.end());
    if (r.empty()) return;
    std::string msg = what;
    for (const auto& s : r)
      msg += " " + s + ";";
    throw Error(ErrorCode::kUnsupported, msg);
  }

  BackendDescription desc_;
};

}  // namespace

Backend& backend_flash3() {
  static Flash3Backend b;
  return b;
}

namespace flash3 {
Tuning& tuning() {
  static Tuning t;
  return t;
}
namespace {
std::atomic<int> g_last_forward_slot{-1};
std::atomic<int> g_last_forward_tail{0};
std::atomic<int> g_last_forward_lpt{0};
std::atomic<int> g_last_forward_round_table{0};
std::atomic<double> g_last_forward_lpt_gain{std::numeric_limits<double>::quiet_NaN()};
std::atomic<bool> g_last_forward_dynamic{false};
std::atomic<bool> g_last_forward_pingpong{false};
std::atomic<bool> g_last_forward_o_tma{false};
}  // namespace
int last_forward_slot() {
  return g_last_forward_slot.load(std::memory_order_relaxed);
}
void set_last_forward_slot(int slot) {
  g_last_forward_slot.store(slot, std::memory_order_relaxed);
}
int last_forward_tail_tiles() {
  return g_last_forward_tail.load(std::memory_order_relaxed);
}
void set_last_forward_tail_tiles(int tiles) {
  g_last_forward_tail.store(tiles, std::memory_order_relaxed);
}
int last_forward_lpt_rounds() {
  return g_last_forward_lpt.load(std::memory_order_relaxed);
}
void set_last_forward_lpt_rounds(int rounds) {
  g_last_forward_lpt.store(rounds, std::memory_order_relaxed);
}
int last_forward_round_table() {
  return g_last_forward_round_table.load(std::memory_order_relaxed);
}
void set_last_forward_round_table(int rounds) {
  g_last_forward_round_table.store(rounds, std::memory_order_relaxed);
}
double last_forward_lpt_gain() {
  return g_last_forward_lpt_gain.load(std::memory_order_relaxed);
}
void set_last_forward_lpt_gain(double gain) {
  g_last_forward_lpt_gain.store(gain, std::memory_order_relaxed);
}
bool last_forward_dynamic() {
  return g_last_forward_dynamic.load(std::memory_order_relaxed);
}
void set_last_forward_dynamic(bool dynamic) {
  g_last_forward_dynamic.store(dynamic, std::memory_order_relaxed);
}
bool last_forward_pingpong() {
  return g_last_forward_pingpong.load(std::memory_order_relaxed);
}
void set_last_forward_pingpong(bool pingpong) {
  g_last_forward_pingpong.store(pingpong, std::memory_order_relaxed);
}
bool last_forward_o_tma() {
  return g_last_forward_o_tma.load(std::memory_order_relaxed);
}
void set_last_forward_o_tma(bool o_tma) {
  g_last_forward_o_tma.store(o_tma, std::memory_order_relaxed);
}
}  // namespace flash3

}  // namespace attnkit
