// The oracle's cap check, shared by extra_reasons() (so auto/explain report it) and the entry
// points (which throw kTooLarge when called anyway).
#pragma once

#include <string>

#include "core/params.hpp"

namespace attnkit::math_core {

/// "" when one worker's scratch fits under math_max_bytes(), else the reason (naming the bytes,
/// the cap and how to raise it).
std::string cap_reason(const Params& p, bool backward);

}  // namespace attnkit::math_core
