#include "dispatch/registry.hpp"

#include <algorithm>
#include <utility>

namespace attnkit {

// Defined in the generated backends_generated.cpp.
std::vector<Backend*> generated_built_backends();
std::vector<std::pair<std::string, std::string>> generated_not_built_reasons();

const std::vector<KnownBackend>& known_backends() {
  // Order = auto's preference (first supporting backend wins). Quantized-tier backends are
  // skipped by auto unless the caller allows them. Exact references come last.
  // cudnn before flash3: on the H100 of 2026-11-21 (session 2,
  // bench/results/2026-11-21-h100-baseline-cudnn-flash3.md) cuDNN's forward was faster at most
  // shapes (flash3/cudnn 0.80-1.04); on the H200 of 2026-11-22 (session 3,
  // bench/results/2026-11-22-h200-flash3-{fwd,bwd}-merged.md) flash3/cudnn was 0.84-1.07 forward
  // (above 1.0 only at D 64 S >= 4k and some 16k causal shapes, by 1-7 %: inside the lent
  // machine's per-call noise) and 0.65-0.83 backward; session 4 (H200,
  // bench/results/2026-11-22-h200-flash3-s4-final.md): 0.87-1.11 forward (above 1.05 only at
  // some S >= 16k shapes) and 0.68-0.87 backward; session 5 (H100, S = 1k-16k,
  // bench/notes/flash3.md "Session 5"): 0.86-1.01 forward, 0.89-1.03 backward (above 1.0 by
  // at most 3 %); session 6 (H100, bench/results/2026-11-22-h100-flash3-s6-final.md):
  // 0.86-1.12 forward (above 1.05 only at D 64 S 16k), 0.93-1.04 backward; session 7 (H100,
  // bench/results/2026-11-22-h100-flash3-s7-final.md): 0.86-1.10 forward (above 1.05 only at D 64
  // S 16k non-causal), 0.92-1.05 backward; session 8 (H100,
  // bench/results/2026-11-22-h100-flash3-s8-final.md): 0.88-1.10 forward (above 1.05 only at 16k
  // causal D 64 / 256; one D 256 causal 1k row at 1.37 against an outlying cuDNN number left
  // out), 0.96-1.04 backward; session 9 (H100, backward only, forward unchanged,
  // bench/results/2026-11-22-h100-flash3-bwd-s9-final.md): 0.98-1.11 backward (above 1.04 only at
  // D 64 causal 1k); session 10 (H100, bench/results/2026-11-22-h100-flash3-s10-final.md):
  // 0.87-1.09 forward (above 1.05 only at S 16k), 0.99-1.12 backward (1.10 or more only at D 64
  // causal 1k); session 11 (same kernels, bench/results/2026-11-22-h100-flash3-s11-final.md):
  // 0.88-1.13 forward, 0.99-1.11 backward; session 13 (forward only: the D 64 static schedule's
  // rotated rounds, bench/results/2026-11-22-h100-flash3-fwd-s13-final.md): 0.87-1.10 forward,
  // D 64 non-causal 1k 0.92 -> 0.985; session 14 (8-byte O stores, Q prefetch,
  // bench/results/2026-11-22-h100-flash3-s14-final.md): 0.94-1.12 forward, 0.97-1.12 backward
  // (backward kernels unchanged since session 11); session 16 (the ordered softmax at D 256 and
  // D 128 past Sk 2048, bench/results/2026-11-23-h100-flash3-s16-final.md): 0.94-1.15 forward
  // (interleaved with cuDNN; 0.94-1.14 in the burst table), 0.99-1.13 backward. flash3 before
  // flash (flash3/FA2 on that H100,
  // session 8: 1.42-2.31 fwd, 1.34-1.71 bwd; session 9 backward 1.43-1.76; session 10:
  // 1.43-2.33 fwd, 1.46-1.74 bwd; session 11: 1.41-2.39 fwd, 1.44-1.74 bwd; session 13:
  // 1.48-2.26 fwd; session 14: 1.49-2.42 fwd, 1.46-1.74 bwd; session 16: 1.50-2.50 fwd,
  // 1.45-1.76 bwd).
  // Revisit when flash3 beats cuDNN on a shape class by more than the noise. (The classes where it
  // does, since sessions 25-56, reorder this per call: dispatch/flash3_preference.hpp.)
  static const std::vector<KnownBackend> table = {
      {"cudnn", {"_native_cudnn", "_sdpa_cudnn"}, "cuDNN fused attention (graph API)"},
      {"flash3",
       {"_flash_3", "_flash_varlen_3", "_flash_3_hub"},
       "Hopper sm90a: wgmma, TMA, warp specialization"},
      {"flash", {"flash_varlen", "_native_flash"}, "FlashAttention-2-class, sm80+ (mma.sync)"},
      {"sage",
       {"sage_varlen", "_sage_qk_int8_pv_fp16_cuda", "_sage_qk_int8_pv_fp8_cuda",
        "_sage_qk_int8_pv_fp8_cuda_sm90", "_sage_qk_int8_pv_fp16_triton"},
       "INT8 QK^T, FP16/FP8 PV (quantized tier)"},
      {"flex", {}, "block-sparse masks + score/mask functions"},
      {"efficient",
       {"xformers", "_native_efficient"},
       "memory-efficient, any dtype incl. f32, arbitrary bias"},
      {"cuda_math", {}, "naive GPU reference (fp32 accumulation) for large test shapes"},
      {"cpu_flash", {}, "tiled online-softmax CPU backend, threads + SIMD"},
      {"math", {"_native_math"}, "exact CPU reference (fp64 accumulation), the oracle"},
  };
  return table;
}

std::optional<std::string> lookup_canonical(const std::string& n) {
  if (n == "auto" || n == "native" || n == "default") return std::string("auto");
  for (const auto& kb : known_backends()) {
    if (n == kb.name) return std::string(kb.name);
    for (const char* a : kb.aliases)
      if (n == a) return std::string(kb.name);
  }
  return std::nullopt;
}

static const std::vector<Backend*>& built_list() {
  static const std::vector<Backend*> list = [] {
    std::vector<Backend*> v = generated_built_backends();
    // Sort by the preference order of known_backends().
    auto rank = [](const Backend* b) {
      const auto& t = known_backends();
      for (size_t i = 0; i < t.size(); ++i)
        if (b->description().name == t[i].name) return i;
      return t.size();
    };
    std::stable_sort(v.begin(), v.end(),
                     [&](const Backend* a, const Backend* b) { return rank(a) < rank(b); });
    return v;
  }();
  return list;
}

Backend* built_backend(const std::string& name) {
  for (Backend* b : built_list())
    if (b->description().name == name) return b;
  return nullptr;
}

std::vector<Backend*> built_backends() {
  return built_list();
}

std::string not_built_reason(const std::string& name) {
  if (built_backend(name)) return "";
  for (const auto& [n, why] : generated_not_built_reasons())
    if (n == name) return why;
  return lookup_canonical(name) ? "not implemented in this version of attnkit" : "";
}

std::vector<BackendDescription> list_backends() {
  std::vector<BackendDescription> out;
  for (const auto& kb : known_backends()) {
    if (Backend* b = built_backend(kb.name)) {
      out.push_back(b->description());
      out.back().built = true;
      continue;
    }
    BackendDescription d;
    d.name = kb.name;
    for (const char* a : kb.aliases)
      d.aliases.emplace_back(a);
    d.summary = kb.summary;
    d.built = false;
    d.not_built_reason = not_built_reason(kb.name);
    out.push_back(std::move(d));
  }
  return out;
}

}  // namespace attnkit
