// The capability-table half of Backend::supports (the other half is extra_reasons()).
#include <algorithm>
#include <string>

#include "dispatch/backend.hpp"

namespace attnkit {

static std::string list_str(const std::vector<int>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

std::vector<std::string> backend_reasons(const Backend& backend, const Params& p, int arch) {
  const Capabilities& c = backend.description().caps;
  std::vector<std::string> r;
  auto dev = [](DeviceType t) { return t == DeviceType::cpu ? "cpu" : "cuda"; };
  if (c.device != p.device.type) {
    r.push_back(std::string("runs on ") + dev(c.device) + ", tensors are on " + dev(p.device.type));
    return r;  // nothing else is meaningful
  }
  if (c.device == DeviceType::cuda) {
    if (c.min_arch && arch < c.min_arch)
      r.push_back("needs sm" + std::to_string(c.min_arch) + "+, device is sm" +
                  std::to_string(arch));
    if (c.max_arch && arch > c.max_arch)
      r.push_back("runs up to sm" + std::to_string(c.max_arch) + ", device is sm" +
                  std::to_string(arch));
  }
  if (std::find(c.dtypes.begin(), c.dtypes.end(), p.dtype) == c.dtypes.end()) {
    std::string have;
    for (size_t i = 0; i < c.dtypes.size(); ++i)
      have += (i ? ", " : "") + std::string(dtype_name(c.dtypes[i]));
    r.push_back(std::string("dtype ") + dtype_name(p.dtype) + " not supported (supports " + have +
                ")");
  }
  auto check_dim = [&](int64_t d, const char* what) {
    if (!c.head_dims.empty()) {
      if (std::find(c.head_dims.begin(), c.head_dims.end(), d) == c.head_dims.end())
        r.push_back(std::string(what) + " = " + std::to_string(d) + " not in built head dims " +
                    list_str(c.head_dims));
    } else if (c.max_head_dim && d > c.max_head_dim) {
      r.push_back(std::string(what) + " = " + std::to_string(d) + " > max " +
                  std::to_string(c.max_head_dim));
    }
  };
  check_dim(p.head_dim, "head_dim");
  if (p.head_dim_v != p.head_dim) {
    if (!c.head_dim_v_differs)
      r.push_back("head_dim_v = " + std::to_string(p.head_dim_v) +
                  " != head_dim = " + std::to_string(p.head_dim) + " not supported");
    else
      check_dim(p.head_dim_v, "head_dim_v");
  }
  if (p.causal == Causal::top_left && !c.causal_top_left)
    r.push_back("causal top_left not supported");
  if (p.causal == Causal::bottom_right && !c.causal_bottom_right)
    r.push_back("causal bottom_right not supported");
  if ((p.window_left >= 0 || p.window_right >= 0) && !c.window)
    r.push_back("sliding window not supported");
  if (p.softcap > 0 && !c.softcap) r.push_back("softcap not supported");
  if (p.alibi && !c.alibi) r.push_back("ALiBi not supported");
  if (p.mask_kind == MaskKind::keep_bool && !c.mask_bool) r.push_back("bool mask not supported");
  if (p.mask_kind == MaskKind::additive && !c.mask_additive)
    r.push_back("additive mask not supported");
  if (p.group > 1 && !c.gqa) r.push_back("GQA/MQA (Hq != Hkv) not supported");
  if (p.varlen && !c.varlen) r.push_back("varlen not supported");
  if (!p.is_backward && p.lse && !c.lse) r.push_back("lse output not supported");
  if (p.has_dropout() && !c.dropout) r.push_back("dropout not supported");
  if (p.is_backward && !c.backward) r.push_back("backward not supported");
  if (p.is_backward && p.deterministic && !c.deterministic)
    r.push_back("deterministic backward not supported");
  if (r.empty()) backend.extra_reasons(p, r);
  return r;
}

}  // namespace attnkit
