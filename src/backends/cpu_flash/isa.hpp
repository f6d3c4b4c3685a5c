// Run-time choice of cpu_flash's SIMD kernels: the best the CPU supports (AVX-512 with
// AVX512-BF16, AVX-512F/BW/VL/DQ, AVX2+FMA, portable), or the one named by env
// ATTNKIT_CPU_FLASH_ISA (portable | avx2 | avx512 | avx512bf16) when the CPU supports it. One
// binary runs on any x86-64 CPU.
#pragma once

#include <string>
#include <vector>

#include "backends/cpu_flash/kernels.hpp"

namespace attnkit::cpu_flash {

/// The kernels in use (chosen once, on first call, unless overridden below).
const KernelTable& active_kernels();
/// Names of the kernel sets this CPU can run, best last ("portable" always first).
std::vector<std::string> supported_isas();
/// Tests and benchmarks: force a kernel set by name; returns false (and changes nothing) when it is
/// unknown or not supported by this CPU. "" restores the automatic choice.
bool force_isa(const std::string& name);

}  // namespace attnkit::cpu_flash
