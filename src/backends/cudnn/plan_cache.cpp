#include <cstdlib>

#include "backends/cudnn/plan_cache.hpp"

namespace attnkit::cudnn {

size_t plan_cache_capacity_from_env() {
  if (const char* s = std::getenv("ATTNKIT_CUDNN_PLAN_CACHE")) {
    const long n = std::strtol(s, nullptr, 10);
    if (n > 0) return static_cast<size_t>(n);
  }
  return 256;
}

LruCache<Plan>& plan_cache() {
  static LruCache<Plan> cache(plan_cache_capacity_from_env());
  return cache;
}

PlanCacheStats plan_cache_stats() {
  const LruCache<Plan>& c = plan_cache();
  return PlanCacheStats{c.builds(), c.hits(), c.size(), c.capacity()};
}

void plan_cache_reset() {
  plan_cache().clear();
  plan_cache().reset_counters();
}

}  // namespace attnkit::cudnn
