// cudnn backend, host side (runs without a GPU): the mapping of attnkit options onto cuDNN's
// diagonal band / bias / padding mask, the reasons for unsupported calls, plan keys and the LRU
// plan cache (eviction, build counting, one build per key across threads).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "backends/cudnn/plan_cache.hpp"
#include "backends/cudnn/plan_key.hpp"
#include "backends/cudnn/support.hpp"
#include "dispatch/registry.hpp"

namespace attnkit::cudnn {
namespace {

alignas(16) char g_buf[64];  // a 16-byte aligned stand-in for device pointers

/// A supported bf16 BSHD call [B, S, H, D] with contiguous strides.
Params base_params(int64_t b = 2, int64_t sq = 128, int64_t sk = 128, int64_t hq = 8,
                   int64_t hkv = 8, int64_t d = 64) {
  Params p;
  p.batch = b;
  p.seqlen_q = sq;
  p.seqlen_k = sk;
  p.heads_q = hq;
  p.heads_kv = hkv;
  p.group = hq / hkv;
  p.head_dim = p.head_dim_v = d;
  p.dtype = DType::bf16;
  p.device = Device::cuda(0);
  p.q = p.k = p.v = p.out = g_buf;
  p.q_st = {sq * hq * d, hq * d, d, 1};
  p.out_st = p.q_st;
  p.k_st = {sk * hkv * d, hkv * d, d, 1};
  p.v_st = p.k_st;
  p.scale = 0.125f;
  return p;
}

std::vector<std::string> reasons(const Params& p, int arch = 90) {
  std::vector<std::string> r;
  cudnn_reasons(p, arch, r);
  return r;
}

bool mentions(const std::vector<std::string>& r, const std::string& word) {
  return std::any_of(r.begin(), r.end(),
                     [&](const std::string& s) { return s.find(word) != std::string::npos; });
}

TEST(CudnnSupport, PlainCallHasNoReasons) {
  EXPECT_TRUE(reasons(base_params()).empty());
  Params p = base_params(1, 77, 130, 16, 2, 128);  // odd lengths, GQA 8
  EXPECT_TRUE(reasons(p).empty());
}

TEST(CudnnSupport, HeadDims) {
  Params p = base_params(2, 64, 64, 4, 4, 72);
  EXPECT_TRUE(reasons(p).empty());
  p.head_dim = p.head_dim_v = 80 + 4;  // not a multiple of 8
  p.q_st = p.k_st = p.v_st = p.out_st = {64 * 4 * 88, 4 * 88, 88, 1};
  EXPECT_TRUE(mentions(reasons(p), "multiples of 8")) << reasons(p).size();
  Params big = base_params(1, 64, 64, 2, 2, 256);
  EXPECT_TRUE(reasons(big, 90).empty());           // Hopper: up to 256
  EXPECT_TRUE(mentions(reasons(big, 80), "128"));  // Ampere: up to 128
  EXPECT_TRUE(reasons(big, 0).empty());            // arch unknown: left to cuDNN
}

TEST(CudnnSupport, UnsupportedOptionsGiveTheirReason) {
  Params p = base_params();
  p.softcap = 30.f;
  EXPECT_TRUE(mentions(reasons(p), "softcap"));
  p = base_params();
  static const float slopes[8] = {};
  p.alibi = slopes;
  EXPECT_TRUE(mentions(reasons(p), "ALiBi"));
  p = base_params();
  p.dropout_p = 0.1f;
  p.dropout_threshold = 1677722;
  EXPECT_TRUE(mentions(reasons(p), "dropout"));
  EXPECT_TRUE(mentions(reasons(p), "Philox"));
}

TEST(CudnnSupport, BackwardOfSingleRowAndKeyIsDeclined) {
  Params p = base_params(2, 1, 1);
  EXPECT_TRUE(reasons(p).empty());  // the forward runs
  p.is_backward = true;
  p.dout = p.dq = p.dk = p.dv = g_buf;
  p.dout_st = p.dq_st = p.q_st;
  p.dk_st = p.dv_st = p.k_st;
  EXPECT_TRUE(mentions(reasons(p), "s_q = s_kv = 1"));
  p.seqlen_k = 2;
  EXPECT_TRUE(reasons(p).empty());
}

TEST(CudnnSupport, LayoutReasons) {
  Params p = base_params();
  p.q_st.d = 2;
  EXPECT_TRUE(mentions(reasons(p), "q: cuDNN needs a unit stride"));
  p = base_params();
  p.k_st.s = 68;  // rows not 16-byte aligned
  EXPECT_TRUE(mentions(reasons(p), "k: cuDNN needs strides in multiples of 8"));
  p = base_params();
  p.v = g_buf + 2;
  EXPECT_TRUE(mentions(reasons(p), "v: cuDNN needs a 16-byte aligned pointer"));
  p = base_params();
  p.is_backward = true;
  p.dout = p.dq = p.dk = p.dv = g_buf;
  p.dout_st = p.dq_st = p.q_st;
  p.dk_st = p.dv_st = p.k_st;
  p.dq_st.d = 3;
  EXPECT_TRUE(mentions(reasons(p), "dq:"));
}

TEST(CudnnSupport, VarlenTopLeftWithWindowIsUnsupported) {
  Params p = base_params(3, 100, 100, 4, 4, 64);
  p.varlen = true;
  p.q_st.b = p.k_st.b = p.v_st.b = p.out_st.b = 0;
  p.causal = Causal::top_left;
  p.window_left = 16;
  EXPECT_TRUE(mentions(reasons(p), "one diagonal alignment"));
  p.causal = Causal::bottom_right;
  EXPECT_TRUE(reasons(p).empty());
}

TEST(CudnnSupport, HugeMaterializedBiasIsRefused) {
  Params p = base_params(8, 16384, 16384, 16, 16, 64);
  p.mask_kind = MaskKind::additive;
  p.mask_dtype = p.dtype;
  p.mask = g_buf;
  p.mask_st = {.b = int64_t(16) * 16384 * 16384, .s = 16384, .h = int64_t(16384) * 16384, .d = 1};
  EXPECT_TRUE(mentions(reasons(p), "materialized bias"));
  p.mask_st.b = p.mask_st.h = 0;  // broadcast [1, 1, Sq, Sk]: 512 MiB, allowed
  EXPECT_TRUE(reasons(p).empty());
}

TEST(CudnnSupport, AdditiveMaskOfAnotherDtypeIsDeclined) {
  // cuDNN's bias is in the input dtype: an f32 mask would be rounded (H200: lse off by 4e-3).
  Params p = base_params(2, 64, 64, 4, 4, 64);
  p.mask_kind = MaskKind::additive;
  p.mask = g_buf;
  p.mask_st = {.b = 0, .s = 64, .h = 0, .d = 1};
  p.mask_dtype = DType::f32;
  EXPECT_TRUE(mentions(reasons(p), "takes the bias in the input dtype"));
  p.mask_dtype = p.dtype;
  EXPECT_TRUE(reasons(p).empty());
}

// ---- mapping ------------------------------------------------------------------------------

TEST(CudnnMapping, CausalAlignments) {
  Params p = base_params(2, 100, 160);
  p.causal = Causal::top_left;
  Mapping m = map_call(p);
  EXPECT_TRUE(m.band);
  EXPECT_EQ(m.align, Align::top_left);
  EXPECT_EQ(m.right_bound, 0);
  EXPECT_FALSE(m.left_bound.has_value());
  EXPECT_FALSE(m.padding);
  EXPECT_FALSE(m.bias);
  EXPECT_FALSE(m.may_have_empty_rows);

  p.causal = Causal::bottom_right;
  m = map_call(p);
  EXPECT_EQ(m.align, Align::bottom_right);
  EXPECT_EQ(m.right_bound, 0);
  EXPECT_TRUE(m.padding);  // cuDNN shifts the band by the lengths only with a padding mask
  EXPECT_FALSE(m.may_have_empty_rows);  // Sq <= Sk: every row sees key 0

  p.seqlen_q = 200;  // Sq > Sk: the first Sq - Sk rows see nothing
  EXPECT_TRUE(map_call(p).may_have_empty_rows);

  p = base_params(2, 128, 128);
  p.causal = Causal::bottom_right;  // Sq == Sk: identical to top-left, no padding mask needed
  m = map_call(p);
  EXPECT_EQ(m.align, Align::top_left);
  EXPECT_FALSE(m.padding);
}

TEST(CudnnMapping, WindowBounds) {
  // attnkit window (wl, wr): diag - wl <= j <= diag + wr; cuDNN: j > diag - l, j <= diag + r.
  Params p = base_params(1, 64, 96);
  p.window_left = 5;
  p.window_right = 3;
  Mapping m = map_call(p);
  EXPECT_TRUE(m.band);
  EXPECT_EQ(m.align, Align::bottom_right);
  EXPECT_EQ(m.left_bound, 6);
  EXPECT_EQ(m.right_bound, 3);
  EXPECT_TRUE(m.may_have_empty_rows);

  p.causal = Causal::bottom_right;  // causal caps the right bound at the diagonal
  m = map_call(p);
  EXPECT_EQ(m.right_bound, 0);
  EXPECT_EQ(m.left_bound, 6);

  p.window_right = -1;
  p.causal = Causal::none;
  m = map_call(p);
  EXPECT_FALSE(m.right_bound.has_value());
  EXPECT_EQ(m.left_bound, 6);

  // top_left causal + (bottom-right) window with Sq != Sk: two alignments -> materialized bias.
  p.causal = Causal::top_left;
  m = map_call(p);
  EXPECT_TRUE(m.bias);
  EXPECT_TRUE(m.bias_structural);
  EXPECT_FALSE(m.band);
  EXPECT_EQ(m.bias_b, 1);
  EXPECT_EQ(m.bias_h, 1);
}

TEST(CudnnMapping, MasksBecomeBias) {
  Params p = base_params(3, 50, 70, 4, 2, 64);
  p.mask_kind = MaskKind::keep_bool;
  p.mask_dtype = DType::b8;
  p.mask = g_buf;
  p.mask_st = {.b = 0, .s = 70, .h = 50 * 70, .d = 1};  // [1, H, Sq, Sk]
  p.causal = Causal::bottom_right;
  Mapping m = map_call(p);
  EXPECT_TRUE(m.bias);
  EXPECT_TRUE(m.bias_structural);  // causal folded into the bias
  EXPECT_FALSE(m.band);
  EXPECT_EQ(m.bias_b, 1);
  EXPECT_EQ(m.bias_h, 4);
  EXPECT_TRUE(m.may_have_empty_rows);
}

TEST(CudnnMapping, EmptyAndVarlen) {
  Params p = base_params(2, 0, 64);
  EXPECT_TRUE(map_call(p).empty);
  p = base_params(2, 64, 0);
  EXPECT_TRUE(map_call(p).empty);
  p = base_params(4, 300, 200);
  p.varlen = true;
  Mapping m = map_call(p);
  EXPECT_TRUE(m.padding);
  EXPECT_TRUE(m.may_have_empty_rows);  // a sequence may have sk = 0
  EXPECT_EQ(graph_dims(p).sq, 512);    // bucketed
  EXPECT_EQ(graph_dims(p).sk, 256);
  EXPECT_EQ(bucket_seqlen(1), 64);
  EXPECT_EQ(bucket_seqlen(64), 64);
  EXPECT_EQ(bucket_seqlen(65), 128);
}

TEST(CudnnMapping, StatsDirectOnlyWhenPacked) {
  Params p = base_params(2, 128, 128, 8, 8, 64);
  float lse[1];
  p.lse = lse;
  p.lse_st = {.b = 8 * 128, .s = 1, .h = 128};
  EXPECT_TRUE(stats_direct(p));
  p.lse_st = {.b = 128, .s = 1, .h = 2 * 128};  // [H, B, S] order: not packed BHSD
  EXPECT_FALSE(stats_direct(p));
  p.lse_st = {.b = 2, .s = 2 * 8, .h = 1};  // [B, S, H]
  EXPECT_FALSE(stats_direct(p));
  p.lse_st = {.b = 8 * 128, .s = 1, .h = 128};
  p.varlen = true;
  EXPECT_FALSE(stats_direct(p));
}

// ---- plan keys ----------------------------------------------------------------------------

TEST(CudnnPlanKey, PointersAndScaleAreNotPartOfTheKey) {
  Params a = base_params(), b = base_params();
  b.q = g_buf + 16;
  b.scale = 0.5f;
  EXPECT_EQ(make_plan_key(a, map_call(a), false), make_plan_key(b, map_call(b), false));
  b = base_params(2, 128, 129);
  EXPECT_FALSE(make_plan_key(a, map_call(a), false) == make_plan_key(b, map_call(b), false));
  b = base_params();
  b.causal = Causal::top_left;
  EXPECT_FALSE(make_plan_key(a, map_call(a), false) == make_plan_key(b, map_call(b), false));
  EXPECT_FALSE(make_plan_key(a, map_call(a), false) == make_plan_key(a, map_call(a), true));
  b = base_params();
  b.dtype = DType::f16;
  EXPECT_FALSE(make_plan_key(a, map_call(a), false) == make_plan_key(b, map_call(b), false));
  b = base_params();
  b.q_st = {128 * 8 * 64, 64, 128 * 64, 1};  // BHSD layout
  EXPECT_FALSE(make_plan_key(a, map_call(a), false) == make_plan_key(b, map_call(b), false));
}

TEST(CudnnPlanKey, VarlenMaximaShareABucket) {
  Params a = base_params(4, 300, 300), b = base_params(4, 310, 290);
  for (Params* p : {&a, &b}) {
    p->varlen = true;
    p->q_st.b = p->k_st.b = p->v_st.b = p->out_st.b = 0;
  }
  EXPECT_EQ(make_plan_key(a, map_call(a), true), make_plan_key(b, map_call(b), true));
}

// ---- LRU cache ----------------------------------------------------------------------------

PlanKey key_of(int64_t i) {
  return PlanKey{{i, i * 7}};
}

TEST(CudnnPlanCache, HitsDoNotRebuildAndLruEvicts) {
  LruCache<int> cache(2);
  int built = 0;
  auto build = [&] { return std::make_shared<int>(++built); };
  EXPECT_EQ(*cache.get_or_build(key_of(1), build), 1);
  EXPECT_EQ(*cache.get_or_build(key_of(1), build), 1);  // hit
  EXPECT_EQ(*cache.get_or_build(key_of(2), build), 2);
  EXPECT_EQ(cache.builds(), 2u);
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_EQ(*cache.get_or_build(key_of(1), build), 1);  // 1 is now most recent
  EXPECT_EQ(*cache.get_or_build(key_of(3), build), 3);  // evicts 2
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_EQ(*cache.get_or_build(key_of(1), build), 1);  // still cached
  EXPECT_EQ(*cache.get_or_build(key_of(2), build), 4);  // rebuilt
  EXPECT_EQ(cache.builds(), 4u);
}

TEST(CudnnPlanCache, OneBuildPerKeyAcrossThreads) {
  LruCache<int> cache(16);
  std::atomic<int> built{0};
  auto build = [&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // widen the race window
    return std::make_shared<int>(++built);
  };
  std::vector<std::thread> threads;
  std::vector<int> seen(8, 0);
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int k = 0; k < 4; ++k)
        seen[t] += *cache.get_or_build(key_of(k), build) > 0;
    });
  for (auto& th : threads)
    th.join();
  EXPECT_EQ(built.load(), 4);
  EXPECT_EQ(cache.builds(), 4u);
  for (int s : seen)
    EXPECT_EQ(s, 4);
}

TEST(CudnnRegistry, NamesAndAliases) {
  EXPECT_EQ(lookup_canonical("_native_cudnn").value_or(""), "cudnn");
  EXPECT_EQ(lookup_canonical("_sdpa_cudnn").value_or(""), "cudnn");
  Backend* b = built_backend("cudnn");
  ASSERT_NE(b, nullptr);
  const Capabilities& c = b->description().caps;
  EXPECT_TRUE(c.backward && c.varlen && c.gqa && c.lse && c.causal_top_left &&
              c.causal_bottom_right && c.window && c.mask_bool && c.mask_additive);
  EXPECT_FALSE(c.dropout || c.softcap || c.alibi);
}

}  // namespace
}  // namespace attnkit::cudnn
