#include "backends/cpu_flash/isa.hpp"

#include <atomic>
#include <cstdlib>

namespace attnkit::cpu_flash {
namespace {

const KernelTable* by_name(const std::string& name) {
  if (name == "portable") return &kernels_portable();
#if defined(ATTNKIT_CPU_FLASH_X86)
  __builtin_cpu_init();
  if (name == "avx2" && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return &kernels_avx2();
  if (name == "avx512" && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq"))
    return &kernels_avx512();
  if (name == "avx512bf16" && by_name("avx512") && __builtin_cpu_supports("avx512bf16"))
    return &kernels_avx512bf16();
#endif
  return nullptr;
}

const KernelTable* automatic() {
  if (const char* env = std::getenv("ATTNKIT_CPU_FLASH_ISA"); env && *env)
    if (const KernelTable* t = by_name(env)) return t;
  const auto isas = supported_isas();
  return by_name(isas.back());
}

std::atomic<const KernelTable*> g_forced{nullptr};

}  // namespace

std::vector<std::string> supported_isas() {
  std::vector<std::string> out{"portable"};
  for (const char* n : {"avx2", "avx512", "avx512bf16"})
    if (by_name(n)) out.emplace_back(n);
  return out;
}

const KernelTable& active_kernels() {
  if (const KernelTable* f = g_forced.load()) return *f;
  static const KernelTable* chosen = automatic();
  return *chosen;
}

bool force_isa(const std::string& name) {
  if (name.empty()) {
    g_forced.store(nullptr);
    return true;
  }
  const KernelTable* t = by_name(name);
  if (!t) return false;
  g_forced.store(t);
  return true;
}

}  // namespace attnkit::cpu_flash
