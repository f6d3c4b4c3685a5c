// Backend capabilities as data: what `attnkit info` prints and what selection checks first.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "attnkit/tensor.hpp"

namespace attnkit {

enum class AccuracyTier : uint8_t { exact, quantized };

struct Capabilities {
  std::vector<DType> dtypes;   // q/k/v/out element types
  std::vector<int> head_dims;  // supported D; empty = any D in [1, max_head_dim]
  int max_head_dim = 0;
  bool head_dim_v_differs = false;  // Dv != D allowed
  DeviceType device = DeviceType::cpu;
  int min_arch = 0;  // CUDA: compute capability * 10 (80 = sm80); 0 = any
  int max_arch = 0;  // 0 = no upper bound
  bool causal_top_left = false;
  bool causal_bottom_right = false;
  bool window = false;
  bool softcap = false;
  bool alibi = false;
  bool mask_bool = false;
  bool mask_additive = false;
  bool gqa = false;
  bool varlen = false;
  bool lse = false;
  bool dropout = false;
  bool backward = false;
  bool deterministic = false;  // deterministic backward available
  AccuracyTier tier = AccuracyTier::exact;
};

struct BackendDescription {
  std::string name;                  // canonical
  std::vector<std::string> aliases;  // names users bring from other dispatchers
  std::string summary;               // one line
  bool built = false;
  std::string not_built_reason;  // when !built: "needs sm90a and CUDA", ...
  Capabilities caps;             // meaningful when built
};

/// Every known backend, in the default preference order, built or not.
std::vector<BackendDescription> list_backends();

struct DeviceDescription {
  Device device;
  std::string name;
  int arch = 0;  // compute capability * 10
  int sm_count = 0;
  int64_t memory_bytes = 0;
};
/// Devices visible to this build: the CPU, then each CUDA device (none if not built with CUDA).
std::vector<DeviceDescription> list_devices();

struct BuildInfo {
  std::string version;
  bool cuda = false;
  std::string cuda_archs;  // "80;90a"
  std::string head_dims;   // instantiated head dims for GPU kernels
  bool cudnn = false;
  std::string compiler;
  std::string build_type;
};
BuildInfo build_info();

}  // namespace attnkit
