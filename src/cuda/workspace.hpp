// Scratch memory for backends (flash/flash3/cudnn backward, cuda_math's score tiles).
//
// One cached buffer per (device, stream). workspace() returns at least `bytes` bytes, growing the
// buffer when needed: the old one is freed with cudaFreeAsync and the new one taken with
// cudaMallocAsync, both on `stream`, so work already queued on that stream that still reads the
// old buffer finishes first (stream order) and nothing synchronizes the device.
//
// Rules for callers:
//   * Use the pointer only for work enqueued on the same `stream`.
//   * The pointer stays valid until the next workspace() call for the same (device, stream):
//     a call needing several scratch arrays asks once for their total and carves it.
//   * Buffers of streams the caller destroys stay cached until release_workspaces() (or exit).
// Thread-safe: the cache is guarded by a mutex; two threads on one stream must not interleave
// calls (the same rule as for the stream itself).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

namespace attnkit::cuda {

/// At least `bytes` bytes (256-byte aligned) of device memory on `device`, usable on `stream`.
/// bytes == 0 returns nullptr. Throws Error(kCudaError) when the allocation fails.
void* workspace(size_t bytes, int device, cudaStream_t stream);

/// At least `count` ints on `device` that are 0 for work enqueued on `stream` from now on, kept
/// per (device, stream) apart from workspace(): zeroed once when (re)allocated (cudaMemsetAsync
/// on `stream`), after which every kernel that uses them must leave them 0 when it finishes
/// (the flash and flash3 forwards' split tails: their counters go back to 0 as each tile is
/// merged). Same rules as workspace(); count == 0 returns nullptr.
int* zeroed_counters(size_t count, int device, cudaStream_t stream);

/// Bytes currently cached for (device, stream); 0 if none.
size_t workspace_size(int device, cudaStream_t stream);

/// Frees every cached buffer (on its own stream, asynchronously). Callers must not use workspace
/// pointers obtained before.
void release_workspaces();

}  // namespace attnkit::cuda
