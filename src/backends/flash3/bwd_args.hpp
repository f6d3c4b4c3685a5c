// Kernel parameters of the flash3 backward (main kernel and the pre/post-processing kernels).
#pragma once

#include <cuda.h>

#include <cstdint>

namespace attnkit::flash3::bwd {

struct BwdArgs {
  CUtensorMap tma_q;   // dims (D, Sq, Hq, B),  box (64, kBlockM, 1, 1)
  CUtensorMap tma_do;  // dims (D, Sq, Hq, B),  box (64, kBlockM, 1, 1)
  CUtensorMap tma_k;   // dims (D, Sk, Hkv, B), box (64, kBlockN, 1, 1)
  CUtensorMap tma_v;   // dims (D, Sk, Hkv, B), box (64, kBlockN, 1, 1)
  // Workspace (fp32), row index (b * Hq + h) * sq_pad + i; rows i >= Sq are padding.
  const float* lse2;   // [B*Hq, sq_pad] lse * log2(e); +inf for empty or padding rows (P = 0)
  const float* delta;  // [B*Hq, sq_pad] rowsum(dO o O); 0 for padding rows
  float* dq_acc;       // [B*Hq, sq_pad, D] sum over keys of dS K (unscaled), zeroed before; tile
                       // layout in bwd_traits.hpp
  void* dk;            // [B, Sk, Hkv, D], d-stride 1; strides in elements
  int64_t dk_sb, dk_ss, dk_sh;
  void* dv;
  int64_t dv_sb, dv_ss, dv_sh;
  int seqlen_q, seqlen_k, sq_pad;
  int heads_q, group;  // group = Hq / Hkv
  int causal;          // 0 none, 1 causal (key j visible from row i iff j <= i + causal_offset)
  int causal_offset;   // 0 (top_left) or Sk - Sq (bottom_right)
  int num_m_blocks;    // ceil(Sq / kBlockM)
  float scale;         // softmax scale: dK = scale * sum dS^T Q
  float scale_log2;    // scale * log2(e)
  int dq_bulk;         // 1: dQ by bulk TMA reduce-add from smem; 0: atomicAdd(float2)
  int dq_vec4;         // dQ workspace tile layout (bwd_traits.hpp): 1 float4 runs, 0 float2
  int item_rot;        // 1: each CTA starts its item loop at its own offset (bwd_kernel.cuh)
  uint32_t wait_ns;    // producer's empty-slot wait: 0 plain try_wait loop, else its suspend hint
  // Session 9 (helper f3bwd13; bwd_kernel.cuh kTmaKV, variant "+tmakv"): dK / dV as TMA store
  // targets, dims (D, Sk, Hkv, B), box (64, 16, 1, 1) (one consumer warp's 16 key rows), 128B
  // swizzle; rows >= Sk are clipped by the extent. Appended (64-byte aligned): the fields above
  // keep their offsets; only kTmaKV kernels read these (encoded only for them).
  CUtensorMap tma_dk;
  CUtensorMap tma_dv;
  // Session 24 (bwd_kernel.cuh kMod; bwd_launch.cuh set_bwd_score_mod): softcap, ALiBi and the
  // sliding window, encoded as the forward encodes them (fwd_args.hpp, seq_bounds.hpp): the
  // window's right edge folded into causal / causal_offset above, its left edge window_lo /
  // lo_offset (key j hidden from row i when j < i + lo_offset); softcap_k = 2 log2(e) scale /
  // softcap (0 = off), with scale_log2 = softcap log2(e) (the forward's lse is in those units)
  // while `scale` stays the call's (dK, dQ); inv_scale_log2 = 1 / scale_log2 (t recovered from
  // P); ALiBi as FwdArgs (alibi_mul = -1 / (softcap or scale)). Read only by kMod kernels.
  float softcap_k;
  float inv_scale_log2;
  int window_lo;
  int lo_offset;
  int diag_offset;
  const float* alibi;
  int64_t alibi_sb, alibi_sh;
  float alibi_mul;
  // Session 25 (bwd_kernel.cuh kVarlen, with kMod): packed sequences. cu_q / cu_k [B + 1] the
  // sequences' first rows in the packed q / k; the maps above are over [1, total, H, D]; the
  // workspace rows of sequence b start at varlen_ws_row0(cu_q, b) inside every q head's sq_pad
  // rows; seqlen_q / seqlen_k / num_m_blocks are the maxima, and each CTA's own lengths and
  // bounds (seq_bounds.hpp, from causal_kind / win_left / win_right as the forward's FwdArgs)
  // replace them in the kernel (varlen_bwd_args). dK / dV: b strides 0, rows from cu_k[b].
  const int* cu_q;
  const int* cu_k;
  int causal_kind;
  int win_left, win_right;
  // Session 25 (bwd_kernel.cuh kDet): the deterministic backward's turn counters, one per (b, h,
  // query block, consumer warpgroup), zeroed before the launch: int [B*Hq, num_m_blocks, 2]; the
  // D 256 kernel's kDet (session 30) one per (b, h, query block): int [B*Hq, num_m_blocks].
  // ATTNKIT_FLASH3_BWD_EARLY_CONV (bwd_traits.hpp; never with kDet): the done counters instead,
  // int [B*Hq] (that of kv head g at index b Hq + g group; nullptr: no early conversion).
  int* dq_sem;
  // Session 26: 1 = a tile's turn is handed on at the next item's dQ stage (or after the last
  // item) instead of right after its adds, so the fence waits on adds long since complete.
  int det_defer;
  // Session 26 (bwd_kernel.cuh kModMask): the forward's mask (fwd_args.hpp FwdArgs::mask: element
  // (b, h, i, j) at mask + (b mask_sb + h mask_sh + i mask_si + j mask_sj) x its size; mask_kind
  // 1 bool, 2 / 3 / 4 additive f32 / f16 / bf16, added times mask_mul = 1 / scale; with softcap
  // since session 39, 1 / softcap). Not with varlen (the backend declines it).
  const uint8_t* mask;
  int64_t mask_sb, mask_sh, mask_si, mask_sj;
  int mask_kind;
  float mask_mul;
  // Session 39 (bwd_kernel.cuh kModDropout; dropout.cuh): Params' dropout (core/philox.hpp's
  // rule, as the forward's FwdArgs::drop_*); drop_rescale = 1 / (1 - p).
  uint64_t drop_seed, drop_offset;
  uint32_t drop_threshold;
  float drop_rescale;
  // Session 49 (bwd_order.cuh bwd_cta; appended, so the fields above keep their offsets): 0 = CTAs
  // in the hardware's order; k > 0 = x-major within sections of k (kv head, batch) pairs
  // (BwdTuning::order_sections through bwd_order_rule.hpp; dense, non-deterministic, causal
  // launches only: 0 otherwise).
  int order_sec;
  // Session 50 (bwd_kernel.cuh kOrd: the twins of D 128's default structures, which
  // launch_backward runs only where sh > 0; appended): the sectioned order without divisions. 0 =
  // the hardware's order; sh > 0 = sections of 2^sh kv heads within one batch: the grid is (N <<
  // sh, Hkv >> sh, B) and the CTA takes key block blockIdx.x >> sh, kv head (blockIdx.y << sh) |
  // (blockIdx.x & (2^sh - 1)), batch blockIdx.z (bwd_launch.cuh launch_backward; bwd_order_rule.hpp
  // bwd_order_shift).
  int order_shift;
#if defined(ATTNKIT_FLASH3_BWD_TRACE)
  // Measurement builds only (session 27, bench/gpu/flash3_bwd_trace.py): clock64 stamps of the
  // D 256 backward's items (bwd_kernel_d256.cuh, bwd_trace.hpp has the layout); null = off.
  unsigned long long* trace;
#endif
};

}  // namespace attnkit::flash3::bwd
