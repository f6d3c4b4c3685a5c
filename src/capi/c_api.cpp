// The C ABI over attnkit::forward/backward (include/attnkit/c_api.h). No exceptions cross it.
#include "attnkit/c_api.h"

#include <cstring>
#include <exception>
#include <string>

#include "attnkit/attnkit.hpp"

namespace {

thread_local std::string t_last_backend;

attnkit::TensorView view_of(const attnkit_tensor* t) {
  attnkit::TensorView v;
  if (!t || (t->rank == 0 && t->data == nullptr)) return v;
  v.data = t->data;
  v.dtype = static_cast<attnkit::DType>(t->dtype);
  v.device = attnkit::Device{
      t->device_type == 1 ? attnkit::DeviceType::cuda : attnkit::DeviceType::cpu, t->device_index};
  v.rank = t->rank;
  for (int i = 0; i < 4; ++i) {
    v.shape[i] = t->shape[i];
    v.stride[i] = t->stride[i];
  }
  return v;
}

attnkit::Options options_of(const attnkit_options* o) {
  attnkit::Options r;
  if (!o) return r;
  if (o->scale > 0) r.scale = o->scale;
  r.softcap = o->softcap;
  r.causal = static_cast<attnkit::Causal>(o->causal);
  r.window_left = o->window_left;
  r.window_right = o->window_right;
  r.dropout_p = o->dropout_p;
  r.dropout_seed = o->seed;
  r.dropout_offset = o->offset;
  r.deterministic = o->deterministic != 0;
  r.stream = o->stream;
  if (o->backend) r.backend = o->backend;
  r.mask = view_of(o->mask);
  r.alibi_slopes = view_of(o->alibi_slopes);
  r.cu_seqlens_q = view_of(o->cu_seqlens_q);
  r.cu_seqlens_k = view_of(o->cu_seqlens_k);
  r.max_seqlen_q = o->max_seqlen_q;
  r.max_seqlen_k = o->max_seqlen_k;
  return r;
}

void copy_message(const char* msg, char* err, size_t len) {
  if (!err || len == 0) return;
  std::strncpy(err, msg, len - 1);
  err[len - 1] = '\0';
}

template <typename F>
int guarded(F&& f, char* err, size_t len) {
  try {
    f();
    copy_message("", err, len);
    return 0;
  } catch (const attnkit::Error& e) {
    copy_message(e.what(), err, len);
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    copy_message(e.what(), err, len);
    return static_cast<int>(attnkit::ErrorCode::kInternal);
  }
}

}  // namespace

extern "C" {

void attnkit_options_init(attnkit_options* o) {
  std::memset(o, 0, sizeof(*o));
  o->window_left = -1;
  o->window_right = -1;
  o->max_seqlen_q = -1;
  o->max_seqlen_k = -1;
}

int attnkit_forward(const attnkit_tensor* q, const attnkit_tensor* k, const attnkit_tensor* v,
                    const attnkit_tensor* out, const attnkit_tensor* lse,
                    const attnkit_options* opts, char* err, size_t err_len) {
  return guarded(
      [&] {
        attnkit::ForwardArgs a{view_of(q), view_of(k), view_of(v), view_of(out), view_of(lse)};
        t_last_backend = attnkit::forward(a, options_of(opts));
      },
      err, err_len);
}

int attnkit_backward(const attnkit_tensor* dout, const attnkit_tensor* q, const attnkit_tensor* k,
                     const attnkit_tensor* v, const attnkit_tensor* out, const attnkit_tensor* lse,
                     const attnkit_tensor* dq, const attnkit_tensor* dk, const attnkit_tensor* dv,
                     const attnkit_options* opts, char* err, size_t err_len) {
  return guarded(
      [&] {
        attnkit::BackwardArgs a{view_of(dout), view_of(q),  view_of(k),  view_of(v), view_of(out),
                                view_of(lse),  view_of(dq), view_of(dk), view_of(dv)};
        t_last_backend = attnkit::backward(a, options_of(opts));
      },
      err, err_len);
}

const char* attnkit_last_backend(void) {
  return t_last_backend.c_str();
}

int attnkit_set_num_threads(int n) {
  return guarded([&] { attnkit::set_num_threads(n); }, nullptr, 0);
}

const char* attnkit_version(void) {
  return ATTNKIT_VERSION;
}

}  // extern "C"
