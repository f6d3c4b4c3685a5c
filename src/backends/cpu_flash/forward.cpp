// cpu_flash forward: tiled online softmax (FlashAttention-2 order on the CPU).
//
// Work item = (sequence b, query head h, query tile of kBq rows); items are independent and write
// disjoint rows of out/lse, so results do not depend on the thread count. Per item:
//   Qs  [kBq][dp]   q rows, fp32 (per-thread scratch; read in place for fp32 unit-stride Q with
//                   D % 16 == 0), the scale folded into the packed K^T
//   for each key block kb the tile's rows can see (tile_key_range; the rest is never touched):
//     S = Qs K^T       [kBq][kBk]   gemm, depth dp
//     policy (masks, causal/window edges, softcap, ALiBi) only where tile_needs_policy
//     online softmax in base 2 (S carries a factor log2(e), folded into the packed K^T when the
//     policy leaves scores alone, else applied after it): m, l, alpha per row; S <- P
//     (blocks without policy or dropout, AVX-512: S and the softmax in one fused kernel,
//     KernelTable::qk_softmax, the exp interleaved with the GEMM; the next block prefetched)
//     dropout on P (l is not affected: lse ignores dropout)
//     O = alpha*O + P V  [kBq][dvp]  gemm, depth = keys in the block
//   out = O / l (0 for an empty row), lse = m ln2 + ln l (-inf for an empty row).
// Memory: packed K^T and V in fp32 (O(B*Hkv*Sk*D)) plus ~(2*kBq*dp + kBq*kBk) floats per thread.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <new>
#include <vector>

#include "backends/cpu_flash/cpu_flash.hpp"
#include "backends/cpu_flash/isa.hpp"
#include "backends/cpu_flash/score_tile.hpp"
#include "backends/cpu_flash/thread_pool.hpp"
#include "backends/cpu_flash/tiles.hpp"

namespace attnkit::cpu_flash {
namespace {

// fp32 scratch on a 4 KiB boundary plus `lines` cache lines: 64-byte aligned (std::vector's 16
// gave 512-bit loads and stores that split cache lines on every K^T / S / O row), and the
// buffers at distinct offsets mod 512 bytes (their rows are 512-byte multiples apart), so that
// the S stores never 4K-alias the K^T loads of the same kernel.
class AlignedFloats {
 public:
  explicit AlignedFloats(int lines) : lines_(lines) {}
  // grow-only: keeps the buffer (and its pages) when n fits
  void ensure(int64_t n) {
    if (n <= n_) return;
    const size_t bytes = static_cast<size_t>(n) * sizeof(float) + 4096 + 64 * lines_;
    buf_.reset(static_cast<char*>(std::aligned_alloc(4096, (bytes + 4095) / 4096 * 4096)));
    if (!buf_) throw std::bad_alloc();
    p_ = reinterpret_cast<float*>(buf_.get() + 64 * lines_);
    n_ = n;
  }
  float* data() const { return p_; }

 private:
  struct Free {
    void operator()(char* x) const { std::free(x); }
  };
  std::unique_ptr<char, Free> buf_;
  float* p_ = nullptr;
  int64_t n_ = 0;
  int lines_;
};

struct FwdScratch {
  AlignedFloats q{0}, s{4}, o{2}, kt{0};
  std::vector<float> m, l, alpha;
  // (kt: lazily packed K^T of one (sequence, kv head), private to the worker: [kblocks][dp][kBk])
  std::vector<uint8_t> kt_ready;
  int64_t kt_b = -1, kt_g = -1;
  uint64_t call = 0;             // the forward call the scratch was last set up for
  std::vector<uint16_t> qb, pb;  // bf16 path: Q tile (unscaled bits) and P tile
};

struct FwdItem {
  int64_t b, h, qt, cost;
};

}  // namespace

void run_forward(const Params& p) {
  const KernelTable& kt = active_kernels();
  const int threads = resolve_threads(p);
  const Geometry geo = make_geometry(p);
  const int64_t dp = geo.dp, dvp = geo.dvp;
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();

  // Items, heaviest first (the key blocks each must visit), so dynamic scheduling balances causal
  // and windowed work.
  // Within one cost, the query tiles of one head are consecutive, so that head's K/V blocks
  // (S*(D+Dv)*4 bytes: 2 MiB at S=2048, D=128) stay in L2/L3 across its items instead of being
  // streamed from DRAM once per item.
  std::vector<FwdItem> items;
  for (int64_t b = 0; b < p.batch; ++b) {
    const SeqSpan& sp = geo.spans[b];
    for (int64_t h = 0; h < p.heads_q; ++h)
      for (int64_t qt = 0; qt < ceil_div(sp.sq, kBq); ++qt) {
        const int64_t i0 = qt * kBq, rows = std::min(kBq, sp.sq - i0);
        const KeyRange kr = tile_key_range(p, sp, i0, rows);
        const int64_t cost = kr.lo <= kr.hi ? kr.hi / kBk - kr.lo / kBk + 1 : 0;
        items.push_back({b, h, qt, cost});
      }
  }
  std::stable_sort(items.begin(), items.end(),
                   [](const FwdItem& x, const FwdItem& y) { return x.cost > y.cost; });

  // bf16 inputs on a CPU with AVX512-BF16: S = Q K^T and O += P V as VDPBF16PS dot products
  // (twice the multiply-adds per instruction of fp32 FMA). Q and K are used exactly (their bf16
  // bits), the scale is applied to S in fp32, and P is rounded to bf16 for the P V product (as
  // every bf16 attention kernel does); accumulation stays fp32.
  const bool bf16_dot = p.dtype == DType::bf16 && kt.gemm_bf16 != nullptr;
  // fp32 V with unit d-stride and Dv % kPad == 0 already is a valid B operand of O += P V (rows of
  // Dv floats at stride v_st.s): read it in place instead of packing a copy (~2% of a
  // B=2, H=16, S=1024, D=64 forward).
  const bool v_direct = !bf16_dot && p.dtype == DType::f32 && p.v_st.d == 1 && dvp == p.head_dim_v;
  // The softmax runs in base 2 (KernelTable::softmax_step): S must carry log2(e). Folded into the
  // scale of Q (or of S on the bf16 path) when no softcap / ALiBi / mask transforms the natural
  // scores; otherwise S is multiplied by log2(e) after the policy. Costs one more rounding of
  // q * scale (relative 6e-8); saves a multiply per score in the exp.
  constexpr float kLog2e = 1.44269504088896341f;
  const bool policy_transforms = p.softcap > 0.0f || p.alibi != nullptr || p.has_mask();
  const float s_scale = policy_transforms ? p.scale : p.scale * kLog2e;
  // fp32 path: the scale is folded into the packed K^T instead of Q, so fp32 Q with unit d-stride
  // and D % 16 == 0 is read in place (no per-item copy; ~1-2% at S = 1024).
  const bool q_direct = !bf16_dot && p.dtype == DType::f32 && p.q_st.d == 1 && dp == p.head_dim;
  PackWhat what;
  what.kt_scale = bf16_dot ? 1.0f : s_scale;
  // fp32 unit-stride K with the AVX-512 transpose: K^T blocks are packed by each worker when it
  // first needs them, into a private per-head buffer, from K source rows prefetched into L2 one
  // block ahead (the up-front pack read K from DRAM: 0.75-0.82 ns/element vs 0.17 from cache,
  // ~2% of an S = 1024 forward). Two workers on one head both pack it.
  const bool lazy_kt =
      !bf16_dot && p.dtype == DType::f32 && p.k_st.d == 1 && kt.transpose16 != nullptr;
  int64_t max_kblocks = 0;
  for (int64_t b = 0; b < p.batch; ++b)
    max_kblocks = std::max(max_kblocks, geo.kblock_start[b + 1] - geo.kblock_start[b]);
  what.kt = !bf16_dot && !lazy_kt;
  what.v = !bf16_dot && !v_direct;
  what.kt_bf16 = what.v_bf16 = bf16_dot;
  const PackedKV pk = pack_kv(p, geo, what, threads);

  // Items of equal cost (no causal/window skipping): each worker runs a contiguous range of them
  // (Schedule::segmented), so that at 2 threads and S = 1024 a head's 8 items run on one worker,
  // which transposes its K^T once and finds it in its own L2, instead of two workers alternating
  // on every head and both packing it. Unequal costs keep the heaviest-first dynamic order.
  const bool uniform = !items.empty() && items.front().cost == items.back().cost;
  const Schedule sched = uniform ? Schedule::segmented : Schedule::dynamic;
  // a worker's likely next item (for the prefetch of its Q rows)
  const int64_t next_step = uniform ? 1 : threads;

  // Scratch per thread, kept between calls (grow-only, like the pack arena): allocating it per
  // call cost page faults on every call (the K^T buffer came back from the OS each time).
  static std::atomic<uint64_t> calls{0};
  const uint64_t call = calls.fetch_add(1) + 1;
  const auto run_item = [&](int64_t n, int /*worker*/) {
    const FwdItem& it = items[n];
    thread_local FwdScratch w;
    if (w.call != call) {  // this thread's first item of the call
      w.call = call;
      w.kt_b = w.kt_g = -1;  // K^T of another call's K
      w.q.ensure(kBq * dp);
      w.s.ensure(kBq * kBk);
      w.o.ensure(kBq * dvp);
      w.m.resize(kBq);
      w.l.resize(kBq);
      w.alpha.resize(kBq);
      if (lazy_kt) {
        w.kt.ensure(max_kblocks * dp * kBk);
        if (static_cast<int64_t>(w.kt_ready.size()) < max_kblocks) w.kt_ready.resize(max_kblocks);
      }
      if (bf16_dot) {
        w.qb.resize(std::max<size_t>(w.qb.size(), kBq * dp));
        w.pb.resize(std::max<size_t>(w.pb.size(), kBq * kBk));
      }
    }
    const int64_t b = it.b, h = it.h, g = h / p.group;
    const SeqSpan& sp = geo.spans[b];
    const int64_t i0 = it.qt * kBq, rows = std::min(kBq, sp.sq - i0);

    const float* qrows = w.q.data();  // fp32 Q rows of the item and their stride
    int64_t ldq = dp;
    if (q_direct) {
      qrows = static_cast<const float*>(p.q) + row_offset(p.q_st, b, sp.q_start, i0, h);
      ldq = p.q_st.s;
    } else {
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t off = row_offset(p.q_st, b, sp.q_start, i0 + r, h);
        if (bf16_dot)
          load_row_bf16_bits(p.q, off, p.q_st.d, p.head_dim, dp, w.qb.data() + r * dp);
        else
          load_row(p.q, p.dtype, off, p.q_st.d, p.head_dim, dp, 1.0f, w.q.data() + r * dp);
      }
    }
    const KeyRange kr = tile_key_range(p, sp, i0, rows);
    // fp32: the first key block's P V overwrites O (no fill, no read of zeros); bf16 accumulates
    // into O, and an item with no key blocks stores zeros from its l = 0 rows.
    if (bf16_dot) std::fill(w.o.data(), w.o.data() + kBq * dvp, 0.0f);
    std::fill(w.m.begin(), w.m.end(), kNegInf);
    std::fill(w.l.begin(), w.l.end(), 0.0f);

    // Fused S = Q K^T + softmax kernel (AVX-512, fp32 operands) for the blocks without policy.
    const bool fused =
        kt.qk_softmax != nullptr && !bf16_dot && !p.has_dropout() && rows % 4 == 0 && kBk == 128;
    if (kr.lo <= kr.hi) {
      for (int64_t kb = kr.lo / kBk; kb <= kr.hi / kBk; ++kb) {
        const int64_t j0 = kb * kBk, kcols = std::min(kBk, sp.sk - j0);
        const int64_t gkb = geo.kblock_start[b] + kb;
        const float* ktblk = nullptr;  // fp32 K^T block [dp][kBk]
        if (lazy_kt) {
          if (w.kt_b != b || w.kt_g != g) {
            std::fill(w.kt_ready.begin(), w.kt_ready.end(), uint8_t{0});
            w.kt_b = b;
            w.kt_g = g;
          }
          float* dst = w.kt.data() + kb * dp * kBk;
          if (!w.kt_ready[kb]) {
            pack_kt_block_f32(p, sp, b, g, j0, dp, s_scale, dst);
            w.kt_ready[kb] = 1;
          }
          ktblk = dst;
        } else if (!bf16_dot) {
          ktblk = pk.kt_block(gkb, g);
        }
        const bool policy = tile_needs_policy(p, sp, i0, rows, j0);
        if (fused && !policy) {
          // (the common case: interior blocks of non-causal attention)
          // The next block's K^T and V are prefetched into L2 from inside the kernel (one line
          // per exp vector), so its first row groups do not wait on L3.
          // In the item's last block: the first block of the same head and the Q rows of item
          // n + next_step, the likely next items of this worker (items are ordered by head;
          // dynamic: handed out in turn, segmented: consecutive), which otherwise start cold.
          Prefetch2D pf[3];
          int npf = 0;
          const bool last = kb == kr.hi / kBk;
          const int64_t nkb = last ? kr.lo / kBk : kb + 1;  // block to prefetch
          const int64_t nj0 = nkb * kBk;
          if (!last || nkb != kb) {
            if (!lazy_kt)
              pf[npf++] = {pk.kt_block(geo.kblock_start[b] + nkb, g), dp * kBk * 4, dp * kBk * 4,
                           1};
            else if (w.kt_ready[nkb])
              pf[npf++] = {w.kt.data() + nkb * dp * kBk, dp * kBk * 4, dp * kBk * 4, 1};
            else  // the K rows this worker will transpose next
              pf[npf++] = {
                  static_cast<const float*>(p.k) + row_offset(p.k_st, b, sp.k_start, nj0, g),
                  p.head_dim * 4, p.k_st.s * 4, std::min(kBk, sp.sk - nj0)};
            const int64_t nrows = std::min(kBk, sp.sk - nj0);
            if (v_direct)
              pf[npf++] = {
                  static_cast<const float*>(p.v) + row_offset(p.v_st, b, sp.k_start, nj0, g),
                  dvp * 4, p.v_st.s * 4, nrows};
            else
              pf[npf++] = {pk.v_block(geo.kblock_start[b] + nkb, g), dvp * kBk * 4, dvp * kBk * 4,
                           1};
          }
          if (last && q_direct && n + next_step < static_cast<int64_t>(items.size())) {
            const FwdItem& nx = items[n + next_step];
            const SeqSpan& nsp = geo.spans[nx.b];
            const int64_t ni0 = nx.qt * kBq, nrows = std::min(kBq, nsp.sq - ni0);
            pf[npf++] = {
                static_cast<const float*>(p.q) + row_offset(p.q_st, nx.b, nsp.q_start, ni0, nx.h),
                p.head_dim * 4, p.q_st.s * 4, nrows};
          }
          kt.qk_softmax(qrows, ldq, dp, ktblk, rows, w.s.data(), w.m.data(), w.l.data(),
                        w.alpha.data(), pf, npf);
        } else if (bf16_dot) {
          kt.gemm_bf16(w.s.data(), kBk, w.qb.data(), dp, pk.ktb_block(gkb, g), 2 * kBk, rows, kBk,
                       dp, false);
          for (int64_t r = 0; r < rows; ++r)
            kt.scale_row(w.s.data() + r * kBk, kBk, s_scale);
        } else {
          kt.gemm(w.s.data(), kBk, qrows, ldq, 1, ktblk, kBk, rows, kBk, dp, false);
        }
        if (policy) {
          apply_score_policy(p, sp, b, h, i0, rows, j0, w.s.data(), kBk, nullptr);
          if (policy_transforms)
            for (int64_t r = 0; r < rows; ++r)
              kt.scale_row(w.s.data() + r * kBk, kBk, kLog2e);
        }
        if (!fused || policy)
          kt.softmax_step(w.s.data(), kBk, rows, kBk, w.m.data(), w.l.data(), w.alpha.data());
        if (bf16_dot)
          for (int64_t r = 0; r < rows; ++r)
            if (w.alpha[r] != 1.0f) kt.scale_row(w.o.data() + r * dvp, dvp, w.alpha[r]);
        if (p.has_dropout()) apply_dropout(p, b, h, i0, rows, j0, kcols, w.s.data(), kBk, nullptr);
        if (bf16_dot) {
          kt.to_bf16(w.pb.data(), kBk, w.s.data(), kBk, rows, kBk);
          kt.gemm_bf16(w.o.data(), dvp, w.pb.data(), kBk, pk.vb_block(gkb, g), 2 * dvp, rows, dvp,
                       round_up(kcols, 2), true);
        } else {
          const float* vblk = pk.v ? pk.v_block(gkb, g) : nullptr;
          int64_t ldv = dvp;
          if (v_direct) {
            vblk = static_cast<const float*>(p.v) + row_offset(p.v_st, b, sp.k_start, j0, g);
            ldv = p.v_st.s;
          }
          // O = alpha O + P V (the rescale folded into the accumulator load); O = P V first
          if (kb == kr.lo / kBk)
            kt.gemm(w.o.data(), dvp, w.s.data(), kBk, 1, vblk, ldv, rows, dvp, kcols, false);
          else
            kt.gemm_row_scaled(w.o.data(), dvp, w.s.data(), kBk, vblk, ldv, rows, dvp, kcols,
                               w.alpha.data());
        }
      }
    }

    for (int64_t r = 0; r < rows; ++r) {
      const bool empty = !(w.l[r] > 0.0f);
      const float inv = empty ? 0.0f : 1.0f / w.l[r];
      float* orow = w.o.data() + r * dvp;
      if (empty) std::fill(orow, orow + dvp, 0.0f);
      store_row(p.out, p.dtype, row_offset(p.out_st, b, sp.q_start, i0 + r, h), p.out_st.d,
                p.head_dim_v, orow, inv);
      if (p.lse) {
        // m is in log2 units; in double so that m ln2 adds no rounding of its own
        const float lse = empty ? kNegInf
                                : static_cast<float>(w.m[r] * 0.69314718055994531 +
                                                     std::log(static_cast<double>(w.l[r])));
        p.lse[b * p.lse_st.b + h * p.lse_st.h + (sp.q_start + i0 + r) * p.lse_st.s] = lse;
      }
    }
  };
  parallel_for(static_cast<int64_t>(items.size()), threads, run_item, sched);
}

}  // namespace attnkit::cpu_flash
