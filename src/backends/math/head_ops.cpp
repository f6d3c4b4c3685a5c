#include "backends/math/head_ops.hpp"

#include <atomic>
#include <cmath>
#include <exception>
#include <limits>
#include <mutex>
#include <thread>

#include "core/dtype_convert.hpp"
#include "core/philox.hpp"

namespace attnkit::math_core {

constexpr double kNegInf = -std::numeric_limits<double>::infinity();

double ElemIO::load(const void* base, int64_t idx) const {
  if (storage == Storage::f64) return static_cast<const double*>(base)[idx];
  return load_as_double(base, idx, dtype);
}

void ElemIO::store(void* base, int64_t idx, double v) const {
  if (storage == Storage::f64) {
    static_cast<double*>(base)[idx] = v;
    return;
  }
  store_from_double(base, idx, dtype, v);
}

const int32_t* host_cu_seqlens_q(const Params& p) {
  return p.cu_seqlens_q_host ? p.cu_seqlens_q_host : p.cu_seqlens_q;
}
const int32_t* host_cu_seqlens_k(const Params& p) {
  return p.cu_seqlens_k_host ? p.cu_seqlens_k_host : p.cu_seqlens_k;
}

int64_t task_count(const Params& p) {
  return p.batch * p.heads_kv;
}

Task make_task(const Params& p, int64_t task_index) {
  Task t;
  t.b = task_index / p.heads_kv;
  t.g = task_index % p.heads_kv;
  if (p.varlen) {
    // seq_span() reads cu_seqlens through Params; give it the host copies.
    Params hp = p;
    hp.cu_seqlens_q = host_cu_seqlens_q(p);
    hp.cu_seqlens_k = host_cu_seqlens_k(p);
    t.span = seq_span(hp, t.b);
  } else {
    t.span = seq_span(p, t.b);
  }
  return t;
}

void gather_rows(const ElemIO& io, const void* base, const Strides4& st, int64_t b, int64_t row0,
                 int64_t rows, int64_t head, int64_t cols, double* dst) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t off = b * st.b + (row0 + r) * st.s + head * st.h;
    for (int64_t c = 0; c < cols; ++c)
      dst[r * cols + c] = io.load(base, off + c * st.d);
  }
}

void scatter_rows(const ElemIO& io, void* base, const Strides4& st, int64_t b, int64_t row0,
                  int64_t rows, int64_t head, int64_t cols, const double* src) {
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t off = b * st.b + (row0 + r) * st.s + head * st.h;
    for (int64_t c = 0; c < cols; ++c)
      io.store(base, off + c * st.d, src[r * cols + c]);
  }
}

void head_scores(const Params& p, const Task& t, int64_t h, const double* q, const double* k,
                 double* s, double* tanh_deriv) {
  const int64_t sq = t.span.sq, sk = t.span.sk, d = p.head_dim;
  const double scale = p.scale;
  const double cap = p.softcap;
  for (int64_t i = 0; i < sq; ++i) {
    const KeyRange range = structural_key_range(p, i, sq, sk);
    const double* qi = q + i * d;
    for (int64_t j = 0; j < sk; ++j) {
      double& out = s[i * sk + j];
      if (tanh_deriv) tanh_deriv[i * sk + j] = 1.0;
      if (j < range.lo || j > range.hi) {
        out = kNegInf;
        continue;
      }
      int64_t mask_idx = 0;
      if (p.has_mask()) {
        mask_idx = t.b * p.mask_st.b + h * p.mask_st.h + i * p.mask_st.s + j * p.mask_st.d;
        if (p.mask_kind == MaskKind::keep_bool &&
            static_cast<const uint8_t*>(p.mask)[mask_idx] == 0) {
          out = kNegInf;
          continue;
        }
      }
      const double* kj = k + j * d;
      double dot = 0.0;
      for (int64_t c = 0; c < d; ++c)
        dot += qi[c] * kj[c];
      double v = scale * dot;
      if (cap > 0.0) {
        const double th = std::tanh(v / cap);
        v = cap * th;
        if (tanh_deriv) tanh_deriv[i * sk + j] = 1.0 - th * th;
      }
      v += alibi_bias<double>(p, t.b, h, i, j, sq, sk);
      if (p.mask_kind == MaskKind::additive) v += load_as_double(p.mask, mask_idx, p.mask_dtype);
      out = v;  // -inf when the additive mask is -inf: invisible
    }
  }
}

void softmax_rows(double* s, int64_t sq, int64_t sk, double* lse) {
  for (int64_t i = 0; i < sq; ++i) {
    double* row = s + i * sk;
    double m = kNegInf;
    for (int64_t j = 0; j < sk; ++j)
      if (row[j] > m) m = row[j];
    if (m == kNegInf) {  // no visible key (also covers sk == 0)
      for (int64_t j = 0; j < sk; ++j)
        row[j] = 0.0;
      lse[i] = kNegInf;
      continue;
    }
    double sum = 0.0;
    for (int64_t j = 0; j < sk; ++j) {
      row[j] = row[j] == kNegInf ? 0.0 : std::exp(row[j] - m);
      sum += row[j];
    }
    const double inv = 1.0 / sum;  // sum >= 1: the maximum contributes exp(0)
    for (int64_t j = 0; j < sk; ++j)
      row[j] *= inv;
    lse[i] = m + std::log(sum);
  }
}

void dropout_row(const Params& p, const Task& t, int64_t h, int64_t i, double* f) {
  const int64_t sk = t.span.sk;
  if (!p.has_dropout()) {
    for (int64_t j = 0; j < sk; ++j)
      f[j] = 1.0;
    return;
  }
  const double rescale = 1.0 / (1.0 - static_cast<double>(p.dropout_p));
  for (int64_t j0 = 0; j0 < sk; j0 += 4) {
    const uint32_t bits =
        dropout_keep_bits4(p.seed, p.offset, t.b, h, p.heads_q, i, j0, p.dropout_threshold);
    for (int64_t w = 0; w < 4 && j0 + w < sk; ++w)
      f[j0 + w] = ((bits >> w) & 1u) ? rescale : 0.0;
  }
}

void for_each_task(int64_t tasks, int workers, const std::function<void(int64_t, int)>& body) {
  if (tasks <= 0) return;
  if (workers < 1) workers = 1;
  if (workers > tasks) workers = static_cast<int>(tasks);
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mutex;
  auto run = [&](int worker) {
    for (;;) {
      const int64_t task = next.fetch_add(1);
      if (task >= tasks) return;
      try {
        body(task, worker);
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        next.store(tasks);  // stop handing out work
        return;
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(workers - 1));
  for (int w = 1; w < workers; ++w)
    threads.emplace_back(run, w);
  run(0);
  for (auto& th : threads)
    th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace attnkit::math_core
