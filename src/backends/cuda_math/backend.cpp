// The cuda_math backend: capabilities as data and the entry points (kernels in *.cu).
#include "dispatch/backend.hpp"
#include "backends/cuda_math/cuda_math.hpp"

namespace attnkit {
namespace {

class CudaMathBackend final : public Backend {
 public:
  CudaMathBackend() {
    desc_.name = "cuda_math";
    desc_.summary = "naive GPU reference (fp32 accumulation) for large test shapes";
    desc_.built = true;
    Capabilities& c = desc_.caps;
    c.dtypes = {DType::f32, DType::f16, DType::bf16};
    c.head_dims = {};  // any D: the kernels loop over D in steps of 32 and tile outputs by 64
    c.max_head_dim = 512;
    c.head_dim_v_differs = true;
    c.device = DeviceType::cuda;
    c.min_arch = 0;  // whatever this binary was compiled for: checked in extra_reasons()
    c.causal_top_left = c.causal_bottom_right = true;
    c.window = c.softcap = c.alibi = true;
    c.mask_bool = c.mask_additive = true;
    c.gqa = c.varlen = c.lse = c.dropout = true;
    c.backward = true;
    c.deterministic = true;  // always: no atomics anywhere
    c.tier = AccuracyTier::exact;
  }
  const BackendDescription& description() const override { return desc_; }
  void extra_reasons(const Params& p, std::vector<std::string>& reasons) const override {
    std::string why;
    if (!cuda_math::kernels_available(p.device.index, &why)) reasons.push_back(why);
  }
  void forward(const Params& p) override { cuda_math::forward(p); }
  void backward(const Params& p) override { cuda_math::backward(p); }

 private:
  BackendDescription desc_;
};

}  // namespace

Backend& backend_cuda_math() {
  static CudaMathBackend backend;
  return backend;
}

}  // namespace attnkit
