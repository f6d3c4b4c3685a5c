#include "core/env.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>

namespace attnkit::env {

std::string get(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

bool flag(const char* name) {
  std::string v = get(name);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  return v == "1" || v == "true" || v == "yes" || v == "on";
}

const std::string& default_backend() {
  static const std::string v = get("ATTNKIT_BACKEND");
  return v;
}

bool checks_enabled() {
  static const bool v = flag("ATTNKIT_CHECKS");
  return v;
}

bool log_enabled() {
  static const bool v = flag("ATTNKIT_LOG");
  return v;
}

int num_threads() {
  static const int v = [] {
    const std::string s = get("ATTNKIT_NUM_THREADS");
    if (s.empty()) return 0;
    char* end = nullptr;
    const long n = std::strtol(s.c_str(), &end, 10);
    return (end && *end == '\0' && n > 0 && n < 4096) ? static_cast<int>(n) : 0;
  }();
  return v;
}

}  // namespace attnkit::env
