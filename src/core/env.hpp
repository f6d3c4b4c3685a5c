// Environment configuration, read once per process.
//   ATTNKIT_BACKEND      process default backend (set_default_backend() overrides it)
//   ATTNKIT_CHECKS=1     NaN/Inf checks of inputs and outputs around every call
//   ATTNKIT_LOG=1        log each backend selection once per distinct configuration (stderr)
//   ATTNKIT_NUM_THREADS  thread count for CPU backends
#pragma once

#include <string>

namespace attnkit::env {

std::string get(const char* name);  // "" when unset
bool flag(const char* name);        // "1", "true", "yes", "on" (case-insensitive)
const std::string& default_backend();
bool checks_enabled();
bool log_enabled();
int num_threads();  // 0 when unset or invalid

}  // namespace attnkit::env
