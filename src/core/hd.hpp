// Host/device qualifiers for headers shared by C++ and CUDA code.
#pragma once
#if defined(__CUDACC__)
#define ATTNKIT_HD __host__ __device__ __forceinline__
#else
#define ATTNKIT_HD inline
#endif
