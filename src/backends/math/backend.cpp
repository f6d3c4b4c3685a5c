// The `math` backend: the exact CPU oracle. Capabilities: everything the API defines, on the CPU,
// for f32/f16/bf16 and any head dim up to 512. All arithmetic in fp64 (math_core.hpp).
#include "dispatch/backend.hpp"
#include "attnkit/error.hpp"
#include "attnkit/math.hpp"
#include "backends/math/budget.hpp"
#include "backends/math/math_core.hpp"

namespace attnkit {
namespace {

BackendDescription make_description() {
  BackendDescription d;
  d.name = "math";
  d.aliases = {"_native_math"};
  d.summary = "exact CPU reference (fp64 accumulation), the oracle";
  d.built = true;
  Capabilities& c = d.caps;
  c.dtypes = {DType::f32, DType::f16, DType::bf16};
  c.head_dims = {};  // any D in [1, 512]
  c.max_head_dim = 512;
  c.head_dim_v_differs = true;
  c.device = DeviceType::cpu;
  c.causal_top_left = c.causal_bottom_right = true;
  c.window = c.softcap = c.alibi = true;
  c.mask_bool = c.mask_additive = true;
  c.gqa = c.varlen = c.lse = c.dropout = true;
  c.backward = true;
  c.deterministic = true;  // every task owns its outputs: no reduction order depends on threads
  c.tier = AccuracyTier::exact;
  return d;
}

class MathBackend final : public Backend {
 public:
  const BackendDescription& description() const override {
    static const BackendDescription d = make_description();
    return d;
  }
  void extra_reasons(const Params& p, std::vector<std::string>& reasons) const override {
    std::string why = math_core::cap_reason(p, p.is_backward);
    if (!why.empty()) reasons.push_back(std::move(why));
  }
  void forward(const Params& p) override {
    throw_if_too_large(p, false);
    math_core::forward(p, math_core::Storage::params_dtype);
  }
  void backward(const Params& p) override {
    throw_if_too_large(p, true);
    math_core::backward(p, math_core::Storage::params_dtype);
  }

 private:
  static void throw_if_too_large(const Params& p, bool backward) {
    (void)math_max_bytes();  // a malformed ATTNKIT_MATH_MAX_BYTES throws kInvalidArgument here
    const std::string why = math_core::cap_reason(p, backward);
    if (!why.empty()) throw Error(ErrorCode::kTooLarge, why);
  }
};

}  // namespace

Backend& backend_math() {
  static MathBackend instance;
  return instance;
}

}  // namespace attnkit
