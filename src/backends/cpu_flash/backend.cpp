// Backend `cpu_flash`: memory-efficient, multi-threaded CPU attention (issue #3).
// Capabilities as data; everything declared here is implemented and tested in
// tests/backends/cpu_flash/. Kernels: forward.cpp, backward.cpp; SIMD: isa.cpp + kernels_*.cpp.
#include <string>
#include <vector>

#include "backends/cpu_flash/cpu_flash.hpp"
#include "dispatch/backend.hpp"

namespace attnkit {
namespace {

class CpuFlashBackend final : public Backend {
 public:
  CpuFlashBackend() {
    desc_.name = "cpu_flash";
    desc_.summary = "tiled online-softmax CPU backend, threads + SIMD (AVX2/AVX-512, run-time)";
    desc_.built = true;
    Capabilities& c = desc_.caps;
    c.dtypes = {DType::f32, DType::f16, DType::bf16};
    c.max_head_dim = 512;  // any D <= 512; per-thread scratch grows linearly with D
    c.head_dim_v_differs = true;
    c.device = DeviceType::cpu;
    c.causal_top_left = c.causal_bottom_right = true;
    c.window = c.softcap = c.alibi = true;
    c.mask_bool = c.mask_additive = true;
    c.gqa = c.varlen = c.lse = c.dropout = c.backward = true;
    c.deterministic = true;  // the backward is always deterministic (see backward.cpp)
    c.tier = AccuracyTier::exact;
  }
  const BackendDescription& description() const override { return desc_; }
  void extra_reasons(const Params& p, std::vector<std::string>& reasons) const override {
    if (p.mask_kind == MaskKind::additive && p.mask_dtype != DType::f32 &&
        p.mask_dtype != DType::f16 && p.mask_dtype != DType::bf16)
      reasons.push_back(std::string("cpu_flash: additive mask dtype ") + dtype_name(p.mask_dtype) +
                        " not supported (f32, f16, bf16)");
    if (p.mask_kind == MaskKind::keep_bool && p.mask_dtype != DType::b8)
      reasons.push_back(std::string("cpu_flash: bool mask dtype ") + dtype_name(p.mask_dtype) +
                        " not supported (bool)");
    if (p.varlen && p.cu_seqlens_q_host == nullptr && p.device.type != DeviceType::cpu)
      reasons.push_back("cpu_flash: cu_seqlens must be host-readable");
  }
  void forward(const Params& p) override { cpu_flash::run_forward(p); }
  void backward(const Params& p) override { cpu_flash::run_backward(p); }

 private:
  BackendDescription desc_;
};

}  // namespace

Backend& backend_cpu_flash() {
  static CpuFlashBackend b;
  return b;
}

}  // namespace attnkit
