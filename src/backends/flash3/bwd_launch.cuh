// Host side of the flash3 backward: workspace, tensor maps, the three launches.
// Included only by the backward instantiation files (one per head dim and dtype).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include "attnkit/error.hpp"
#include "backends/flash3/bwd_args.hpp"
#include "backends/flash3/bwd_early_conv.cuh"
#include "backends/flash3/bwd_kernel.cuh"
#include "backends/flash3/bwd_launch.hpp"
#include "backends/flash3/bwd_order_rule.hpp"
#include "backends/flash3/bwd_traits.hpp"
#include "backends/flash3/seq_bounds.hpp"
#include "backends/flash3/smem_opt_in.hpp"
#include "backends/flash3/tensor_map.hpp"
#include "core/params.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/device_info.hpp"
#include "cuda/pdl.hpp"
#include "cuda/ptx_sm90.hpp"
#include "cuda/workspace.hpp"

namespace attnkit::flash3 {

namespace bwd {
/// One backward kernel variant (BwdTuning's knobs resolved).
struct Variant {
  bool decoupled = true;  // warpgroups split dQ by keys (bwd_traits.hpp)
  int block_m = 64;       // 128: D = 64 only, coupled; 80: D = 128 only, coupled (kDqTrans)
  bool dq_bulk = false;   // dQ by bulk reduce-add (else float2 atomics)
  bool dq_first = false;  // FA3 GEMM order (kDqFirst)
  int stat = 0;           // lse2 / delta source (kStat; 3 = 2 with the late refill, +pfl)
  bool kv_regs = false;   // K / V as register A fragments (kKVRegs; D = 64, BM = 64, stat 0)
  bool dq_vec4 = false;   // float4 dQ workspace layout: float4 atomics / smem stores (kDqVec4)
  bool item_rot = false;  // per-CTA rotated item order (kItemRotate)
  uint32_t wait_ns = 0;   // producer's try_wait suspend hint, ns (kProducerWaitNs; 0 = none)
  bool dv_early = false;  // dV issued before the dS^T stretch (kDvEarly; needs dq_first)
  bool prep_vec = false;  // 16-byte preprocess where eligible (kPrepVecDefault, +vpp)
  bool conv_vec = false;  // 16-byte dQ conversion where eligible (kConvVecDefault, +vcv)
  bool idiet = false;     // item loop without per-item divisions (kIdiet, +idiet; see run_backward)
  bool tmakv = false;     // dK / dV epilogue through smem + TMA stores (kTmaKV, +tmakv)
};

/// The vectorised preprocess (bwd_kernel.cuh 1v) can read out / dout: d-stride 1, every row
/// start 16-byte aligned (pointer and the b / s / h strides in 8-element units).
inline bool rows16(const void* ptr, const Strides4& st) {
  return st.d == 1 && reinterpret_cast<uintptr_t>(ptr) % 16 == 0 && st.b % 8 == 0 &&
         st.s % 8 == 0 && st.h % 8 == 0;
}
inline bool prep_vec_ok(const Params& p) {
  return rows16(p.out, p.out_st) && rows16(p.dout, p.dout_st);
}
/// The vectorised dQ conversion (3v): dq rows as above, and the float4 workspace layout.
inline bool convert_vec_ok(const Params& p, bool dq_vec4) {
  return dq_vec4 && rows16(p.dq, p.dq_st);
}

/// ATTNKIT_FLASH3_BWD_MOD_BM64=1: the D = 64 score-mod backward on 64-row query blocks (A/B).
inline bool mod_bm64() {
  const char* e = std::getenv("ATTNKIT_FLASH3_BWD_MOD_BM64");
  return e != nullptr && e[0] == '1';
}
/// ATTNKIT_FLASH3_BWD_VARLEN_MOD=1: a varlen backward without score modifications on the kMod
/// kernel, as with them (session 25's A/B; read per call).
inline bool varlen_on_mod() {
  const char* e = std::getenv("ATTNKIT_FLASH3_BWD_VARLEN_MOD");
  return e != nullptr && e[0] == '1';
}
/// ATTNKIT_FLASH3_BWD_DET_ROT=1: the deterministic non-causal backward with its rotated item
/// order (opt-in; tests and A/B; read per call). Off by default since the end of session 26: its
/// wrap waits on a CTA launched later, which only co-residency of a head's key blocks makes safe,
/// and another kernel sharing the SMs (a second stream, NCCL, MPS limits) can break that; it
/// measured no faster (non-causal 0.63-0.66 of the atomic kernel with it, 0.60-0.66 without).
inline bool det_rot_allowed() {
  const char* e = std::getenv("ATTNKIT_FLASH3_BWD_DET_ROT");
  return e != nullptr && e[0] == '1';
}
/// ATTNKIT_FLASH3_BWD_DET_DEFER=0 / 1: the deterministic backward hands a dQ tile's turn on right
/// after its adds (0) or at the next item's dQ stage (1; BwdArgs::det_defer). Read per call.
/// Default by D from session 26 call 2 (H200, one round each, TFLOP/s at S 1k / 4k / 16k):
/// D 128 non-causal 259 / 302 / 317 -> 268 / 324 / 342 deferred, causal 208 / 289 / 323 -> 205 /
/// 295 / 340; D 64 non-causal 243 / 282 / 294 -> 231 / 276 / 291, causal 191 / 270 / 300 -> 184
/// / 270 / 315: deferred at D 128, immediate at D 64.
inline bool det_defer(int d) {
  const char* e = std::getenv("ATTNKIT_FLASH3_BWD_DET_DEFER");
  if (e != nullptr && (e[0] == '0' || e[0] == '1')) return e[0] == '1';
  return d == 128;
}

/// ATTNKIT_FLASH3_BWD_D256_LAYOUT=split (or 0): the D 256 backward's plain calls on the split
/// layout instead of the RS layout (session 29's A/B; read per call); bwd_tuning().d256_layout
/// (>= 0) overrides it.
inline bool d256_split_layout() {
  if (bwd_tuning().d256_layout >= 0) return bwd_tuning().d256_layout == 0;
  const char* e = std::getenv("ATTNKIT_FLASH3_BWD_D256_LAYOUT");
  return e != nullptr && (std::strcmp(e, "split") == 0 || std::strcmp(e, "0") == 0);
}

/// ATTNKIT_FLASH3_BWD_CONV_ROWS=0 (session 31; read per call): the dQ conversion by kernel 3
/// (bwd_dq_convert_kernel) where the coalesced 3w (bwd_dq_convert_rows_kernel) is eligible, for
/// A/B measurements.
inline bool conv_rows_enabled() {
  const char* e = std::getenv("ATTNKIT_FLASH3_BWD_CONV_ROWS");
  return e == nullptr || e[0] != '0';
}

/// Session 24: softcap, ALiBi and the sliding window into BwdArgs, as the forward encodes them
/// (m = seq_bounds.hpp score_mod_of(p), launch.cuh set_score_mod); read by kMod kernels only.
inline void set_bwd_score_mod(const Params& p, const ScoreMod& m, BwdArgs& a) {
  set_bounds(a, m.bounds);
  a.softcap_k = m.softcap_k;
  a.scale_log2 = static_cast<float>(m.units * M_LOG2E);  // (`scale` stays the call's: dK, dQ)
  a.inv_scale_log2 = 1.f / a.scale_log2;
  if (p.alibi != nullptr) {
    a.alibi = p.alibi;
    a.alibi_sb = p.alibi_st_b;
    a.alibi_sh = p.alibi_st_h;
    a.alibi_mul = -1.f / m.units;
  }
  set_mask(p, m.units, a);  // (kModMask, bwd_kernel_d256 kMod; as the forward encodes it)
  set_dropout(p, a);        // (kModDropout, kModMaskDropout)
}

/// 3w (bwd_dq_convert_rows_kernel): the dQ conversion of both launchers where convert_vec_ok.
template <int D, int kDqN, bool BF16, bool kVarlen>
inline void launch_convert_rows(const Params& p, int64_t sq_pad, const float* dq_acc,
                                cudaStream_t stream) {
  const dim3 grid(static_cast<unsigned>((p.seqlen_q + 63) / 64 * (D / 64)),
                  static_cast<unsigned>(p.heads_q), static_cast<unsigned>(p.batch));
  bwd_dq_convert_rows_kernel<D, kDqN, BF16, kVarlen>
      <<<grid, 256, 0, stream>>>(p, static_cast<int>(sq_pad), dq_acc);
  ATTNKIT_CUDA_CHECK_LAUNCH();
}

/// Varlen (both launchers): the packed sequences' offsets and each sequence's causal / window
/// encoding (m = score_mod_of(p)), from which the kernels derive every sequence's bounds.
inline void set_bwd_varlen(const Params& p, const ScoreMod& m, BwdArgs& a) {
  a.cu_q = p.cu_seqlens_q;
  a.cu_k = p.cu_seqlens_k;
  a.causal_kind = m.causal_kind;
  a.win_left = m.win_left;
  a.win_right = m.win_right;
}

/// Head dims 96 / 192 (session 38) on the D = 128 / 256 kernels (backend.cpp). The Q / dO / K / V
/// tensor maps take the call's head dim (set_bwd_common's d), so TMA zero-fills columns head_dim
/// .. D - 1 and S, dP and every gradient's extra columns come out 0; the preprocess sums O o dO
/// over head_dim columns (zeroing D-wide dQ workspace rows) and the dQ conversions write head_dim
/// columns (3v, which assumes D, is skipped). dK / dV: the TMA epilogue (kTmaKV: plain D 96 calls
/// as D 128's, at every length since session 45) stores through maps of head_dim columns, which
/// clip the rest; the register epilogues store D-column rows, so for them dK / dV go to contiguous
/// [B, Sk, Hkv, D] scratch that bwd_narrow_kv_copy_kernel copies out (the main kernels stay as
/// they are). The copy moves 2 x B x Sk x Hkv x (D + head_dim) x 2 bytes: ~290-310 MB at 16k
/// tokens, hidden 2048, ~75 us at 4 TB/s; session 38 call 2 timed its first form (a warp per row)
/// at ~150 us, ~12 % of a D 96 1k call (bench/results/2026-11-29-h200-flash3-s38.md).
/// Varlen (session 38): one packed [total_k, Hkv, D] scratch tensor each, b stride 0 (as the
/// kernels address a packed dk / dv).
/// The key rows of dK / dV as [nb, sk]: (batch, seqlen_k), varlen (1, total_k).
inline int64_t narrow_kv_batches(const Params& p) {
  return p.varlen ? 1 : p.batch;
}
inline int64_t narrow_kv_keys(const Params& p) {
  return p.varlen ? p.total_k : p.seqlen_k;
}
/// Scratch floats for dK and dV (0 when head_dim == D), a whole number of 256-byte runs.
template <int D>
inline size_t narrow_kv_floats(const Params& p) {
  if (p.head_dim >= D) return 0;
  const size_t elems = static_cast<size_t>(narrow_kv_batches(p)) *
                       static_cast<size_t>(narrow_kv_keys(p)) * static_cast<size_t>(p.heads_kv) *
                       D;            // 16-bit, each of dK and dV
  return (elems + 127) / 128 * 128;  // 2 x elems x 2 B in 256-byte runs
}
/// p with dk / dv pointed at the scratch (dK at `scratch`, dV after it, [B, Sk, Hkv, D] each).
template <int D>
inline Params narrow_kv_params(const Params& p, float* scratch) {
  Params n = p;
  const int64_t hd = p.heads_kv * D, sk = narrow_kv_keys(p);
  const Strides4 st{p.varlen ? 0 : sk * hd, hd, D, 1};
  uint16_t* base = reinterpret_cast<uint16_t*>(scratch);
  n.dk = base;
  n.dv = base + narrow_kv_batches(p) * sk * hd;
  n.dk_st = st;
  n.dv_st = st;
  return n;
}
/// The copy of dK / dV out of narrow_kv_params' scratch into p.dk / p.dv (head_dim columns).
template <int D>
inline void launch_narrow_kv_copy(const Params& p_call, const float* scratch, cudaStream_t stream) {
  Params p = p_call;  // (the kernel's row count: batch x seqlen_k x heads_kv)
  p.batch = narrow_kv_batches(p_call);
  p.seqlen_k = narrow_kv_keys(p_call);
  const int64_t rows = p.batch * p.seqlen_k * p.heads_kv;
  if (rows == 0) return;
  const auto go = [&](auto unit) {
    using Unit = decltype(unit);
    const int64_t units = rows * (p.head_dim * 2 / static_cast<int64_t>(sizeof(Unit)));
    bwd_narrow_kv_copy_kernel<D, Unit>
        <<<dim3(static_cast<unsigned>((units + 255) / 256), 2), 256, 0, stream>>>(
            p, reinterpret_cast<const Unit*>(scratch));
    ATTNKIT_CUDA_CHECK_LAUNCH();
  };
  if (rows16(p.dk, p.dk_st) && rows16(p.dv, p.dv_st))
    go(uint4{});
  else
    go(uint32_t{});
}

/// The backward workspace's row geometry, alike in both launchers (launch_backward,
/// launch_backward_d256). Query rows are padded to whole block_m-row blocks (at least one), so the
/// kernels' lse2 / delta / dQ-workspace accesses need no bounds checks. Varlen: each sequence is
/// padded to kVarlenPadRows inside each q head's sq_pad rows (varlen_ws_row0).
struct BwdRows {
  int64_t m_blocks;   // query blocks of Params::seqlen_q (varlen: the longest sequence's)
  int64_t sq_pad;     // workspace rows per (batch, q head); varlen: per q head, all sequences
  int64_t grid_rows;  // rows the preprocess visits per sequence (the longest one's, padded)
  int64_t bh;         // (batch, q head) pairs; varlen: q heads (the batch is packed)
  size_t rows;        // bh * sq_pad: the lse2 / delta length, and dq_acc's rows
};
template <int64_t block_m, bool kVarlen>
inline BwdRows bwd_rows(const Params& p) {
  static_assert(!kVarlen || kVarlenPadRows % block_m == 0,
                "varlen: a query block inside one padded run");
  BwdRows r;
  r.m_blocks = p.seqlen_q > 0 ? (p.seqlen_q + block_m - 1) / block_m : 1;
  constexpr int64_t kPadV = kVarlenPadRows;
  r.sq_pad =
      kVarlen ? (p.total_q + kPadV * p.batch + kPadV - 1) / kPadV * kPadV : r.m_blocks * block_m;
  r.grid_rows = kVarlen ? (std::max<int64_t>(p.seqlen_q, 1) + kPadV - 1) / kPadV * kPadV : r.sq_pad;
  r.bh = kVarlen ? p.heads_q : p.batch * p.heads_q;
  r.rows = static_cast<size_t>(r.bh) * static_cast<size_t>(r.sq_pad);
  return r;
}

/// The BwdArgs fields both backward launchers (launch_backward, launch_backward_d256) fill alike:
/// the Q / dO / K / V tensor maps (boxes of block_m query / block_n key rows) over mb batches of
/// sq query and sk key rows (varlen: one batch of the packed totals; Sq = 0: K stands in for Q
/// and dO, maps that are never read but must be encodable), the workspace pointers, dK / dV and
/// their strides, lengths, heads, the causal bound, the query block count and the scales.
inline void set_bwd_common(const Params& p, int d, int block_m, int block_n, bool bf16, int64_t mb,
                           int64_t sq, int64_t sk, int64_t sq_pad, float* lse2, float* delta,
                           float* dq_acc, BwdArgs& a) {
  const bool has_q = sq > 0;
  const int64_t rows_q = has_q ? sq : sk, heads_q = has_q ? p.heads_q : p.heads_kv;
  make_map(&a.tma_q, has_q ? p.q : p.k, has_q ? p.q_st : p.k_st, mb, rows_q, heads_q, d, block_m,
           bf16, "q", "flash3 backward");
  make_map(&a.tma_do, has_q ? p.dout : p.k, has_q ? p.dout_st : p.k_st, mb, rows_q, heads_q, d,
           block_m, bf16, "dout", "flash3 backward");
  make_map(&a.tma_k, p.k, p.k_st, mb, sk, p.heads_kv, d, block_n, bf16, "k", "flash3 backward");
  make_map(&a.tma_v, p.v, p.v_st, mb, sk, p.heads_kv, d, block_n, bf16, "v", "flash3 backward");
  a.lse2 = lse2;
  a.delta = delta;
  a.dq_acc = dq_acc;
  a.dk = p.dk;
  a.dk_sb = p.dk_st.b, a.dk_ss = p.dk_st.s, a.dk_sh = p.dk_st.h;
  a.dv = p.dv;
  a.dv_sb = p.dv_st.b, a.dv_ss = p.dv_st.s, a.dv_sh = p.dv_st.h;
  a.seqlen_q = static_cast<int>(p.seqlen_q);
  a.seqlen_k = static_cast<int>(p.seqlen_k);
  a.sq_pad = static_cast<int>(sq_pad);
  a.heads_q = static_cast<int>(p.heads_q);
  a.group = static_cast<int>(p.group);
  a.causal = p.causal != Causal::none;
  a.causal_offset =
      p.causal == Causal::bottom_right ? static_cast<int>(p.seqlen_k - p.seqlen_q) : 0;
  // (Sq = 0: no query block, so no CTA has an item.)
  a.num_m_blocks = static_cast<int>((p.seqlen_q + block_m - 1) / block_m);
  a.scale = p.scale;
  a.scale_log2 = p.scale * static_cast<float>(M_LOG2E);
}

/// kTmaKV: the dK / dV maps are encoded first; where either cannot be (store_map_ok: the backend
/// itself asks only 4-byte alignment of dK / dV; or the driver refuses it), the same kernel
/// without kTmaKV runs (never a wrong store). kVarlen (session 25): a packed call
/// (bwd_kernel.cuh kVarlen; the workspace padded per sequence, varlen_ws_row0).
template <int D, bool BF16, bool kDecoupled, int BM, bool kDqFirst, int kStat, bool kKVRegs = false,
          bool kDvEarly = false, bool kIdiet = false, bool kTmaKV = false, int kMod = 0,
          bool kVarlen = false, bool kDet = false>
void launch_backward(const Params& p, const Variant& v) {
  using Tr = bwd::BwdTraits<D, kDecoupled, BM>;
  static_assert(!kVarlen || !kTmaKV, "flash3 varlen backward: no TMA dK / dV stores");
  // (Reset first: the empty-call and Sk = 0 returns below must not leave the last launch's value.)
  last_backward_order_sections() = 0;
  last_backward_early_conv() = 0;
  if (p.batch == 0 || p.heads_q == 0) return;
  CUtensorMap kv_maps[2] = {};  // kTmaKV: dK, dV (box 64 x 16 key rows)
  if constexpr (kTmaKV) {
    // Maps of the call's head dim: a head dim of 96 stores columns < 96 of each 128-wide row
    // (TMA clips the rest), so no scratch.
    const int d = static_cast<int>(p.head_dim);
    const bool ok = p.seqlen_k > 0 &&
                    store_map_ok(p.dk, p.dk_st, p.batch, p.seqlen_k, p.heads_kv) &&
                    store_map_ok(p.dv, p.dv_st, p.batch, p.seqlen_k, p.heads_kv) &&
                    make_map_nothrow(&kv_maps[0], p.dk, p.dk_st, p.batch, p.seqlen_k, p.heads_kv, d,
                                     16, BF16) == 0 &&
                    make_map_nothrow(&kv_maps[1], p.dv, p.dv_st, p.batch, p.seqlen_k, p.heads_kv, d,
                                     16, BF16) == 0;
    if (!ok)
      return launch_backward<D, BF16, kDecoupled, BM, kDqFirst, kStat, kKVRegs, kDvEarly, kIdiet,
                             false>(p, v);
  }
  auto stream = static_cast<cudaStream_t>(p.stream);
  // (bwd_rows: the padded query rows and the preprocess grid, as launch_backward_d256's)
  const bwd::BwdRows geo = bwd::bwd_rows<Tr::kBlockM, kVarlen>(p);
  const int64_t m_blocks = geo.m_blocks, sq_pad = geo.sq_pad, grid_rows = geo.grid_rows,
                bh = geo.bh;
  // ATTNKIT_FLASH3_BWD_EARLY_CONV (bwd_traits.hpp, bwd_early_conv.cuh): this call's dQ
  // conversion (3t, or 3w where 3w is the pick below) starts as a programmatic dependent of the
  // main kernel and converts each (batch, kv head) once its done counter is full. Only D 128's
  // default structures (kEarlyConv: dense, no score mods, not deterministic) with the 1v
  // preprocess (it zeroes the counters), REDs (not the bulk dQ path) and Sq, Sk > 0 (Sk = 0: no
  // main kernel bumps the counters).
  constexpr bool kEarlyConv =
      bwd_early_conv_kernel(D, kMod, kVarlen, kDet, kIdiet, kTmaKV, kDecoupled, kDqFirst);
  bool early = false;
  if constexpr (kEarlyConv) {
    const bool conv_3v = v.conv_vec && p.head_dim == D && convert_vec_ok(p, v.dq_vec4);
    const bool conv_3w = !conv_3v && conv_rows_enabled() && convert_vec_ok(p, v.dq_vec4);
    early = v.prep_vec && prep_vec_ok(p) && !v.dq_bulk && p.seqlen_q > 0 && p.seqlen_k > 0 &&
            (Tr::kDqTrans || conv_3w);
  }
  last_backward_early_conv() = early ? 1 : 0;
  // Workspace (fp32): lse2 [bh, sq_pad] | delta [bh, sq_pad] | dq_acc [bh, sq_pad, D]; kDet
  // also the turn counters, int [bh, m_blocks, 2] (BwdArgs::dq_sem), kEarlyConv the done
  // counters, int [bh] (the same place: never both); a head dim below D also the dK / dV scratch
  // (narrow_kv_floats, 256-byte aligned).
  const size_t rows = geo.rows;
  const size_t shift = static_cast<size_t>(bwd_tuning().dq_ws_shift / 256 * 256) / sizeof(float);
  const size_t sems = kDet         ? static_cast<size_t>(bh) * static_cast<size_t>(m_blocks) * 2
                      : kEarlyConv ? static_cast<size_t>(bh)
                                   : 0;
  const size_t head = (rows * (2 + static_cast<size_t>(D)) + shift + sems + 63) / 64 * 64;
  const size_t narrow_floats = kTmaKV ? 0 : narrow_kv_floats<D>(p);
  float* ws = static_cast<float*>(
      cuda::workspace((head + narrow_floats) * sizeof(float), p.device.index, stream));
  float* lse2 = ws;
  float* delta = ws + rows;
  float* dq_acc = ws + 2 * rows + shift;
  int* dq_sem = kDet ? reinterpret_cast<int*>(dq_acc + rows * D) : nullptr;
  int* done = early ? reinterpret_cast<int*>(dq_acc + rows * D) : nullptr;  // (kEarlyConv)
  // The register epilogue of a head dim below D: dK / dV into the scratch (narrow_kv_params).
  const bool narrow = narrow_floats != 0;
  const Params pk = narrow ? narrow_kv_params<D>(p, ws + head) : p;
  if constexpr (kDet) ATTNKIT_CUDA_CHECK(cudaMemsetAsync(dq_sem, 0, sems * sizeof(int), stream));

  if (v.prep_vec && prep_vec_ok(p)) {
    constexpr int kRows = 256 / (D / 8);  // rows per block (sq_pad: a multiple of 64 or 80)
    static_assert(Tr::kBlockM % kRows == 0, "whole preprocess blocks per query block");
    const dim3 grid(static_cast<unsigned>(grid_rows / kRows), static_cast<unsigned>(p.heads_q),
                    static_cast<unsigned>(p.batch));
    if (early) {  // (1v that also zeroes the done counters)
      if constexpr (kEarlyConv)
        bwd::bwd_preprocess_vec_ec_kernel<D, BF16>
            <<<grid, 256, 0, stream>>>(p, static_cast<int>(sq_pad), lse2, delta, dq_acc, done);
    } else {
      bwd::bwd_preprocess_vec_kernel<D, BF16, kVarlen>
          <<<grid, 256, 0, stream>>>(p, static_cast<int>(sq_pad), lse2, delta, dq_acc);
    }
    ATTNKIT_CUDA_CHECK_LAUNCH();
  } else {
    const dim3 grid(static_cast<unsigned>(grid_rows / 8), static_cast<unsigned>(p.heads_q),
                    static_cast<unsigned>(p.batch));
    bwd::bwd_preprocess_kernel<BF16, kVarlen>
        <<<grid, 256, 0, stream>>>(p, static_cast<int>(sq_pad), lse2, delta, dq_acc, D);
    ATTNKIT_CUDA_CHECK_LAUNCH();
  }

  if (p.seqlen_k > 0) {
    bwd::BwdArgs a{};
    // Varlen: maps over the packed [1, total, H, D] tensors. The maps' D is the call's (96 on
    // this D = 128 kernel: narrow_kv_floats).
    const int64_t mb = kVarlen ? 1 : p.batch;
    const int64_t sq = kVarlen ? p.total_q : p.seqlen_q, sk = kVarlen ? p.total_k : p.seqlen_k;
    set_bwd_common(pk, static_cast<int>(p.head_dim), Tr::kBlockM, Tr::kBlockN, BF16, mb, sq, sk,
                   sq_pad, lse2, delta, dq_acc, a);
    a.dq_bulk = v.dq_bulk ? 1 : 0;
    a.dq_vec4 = v.dq_vec4 ? 1 : 0;
    a.item_rot = v.item_rot ? 1 : 0;
    a.wait_ns = v.wait_ns;
    a.tma_dk = kv_maps[0];
    a.tma_dv = kv_maps[1];
    if constexpr (kEarlyConv) a.dq_sem = done;  // (the done counters; nullptr: not early)
    if constexpr (kMod != 0 || kVarlen) {
      const ScoreMod m = score_mod_of(p);
      if constexpr (kMod != 0) set_bwd_score_mod(p, m, a);
      if constexpr (kVarlen) set_bwd_varlen(p, m, a);
    }

    if constexpr (kDet) {
      // bwd_kernel.cuh kDet: the rotated item order (non-causal) waits across the wrap from key
      // block N - 1 to key block 0, so only while all N key blocks of a (kv head, batch) fit on
      // the device at once (one CTA per SM: Tr::kSmemBytes > half an SM's shared memory).
      static_assert(2 * Tr::kSmemBytes > 228 * 1024, "kDet's residency bound: one CTA per SM");
      const int64_t nkb = (p.seqlen_k + Tr::kBlockN - 1) / Tr::kBlockN;
      a.dq_sem = dq_sem;
      a.det_defer = det_defer(D) ? 1 : 0;
      a.item_rot =
          !a.causal && det_rot_allowed() && nkb <= cuda::device_info(p.device.index).sm_count ? 1
                                                                                              : 0;
    }

    // The sectioned CTA order (session 50; bwd_kernel.cuh kOrd, bwd_order_rule.hpp): sections of
    // 2^sh kv heads of one batch, 2^sh the largest power of two <= the rule's sections that divides
    // Hkv (and keeps N << sh a valid grid x); the key-block count N stays gridDim.x >> sh in the
    // kernel. Only D 128's TMA-epilogue item-diet structures (the defaults, 64 / 80 rows, each
    // lse2 / delta source) have the kOrd twin: every other kernel (D 64, score mods, varlen,
    // deterministic, the other structures) runs the hardware's order and reports 0. a.order_sec
    // stays 0 (the D 256 kernel's field).
    constexpr bool kOrdTwin = D == 128 && kMod == 0 && !kVarlen && !kDet && kIdiet && kTmaKV;
    const int64_t nkb = (p.seqlen_k + Tr::kBlockN - 1) / Tr::kBlockN;
    int sh = 0;
    if constexpr (kOrdTwin)
      sh = bwd_order_shift(bwd_order_sections(bwd_tuning().order_sections, a.causal != 0, D,
                                              p.seqlen_q, p.seqlen_k, p.group),
                           p.heads_kv, nkb);
    a.order_shift = sh;
    last_backward_order_sections() = sh > 0 ? 1 << sh : 0;

    // kModMaskSoftcap: its 1 - t^2 words past the barriers (bwd_kernel.cuh; + 1 KB alignment).
    constexpr int kSmem = kMod == bwd::kModMaskSoftcap
                              ? bwd::bwd_cap_f_offset<Tr>() + bwd::bwd_cap_f_bytes<Tr>(kMod) + 1024
                              : Tr::kSmemBytes;
    static_assert(kSmem <= 227 * 1024, "shared memory per CTA");
    const dim3 grid(static_cast<unsigned>(nkb << sh), static_cast<unsigned>(p.heads_kv >> sh),
                    static_cast<unsigned>(p.batch));
    const auto go = [&]<bool kOrd>() {
      constexpr auto kernel = &bwd::bwd_kernel<D, BF16, kDecoupled, BM, kDqFirst, kStat, kKVRegs,
                                               kDvEarly, kIdiet, kTmaKV, kMod, kVarlen, kDet, kOrd>;
      opt_in_smem<kernel>(kSmem);
      kernel<<<grid, Tr::kThreads, kSmem, stream>>>(a);
    };
    if (sh > 0) {
      if constexpr (kOrdTwin) go.template operator()<true>();
    } else {
      go.template operator()<false>();
    }
    ATTNKIT_CUDA_CHECK_LAUNCH();
  }

  // kEarlyConv: (b, kv head g)'s conversion waits for kConsumerWGs x N bumps (N key blocks).
  [[maybe_unused]] const int expected =
      Tr::kConsumerWGs * static_cast<int>((p.seqlen_k + Tr::kBlockN - 1) / Tr::kBlockN);
  if constexpr (Tr::kDqTrans) {
    // The 80-row kernel's workspace order (3t, bwd_dq_convert_m80_kernel).
    if (early) {
      if constexpr (kEarlyConv) {
        const dim3 grid(static_cast<unsigned>(m_blocks), static_cast<unsigned>(p.heads_q),
                        static_cast<unsigned>(p.batch));
        cuda::launch_dependent(bwd::bwd_dq_convert_m80_ec_kernel<D, BF16>, grid, dim3(256), 0,
                               stream, true, p, static_cast<int>(sq_pad),
                               static_cast<const float*>(dq_acc), rows16(p.dq, p.dq_st) ? 1 : 0,
                               static_cast<const int*>(done), expected);
      }
    } else if (p.seqlen_q > 0) {
      const dim3 grid(static_cast<unsigned>(m_blocks), static_cast<unsigned>(p.heads_q),
                      static_cast<unsigned>(p.batch));
      bwd::bwd_dq_convert_m80_kernel<D, BF16>
          <<<grid, 256, 0, stream>>>(p, static_cast<int>(sq_pad), dq_acc, rows16(p.dq, p.dq_st));
      ATTNKIT_CUDA_CHECK_LAUNCH();
    }
    if (narrow) launch_narrow_kv_copy<D>(p, ws + head, stream);
    return;
  }
  // (3v writes D columns: not for a head dim below D.)
  if (p.seqlen_q > 0 && v.conv_vec && p.head_dim == D && convert_vec_ok(p, v.dq_vec4)) {
    const dim3 grid(static_cast<unsigned>((p.seqlen_q + 63) / 64 * (D / 64)),
                    static_cast<unsigned>(p.heads_q), static_cast<unsigned>(p.batch));
    bwd::bwd_dq_convert_vec_kernel<D, Tr::kDqN, BF16, kVarlen>
        <<<grid, 256, 0, stream>>>(p, static_cast<int>(sq_pad), dq_acc);
    ATTNKIT_CUDA_CHECK_LAUNCH();
  } else if (early) {  // (3w, waiting per head: bwd_early_conv.cuh)
    if constexpr (kEarlyConv) {
      const dim3 grid(static_cast<unsigned>((p.seqlen_q + 63) / 64 * (D / 64)),
                      static_cast<unsigned>(p.heads_q), static_cast<unsigned>(p.batch));
      cuda::launch_dependent(bwd::bwd_dq_convert_rows_ec_kernel<D, Tr::kDqN, BF16>, grid, dim3(256),
                             0, stream, true, p, static_cast<int>(sq_pad),
                             static_cast<const float*>(dq_acc), static_cast<const int*>(done),
                             expected);
    }
  } else if (p.seqlen_q > 0 && conv_rows_enabled() && convert_vec_ok(p, v.dq_vec4)) {
    launch_convert_rows<D, Tr::kDqN, BF16, kVarlen>(p, sq_pad, dq_acc, stream);  // (3w)
  } else if (p.seqlen_q > 0) {
    const dim3 grid(static_cast<unsigned>((p.seqlen_q + 7) / 8), static_cast<unsigned>(p.heads_q),
                    static_cast<unsigned>(p.batch));
    bwd::bwd_dq_convert_kernel<D, Tr::kDqN, BF16, kVarlen>
        <<<grid, 256, 0, stream>>>(p, static_cast<int>(sq_pad), dq_acc, v.dq_vec4 ? 1 : 0);
    ATTNKIT_CUDA_CHECK_LAUNCH();
  }
  if (narrow) launch_narrow_kv_copy<D>(p, ws + head, stream);
}

}  // namespace bwd

namespace bwd {

/// Parses env ATTNKIT_FLASH3_BWD_VARIANT (a measurement switch, read once): entries
/// "D:name" separated by ';' or spaces, name = the A/B tool's (bench/gpu/flash3_bwd_ab.cu):
/// {decoupled|coupled|m128|m80}+{bulk|atomic}[+dqf][+shfl|+pf|+pfl][+kv][+v4][+rot][+sl][+dve]
/// [+vpp][+vcv][+idiet][+tmakv].
/// Fills `v` for head dim d; false when d is not listed (or the name does not parse).
inline bool env_variant(int d, Variant& v) {
  const char* e = std::getenv("ATTNKIT_FLASH3_BWD_VARIANT");
  if (e == nullptr) return false;
  const std::string all(e);
  const std::string key = std::to_string(d) + ":";
  size_t pos = 0;
  while (pos < all.size()) {
    const size_t end = all.find_first_of("; ", pos) == std::string::npos
                           ? all.size()
                           : all.find_first_of("; ", pos);
    const std::string ent = all.substr(pos, end - pos);
    pos = end + 1;
    if (ent.rfind(key, 0) != 0) continue;
    Variant x;
    std::string name = ent.substr(key.size()) + "+";
    size_t p0 = 0;
    for (int i = 0; p0 < name.size(); ++i) {
      const size_t p1 = name.find('+', p0);
      const std::string tok = name.substr(p0, p1 - p0);
      p0 = p1 + 1;
      if (i == 0 && tok == "decoupled")
        x.decoupled = true;
      else if (i == 0 && tok == "coupled")
        x.decoupled = false;
      else if (i == 0 && tok == "m128")
        x.decoupled = false, x.block_m = 128;
      else if (i == 0 && tok == "m80")
        x.decoupled = false, x.block_m = 80;
      else if (i == 1 && (tok == "bulk" || tok == "atomic"))
        x.dq_bulk = tok == "bulk";
      else if (i >= 2 && tok == "dqf")
        x.dq_first = true;
      else if (i >= 2 && tok == "shfl")
        x.stat = 1;
      else if (i >= 2 && tok == "pf")
        x.stat = 2;
      else if (i >= 2 && tok == "pfl")
        x.stat = 3;
      else if (i >= 2 && tok == "kv")
        x.kv_regs = true;
      else if (i >= 2 && tok == "v4")
        x.dq_vec4 = true;
      else if (i >= 2 && tok == "rot")
        x.item_rot = true;
      else if (i >= 2 && tok == "sl")
        x.wait_ns = kProducerWaitNs;
      else if (i >= 2 && tok == "dve")
        x.dv_early = true;
      else if (i >= 2 && tok == "vpp")
        x.prep_vec = true;
      else if (i >= 2 && tok == "vcv")
        x.conv_vec = true;
      else if (i >= 2 && tok == "idiet")
        x.idiet = true;
      else if (i >= 2 && tok == "tmakv")
        x.tmakv = true;
      else
        return false;
    }
    v = x;
    return true;
  }
  return false;
}

/// The measured default per call (session 3 run 1, H200, same-run A/B medians, TFLOP/s, S 1k /
/// 4k / 16k; bench/notes/flash3-bwd-s3.md):
///   D = 64 non-causal: 128-row blocks + bulk + dQ-first 236 / 297 / 316 vs the old default
///     (decoupled + atomics) 206 / 253 / 267;
///   D = 64 causal: decoupled + atomics stays (274 / 326 at 4k / 16k; 128-row blocks 261 / 315:
///     the coupled warpgroups wait for each other on diagonal blocks). Run 2 confirmed all three
///     (same A/B: 297 / 316, 274 / 325, 395-429 / 432-447). K / V in registers (kKVRegs) is a
///     knob only: written after run 2, never run on a GPU (no device time left).
///   D = 128: coupled + atomics + dQ-first 341 / 410 / 439, causal 351 / 432, vs decoupled +
///     bulk 305 / 383 / 404, causal 352 / 399.
/// Session 4 run 2 (H200, kSharedBase on, same-process A/B, S 1k / 4k / 16k, causal 4k / 16k;
/// bench/results/2026-11-22-h200-flash3-bwd-s4-run2.md), each change also up in run 1 or the
/// merged run:
///   D = 64 non-causal: atomics instead of the bulk reduce: 253.1 / 318.0 / 340.4 vs 249.7 /
///     313.8 / 338.1 (run 1 with +rot: +0.7 to +1.9 %);
///   D = 64 causal: + K / V in registers (kKVRegs): 286.3 / 340.4 vs 279.4 / 335.8 (run 1 +2.8 /
///     +1.4 %, merged run +2.4 / +1.9 %);
///   D = 128: + lse2 / delta prefetched into smem (kStat = 2; its reads are LDS since kSharedBase):
///     347.1 / 429.4 / 451.2, causal 380.3 / 452.7 vs the same kernel without 335.7 / 414.4 /
///     448.2, causal 364.6 / 435.9 (ncu: the FFMA S*scale - lse2 waited on the lse2 LDG, 7 % of
///     the warp samples).
/// Session 5 run 1 (H100, kMaskHoist new vs @old, same call): the hoist made the 128-row kernel
/// +23 / +35 / +33 % (non-causal 305 / 427 / 460 vs 248 / 316 / 347), while the causal default
/// (decoupled + kv, no hoist since, bwd_traits.hpp kHoistMask) lost 6 % with it; kD64CausalM128
/// moves D = 64 causal to the non-causal kernel: run 2 +26 / +30 / +36 % at S 1k / 4k / 16k
/// (217.1 / 370.3 / 453.3 vs 171.9 / 283.8 / 332.4 TFLOP/s).
/// Session 6 (H100, same process, best of 20 runs, TFLOP/s): D = 128 +pfl (kStat 3) 383 / 495 /
/// 528 vs 370 / 495 / 492 non-causal at S 1k / 4k / 16k, causal 426 / 522 vs 420 / 490 at 4k /
/// 16k; +dve alone mixed (376 / 483 / 520, causal 424 / 507), +pfl+dve below +pfl, D = 64 128-row
/// +dve below the default (bench/results/2026-11-22-h100-flash3-bwd-s6-f3bwd7.md).
/// seqlen_k: the call's key count (0: not known, e.g. the tests' look at the per-D defaults), for
/// the length-dependent choices (D = 128 causal 80 rows from kM80MinSkCausal keys).
inline Variant default_variant(int d, bool causal, int64_t seqlen_k = 0) {
  Variant v;
  if (d == 64 && (!causal || kD64CausalM128)) {
    v.decoupled = false, v.block_m = 128, v.dq_bulk = false, v.dq_first = true;
    // lse2 / delta prefetched one item ahead (kStat 2) since session 43: ncu had 7.7 % of the
    // warp samples on the in-item staging's STS waiting for its LDG; H200, flash3_bwd_modes.sh,
    // 6 rounds (as variant default+pf; default-pf is the old load now): +1.8 / +2.1 % at 1k
    // (non-causal / causal), +2.0 % at 4k causal, +0.5 / +1.2 % at 16k; 4k non-causal mixed
    // (-1.1 %: 4 of 6 prefetch processes below 5 of 6 default ones, 2 above all).
    v.stat = 2;
  } else if (d == 64) {
    v.decoupled = true, v.dq_bulk = false, v.kv_regs = true;
  } else {
    // D = 128: +pfl (kStat 3, the lse2 / delta refill after the dS^T fence) since session 6.
    v.decoupled = false, v.dq_bulk = false, v.dq_first = true, v.stat = d == 128 ? 3 : 2;
    // 80-row query blocks (kDqTrans, session 44; FA3's non-causal D 128 tiling) non-causal, and
    // causal from kM80MinSkCausal keys. H200, flash3_bwd_modes.sh, 6 rounds (default+m80 /
    // default): non-causal +2.4 / +2.9 / +3.4 % at S 1k / 4k / 16k, causal -1.1 % at 2k and 4k,
    // +4.0 % at 8k, +3.8 % at 16k (bench/results/2026-11-30-h200-flash3-s44-call{2,4}-m80.txt);
    // causal 4k +1.6 % in session 46 (-s46-call3-m80.txt), with the TMA dK / dV epilogue.
    if (d == 128 && (!causal || seqlen_k >= kM80MinSkCausal)) v.block_m = 80;
  }
  v.dq_vec4 = kDqVec4;
  v.item_rot = causal ? kItemRotateCausal : d == 64 ? kItemRotate64 : kItemRotate;
  v.wait_ns = kProducerWaitDefault ? kProducerWaitNs : 0;
  v.dv_early = kDvEarlyDefault && v.dq_first;
  v.prep_vec = kPrepVecDefault;
  v.conv_vec = kConvVecDefault;
  // D 64 and D 128: the item diet and the TMA dK / dV epilogue at every length since session 45
  // (before: D 64 without the diet, D 128 with the epilogue up to 1k keys; see bwd_traits.hpp).
  const bool coupled_dqf = v.dq_first && !v.decoupled && !v.dv_early;  // (both knobs' structure)
  v.idiet = (d == 64 ? kIdietDefault64 : kIdietDefault) && coupled_dqf;
  v.tmakv = (d == 64 ? kTmaKvDefault64 : kTmaKvDefault) && coupled_dqf;
  return v;
}

/// kDvEarly (v.dv_early) is instantiated only for the coupled dQ-first kernels (the defaults'
/// structures: D = 128 coupled, D = 64 128-row), without K / V in registers; kIdiet (v.idiet)
/// for the same two structures without kDvEarly (every lse2 / delta source); kTmaKV (v.tmakv) for
/// the same two structures with the item diet at D 128, without it at D 64 (kTmaKvStatIdiet in
/// run_backward), without kDvEarly (every lse2 / delta source); at D 64 with the diet too, for
/// kStat 2 only (session 45, run_backward).
template <int D, bool BF16, bool kDecoupled, int BM, bool kDqFirst, bool kDvEarly = false,
          bool kIdiet = false, bool kTmaKV = false>
void launch_stat(const Params& p, const Variant& v) {
  static_assert(!kDvEarly || (kDqFirst && !kDecoupled), "dV-early: coupled dQ-first kernels");
  static_assert(!kIdiet || (kDqFirst && !kDecoupled && !kDvEarly), "item diet: see kIdiet");
  static_assert(!kTmaKV || (kDqFirst && !kDecoupled && !kDvEarly), "TMA dK / dV: see kTmaKV");
  if constexpr (BM == 128) {
    if (v.stat == 1)
      return launch_backward<D, BF16, kDecoupled, BM, kDqFirst, 1, false, kDvEarly, kIdiet, kTmaKV>(
          p, v);
  }
  if constexpr (BM == 64 && !kDecoupled && kDqFirst) {
    if (v.stat == 3)
      return launch_backward<D, BF16, kDecoupled, BM, kDqFirst, 3, false, kDvEarly, kIdiet, kTmaKV>(
          p, v);
  }
  if (v.stat == 2 || v.stat == 3)
    return launch_backward<D, BF16, kDecoupled, BM, kDqFirst, 2, false, kDvEarly, kIdiet, kTmaKV>(
        p, v);
  if constexpr (D == 64 && BM == 64 && kDecoupled) {
    if (v.kv_regs) return launch_backward<D, BF16, true, 64, kDqFirst, 0, true>(p, v);
  }
  launch_backward<D, BF16, kDecoupled, BM, kDqFirst, 0, false, kDvEarly, kIdiet, kTmaKV>(p, v);
}

}  // namespace bwd

/// Variant per call: the measured default (bwd::default_variant), overridden by env
/// ATTNKIT_FLASH3_BWD_VARIANT (read once), then by the legacy env ATTNKIT_FLASH3_BWD_COUPLED
/// ("1", "all" or a list of D: coupled warpgroups), then by each bwd_tuning() knob that is set.
/// Combinations without a kernel fall back: block_m 128 only for D = 64 (it implies coupled);
/// block_m 80 only for D = 128 with the coupled dQ-first structure, stat 3, the item diet, atomics
/// and the float4 layout (64 otherwise; score mods, varlen and deterministic calls run 64);
/// dQ-first not with decoupled D = 128; the shuffle source only with block_m 128; K / V in
/// registers only for decoupled D = 64 with block_m 64 and stat 0 (ignored otherwise); dV-early
/// only with coupled dQ-first (ignored otherwise); the late prefetch refill (stat 3) only with
/// coupled 64- or 80-row dQ-first (stat 2 otherwise); the item diet (+idiet) only with coupled
/// dQ-first without dv_early at D = 128 (64 or 80 rows) or D = 64 with block_m 128 (ignored
/// otherwise); the TMA dK / dV epilogue (+tmakv) on the same structures with the item diet at D =
/// 128, without it at D = 64 (kTmaKvStatIdiet), or at D = 64 with 128-row blocks with the diet
/// and kStat 2 (session 45), and only where dK / dV are TMA store targets (launch_backward; the
/// STG kernel otherwise); by default on, with the diet, at D = 64 and 128.
template <int D, bool BF16>
void run_backward(const Params& p) {
  static const std::pair<bool, bwd::Variant> env = [] {
    bwd::Variant v;
    const bool set = bwd::env_variant(D, v);
    return std::make_pair(set, v);
  }();
  static const bool env_coupled = [] {
    const char* e = std::getenv("ATTNKIT_FLASH3_BWD_COUPLED");
    if (e == nullptr) return false;
    const std::string s = std::string(",") + e + ",";
    return s.find(",1,") != std::string::npos || s.find(",all,") != std::string::npos ||
           s.find("," + std::to_string(D) + ",") != std::string::npos;
  }();
  bwd::Variant v =
      env.first ? env.second : bwd::default_variant(D, p.causal != Causal::none, p.seqlen_k);
  // (The legacy env predates the 80-row kernel, which is coupled too: it keeps it.)
  if (env_coupled) v.decoupled = false, v.block_m = v.block_m == 80 ? 80 : 64;
  const BwdTuning& t = bwd_tuning();
  if (t.decoupled >= 0) v.decoupled = t.decoupled != 0;
  if (t.block_m > 0) v.block_m = t.block_m;
  if (t.dq_mode >= 0) v.dq_bulk = t.dq_mode != 0;
  if (t.dq_first >= 0) v.dq_first = t.dq_first != 0;
  if (t.stat_mode >= 0) v.stat = t.stat_mode;
  if (t.kv_regs >= 0) v.kv_regs = t.kv_regs != 0;
  if (t.dq_vec4 >= 0) v.dq_vec4 = t.dq_vec4 != 0;
  if (t.item_rot >= 0) v.item_rot = t.item_rot != 0;
  if (t.wait_ns >= 0) v.wait_ns = static_cast<uint32_t>(t.wait_ns);
  if (t.dv_early >= 0) v.dv_early = t.dv_early != 0;
  if (t.prep_vec >= 0) v.prep_vec = t.prep_vec != 0;
  if (t.conv_vec >= 0) v.conv_vec = t.conv_vec != 0;
  if (t.idiet >= 0) v.idiet = t.idiet != 0;
  if (t.tmakv >= 0) v.tmakv = t.tmakv != 0;
  // (Session 38 gave a head dim of 96 the TMA dK / dV epilogue up to 4k keys on its own, when
  // D 128 took it only up to 1k: since session 45 the default takes it at every length, and the
  // register epilogue's scratch copy (narrow_kv_floats) runs only where a knob or the env turns it
  // off or the maps cannot describe dK / dV.)
  if (D != 64 && !(D == 128 && v.block_m == 80)) v.block_m = 64;
  // 80-row blocks (bwd_traits.hpp kDqTrans) are built only as the coupled dQ-first kernel with the
  // late stat refill (kStat 3), the item diet and float4 atomics (with or without kTmaKV): any
  // other structure asked for runs on 64-row blocks.
  if (v.block_m == 80 && (v.decoupled || !v.dq_first || v.dq_bulk || !v.dq_vec4 || v.dv_early ||
                          v.stat != 3 || !v.idiet))
    v.block_m = 64;
  if (v.block_m == 128) v.decoupled = false;
  if (v.decoupled && D >= 128) v.dq_first = false;
  if (v.block_m != 128 && v.stat == 1) v.stat = 0;
  if (v.decoupled || !v.dq_first) v.dv_early = false;
  if (v.decoupled || !v.dq_first || v.dv_early || (D == 64 && v.block_m != 128)) v.idiet = false;
  // The item diet of the TMA dK / dV epilogue kernels built for every lse2 / delta source
  // (launch_stat): with it at D 128, without at D 64 (session 9's defaults). Session 45: D 64's
  // 128-row kernel is built with both too, for its default source (kStat 2) only.
  constexpr bool kTmaKvStatIdiet = D != 64;
  // (v.idiet already implies the coupled dQ-first structure and, at D 64, 128-row blocks.)
  const bool idiet_tmakv64 = D == 64 && v.idiet && (v.stat == 2 || v.stat == 3);
  if (v.decoupled || !v.dq_first || v.dv_early || (D == 64 && v.block_m != 128) ||
      (v.idiet != kTmaKvStatIdiet && !idiet_tmakv64))
    v.tmakv = false;
  if (p.deterministic) {
    // Session 25: the tuned structures' kDet builds (bwd_kernel.cuh kDet: dQ summed in key-block
    // order through per-tile turn counters), atomics, no item rotation, no TMA dK / dV epilogue.
    // The backend declines deterministic with varlen or score modifications.
    bwd::Variant m = v;
    m.decoupled = false, m.dq_first = true, m.dq_bulk = false, m.dv_early = false;
    m.tmakv = false, m.kv_regs = false, m.item_rot = false;
    if constexpr (D == 64) {
      m.block_m = 128, m.stat = 0, m.idiet = false;
      return bwd::launch_backward<D, BF16, false, 128, true, 0, false, false, false, false, 0,
                                  false, true>(p, m);
    } else {
      m.block_m = 64, m.stat = 3, m.idiet = true;
      return bwd::launch_backward<D, BF16, false, 64, true, 3, false, false, true, false, 0, false,
                                  true>(p, m);
    }
  }
  if (p.varlen && !has_element_mod(p) && !bwd::varlen_on_mod()) {
    // Session 25: varlen without score modifications on the tuned structures (kVarlen builds):
    // D = 64 128-row blocks, kStat 0; D = 128 64-row blocks, kStat 3 with the item diet; both
    // coupled dQ-first with atomics, without the TMA dK / dV epilogue (a packed map's extent
    // cannot bound a sequence's rows).
    bwd::Variant m = v;
    m.decoupled = false, m.dq_first = true, m.dq_bulk = false, m.dv_early = false;
    m.tmakv = false, m.kv_regs = false;
    if constexpr (D == 64) {
      m.block_m = 128, m.stat = 0, m.idiet = false;
      return bwd::launch_backward<D, BF16, false, 128, true, 0, false, false, false, false, false,
                                  true>(p, m);
    } else {
      m.block_m = 64, m.stat = 3, m.idiet = true;
      return bwd::launch_backward<D, BF16, false, 64, true, 3, false, false, true, false, false,
                                  true>(p, m);
    }
  }
  if (has_element_mod(p) || p.varlen) {
    // Session 24: softcap / ALiBi / window: the coupled dQ-first structure with lse2 / delta
    // staged (kStat 2; bwd_kernel.cuh kMod), dQ by atomics. Session 25: one kernel per kind
    // (softcap without ALiBi, masks only, the general one), dense and varlen.
    bwd::Variant m = v;
    m.decoupled = false, m.block_m = 64, m.dq_first = true, m.stat = 2, m.dq_bulk = false;
    // Session 26: a mask (bool / additive, with causal, windows and ALiBi; not varlen: declined)
    // on a kind of its own, kModMask; session 39: with softcap, kModMaskSoftcap.
    // Session 39: dropout on kModDropout (kModGeneral's loop) or, with a mask (not with softcap:
    // declined), kModMaskDropout.
    const int kind = p.has_mask()         ? (p.softcap > 0.f   ? bwd::kModMaskSoftcap
                                             : p.has_dropout() ? bwd::kModMaskDropout
                                                               : bwd::kModMask)
                     : p.has_dropout()    ? bwd::kModDropout
                     : p.alibi != nullptr ? bwd::kModGeneral
                     : p.softcap > 0.f    ? bwd::kModSoftcap
                                          : bwd::kModWindow;
    // D = 64: 128-row query blocks (kStat 0), as the tuned D = 64 kernel; env
    // ATTNKIT_FLASH3_BWD_MOD_BM64=1 (read per call, for A/Bs) keeps the 64-row one.
    // kModMask: 64-row blocks (session 26 call 3, H200, S 4k, TFLOP/s BM 128 -> 64: pad 235 ->
    // 239, bool 180 -> 203, bias 200 -> 203; the 128-row mask kernel spilled 332 bytes).
    const bool bm128 =
        D == 64 && !bwd::mod_bm64() && !bwd::mod_has_mask(kind) && !bwd::mod_has_dropout(kind);
    if (bm128) m.block_m = 128, m.stat = 0;
    auto go = [&](auto kind_c) {
      constexpr int K = decltype(kind_c)::value;
      // (masks: never varlen; dropout: 64-row blocks, bwd_dropout_keep_bits)
      constexpr bool kVl = !bwd::mod_has_mask(K);
      if constexpr (D == 64 && kVl && !bwd::mod_has_dropout(K)) {
        if (bm128) {
          if (p.varlen)
            return bwd::launch_backward<D, BF16, false, 128, true, 0, false, false, false, false, K,
                                        true>(p, m);
          return bwd::launch_backward<D, BF16, false, 128, true, 0, false, false, false, false, K>(
              p, m);
        }
      }
      if constexpr (kVl) {
        if (p.varlen)
          return bwd::launch_backward<D, BF16, false, 64, true, 2, false, false, false, false, K,
                                      true>(p, m);
      }
      return bwd::launch_backward<D, BF16, false, 64, true, 2, false, false, false, false, K>(p, m);
    };
    if (kind == bwd::kModMask) return go(std::integral_constant<int, bwd::kModMask>{});
    if (kind == bwd::kModMaskSoftcap)
      return go(std::integral_constant<int, bwd::kModMaskSoftcap>{});
    if (kind == bwd::kModDropout) return go(std::integral_constant<int, bwd::kModDropout>{});
    if (kind == bwd::kModMaskDropout)
      return go(std::integral_constant<int, bwd::kModMaskDropout>{});
    if (kind == bwd::kModSoftcap) return go(std::integral_constant<int, bwd::kModSoftcap>{});
    if (kind == bwd::kModWindow) return go(std::integral_constant<int, bwd::kModWindow>{});
    return go(std::integral_constant<int, bwd::kModGeneral>{});
  }
  if constexpr (D == 64) {
    if (v.block_m == 128) {
      if (v.dq_first && v.dv_early) return bwd::launch_stat<D, BF16, false, 128, true, true>(p, v);
      if (v.tmakv && v.idiet)  // (idiet_tmakv64: kStat 2 only)
        return bwd::launch_backward<D, BF16, false, 128, true, 2, false, false, true, true>(p, v);
      if (v.tmakv)
        return bwd::launch_stat<D, BF16, false, 128, true, false, kTmaKvStatIdiet, true>(p, v);
      if (v.dq_first && v.idiet)
        return bwd::launch_stat<D, BF16, false, 128, true, false, true>(p, v);
      if (v.dq_first) return bwd::launch_stat<D, BF16, false, 128, true>(p, v);
      return bwd::launch_stat<D, BF16, false, 128, false>(p, v);
    }
    if (v.decoupled && v.dq_first) return bwd::launch_stat<D, BF16, true, 64, true>(p, v);
  }
  if constexpr (D == 128) {
    if (v.block_m == 80) {
      if (v.tmakv)
        return bwd::launch_backward<D, BF16, false, 80, true, 3, false, false, true, true>(p, v);
      return bwd::launch_backward<D, BF16, false, 80, true, 3, false, false, true, false>(p, v);
    }
  }
  if (v.decoupled) return bwd::launch_stat<D, BF16, true, 64, false>(p, v);
  if (v.dq_first && v.dv_early) return bwd::launch_stat<D, BF16, false, 64, true, true>(p, v);
  if constexpr (D != 64) {
    if (v.tmakv)
      return bwd::launch_stat<D, BF16, false, 64, true, false, kTmaKvStatIdiet, true>(p, v);
    if (v.dq_first && v.idiet) return bwd::launch_stat<D, BF16, false, 64, true, false, true>(p, v);
  }
  if (v.dq_first) return bwd::launch_stat<D, BF16, false, 64, true>(p, v);
  bwd::launch_stat<D, BF16, false, 64, false>(p, v);
}

}  // namespace attnkit::flash3
