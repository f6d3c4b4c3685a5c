// The cudnn backend: cuDNN 9 fused flash attention (forward + backward) through cudnn-frontend's
// graph API. Capabilities here; mapping and reasons in support.cpp; graphs in graphs.cpp;
// execution in run.cpp; plans cached in plan_cache (docs/cudnn.md).
#include <cudnn.h>

#include "backends/cudnn/run.hpp"
#include "backends/cudnn/support.hpp"
#include "core/device_runtime.hpp"
#include "dispatch/backend.hpp"

namespace attnkit {
namespace {

// cudnn-frontend's SDPA graphs as used here need a cuDNN 9.x runtime (bottom-right bands with
// padding masks and -inf masking semantics: 9.10.2+; developed against 9.19).
constexpr size_t kMinCudnnVersion = 91002;

class CudnnBackend final : public Backend {
 public:
  CudnnBackend() {
    d_.name = "cudnn";
    d_.aliases = {"_native_cudnn", "_sdpa_cudnn"};
    d_.summary = "cuDNN fused attention (graph API)";
    d_.built = true;
    Capabilities& c = d_.caps;
    c.dtypes = {DType::f16, DType::bf16};
    c.max_head_dim = 256;  // 128 off Hopper: extra_reasons
    c.head_dim_v_differs = true;
    c.device = DeviceType::cuda;
    c.min_arch = 80;
    c.causal_top_left = true;
    c.causal_bottom_right = true;
    c.window = true;
    c.softcap = false;  // cuDNN's score modifiers exclude its masks (support.cpp)
    c.alibi = false;    // cuDNN's ALiBi has fixed slopes
    c.mask_bool = true;
    c.mask_additive = true;
    c.gqa = true;
    c.varlen = true;
    c.lse = true;
    c.dropout = false;  // cuDNN's Philox stream differs from attnkit's keep rule
    c.backward = true;
    c.deterministic = true;
    c.tier = AccuracyTier::exact;
  }

  const BackendDescription& description() const override { return d_; }

  void extra_reasons(const Params& p, std::vector<std::string>& reasons) const override {
    const size_t v = cudnnGetVersion();
    if (v < kMinCudnnVersion)
      reasons.push_back("cuDNN runtime " + std::to_string(v) + " is older than " +
                        std::to_string(kMinCudnnVersion));
    int arch = 0;
    try {
      if (p.device.is_cuda()) arch = device_runtime(DeviceType::cuda).arch(p.device);
    } catch (const std::exception&) {
      arch = 0;  // no device to ask: arch-specific rules are skipped here, cuDNN checks at build
    }
    cudnn::cudnn_reasons(p, arch, reasons);
  }

  void forward(const Params& p) override { cudnn::run_forward(p); }
  void backward(const Params& p) override { cudnn::run_backward(p); }

 private:
  BackendDescription d_;
};

}  // namespace

Backend& backend_cudnn() {
  static CudnnBackend instance;
  return instance;
}

}  // namespace attnkit
