// The flash backend: FlashAttention-2-class forward and backward on mma.sync (sm80+).
// Capabilities as data, the stride/alignment/shared-memory reasons, and the head-dim dispatch:
// a head dim D runs on the smallest instantiated kernel dim >= D (columns past D zero-filled).
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/flash/flash_head_dims.hpp"  // generated: kBuiltHeadDims (ATTNKIT_HEAD_DIMS)
#include "backends/flash/launch.hpp"
#include "backends/flash/traits.hpp"
#include "cuda/device_info.hpp"
#include "dispatch/backend.hpp"

namespace attnkit {
namespace {

/// Smallest built kernel head dim >= d, or 0.
int kernel_dim(int64_t d) {
  for (int k : flash::kBuiltHeadDims)
    if (k >= d) return k;
  return 0;
}

template <int... Ds>
struct DimList {};

template <bool kBf16, int... Ds>
void run_dims(DimList<Ds...>, int kd, const Params& p) {
  // Exactly one Ds equals kd (kernel_dim returned it).
  (void)((kd == Ds
              ? (p.is_backward ? flash::run_bwd<Ds, kBf16>(p) : flash::run_fwd<Ds, kBf16>(p), true)
              : false) ||
         ...);
}

/// Shared memory per block the call needs. Backward: the deterministic kernels' (dK/dV, dQ)
/// when `deterministic`; else the smaller of that and the FA-2 fused kernel's, since the launcher
/// runs the deterministic kernels when the fused one does not fit (launch.cuh use_fused_bwd).
template <int D>
int smem_for(bool backward, bool deterministic) {
  if (!backward) return flash::FwdTraits<D>::kSmemBytes;
  const int det = std::max(flash::BwdKVTraits<D>::kSmemBytes, flash::BwdQTraits<D>::kSmemBytes);
  return deterministic ? det : std::min(det, flash::BwdFusedTraits<D>::kSmemBytes);
}

template <int... Ds>
int smem_needed(DimList<Ds...>, int kd, bool backward, bool deterministic) {
  int bytes = 0;
  (void)((kd == Ds ? (bytes = smem_for<Ds>(backward, deterministic), true) : false) || ...);
  return bytes;
}

using BuiltDims = DimList<ATTNKIT_FLASH_HEAD_DIMS>;

void check_tensor(const char* name, const void* ptr, const Strides4& st,
                  std::vector<std::string>& reasons) {
  if (st.d != 1) {
    reasons.push_back(std::string(name) + ": last-dim stride is " + std::to_string(st.d) +
                      ", flash needs 1 (contiguous head dim)");
    return;
  }
  for (int64_t s : {st.b, st.s, st.h}) {
    if (s % 8 != 0) {
      reasons.push_back(std::string(name) + ": strides (b, s, h) = (" + std::to_string(st.b) +
                        ", " + std::to_string(st.s) + ", " + std::to_string(st.h) +
                        ") elements must be multiples of 8 (16-byte cp.async rows)");
      return;
    }
  }
  if (reinterpret_cast<uintptr_t>(ptr) % 16 != 0)
    reasons.push_back(std::string(name) + ": data pointer is not 16-byte aligned");
}

class FlashBackend final : public Backend {
 public:
  FlashBackend() {
    desc_.name = "flash";
    desc_.aliases = {"flash_varlen", "_native_flash"};
    desc_.summary = "FlashAttention-2-class, sm80+ (mma.sync)";
    desc_.built = true;
    Capabilities& c = desc_.caps;
    c.dtypes = {DType::f16, DType::bf16};
    // Multiples of 8 up to the largest built kernel dim; each runs on the next built dim.
    for (int d = 8; d <= flash::kBuiltHeadDims[kNumDims - 1]; d += 8)
      c.head_dims.push_back(d);
    c.max_head_dim = flash::kBuiltHeadDims[kNumDims - 1];
    c.head_dim_v_differs = false;
    c.device = DeviceType::cuda;
    c.min_arch = 80;
    c.causal_top_left = c.causal_bottom_right = true;
    c.window = c.softcap = c.alibi = true;
    c.mask_bool = c.mask_additive = true;
    c.gqa = c.varlen = c.lse = c.dropout = true;
    c.backward = true;
    // deterministic = true runs the atomic-free 7-GEMM kernels (separate dK/dV and dQ); the
    // default backward is FA-2's 5-GEMM schedule with fp32 dQ atomics.
    c.deterministic = true;
    c.tier = AccuracyTier::exact;
  }
  const BackendDescription& description() const override { return desc_; }

  void extra_reasons(const Params& p, std::vector<std::string>& reasons) const override {
    check_tensor("q", p.q, p.q_st, reasons);
    check_tensor("k", p.k, p.k_st, reasons);
    check_tensor("v", p.v, p.v_st, reasons);
    check_tensor("out", p.out, p.out_st, reasons);
    if (p.is_backward) {
      check_tensor("dout", p.dout, p.dout_st, reasons);
      check_tensor("dq", p.dq, p.dq_st, reasons);
      check_tensor("dk", p.dk, p.dk_st, reasons);
      check_tensor("dv", p.dv, p.dv_st, reasons);
      if (p.lse == nullptr) reasons.push_back("backward needs the forward's lse");
    }
    if (p.mask_kind == MaskKind::keep_bool && p.mask_dtype != DType::b8)
      reasons.push_back(std::string("bool mask of dtype ") + dtype_name(p.mask_dtype) +
                        " not supported (needs bool)");
    if (p.mask_kind == MaskKind::additive && p.mask_dtype != DType::f32 &&
        p.mask_dtype != DType::f16 && p.mask_dtype != DType::bf16)
      reasons.push_back(std::string("additive mask of dtype ") + dtype_name(p.mask_dtype) +
                        " not supported (needs f32, f16 or bf16)");
    if (p.heads_q > 65535 || p.heads_kv > 65535 || p.batch > 65535)
      reasons.push_back("batch and head counts must be <= 65535 (grid y/z)");
    const int kd = kernel_dim(p.head_dim);
    if (kd == 0) return;  // the capability table already said why
    const int need = smem_needed(BuiltDims{}, kd, p.is_backward, p.deterministic);
    const auto& info = cuda::device_info(p.device.index);
    if (static_cast<size_t>(need) > info.smem_per_block_optin)
      reasons.push_back("needs " + std::to_string(need / 1024) + " KiB shared memory per block " +
                        "(head_dim " + std::to_string(kd) + "), device offers " +
                        std::to_string(info.smem_per_block_optin / 1024) + " KiB");
  }

  void forward(const Params& p) override { run(p); }
  void backward(const Params& p) override { run(p); }

 private:
  static constexpr int kNumDims = sizeof(flash::kBuiltHeadDims) / sizeof(int);
  static void run(const Params& p) {
    const int kd = kernel_dim(p.head_dim);
    if (p.dtype == DType::bf16) {
      run_dims<true>(BuiltDims{}, kd, p);
    } else {
      run_dims<false>(BuiltDims{}, kd, p);
    }
  }
  BackendDescription desc_;
};

}  // namespace

Backend& backend_flash() {
  static FlashBackend backend;
  return backend;
}

namespace flash {
namespace {
std::atomic<int> g_last_fwd_tail_tiles{0};
}  // namespace
int last_fwd_tail_tiles() {
  return g_last_fwd_tail_tiles.load(std::memory_order_relaxed);
}
void set_last_fwd_tail_tiles(int tiles) {
  g_last_fwd_tail_tiles.store(tiles, std::memory_order_relaxed);
}
FwdTailKnob fwd_tail_knob() {
  FwdTailKnob k;
  const char* e = std::getenv("ATTNKIT_FLASH_FWD_TAIL");
  if (e == nullptr || *e == '\0') return k;
  const std::string mode(e, std::strcspn(e, ":"));
  k.mode = mode == "0" ? 0 : mode == "auto" ? -1 : 1;
  if (const char* colon = std::strchr(e, ':')) {
    k.slots = std::max(0, std::atoi(colon + 1));
    if (const char* flags = std::strchr(colon + 1, ':')) {
      k.single = std::strchr(flags, 's') != nullptr;
      k.plain = std::strchr(flags, 'p') != nullptr;
    }
  }
  if (k.mode != 1) k.single = k.plain = false;
  return k;
}
}  // namespace flash

}  // namespace attnkit
