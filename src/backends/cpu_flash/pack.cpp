// Geometry, dtype-converting row loads/stores and K/V packing for cpu_flash.
#include <algorithm>
#include <cstring>
#include <memory>
#include <thread>

#include "backends/cpu_flash/isa.hpp"
#include "backends/cpu_flash/thread_pool.hpp"
#include "backends/cpu_flash/tiles.hpp"
#include "core/dtype_convert.hpp"

namespace attnkit::cpu_flash {

Geometry make_geometry(const Params& p) {
  Geometry g;
  g.dp = round_up(p.head_dim, kPad);
  g.dvp = round_up(p.head_dim_v, kPad);
  g.spans.resize(p.batch);
  g.kblock_start.assign(p.batch + 1, 0);
  for (int64_t b = 0; b < p.batch; ++b) {
    g.spans[b] = seq_span(p, b);
    g.kblock_start[b + 1] = g.kblock_start[b] + ceil_div(g.spans[b].sk, kBk);
  }
  g.kblock_seq.resize(g.num_kblocks());
  for (int64_t b = 0; b < p.batch; ++b)
    for (int64_t kb = g.kblock_start[b]; kb < g.kblock_start[b + 1]; ++kb)
      g.kblock_seq[kb] = b;
  return g;
}

void load_row(const void* base, DType t, int64_t offset, int64_t stride, int64_t n, int64_t n_pad,
              float scale, float* dst) {
  switch (t) {
    case DType::f32: {
      const float* x = static_cast<const float*>(base) + offset;
      if (stride == 1 && scale == 1.0f) {
        std::memcpy(dst, x, n * sizeof(float));
      } else if (stride == 1) {  // a loop the compiler vectorises (the strided one it does not)
        for (int64_t d = 0; d < n; ++d)
          dst[d] = scale * x[d];
      } else {
        for (int64_t d = 0; d < n; ++d)
          dst[d] = scale * x[d * stride];
      }
      break;
    }
    case DType::bf16: {
      const uint16_t* x = static_cast<const uint16_t*>(base) + offset;
      for (int64_t d = 0; d < n; ++d)
        dst[d] = scale * bf16_to_f32(x[d * stride]);
      break;
    }
    case DType::f16: {
      const uint16_t* x = static_cast<const uint16_t*>(base) + offset;
      if (const auto cvt = active_kernels().f16_row_to_f32; cvt && stride == 1) {
        cvt(dst, x, n, scale);  // VCVTPH2PS
        break;
      }
      for (int64_t d = 0; d < n; ++d)
        dst[d] = scale * f16_to_f32(x[d * stride]);
      break;
    }
    default:
      break;  // unreachable: capabilities admit f32/f16/bf16 only
  }
  for (int64_t d = n; d < n_pad; ++d)
    dst[d] = 0.0f;
}

void load_row_bf16_bits(const void* base, int64_t offset, int64_t stride, int64_t n, int64_t n_pad,
                        uint16_t* dst) {
  const uint16_t* x = static_cast<const uint16_t*>(base) + offset;
  for (int64_t d = 0; d < n; ++d)
    dst[d] = x[d * stride];
  for (int64_t d = n; d < n_pad; ++d)
    dst[d] = 0;
}

void store_row(void* base, DType t, int64_t offset, int64_t stride, int64_t n, const float* src,
               float scale) {
  switch (t) {
    case DType::f32: {
      float* y = static_cast<float*>(base) + offset;
      if (stride == 1) {
        for (int64_t d = 0; d < n; ++d)
          y[d] = scale * src[d];
      } else {
        for (int64_t d = 0; d < n; ++d)
          y[d * stride] = scale * src[d];
      }
      break;
    }
    case DType::bf16: {
      uint16_t* y = static_cast<uint16_t*>(base) + offset;
      for (int64_t d = 0; d < n; ++d)
        y[d * stride] = f32_to_bf16(scale * src[d]);
      break;
    }
    case DType::f16: {
      uint16_t* y = static_cast<uint16_t*>(base) + offset;
      if (const auto cvt = active_kernels().f32_row_to_f16; cvt && stride == 1) {
        cvt(y, src, n, scale);  // VCVTPS2PH
        break;
      }
      for (int64_t d = 0; d < n; ++d)
        y[d * stride] = f32_to_f16(scale * src[d]);
      break;
    }
    default:
      break;
  }
}

float* thread_arena(int slot, int64_t floats) {
  struct Buf {
    std::unique_ptr<float[]> p;
    int64_t n = 0;
  };
  thread_local Buf bufs[kArenaSlots];
  Buf& b = bufs[slot];
  if (b.n < floats) {
    b.p.reset();
    b.p.reset(new float[floats]);  // uninitialised: pack_kv writes every element
    b.n = floats;
  }
  return b.p.get();
}

int resolve_threads(const Params& p) {
  if (p.num_threads > 0) return p.num_threads;
  const unsigned hc = std::thread::hardware_concurrency();
  return hc > 0 ? static_cast<int>(hc) : 1;
}

void pack_kt_block_f32(const Params& p, const SeqSpan& sp, int64_t b, int64_t g, int64_t j0,
                       int64_t dp, float scale, float* kt) {
  // In 16-key groups, so each packed row segment is one cache line written whole and the 16
  // source rows stay in L1 (a row-at-a-time scatter of kBk-strided floats was ~3% of a B=2, H=16,
  // S=1024, D=64 forward); full groups by the AVX-512 16x16 transpose.
  const auto tr16 = active_kernels().transpose16;
  const float* kbase = static_cast<const float*>(p.k);
  constexpr int64_t kGroup = 16;
  static const float zeros[16] = {};  // source of the keys past the sequence end
  for (int64_t jb = 0; jb < kBk; jb += kGroup) {
    const float* src[kGroup];
    int64_t step[kGroup];
    for (int64_t u = 0; u < kGroup; ++u) {
      const bool real = j0 + jb + u < sp.sk;
      src[u] = real ? kbase + row_offset(p.k_st, b, sp.k_start, j0 + jb + u, g) : zeros;
      step[u] = real ? 1 : 0;
    }
    if (tr16 && step[kGroup - 1] == 1) {  // 16 real keys
      tr16(kt + jb, kBk, src, p.head_dim, scale);
    } else {
      for (int64_t d = 0; d < p.head_dim; ++d) {
        float* dst = kt + d * kBk + jb;
        for (int64_t u = 0; u < kGroup; ++u)
          dst[u] = scale * src[u][d * step[u]];
      }
    }
    for (int64_t d = p.head_dim; d < dp; ++d)
      std::fill(kt + d * kBk + jb, kt + d * kBk + jb + kGroup, 0.0f);
  }
}

PackedKV pack_kv(const Params& p, const Geometry& geo, PackWhat what, int threads) {
  PackedKV pk;
  pk.heads_kv = p.heads_kv;
  pk.dp = geo.dp;
  pk.dvp = geo.dvp;
  const int64_t nblk = geo.num_kblocks() * p.heads_kv;
  if (what.kt) pk.kt = thread_arena(0, nblk * geo.dp * kBk);
  if (what.k) pk.k = thread_arena(1, nblk * geo.dp * kBk);
  if (what.v) pk.v = thread_arena(2, nblk * geo.dvp * kBk);
  if (what.vt) pk.vt = thread_arena(3, nblk * geo.dvp * kBk);
  if (what.kt_bf16)
    pk.ktb = reinterpret_cast<uint16_t*>(thread_arena(4, (nblk * geo.dp * kBk + 1) / 2));
  if (what.v_bf16)
    pk.vb = reinterpret_cast<uint16_t*>(thread_arena(5, (nblk * geo.dvp * kBk + 1) / 2));
  if (what.vt_bf16)
    pk.vtb = reinterpret_cast<uint16_t*>(thread_arena(6, (nblk * geo.dvp * kBk + 1) / 2));
  if (what.k_bf16)
    pk.kpb = reinterpret_cast<uint16_t*>(thread_arena(7, (nblk * geo.dp * kBk + 1) / 2));
  if (!(what.kt || what.k || what.v || what.vt || what.kt_bf16 || what.v_bf16 || what.vt_bf16 ||
        what.k_bf16))
    return pk;  // nothing to pack (fp32 forward: lazy K^T, V in place): no pool round trip
  const int64_t dmax = std::max(geo.dp, geo.dvp);
  parallel_for(nblk, threads, [&](int64_t item, int) {
    const int64_t kb = item / p.heads_kv, g = item % p.heads_kv;
    const int64_t b = geo.kblock_seq[kb];
    const SeqSpan& sp = geo.spans[b];
    const int64_t j0 = (kb - geo.kblock_start[b]) * kBk;
    std::vector<float> row(dmax);
    std::vector<uint16_t> brow(dmax);
    // fp32 K with unit d-stride, K^T only: transposed straight from the source (pack_kt_block_f32)
    const bool kt_direct = what.kt && !what.k && p.dtype == DType::f32 && p.k_st.d == 1;
    if (kt_direct)
      pack_kt_block_f32(p, sp, b, g, j0, geo.dp, what.kt_scale,
                        pk.kt + (kb * p.heads_kv + g) * geo.dp * kBk);
    for (int64_t jj = 0; jj < kBk; ++jj) {
      const int64_t j = j0 + jj;
      const bool real = j < sp.sk;
      if ((what.kt && !kt_direct) || what.k) {
        if (real)
          load_row(p.k, p.dtype, row_offset(p.k_st, b, sp.k_start, j, g), p.k_st.d, p.head_dim,
                   geo.dp, 1.0f, row.data());
        else
          std::fill(row.begin(), row.begin() + geo.dp, 0.0f);
        if (what.kt) {
          float* kt = pk.kt + (kb * p.heads_kv + g) * geo.dp * kBk;
          for (int64_t d = 0; d < geo.dp; ++d)
            kt[d * kBk + jj] = what.kt_scale * row[d];
        }
        if (what.k) {
          float* k = pk.k + (kb * p.heads_kv + g) * geo.dp * kBk;
          std::memcpy(k + jj * geo.dp, row.data(), geo.dp * sizeof(float));
        }
      }
      if (what.kt_bf16 || what.k_bf16) {
        if (real)
          load_row_bf16_bits(p.k, row_offset(p.k_st, b, sp.k_start, j, g), p.k_st.d, p.head_dim,
                             geo.dp, brow.data());
        else
          std::fill(brow.begin(), brow.begin() + geo.dp, uint16_t{0});
        if (what.kt_bf16) {
          uint16_t* kt = pk.ktb + (kb * p.heads_kv + g) * geo.dp * kBk;
          for (int64_t d = 0; d < geo.dp; ++d)
            kt[(d / 2) * 2 * kBk + 2 * jj + (d & 1)] = brow[d];
        }
        if (what.k_bf16) {
          uint16_t* k = pk.kpb + (kb * p.heads_kv + g) * geo.dp * kBk;
          for (int64_t d = 0; d < geo.dp; ++d)
            k[(jj / 2) * 2 * geo.dp + 2 * d + (jj & 1)] = brow[d];
        }
      }
      if (what.v_bf16 || what.vt_bf16) {
        if (real)
          load_row_bf16_bits(p.v, row_offset(p.v_st, b, sp.k_start, j, g), p.v_st.d, p.head_dim_v,
                             geo.dvp, brow.data());
        else
          std::fill(brow.begin(), brow.begin() + geo.dvp, uint16_t{0});
        if (what.v_bf16) {
          uint16_t* v = pk.vb + (kb * p.heads_kv + g) * geo.dvp * kBk;
          for (int64_t c = 0; c < geo.dvp; ++c)
            v[(jj / 2) * 2 * geo.dvp + 2 * c + (jj & 1)] = brow[c];
        }
        if (what.vt_bf16) {
          uint16_t* vt = pk.vtb + (kb * p.heads_kv + g) * geo.dvp * kBk;
          for (int64_t c = 0; c < geo.dvp; ++c)
            vt[(c / 2) * 2 * kBk + 2 * jj + (c & 1)] = brow[c];
        }
      }
      if (what.v || what.vt) {
        if (real)
          load_row(p.v, p.dtype, row_offset(p.v_st, b, sp.k_start, j, g), p.v_st.d, p.head_dim_v,
                   geo.dvp, 1.0f, row.data());
        else
          std::fill(row.begin(), row.begin() + geo.dvp, 0.0f);
        if (what.v) {
          float* v = pk.v + (kb * p.heads_kv + g) * geo.dvp * kBk;
          std::memcpy(v + jj * geo.dvp, row.data(), geo.dvp * sizeof(float));
        }
        if (what.vt) {
          float* vt = pk.vt + (kb * p.heads_kv + g) * geo.dvp * kBk;
          for (int64_t d = 0; d < geo.dvp; ++d)
            vt[d * kBk + jj] = row[d];
        }
      }
    }
  });
  return pk;
}

}  // namespace attnkit::cpu_flash
