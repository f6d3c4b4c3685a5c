// cpu_flash's thread pool: persistent workers, one parallel_for at a time, dynamic scheduling
// over an item counter (or per-worker ranges, Schedule::segmented). Dynamic: items are claimed in
// index order, so callers that list the heaviest items first (causal: the last query tiles) get the
// classic longest-first balance.
//
// Results never depend on which thread ran an item (every item writes disjoint outputs with a
// fixed internal order), so 1 and N threads give bit-identical outputs.
#pragma once

#include <cstdint>
#include <functional>

namespace attnkit::cpu_flash {

enum class Schedule {
  dynamic,    // items claimed one at a time in index order from one shared counter
  segmented,  // worker w first runs [n*w/threads, n*(w+1)/threads) in order, then takes single
              // items from the back of the range with the most items left (for items of equal
              // cost whose neighbours share data: each worker stays on its own part)
};

/// Runs fn(item, worker) for every item in [0, n_items) on up to `threads` threads (the calling
/// thread is worker 0; workers are numbered [0, threads)). Returns when all items are done.
/// A call made from inside a running item (nested) runs its items serially with worker 0;
/// concurrent callers from different threads take turns.
/// The first exception thrown by fn is rethrown on the calling thread after all workers stop.
void parallel_for(int64_t n_items, int threads,
                  const std::function<void(int64_t item, int worker)>& fn,
                  Schedule sched = Schedule::dynamic);

}  // namespace attnkit::cpu_flash
