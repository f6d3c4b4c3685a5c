// cpu_flash entry points (called by backend.cpp with resolved Params on CPU tensors).
#pragma once

#include "core/params.hpp"

namespace attnkit::cpu_flash {

void run_forward(const Params& p);
void run_backward(const Params& p);

}  // namespace attnkit::cpu_flash
