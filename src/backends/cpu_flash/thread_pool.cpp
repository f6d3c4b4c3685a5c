#include "backends/cpu_flash/thread_pool.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace attnkit::cpu_flash {
namespace {

thread_local bool t_inside_item = false;

// Workers sleep on a condition variable between calls (no spinning: the machines running this are
// shared, and a spinning pool would steal cores from the caller's other threads, e.g. torch's).
class Pool {
 public:
  ~Pool() {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
      ++generation_;
    }
    cv_.notify_all();
    for (auto& t : workers_)
      t.join();
  }

  void run(int64_t n_items, int threads, const std::function<void(int64_t, int)>& fn,
           Schedule sched) {
    std::lock_guard<std::mutex> caller(call_mu_);  // one parallel_for at a time
    ensure_workers(threads - 1);
    {
      std::lock_guard<std::mutex> lk(mu_);
      fn_ = &fn;
      n_items_ = n_items;
      next_.store(0);
      segmented_ = sched == Schedule::segmented && n_items < (int64_t{1} << 31);
      if (segmented_) {
        if (static_cast<int>(ranges_.size()) < threads) ranges_ = std::vector<Range>(threads);
        n_ranges_ = threads;
        for (int w = 0; w < threads; ++w) {
          const uint64_t lo = n_items * w / threads, hi = n_items * (w + 1) / threads;
          ranges_[w].v.store(lo << 32 | hi);
        }
      }
      active_workers_ = threads - 1;
      pending_ = threads - 1;
      error_ = nullptr;
      ++generation_;
    }
    cv_.notify_all();
    work(0);
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return pending_ == 0; });
    fn_ = nullptr;
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void ensure_workers(int n) {
    while (static_cast<int>(workers_.size()) < n) {
      const int id = static_cast<int>(workers_.size()) + 1;
      workers_.emplace_back([this, id] { loop(id); });
    }
  }

  void loop(int id) {
    uint64_t seen = 0;
    {
      std::lock_guard<std::mutex> lk(mu_);
      seen = generation_;  // a worker created for a call joins that call below
      if (fn_ && id <= active_workers_) seen = generation_ - 1;
    }
    for (;;) {
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
        if (stop_) return;
        seen = generation_;
        if (id > active_workers_) continue;  // not needed for this call
      }
      work(id);
      std::lock_guard<std::mutex> lk(mu_);
      if (--pending_ == 0) done_cv_.notify_all();
    }
  }

  // Segmented schedule: the next item of the worker's own range (front), else one item from the
  // back of the range with the most items left; -1 when every range is empty.
  int64_t claim_segmented(int worker) {
    std::atomic<uint64_t>& own = ranges_[worker].v;
    uint64_t r = own.load();
    while ((r >> 32) < (r & 0xffffffffu))
      if (own.compare_exchange_weak(r, r + (uint64_t{1} << 32)))
        return static_cast<int64_t>(r >> 32);
    for (;;) {
      int victim = -1;
      uint64_t best = 0;
      for (int w = 0; w < n_ranges_; ++w) {
        const uint64_t x = ranges_[w].v.load();
        const uint64_t left = (x & 0xffffffffu) - std::min(x >> 32, x & 0xffffffffu);
        if (left > best) {
          best = left;
          victim = w;
        }
      }
      if (victim < 0) return -1;
      std::atomic<uint64_t>& v = ranges_[victim].v;
      uint64_t x = v.load();
      while ((x >> 32) < (x & 0xffffffffu))
        if (v.compare_exchange_weak(x, x - 1)) return static_cast<int64_t>(x & 0xffffffffu) - 1;
    }
  }

  void work(int worker) {
    t_inside_item = true;
    for (;;) {
      const int64_t item = segmented_ ? claim_segmented(worker) : next_.fetch_add(1);
      if (item < 0 || item >= n_items_) break;
      try {
        (*fn_)(item, worker);
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu_);
        if (!error_) error_ = std::current_exception();
        next_.store(n_items_);  // stop handing out items
        for (int w = 0; w < n_ranges_; ++w)
          ranges_[w].v.store(0);
      }
    }
    t_inside_item = false;
  }

  std::mutex call_mu_;
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  std::vector<std::thread> workers_;
  const std::function<void(int64_t, int)>* fn_ = nullptr;
  int64_t n_items_ = 0;
  std::atomic<int64_t> next_{0};
  struct alignas(64) Range {
    std::atomic<uint64_t> v{0};  // [lo, hi) of a worker's remaining items, lo << 32 | hi
  };
  std::vector<Range> ranges_;
  int n_ranges_ = 0;
  bool segmented_ = false;
  int active_workers_ = 0;
  int pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

Pool& pool() {
  static Pool p;
  return p;
}

}  // namespace

void parallel_for(int64_t n_items, int threads,
                  const std::function<void(int64_t item, int worker)>& fn, Schedule sched) {
  if (n_items <= 0) return;
  if (threads > n_items) threads = static_cast<int>(n_items);
  if (threads <= 1 || t_inside_item) {
    for (int64_t i = 0; i < n_items; ++i)
      fn(i, 0);
    return;
  }
  pool().run(n_items, threads, fn, sched);
}

}  // namespace attnkit::cpu_flash
