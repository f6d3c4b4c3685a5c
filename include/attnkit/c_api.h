/* attnkit C ABI: a stable, minimal entry point for ctypes/cffi and C callers (benchmarks use it
 * to call attnkit on framework tensors in the same process). Mirrors attnkit::forward/backward;
 * see include/attnkit/attention.hpp for shapes and semantics. Library: libattnkit_c.so. */
#ifndef ATTNKIT_C_API_H
#define ATTNKIT_C_API_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* dtype: f32=0, f16=1, bf16=2, f8e4m3=3, f8e5m2=4, i8=5, i32=6, bool=7 (attnkit::DType).
 * device_type: 0 cpu, 1 cuda. Strides in elements. rank 0 (or data NULL with rank 0) = absent. */
typedef struct {
  void* data;
  int32_t dtype;
  int32_t device_type;
  int32_t device_index;
  int32_t rank;
  int64_t shape[4];
  int64_t stride[4];
} attnkit_tensor;

typedef struct {
  double scale;                      /* <= 0: default 1/sqrt(D) */
  double softcap;                    /* 0 = off */
  int32_t causal;                    /* 0 none, 1 top_left, 2 bottom_right */
  int64_t window_left, window_right; /* -1 = unbounded */
  double dropout_p;
  uint64_t seed, offset;
  int32_t deterministic;
  void* stream;                       /* cudaStream_t or NULL */
  const char* backend;                /* NULL or "" = selection order (scoped/default/auto) */
  const attnkit_tensor* mask;         /* NULL = none */
  const attnkit_tensor* alibi_slopes; /* NULL = none */
  const attnkit_tensor* cu_seqlens_q; /* NULL = not varlen */
  const attnkit_tensor* cu_seqlens_k;
  int64_t max_seqlen_q, max_seqlen_k; /* -1 = read from cu_seqlens */
} attnkit_options;

void attnkit_options_init(attnkit_options* o);

/* Return 0 on success, else the attnkit::ErrorCode value (1 invalid argument, 2 unsupported,
 * 3 not built, 4 unknown backend, 5 too large, 6 CUDA error, 7 numerical, 8 internal); the message
 * is copied into err (NUL-terminated, truncated to err_len) when err is not NULL. */
int attnkit_forward(const attnkit_tensor* q, const attnkit_tensor* k, const attnkit_tensor* v,
                    const attnkit_tensor* out, const attnkit_tensor* lse,
                    const attnkit_options* opts, char* err, size_t err_len);
int attnkit_backward(const attnkit_tensor* dout, const attnkit_tensor* q, const attnkit_tensor* k,
                     const attnkit_tensor* v, const attnkit_tensor* out, const attnkit_tensor* lse,
                     const attnkit_tensor* dq, const attnkit_tensor* dk, const attnkit_tensor* dv,
                     const attnkit_options* opts, char* err, size_t err_len);
/* Name of the backend the last successful call on this thread ran ("" before any). */
const char* attnkit_last_backend(void);
/* CPU backends' thread count; 0 = default. Returns 0 or an error code. */
int attnkit_set_num_threads(int n);
const char* attnkit_version(void);

#ifdef __cplusplus
}
#endif
#endif /* ATTNKIT_C_API_H */
