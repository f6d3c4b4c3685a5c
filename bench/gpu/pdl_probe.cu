// When does a programmatic dependent launch start, against a plain one, on the legacy default
// stream (torch's current stream: every peers.py table) and on a created stream? (Session 54.)
//
// Session 54's probe (Flash3ForwardPdl.ProbeOverlap, in the dropped forward PDL patch) saw the
// dependent enter 4.4 / 5.1 us AFTER its primary's last CTA exited on the legacy stream and ~1 ms
// before it on a created one, yet the backward's early dQ conversion (a programmatic dependent)
// gained 1-2.5 % on the legacy stream. This tool adds the missing control, a plain launch of the
// same dependent, so the two start gaps can be compared, and a multi-wave primary shaped like the
// backward's main kernel (many short CTAs, trigger at the start).
//
// Per (stream, primary shape, launch kind): the gap = the dependent's first CTA entry minus the
// primary's last CTA exit (%globaltimer, ns; negative = overlap), median of kReps runs.
//
//   nvcc -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a bench/gpu/pdl_probe.cu -o
//   /tmp/pdl_probe /tmp/pdl_probe
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "cuda/cuda_check.hpp"  // (header-only, as cuda/pdl.hpp: no library to link)
#include "cuda/pdl.hpp"

__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long g;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(g));
  return g;
}

/// t[0]: the latest CTA exit (atomicMax). Triggers its dependents at the start, then spins for
/// `spin` clocks.
__global__ void primary(unsigned long long* t, long long spin) {
  attnkit::cuda::pdl_launch_dependents();
  const long long c0 = clock64();
  while (clock64() - c0 < spin) {
  }
  __syncthreads();
  if (threadIdx.x == 0) atomicMax(t, now_ns());
}

/// t[1]: the earliest CTA entry (atomicMin), before griddepcontrol.wait (a no-op for a plain
/// launch).
__global__ void dependent(unsigned long long* t) {
  if (threadIdx.x == 0) atomicMin(t + 1, now_ns());
  attnkit::cuda::pdl_wait_previous();
}

/// One run: the gap in us (dependent entry - primary exit).
double run_once(cudaStream_t s, int primary_ctas, long long spin, bool programmatic,
                unsigned long long* t) {
  const unsigned long long init[2] = {0ull, ~0ull};
  ATTNKIT_CUDA_CHECK(cudaMemcpy(t, init, sizeof(init), cudaMemcpyHostToDevice));
  primary<<<primary_ctas, 128, 0, s>>>(t, spin);
  ATTNKIT_CUDA_CHECK(cudaGetLastError());
  attnkit::cuda::launch_dependent(dependent, dim3(132), dim3(128), 0, s, programmatic, t);
  ATTNKIT_CUDA_CHECK(cudaDeviceSynchronize());
  unsigned long long got[2];
  ATTNKIT_CUDA_CHECK(cudaMemcpy(got, t, sizeof(got), cudaMemcpyDeviceToHost));
  return (static_cast<double>(got[1]) - static_cast<double>(got[0])) / 1e3;
}

int main() {
  constexpr int kReps = 9;
  unsigned long long* t = nullptr;
  ATTNKIT_CUDA_CHECK(cudaMalloc(&t, 16));
  cudaStream_t created = nullptr;
  ATTNKIT_CUDA_CHECK(cudaStreamCreateWithFlags(&created, cudaStreamNonBlocking));
  int sms = 0;
  ATTNKIT_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  struct Shape {
    const char* name;
    int ctas;
    long long spin;
  };
  // one wave of 4 long CTAs (the session-54 probe: ~1 ms); 16 waves of short CTAs (~40 us each at
  // ~1.8 GHz: the backward main kernel's shape at D 128 1k, 2048 CTAs of ~36 us)
  const Shape shapes[] = {{"4 CTAs x 1 ms", 4, 2000000}, {"16 waves x 40 us", 16 * sms, 72000}};
  std::printf(
      "gap = dependent's first entry - primary's last exit, us (median of %d; < 0: overlap)\n",
      kReps);
  std::printf("%-16s %-18s %10s %10s\n", "stream", "primary", "plain", "pdl");
  for (cudaStream_t s : {cudaStream_t{nullptr}, created})
    for (const Shape& sh : shapes) {
      double med[2];
      for (int pdl = 0; pdl < 2; ++pdl) {
        std::vector<double> g;
        for (int r = 0; r < kReps; ++r)
          g.push_back(run_once(s, sh.ctas, sh.spin, pdl == 1, t));
        std::sort(g.begin(), g.end());
        med[pdl] = g[kReps / 2];
      }
      std::printf("%-16s %-18s %10.1f %10.1f\n", s == nullptr ? "legacy default" : "created",
                  sh.name, med[0], med[1]);
    }
  ATTNKIT_CUDA_CHECK(cudaStreamDestroy(created));
  ATTNKIT_CUDA_CHECK(cudaFree(t));
  return 0;
}
