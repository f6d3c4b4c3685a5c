// The shared CUDA layer (src/cuda/): device runtime, cached device info, per-(device, stream)
// workspace. The no-GPU behaviour (no devices, nothing throws) is tested everywhere; the rest
// skips visibly without a GPU.
#include <gtest/gtest.h>

#include <cuda_runtime.h>

#include <cstring>
#include <vector>

#include "attnkit/error.hpp"
#include "common/cuda_skip.hpp"
#include "core/device_runtime.hpp"
#include "cuda/device_guard.hpp"
#include "cuda/device_info.hpp"
#include "cuda/workspace.hpp"

namespace attnkit {
namespace {

TEST(CudaRuntime, DevicesMatchDeviceCountAndNeverThrow) {
  std::vector<DeviceDescription> devs;
  ASSERT_NO_THROW(devs = device_runtime(DeviceType::cuda).devices());
  EXPECT_EQ(static_cast<int>(devs.size()), cuda::device_count());
  for (size_t i = 0; i < devs.size(); ++i) {
    EXPECT_EQ(devs[i].device, Device::cuda(static_cast<int>(i)));
    EXPECT_FALSE(devs[i].name.empty());
    EXPECT_GE(devs[i].arch, 50);
    EXPECT_GT(devs[i].sm_count, 0);
    EXPECT_GT(devs[i].memory_bytes, 0);
  }
}

TEST(CudaRuntime, MissingDeviceIsAnErrorNotACrash) {
  const int n = cuda::device_count();
  EXPECT_THROW(device_runtime(DeviceType::cuda).allocate(16, Device::cuda(n)), Error);
  EXPECT_THROW(cuda::device_info(n), Error);
  EXPECT_THROW(cuda::device_info(-1), Error);
}

TEST(CudaDeviceInfo, CachedAndConsistentWithTheRuntime) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  const cuda::DeviceInfo& a = cuda::device_info(0);
  const cuda::DeviceInfo& b = cuda::device_info(0);
  EXPECT_EQ(&a, &b) << "device_info must be cached (same object)";
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  EXPECT_EQ(a.arch, prop.major * 10 + prop.minor);
  EXPECT_EQ(a.sm_count, prop.multiProcessorCount);
  EXPECT_EQ(a.l2_bytes, static_cast<size_t>(prop.l2CacheSize));
  EXPECT_GE(a.smem_per_block_optin, a.smem_per_block);
  EXPECT_GT(a.l2_bytes, 0u);
  EXPECT_EQ(device_runtime(DeviceType::cuda).arch(Device::cuda(0)), a.arch);
}

TEST(CudaRuntime, AllocateCopyRoundTrip) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  std::vector<uint32_t> host(1000), back(1000, 0);
  for (size_t i = 0; i < host.size(); ++i)
    host[i] = static_cast<uint32_t>(i * 2654435761u);
  DeviceBuffer buf(host.size() * 4, Device::cuda(0));
  ASSERT_NE(buf.get(), nullptr);
  auto& rt = device_runtime(DeviceType::cuda);
  rt.copy_to_device(buf.get(), host.data(), host.size() * 4, Device::cuda(0));
  rt.synchronize(Device::cuda(0));
  rt.copy_to_host(back.data(), buf.get(), back.size() * 4, Device::cuda(0));
  EXPECT_EQ(std::memcmp(host.data(), back.data(), host.size() * 4), 0);
  EXPECT_EQ(rt.allocate(0, Device::cuda(0)), nullptr);
}

TEST(CudaDeviceGuard, RestoresTheCurrentDevice) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  const int n = cuda::device_count();
  ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
  {
    cuda::DeviceGuard g(n - 1);
    EXPECT_EQ(cuda::current_device(), n - 1);
  }
  EXPECT_EQ(cuda::current_device(), 0);
}

TEST(CudaWorkspace, GrowsPerStreamAndIsUsableOnIt) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  cudaStream_t s1 = nullptr, s2 = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_EQ(cuda::workspace(0, 0, s1), nullptr);
  void* a = cuda::workspace(1000, 0, s1);
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(a) % 256, 0u);
  EXPECT_GE(cuda::workspace_size(0, s1), 1000u);
  EXPECT_EQ(cuda::workspace(500, 0, s1), a) << "a smaller request reuses the cached buffer";
  void* b = cuda::workspace(1000, 0, s2);
  EXPECT_NE(a, b) << "two streams never share a buffer";
  void* c = cuda::workspace(size_t(64) << 20, 0, s1);  // grows: old freed in stream order
  ASSERT_NE(c, nullptr);
  EXPECT_GE(cuda::workspace_size(0, s1), size_t(64) << 20);
  // The whole buffer is writable on its stream (compute-sanitizer memcheck checks the bounds).
  ASSERT_EQ(cudaMemsetAsync(c, 0x5a, size_t(64) << 20, s1), cudaSuccess);
  std::vector<uint8_t> tail(256);
  ASSERT_EQ(cudaMemcpyAsync(tail.data(), static_cast<char*>(c) + (size_t(64) << 20) - 256, 256,
                            cudaMemcpyDeviceToHost, s1),
            cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s1), cudaSuccess);
  for (uint8_t x : tail)
    ASSERT_EQ(x, 0x5a);
  cuda::release_workspaces();
  EXPECT_EQ(cuda::workspace_size(0, s1), 0u);
  ASSERT_EQ(cudaStreamSynchronize(s1), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(s2), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s1), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s2), cudaSuccess);
}

// zeroed_counters: zero when first handed out and again when grown (a new buffer), apart from
// workspace()'s buffer (which holds garbage here).
TEST(CudaWorkspace, ZeroedCountersAreZeroAndKeptApart) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  cudaStream_t s1 = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking), cudaSuccess);
  EXPECT_EQ(cuda::zeroed_counters(0, 0, s1), nullptr);
  void* ws = cuda::workspace(4096, 0, s1);
  ASSERT_EQ(cudaMemsetAsync(ws, 0x7f, 4096, s1), cudaSuccess);  // workspace garbage
  auto read = [&](const int* p, size_t n) {
    std::vector<int> h(n, -1);
    EXPECT_EQ(cudaMemcpyAsync(h.data(), p, n * sizeof(int), cudaMemcpyDeviceToHost, s1),
              cudaSuccess);
    EXPECT_EQ(cudaStreamSynchronize(s1), cudaSuccess);
    return h;
  };
  int* c = cuda::zeroed_counters(100, 0, s1);
  ASSERT_NE(c, nullptr);
  EXPECT_NE(static_cast<void*>(c), ws);
  for (int x : read(c, 100))
    ASSERT_EQ(x, 0);
  EXPECT_EQ(cuda::zeroed_counters(50, 0, s1), c) << "a smaller request reuses the buffer";
  int* d = cuda::zeroed_counters(size_t(1) << 20, 0, s1);  // grows: a new, zeroed buffer
  ASSERT_NE(d, nullptr);
  const std::vector<int> h = read(d, size_t(1) << 20);
  for (int x : h)
    ASSERT_EQ(x, 0);
  cuda::release_workspaces();
  ASSERT_EQ(cudaStreamSynchronize(s1), cudaSuccess);
  EXPECT_EQ(cudaStreamDestroy(s1), cudaSuccess);
}

}  // namespace
}  // namespace attnkit
