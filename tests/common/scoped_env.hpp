// An environment variable set for one scope (a test's measurement switch), unset again however
// the scope ends.
#pragma once

#include <cstdlib>

namespace attnkit::testing {

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const char* value) : name_(name) { setenv(name, value, 1); }
  ~ScopedEnv() { unsetenv(name_); }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
};

}  // namespace attnkit::testing
