#include "cuda/workspace.hpp"

#include <map>
#include <mutex>
#include <utility>

#include "cuda/cuda_check.hpp"
#include "cuda/device_guard.hpp"

namespace attnkit::cuda {
namespace {

struct Slot {
  void* ptr = nullptr;
  size_t bytes = 0;
};

std::mutex& cache_mutex() {
  static std::mutex mu;
  return mu;
}
std::map<std::pair<int, cudaStream_t>, Slot>& cache() {
  static auto* c = new std::map<std::pair<int, cudaStream_t>, Slot>();  // never destroyed: the
  return *c;  // CUDA context may already be gone at static destruction, so freeing then is unsafe
}
std::map<std::pair<int, cudaStream_t>, Slot>& counter_cache() {  // (zeroed_counters; as cache())
  static auto* c = new std::map<std::pair<int, cudaStream_t>, Slot>();
  return *c;
}

// Grow by at least 1/8 so a slowly increasing sequence of requests does not reallocate each call.
size_t grown_size(size_t need, size_t have) {
  size_t n = need;
  if (have > 0 && n < have + have / 8) n = have + have / 8;
  return (n + 255) / 256 * 256;
}

}  // namespace

namespace {
/// `slot` holding at least `bytes` (the caller holds cache_mutex()); true when it was
/// (re)allocated.
bool ensure(Slot& slot, size_t bytes, int device, cudaStream_t stream) {
  if (slot.bytes >= bytes) return false;
  DeviceGuard guard(device);
  const size_t n = grown_size(bytes, slot.bytes);
  if (slot.ptr) {
    ATTNKIT_CUDA_CHECK(cudaFreeAsync(slot.ptr, stream));
    slot = Slot{};
  }
  void* p = nullptr;
  ATTNKIT_CUDA_CHECK(cudaMallocAsync(&p, n, stream));
  slot = Slot{p, n};
  return true;
}
}  // namespace

void* workspace(size_t bytes, int device, cudaStream_t stream) {
  if (bytes == 0) return nullptr;
  std::lock_guard<std::mutex> lock(cache_mutex());
  Slot& slot = cache()[{device, stream}];
  ensure(slot, bytes, device, stream);
  return slot.ptr;
}

int* zeroed_counters(size_t count, int device, cudaStream_t stream) {
  if (count == 0) return nullptr;
  std::lock_guard<std::mutex> lock(cache_mutex());
  Slot& slot = counter_cache()[{device, stream}];
  if (ensure(slot, count * sizeof(int), device, stream)) {
    DeviceGuard guard(device);
    ATTNKIT_CUDA_CHECK(cudaMemsetAsync(slot.ptr, 0, slot.bytes, stream));
  }
  return static_cast<int*>(slot.ptr);
}

size_t workspace_size(int device, cudaStream_t stream) {
  std::lock_guard<std::mutex> lock(cache_mutex());
  auto it = cache().find({device, stream});
  return it == cache().end() ? 0 : it->second.bytes;
}

void release_workspaces() {
  std::lock_guard<std::mutex> lock(cache_mutex());
  for (auto* c : {&cache(), &counter_cache()}) {
    for (auto& [key, slot] : *c) {
      if (!slot.ptr) continue;
      DeviceGuard guard(key.first);
      ATTNKIT_CUDA_CHECK(cudaFreeAsync(slot.ptr, key.second));
    }
    c->clear();
  }
}

}  // namespace attnkit::cuda
