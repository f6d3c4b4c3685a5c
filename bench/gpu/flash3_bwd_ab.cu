// A/B timing of the flash3 backward alone (no torch, no dispatcher): the three launches of
// run_backward (preprocess, main kernel, dQ conversion) on BENCHMARKS.md shapes (16384 tokens,
// hidden 2048, bf16, BSHD), CUDA events, median of 30 runs after 5 warm-ups, once per variant
// of BwdTuning (decoupled / coupled warpgroups / 128-row query blocks; dQ by bulk TMA reduce-add
// or float2 atomics; dQ-first GEMM order; lse2/delta by shuffles). Env F3AB_ONLY=<variant name>
// runs one variant (for ncu), F3AB_REPS=n sets the timed runs.
// lse is set to a plausible
// log(Sk) + 1 (timing does not depend on it; correctness is the tests' job).
// Build: bench/gpu/flash3_bwd_modes.sh builds it (one object per TU, in parallel): this file,
//   src/cuda/workspace.cpp, src/cuda/device_info.cpp (as CUDA) and the instantiations
//   bwd_d{64,128,256}_bf16.cu, bwd_d256_varlen_bf16.cu, bwd_d256_det.cu (the D 256 launcher
//   references the varlen and deterministic kernels), nvcc -std=c++20 -O3 sm_90a.
// Run:   ./flash3_bwd_ab [S,D,causal ...]   (default: a small grid)
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "backends/flash3/bwd_launch.cuh"

namespace {

__global__ void fill_bf16(__nv_bfloat16* x, size_t n, uint32_t seed) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
    h ^= h >> 15;
    h *= 2246822519u;
    h ^= h >> 13;
    x[i] = __float2bfloat16((static_cast<float>(h & 0xffff) / 65536.f - 0.5f) * 3.4f);
  }
}
__global__ void fill_f32(float* x, size_t n, float v) {
  for (size_t i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    x[i] = v;
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

float bf16_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Session 12 (F3AB_DUMP=prefix): a cross-build check for build switches such as
// ATTNKIT_FLASH3_BWD_LATE_FENCE (flash3_bwd_modes.sh DUMP=1; first used for session 12's
// DQ_LATE switch, branch wip/f3bwd16). The inputs are the same in every
// process (seeded fills), so the first process to reach a config writes dq | dk | dv (bf16 bits)
// to prefix_S_D_causal.bin and every later one compares with it: dK / dV must be bitwise equal
// (no switch may change them), dQ only within the fp32 atomics' order (a base-vs-base comparison
// of another round shows that level).
void dump_or_compare(const char* prefix, int S, int D, bool causal, const void* dq, const void* dk,
                     const void* dv, size_t n) {
  std::vector<uint16_t> cur(3 * n);
  const void* src[3] = {dq, dk, dv};
  for (int t = 0; t < 3; ++t)
    check(cudaMemcpy(cur.data() + t * n, src[t], n * 2, cudaMemcpyDeviceToHost), "dump copy");
  const std::string path = std::string(prefix) + "_" + std::to_string(S) + "_" + std::to_string(D) +
                           "_" + std::to_string(causal ? 1 : 0) + ".bin";
  if (FILE* f = std::fopen(path.c_str(), "rb")) {
    std::vector<uint16_t> ref(3 * n);
    const size_t got = std::fread(ref.data(), 2, 3 * n, f);
    std::fclose(f);
    if (got != 3 * n) {
      std::printf("check S=%d D=%d causal=%d: %s is short\n", S, D, causal ? 1 : 0, path.c_str());
      return;
    }
    size_t diff[3] = {0, 0, 0}, nan = 0;
    double max_abs = 0, max_ref = 0;
    for (int t = 0; t < 3; ++t)
      for (size_t i = 0; i < n; ++i) {
        const uint16_t a = cur[t * n + i], r = ref[t * n + i];
        const float fa = bf16_to_float(a), fr = bf16_to_float(r);
        if (std::isnan(fa)) ++nan;
        if (a != r) ++diff[t];
        if (t == 0) {
          max_abs = std::max(max_abs, static_cast<double>(std::fabs(fa - fr)));
          max_ref = std::max(max_ref, static_cast<double>(std::fabs(fr)));
        }
      }
    std::printf(
        "check S=%d D=%d causal=%d: dK / dV elements differing %zu / %zu, dQ %zu of %zu "
        "(max |diff| %.3g, max |dQ| %.3g), NaN %zu\n",
        S, D, causal ? 1 : 0, diff[1], diff[2], diff[0], n, max_abs, max_ref, nan);
  } else if (FILE* w = std::fopen(path.c_str(), "wb")) {
    std::fwrite(cur.data(), 2, 3 * n, w);
    std::fclose(w);
    std::printf("check S=%d D=%d causal=%d: wrote %s\n", S, D, causal ? 1 : 0, path.c_str());
  }
}

/// "a,b,c" -> {a, b, c}: the numbers of a comma list (F3AB_ORDERS, F3AB_WS_SHIFTS), up to the
/// first token that is not one.
std::vector<long long> parse_list(const char* s) {
  std::vector<long long> out;
  for (const char* c = s; *c;) {
    char* end = nullptr;
    const long long v = std::strtoll(c, &end, 10);
    if (end == c) break;
    out.push_back(v);
    c = *end == ',' ? end + 1 : end;
  }
  return out;
}

template <int D>
void run_one(int S, bool causal) {
  using namespace attnkit;
  const int64_t B = 16384 / S, H = 2048 / D;
  const size_t n = static_cast<size_t>(B) * S * H * D;
  __nv_bfloat16 *q, *k, *v, *o, *dout, *dq, *dk, *dv;
  float* lse;
  for (auto** p : {&q, &k, &v, &o, &dout, &dq, &dk, &dv})
    check(cudaMalloc(p, n * 2), "malloc");
  check(cudaMalloc(&lse, static_cast<size_t>(B) * H * S * 4), "malloc lse");
  uint32_t seed = 1;
  for (auto* p : {q, k, v, o, dout})
    fill_bf16<<<1024, 256>>>(p, n, seed++);
  fill_f32<<<1024, 256>>>(lse, static_cast<size_t>(B) * H * S,
                          std::log(static_cast<float>(S)) + 1.f);
  Params p;
  p.batch = B;
  p.seqlen_q = p.seqlen_k = S;
  p.heads_q = p.heads_kv = H;
  p.group = 1;
  p.head_dim = p.head_dim_v = D;
  p.dtype = DType::bf16;
  p.device = Device::cuda(0);
  p.is_backward = true;
  const Strides4 st{static_cast<int64_t>(S) * H * D, H * D, D, 1};
  p.q = q;
  p.k = k;
  p.v = v;
  p.out = o;
  p.dout = dout;
  p.dq = dq;
  p.dk = dk;
  p.dv = dv;
  p.q_st = p.k_st = p.v_st = p.out_st = p.dout_st = p.dq_st = p.dk_st = p.dv_st = st;
  p.lse = lse;
  p.lse_st = {H * S, 0, S, 1};  // (b, h, s): b * H * S + h * S + i
  p.lse_st.b = H * S;
  p.lse_st.h = S;
  p.lse_st.s = 1;
  p.scale = 1.f / std::sqrt(static_cast<float>(D));
  p.causal = causal ? Causal::bottom_right : Causal::none;
  const double flops = 2.5 * 4.0 * B * H * static_cast<double>(S) * S * D / (causal ? 2 : 1);
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  struct Variant {
    const char* name;
    int decoupled, dq_mode, block_m, dq_first, stat_mode, kv_regs;
    bool d64_only;
    int dq_vec4 = 0, item_rot = 0;
    int wait_ns = 0;   // +sl: producer try_wait suspend hint (kProducerWaitNs)
    int dv_early = 0;  // +dve: dV issued before the dS^T stretch (kDvEarly)
    bool d128_only = false;
    int prep_vec = -1;  // +vpp: 16-byte preprocess (bwd_kernel.cuh 1v; -1 = the default's choice)
    int conv_vec = -1;  // +vcv: 16-byte dQ conversion (3v)
    int idiet = -1;     // +idiet: item loop without per-item divisions (bwd_kernel.cuh kIdiet)
    int tmakv = -1;     // +tmakv: dK / dV through smem + TMA stores (bwd_kernel.cuh kTmaKV)
  };
  // Names (parsed by bwd_launch.cuh env_variant): warpgroups (decoupled / coupled / m128 =
  // 128-row query blocks, coupled), dQ path, +dqf = dQ-first GEMM order, +shfl = lse2/delta by
  // shuffles (m128), +pf = lse2/delta loaded one item ahead, +kv = K/V as register A fragments.
  // +v4 = float4 dQ workspace layout (float4 atomics / smem stores), +rot = per-CTA rotated
  // item order (session 4). "default" = the library's choice. (Run 2 measured the +pf and +shfl
  // variants: no gain; the merged run +kv: +2 %, noise.)
  const Variant variants[] = {
      {"default", -1, -1, -1, -1, -1, -1, false, -1, -1},
      {"decoupled+atomic", 1, 0, 64, 0, 0, 0, false},
      {"decoupled+atomic+rot", 1, 0, 64, 0, 0, 0, false, 0, 1},
      {"decoupled+atomic+v4", 1, 0, 64, 0, 0, 0, false, 1, 0},
      {"decoupled+atomic+v4+rot", 1, 0, 64, 0, 0, 0, false, 1, 1},
      {"decoupled+atomic+kv", 1, 0, 64, 0, 0, 1, true},
      {"decoupled+atomic+kv+v4+rot", 1, 0, 64, 0, 0, 1, true, 1, 1},
      {"coupled+atomic+dqf", 0, 0, 64, 1, 0, 0, false},
      {"coupled+atomic+dqf+rot", 0, 0, 64, 1, 0, 0, false, 0, 1},
      {"coupled+atomic+dqf+v4", 0, 0, 64, 1, 0, 0, false, 1, 0},
      {"coupled+atomic+dqf+v4+rot", 0, 0, 64, 1, 0, 0, false, 1, 1},
      {"coupled+bulk+dqf+v4+rot", 0, 1, 64, 1, 0, 0, false, 1, 1},
      {"m128+bulk+dqf", 0, 1, 128, 1, 0, 0, true},
      {"m128+bulk+dqf+rot", 0, 1, 128, 1, 0, 0, true, 0, 1},
      {"m128+bulk+dqf+v4+rot", 0, 1, 128, 1, 0, 0, true, 1, 1},
      {"m128+atomic+dqf+v4+rot", 0, 0, 128, 1, 0, 0, true, 1, 1},
      // Session 4, after kSharedBase (lse2 / delta staging now read with LDS): +pf again.
      {"m128+bulk+dqf+v4", 0, 1, 128, 1, 0, 0, true, 1, 0},
      {"m128+atomic+dqf+v4", 0, 0, 128, 1, 0, 0, true, 1, 0},
      {"m128+bulk+dqf+v4+pf", 0, 1, 128, 1, 2, 0, true, 1, 0},
      {"decoupled+atomic+v4+pf", 1, 0, 64, 0, 2, 0, false, 1, 0},
      {"decoupled+atomic+kv+v4", 1, 0, 64, 0, 0, 1, true, 1, 0},
      {"coupled+atomic+dqf+v4+pf", 0, 0, 64, 1, 2, 0, false, 1, 0},
      {"coupled+bulk+dqf+v4+pf", 0, 1, 64, 1, 2, 0, false, 1, 0},
      // Session 5: the library default with the producer's try_wait suspend hint.
      {"default+sl", -1, -1, -1, -1, -1, -1, false, -1, -1,
       static_cast<int>(flash3::bwd::kProducerWaitNs)},
      // Session 5 round 2: the defaults' structures with dV issued before the dS^T stretch (D = 128
      // default = coupled+atomic+dqf+v4+pf, D = 64 default = m128+atomic+dqf+v4; names parsed by
      // env_variant, so F3B_VARIANT_ENV=1 can hand a winner to the peers bench).
      // +pfl = +pf with the refill after the dS^T fence (kStat 3; the D = 128 rows only: its
      // MEMBAR question, bwd_kernel.cuh).
      {"coupled+atomic+dqf+v4+pf+dve", 0, 0, 64, 1, 2, 0, false, 1, 0, 0, 1, true},
      {"m128+atomic+dqf+v4+dve", 0, 0, 128, 1, 0, 0, true, 1, 0, 0, 1},
      {"default+dve", -1, -1, -1, -1, -1, -1, false, -1, -1, 0, 1},
      {"coupled+atomic+dqf+v4+pfl", 0, 0, 64, 1, 3, 0, false, 1, 0, 0, 0, true},
      {"coupled+atomic+dqf+v4+pfl+dve", 0, 0, 64, 1, 3, 0, false, 1, 0, 0, 1, true},
      // Session 6 (helper f3bwd8): the library default with the 16-byte pre / post kernels.
      // The session-6 defaults with the scalar preprocess (1) / with the 16-byte conversion (3v).
      {"default-vpp", -1, -1, -1, -1, -1, -1, false, -1, -1, -1, -1, false, 0, -1},
      {"default+vcv", -1, -1, -1, -1, -1, -1, false, -1, -1, -1, -1, false, -1, 1},
      // Session 7 (helper f3bwd11): the library default with the item-loop diet (+idiet).
      {"default+idiet", -1, -1, -1, -1, -1, -1, false, -1, -1, -1, -1, false, -1, -1, 1},
      // Session 9 (helper f3bwd13): the library default with the TMA dK / dV epilogue (+tmakv).
      {"default+tmakv", -1, -1, -1, -1, -1, -1, false, -1, -1, -1, -1, false, -1, -1, -1, 1},
      // Session 10: the library default with the bulk dQ path (smem staging + one
      // cp.reduce.async.bulk per WG and item) instead of the float4 REDs.
      {"default+bulk", -1, 1, -1, -1, -1, -1, false, -1, -1},
      // Session 10: the library default with the rotated item order (each CTA starts its query
      // blocks at x * items / gridDim.x: the key blocks of a head add into different dQ tiles).
      {"default+rot", -1, -1, -1, -1, -1, -1, false, -1, 1},
      // Session 43: the D = 64 default (128-row blocks) with lse2 / delta prefetched one item
      // ahead by cp.async (kStat 2; ncu had 7.7 % of the kStat 0 kernel's warp samples on the
      // staging STS waiting for the LDG): +0.5..+2.1 % in 5 of 6 rows, the default since.
      // default-pf is the old in-item load (kStat 0), for A/Bs against it.
      {"default-pf", -1, -1, -1, -1, 0, -1, true, -1, -1, -1, -1, false, -1, -1, -1, -1},
      // Session 44: D = 128 on 80-row query blocks (bwd_traits.hpp kDqTrans; FA3's non-causal D
      // 128 tiling): the default's structure otherwise (kStat 3, idiet, tmakv as the default's).
      {"default+m80", -1, -1, 80, -1, -1, -1, false, -1, -1, 0, 0, true, -1, -1, -1, -1},
      // Session 45: the item diet without the TMA dK / dV epilogue (D 64's default from 2k keys
      // between session 45's calls 4 and 6; D 64's default has both since), and each alone off.
      {"default+idiet-tmakv", -1, -1, -1, -1, -1, -1, false, -1, -1, -1, -1, false, -1, -1, 1, 0},
      {"default-tmakv", -1, -1, -1, -1, -1, -1, false, -1, -1, -1, -1, false, -1, -1, -1, 0},
      {"default-idiet", -1, -1, -1, -1, -1, -1, false, -1, -1, -1, -1, false, -1, -1, 0, -1},
  };

  // F3AB_ONLY=name (exact) runs one variant; F3AB_VARIANTS=",a,b," (names between commas) runs
  // those; F3AB_SUFFIX is appended to the printed names (two builds in one A/B); F3AB_REPS=n
  // timed runs (default 30).
  const char* only = std::getenv("F3AB_ONLY");
  const char* list = std::getenv("F3AB_VARIANTS");
  const std::string suffix = std::getenv("F3AB_SUFFIX") ? std::getenv("F3AB_SUFFIX") : "";
  const int reps = std::getenv("F3AB_REPS") ? std::atoi(std::getenv("F3AB_REPS")) : 30;
  for (const Variant& var : variants) {
    if (D == 256 && var.name != std::string("default")) continue;  // (no D 256 knobs here)
    if (var.d64_only && D != 64) continue;
    if (var.d128_only && D != 128) continue;
    if (only != nullptr && std::string(only) != var.name) continue;
    if (list != nullptr &&
        std::string(list).find("," + std::string(var.name) + ",") == std::string::npos)
      continue;
    flash3::bwd_tuning().decoupled = var.decoupled;
    flash3::bwd_tuning().dq_mode = var.dq_mode;
    flash3::bwd_tuning().block_m = var.block_m;
    flash3::bwd_tuning().dq_first = var.dq_first;
    flash3::bwd_tuning().stat_mode = var.stat_mode;
    flash3::bwd_tuning().kv_regs = var.kv_regs;
    flash3::bwd_tuning().dq_vec4 = var.dq_vec4;
    flash3::bwd_tuning().item_rot = var.item_rot;
    flash3::bwd_tuning().wait_ns = var.name == std::string("default") ? -1 : var.wait_ns;
    flash3::bwd_tuning().dv_early = var.name == std::string("default") ? -1 : var.dv_early;
    flash3::bwd_tuning().prep_vec = var.name == std::string("default") ? -1 : var.prep_vec;
    flash3::bwd_tuning().conv_vec = var.name == std::string("default") ? -1 : var.conv_vec;
    flash3::bwd_tuning().idiet = var.name == std::string("default") ? -1 : var.idiet;
    flash3::bwd_tuning().tmakv = var.name == std::string("default") ? -1 : var.tmakv;
    auto time_median = [&]() {
      std::vector<float> ms;
      for (int i = 0; i < reps; ++i) {
        cudaEventRecord(e0);
        flash3::run_backward<D, true>(p);
        cudaEventRecord(e1);
        check(cudaEventSynchronize(e1), "run");
        float t = 0;
        cudaEventElapsedTime(&t, e0, e1);
        ms.push_back(t);
      }
      std::sort(ms.begin(), ms.end());
      return std::make_pair(ms[ms.size() / 2], ms.front());
    };
    // Session 49: F3AB_ORDERS="0,4,8" times this variant under each BwdTuning::order_sections
    // (bwd_order.cuh: 0 = the hardware's CTA order, k = x-major within sections of k (kv head,
    // batch) pairs; causal calls only, the knob is ignored otherwise; D 128 since session 50 (D 64:
    // always 0): sections of the largest power of two <= k dividing Hkv, bwd_order_shift),
    // F3AB_ROUNDS rounds (odd rounds in reverse order), one line per value: each round's median in
    // round order, and the sections that ran (last_backward_order_sections). -1 = the auto
    // (bwd_order_rule.hpp), also what runs without F3AB_ORDERS.
    if (const char* orders_env = std::getenv("F3AB_ORDERS")) {
      const int saved_order = flash3::bwd_tuning().order_sections;
      std::vector<int> orders;
      for (const long long v : parse_list(orders_env))
        orders.push_back(static_cast<int>(v));
      const int rounds = std::getenv("F3AB_ROUNDS") ? std::atoi(std::getenv("F3AB_ROUNDS")) : 4;
      std::vector<std::vector<float>> med(orders.size());
      std::vector<int> ran(orders.size(), -1);
      for (int r = 0; r < rounds; ++r)
        for (size_t j = 0; j < orders.size(); ++j) {
          const size_t i = r % 2 ? orders.size() - 1 - j : j;
          flash3::bwd_tuning().order_sections = orders[i];
          for (int w = 0; w < 3; ++w)
            flash3::run_backward<D, true>(p);
          ran[i] = flash3::last_backward_order_sections();
          med[i].push_back(time_median().first);
        }
      for (size_t i = 0; i < orders.size(); ++i) {
        std::vector<float> m = med[i];
        std::sort(m.begin(), m.end());
        std::printf("S=%5d D=%3d causal=%d %-18s order %2d  TFLOP/s per round:", S, D,
                    causal ? 1 : 0, (var.name + suffix).c_str(), orders[i]);
        for (float x : med[i])
          std::printf(" %6.1f", flops / (x * 1e-3) / 1e12);
        std::printf("  median %6.1f  ran %d\n", flops / (m[m.size() / 2] * 1e-3) / 1e12, ran[i]);
      }
      flash3::bwd_tuning().order_sections = saved_order;
      continue;
    }
    // Session 11: F3AB_WS_SHIFTS="0,4096,..." (bytes, multiples of 256) times this variant with
    // the dQ accumulator moved by each shift (BwdTuning::dq_ws_shift), F3AB_ROUNDS rounds (odd
    // rounds in reverse order), one line per shift: the medians of the rounds in round order.
    if (const char* shifts_env = std::getenv("F3AB_WS_SHIFTS")) {
      const std::vector<long long> shifts = parse_list(shifts_env);
      if (shifts.empty()) continue;
      const int rounds = std::getenv("F3AB_ROUNDS") ? std::atoi(std::getenv("F3AB_ROUNDS")) : 4;
      // The largest shift first: the workspace grows once, so no shift reallocates it.
      flash3::bwd_tuning().dq_ws_shift = *std::max_element(shifts.begin(), shifts.end());
      flash3::run_backward<D, true>(p);
      std::vector<std::vector<float>> med(shifts.size());
      for (int r = 0; r < rounds; ++r)
        for (size_t j = 0; j < shifts.size(); ++j) {
          const size_t i = r % 2 ? shifts.size() - 1 - j : j;
          flash3::bwd_tuning().dq_ws_shift = shifts[i];
          for (int w = 0; w < 3; ++w)
            flash3::run_backward<D, true>(p);
          med[i].push_back(time_median().first);
        }
      for (size_t i = 0; i < shifts.size(); ++i) {
        std::printf("S=%5d D=%3d causal=%d %-18s shift %9lld B  TFLOP/s per round:", S, D,
                    causal ? 1 : 0, (var.name + suffix).c_str(), shifts[i]);
        for (float m : med[i])
          std::printf(" %6.1f", flops / (m * 1e-3) / 1e12);
        std::printf("\n");
      }
      flash3::bwd_tuning().dq_ws_shift = 0;
      continue;
    }
    for (int i = 0; i < 5; ++i)
      flash3::run_backward<D, true>(p);
    const auto [med, lo] = time_median();
    std::printf("S=%5d D=%3d causal=%d %-26s %8.3f ms  %6.1f TFLOP/s  (min %8.3f ms %6.1f)\n", S, D,
                causal ? 1 : 0, (var.name + suffix).c_str(), med, flops / (med * 1e-3) / 1e12, lo,
                flops / (lo * 1e-3) / 1e12);
    if (const char* dump = std::getenv("F3AB_DUMP"))
      dump_or_compare(dump, S, D, causal, dq, dk, dv, n);
  }
  flash3::bwd_tuning() = flash3::BwdTuning{};
  for (auto* p : {q, k, v, o, dout, dq, dk, dv})
    cudaFree(p);
  cudaFree(lse);
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> cfgs(argv + 1, argv + argc);
  if (cfgs.empty())
    cfgs = {"1024,64,0",  "1024,128,0", "4096,64,0",  "4096,64,1",   "4096,128,0",
            "4096,128,1", "16384,64,0", "16384,64,1", "16384,128,0", "16384,128,1"};
  for (const auto& c : cfgs) {
    int S = 0, D = 0, cz = 0;
    if (std::sscanf(c.c_str(), "%d,%d,%d", &S, &D, &cz) != 3) continue;
    try {
      if (D == 64) run_one<64>(S, cz != 0);
      if (D == 128) run_one<128>(S, cz != 0);
      // Session 42: D 256 (bwd_launch_d256.cuh; BwdTuning's D 64 / 128 knobs do not apply, so
      // only "default" means anything there).
      if (D == 256) run_one<256>(S, cz != 0);
    } catch (const std::exception& e) {
      std::printf("S=%d D=%d causal=%d: error %s\n", S, D, cz, e.what());
    }
  }
  return 0;
}
