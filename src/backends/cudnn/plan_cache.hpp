// Bounded, thread-safe LRU cache of built cuDNN execution plans, keyed by PlanKey.
//
// A hit is one mutex-protected hash lookup plus a list splice (no cuDNN call). A miss builds the
// plan under a separate build mutex (so two threads missing on the same key build it once, and a
// slow build never blocks hits on other keys), then inserts it; beyond `capacity` entries the
// least recently used plan is dropped (callers still holding its shared_ptr keep it alive).
// Failed builds are cached too (the value carries the error), so an unsupported configuration is
// not rebuilt on every call.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "backends/cudnn/plan_key.hpp"

namespace attnkit::cudnn {

template <typename V>
class LruCache {
 public:
  explicit LruCache(size_t capacity) : capacity_(capacity ? capacity : 1) {}

  /// The value for `key`, building it with `build()` on a miss.
  std::shared_ptr<V> get_or_build(const PlanKey& key,
                                  const std::function<std::shared_ptr<V>()>& build) {
    if (auto hit = find(key)) return hit;
    std::lock_guard<std::mutex> build_lock(build_mutex_);
    if (auto hit = find(key)) return hit;  // another thread built it meanwhile
    std::shared_ptr<V> value = build();
    builds_.fetch_add(1, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(mutex_);
    order_.emplace_front(key, value);
    index_[key] = order_.begin();
    while (index_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return value;
  }

  size_t size() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return index_.size();
  }
  /// Plans built (misses) since the process started or since reset_counters().
  uint64_t builds() const { return builds_.load(std::memory_order_relaxed); }
  uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
  void reset_counters() {
    builds_ = 0;
    hits_ = 0;
  }
  void clear() {
    std::lock_guard<std::mutex> lock(mutex_);
    index_.clear();
    order_.clear();
  }
  size_t capacity() const { return capacity_; }

 private:
  std::shared_ptr<V> find(const PlanKey& key) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);  // most recently used first
    hits_.fetch_add(1, std::memory_order_relaxed);
    return it->second->second;
  }

  using Entry = std::pair<PlanKey, std::shared_ptr<V>>;
  const size_t capacity_;
  mutable std::mutex mutex_;
  std::mutex build_mutex_;
  std::list<Entry> order_;
  std::unordered_map<PlanKey, typename std::list<Entry>::iterator, PlanKeyHash> index_;
  std::atomic<uint64_t> builds_{0}, hits_{0};
};

/// A built cuDNN graph (graphs.hpp); only shared_ptrs to it are held here.
struct Plan;
/// The process-wide cache of built plans.
LruCache<Plan>& plan_cache();

/// Process-wide counters of the cudnn backend's plan cache (test hook; no cuDNN types).
struct PlanCacheStats {
  uint64_t builds = 0, hits = 0;
  size_t size = 0, capacity = 0;
};
PlanCacheStats plan_cache_stats();
/// Drops every cached plan and zeroes the counters (tests).
void plan_cache_reset();

/// Capacity of the process-wide cache: ATTNKIT_CUDNN_PLAN_CACHE (entries) or 256.
size_t plan_cache_capacity_from_env();

}  // namespace attnkit::cudnn
