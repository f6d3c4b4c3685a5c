// Host launcher of the flash3 backward at D = 256 (session 26, bwd_kernel_d256.cuh): the
// preprocess and dQ conversion of bwd_kernel.cuh around the D 256 main kernel: for plain calls
// the RS layout (kRs) or, on request, the split layout; kMod (split layout) with softcap / ALiBi /
// window / mask. Varlen since session 30 (kVarlen: the RS layout for plain calls, kMod with score
// mods; its instantiations in bwd_d256_varlen_{bf16,f16}.cu). Deterministic plain dense calls
// since session 30 (kDet, bwd_d256_det.cu).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "attnkit/error.hpp"
#include "backends/flash3/bwd_args.hpp"
#include "backends/flash3/bwd_kernel.cuh"
#include "backends/flash3/bwd_kernel_d256.cuh"
#include "backends/flash3/bwd_launch.cuh"
#include "backends/flash3/bwd_order_rule.hpp"
#include "backends/flash3/bwd_trace.hpp"
#include "backends/flash3/seq_bounds.hpp"
#include "backends/flash3/smem_opt_in.hpp"
#include "backends/flash3/tensor_map.hpp"
#include "core/params.hpp"
#include "cuda/cuda_check.hpp"
#include "cuda/workspace.hpp"

namespace attnkit::flash3::bwd {

template <auto kKernel>
void run_kernel_d256(const dim3& grid, const BwdArgs& a, cudaStream_t stream) {
  opt_in_smem<kKernel>(BwdTraits256::kSmemBytes);
  kKernel<<<grid, BwdTraits256::kThreads, BwdTraits256::kSmemBytes, stream>>>(a);
  ATTNKIT_CUDA_CHECK_LAUNCH();
}

/// bwd_kernel_d256's kDet build (RS layout; instantiations/bwd_d256_det.cu, bf16 and f16).
template <bool BF16>
void run_d256_det(const dim3& grid, const BwdArgs& a, cudaStream_t stream);

/// kVarlen = true: a packed call (Params::varlen), each sequence's rows in its own padded run of
/// the workspace (varlen_ws_row0), as launch_backward's kVarlen. Defined in
/// instantiations/bwd_d256_varlen_{bf16,f16}.cu, so that its kernels compile beside the dense ones.
template <bool BF16, bool kVarlen = false>
void launch_backward_d256(const Params& p) {
  using Tr = BwdTraits256;
  constexpr int D = Tr::kD;
  // (Reset first: the empty-call and Sk = 0 returns below must not leave the last launch's value.)
  last_backward_order_sections() = 0;
  last_backward_early_conv() = 0;
  if (p.batch == 0 || p.heads_q == 0) return;
  auto stream = static_cast<cudaStream_t>(p.stream);
  // (bwd_rows: the padded query rows and the preprocess grid, as launch_backward's)
  const BwdRows geo = bwd_rows<Tr::kBlockM, kVarlen>(p);
  const int64_t m_blocks = geo.m_blocks, sq_pad = geo.sq_pad, grid_rows = geo.grid_rows,
                bh = geo.bh;
  const size_t rows = geo.rows;
  // Workspace (fp32): lse2 [rows] | delta [rows] | dq_acc [rows, 256]; deterministic (session 30)
  // also the turn counters, int [bh, m_blocks] (BwdArgs::dq_sem, one per dQ tile).
  const bool det = !kVarlen && p.deterministic;
  if (p.deterministic && (kVarlen || has_element_mod(p)))  // (the backend declines)
    throw Error(ErrorCode::kUnsupported,
                "flash3 D 256 deterministic backward: plain dense calls only (no varlen, score "
                "modification, mask or dropout)");
  // Head dim 192 (session 38, bwd_launch.cuh narrow_kv_floats): also the dK / dV scratch.
  const size_t sems = det ? static_cast<size_t>(bh) * static_cast<size_t>(m_blocks) : 0;
  const size_t head = (rows * (2 + static_cast<size_t>(D)) + sems + 63) / 64 * 64;
  const size_t narrow_floats = narrow_kv_floats<D>(p);
  const bool narrow = narrow_floats != 0;
  float* ws = static_cast<float*>(
      cuda::workspace((head + narrow_floats) * sizeof(float), p.device.index, stream));
  float* lse2 = ws;
  float* delta = ws + rows;
  float* dq_acc = ws + 2 * rows;
  int* dq_sem = det ? reinterpret_cast<int*>(dq_acc + rows * D) : nullptr;
  if (det) ATTNKIT_CUDA_CHECK(cudaMemsetAsync(dq_sem, 0, sems * sizeof(int), stream));

  if (prep_vec_ok(p)) {
    constexpr int kRows = 256 / (D / 8);
    const dim3 grid(static_cast<unsigned>(grid_rows / kRows), static_cast<unsigned>(p.heads_q),
                    static_cast<unsigned>(p.batch));
    bwd_preprocess_vec_kernel<D, BF16, kVarlen>
        <<<grid, 256, 0, stream>>>(p, static_cast<int>(sq_pad), lse2, delta, dq_acc);
  } else {
    const dim3 grid(static_cast<unsigned>(grid_rows / 8), static_cast<unsigned>(p.heads_q),
                    static_cast<unsigned>(p.batch));
    bwd_preprocess_kernel<BF16, kVarlen>
        <<<grid, 256, 0, stream>>>(p, static_cast<int>(sq_pad), lse2, delta, dq_acc, D);
  }
  ATTNKIT_CUDA_CHECK_LAUNCH();

  if (p.seqlen_k > 0) {
    BwdArgs a{};
    // (Sq = 0: 0 query blocks, so no CTA has an item; m_blocks >= 1 only pads the workspace. A
    // CTA with items would read rows -1 of a mask.)
    // Varlen: maps over the packed [1, total, H, D] tensors.
    const int64_t mb = kVarlen ? 1 : p.batch;
    const int64_t sq = kVarlen ? p.total_q : p.seqlen_q, sk = kVarlen ? p.total_k : p.seqlen_k;
    // (The maps' D is the call's; dK / dV to the scratch when narrow: narrow_kv_params.)
    set_bwd_common(narrow ? narrow_kv_params<D>(p, ws + head) : p, static_cast<int>(p.head_dim),
                   Tr::kBlockM, Tr::kBlockN, BF16, mb, sq, sk, sq_pad, lse2, delta, dq_acc, a);
    a.dq_vec4 = 1;
    // Softcap / ALiBi / window / mask (session 26), dropout (session 39): the general kMod kernel.
    const bool mod = has_element_mod(p);
    const ScoreMod m = score_mod_of(p);
    if (mod) set_bwd_score_mod(p, m, a);
    if constexpr (kVarlen) set_bwd_varlen(p, m, a);
    // Session 49 (bwd_order.cuh, bwd_order_rule.hpp): the sectioned CTA order, causal dense
    // non-deterministic plain calls only, both layouts (a.causal after the score mods); the kMod
    // kernels keep the hardware's order (bwd_kernel_d256.cuh), so they get 0 here too.
    if (!kVarlen && !det && !mod)
      a.order_sec = bwd_order_sections(bwd_tuning().order_sections, a.causal != 0, 256, p.seqlen_q,
                                       p.seqlen_k, p.heads_q / p.heads_kv);
    last_backward_order_sections() = a.order_sec;

    const dim3 grid(static_cast<unsigned>((p.seqlen_k + Tr::kBlockN - 1) / Tr::kBlockN),
                    static_cast<unsigned>(p.heads_kv), static_cast<unsigned>(p.batch));
#if defined(ATTNKIT_FLASH3_BWD_TRACE)
    // Measurement builds (bwd_trace.hpp): one device buffer per process, written to the file
    // named by ATTNKIT_FLASH3_BWD_TRACE_OUT after each call (the last call's stamps remain).
    static unsigned long long* trace_buf = nullptr;
    const char* trace_out = std::getenv("ATTNKIT_FLASH3_BWD_TRACE_OUT");
    const size_t trace_bytes = static_cast<size_t>(kTraceWords) * sizeof(unsigned long long);
    if (trace_out != nullptr) {
      if (trace_buf == nullptr) ATTNKIT_CUDA_CHECK(cudaMalloc(&trace_buf, trace_bytes));
      ATTNKIT_CUDA_CHECK(cudaMemsetAsync(trace_buf, 0, trace_bytes, stream));
    }
    a.trace = trace_out != nullptr ? trace_buf : nullptr;
#endif
    // Plain calls: the RS layout (bwd_d256_rs.cuh), the default since session 29 (+6..+12 % over
    // the split layout, bench/notes/session29.md calls 1 and 7), unless d256_split_layout().
    // Varlen plain calls: the RS layout always (the split layout has no varlen build).
    if (mod && p.has_dropout())  // (sessions 39-40: its own kernel, kDrop)
      run_kernel_d256<&bwd_kernel_d256<BF16, true, false, kVarlen, false, true>>(grid, a, stream);
    else if (mod)
      run_kernel_d256<&bwd_kernel_d256<BF16, true, false, kVarlen>>(grid, a, stream);
    else if constexpr (kVarlen)
      run_kernel_d256<&bwd_kernel_d256<BF16, false, true, true>>(grid, a, stream);
    else if (det) {
      // Session 30 (run in session 31): the RS layout's kDet build
      // (instantiations/bwd_d256_det.cu); the backend declines deterministic with score mods,
      // masks or varlen.
      a.dq_sem = dq_sem;
      run_d256_det<BF16>(grid, a, stream);
    } else if (!d256_split_layout())
      run_kernel_d256<&bwd_kernel_d256<BF16, false, true>>(grid, a, stream);
    else
      run_kernel_d256<&bwd_kernel_d256<BF16>>(grid, a, stream);
#if defined(ATTNKIT_FLASH3_BWD_TRACE)
    if (trace_out != nullptr) {
      std::vector<unsigned long long> host(static_cast<size_t>(kTraceWords));
      ATTNKIT_CUDA_CHECK(
          cudaMemcpyAsync(host.data(), trace_buf, trace_bytes, cudaMemcpyDeviceToHost, stream));
      ATTNKIT_CUDA_CHECK(cudaStreamSynchronize(stream));
      if (std::FILE* f = std::fopen(trace_out, "wb")) {
        std::fwrite(host.data(), sizeof(unsigned long long), host.size(), f);
        std::fclose(f);
      }
    }
#endif
  }

  if (p.seqlen_q > 0 && conv_rows_enabled() && rows16(p.dq, p.dq_st)) {
    launch_convert_rows<D, Tr::kDqN, BF16, kVarlen>(p, sq_pad, dq_acc, stream);  // (3w, v4)
  } else if (p.seqlen_q > 0) {
    const dim3 grid(static_cast<unsigned>((p.seqlen_q + 7) / 8), static_cast<unsigned>(p.heads_q),
                    static_cast<unsigned>(p.batch));
    bwd_dq_convert_kernel<D, Tr::kDqN, BF16, kVarlen>
        <<<grid, 256, 0, stream>>>(p, static_cast<int>(sq_pad), dq_acc, /*v4=*/1);
    ATTNKIT_CUDA_CHECK_LAUNCH();
  }
  if (narrow) launch_narrow_kv_copy<D>(p, ws + head, stream);
}

/// The varlen launcher's two instantiations (instantiations/bwd_d256_varlen_{bf16,f16}.cu).
extern template void launch_backward_d256<true, true>(const Params& p);
extern template void launch_backward_d256<false, true>(const Params& p);

}  // namespace attnkit::flash3::bwd
