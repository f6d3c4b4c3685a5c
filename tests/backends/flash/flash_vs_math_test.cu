// flash vs the math oracle: every option, both dtypes, every built head dim (+ a padded one),
// forward out and lse, backward dq/dk/dv (both backward schedules). Inputs are rounded to the test
// dtype first, so both sides see the same values; outputs are poisoned (NaN) before each run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

#include "common/cuda_skip.hpp"
#include "flash_test_util.cuh"

namespace attnkit::flash_test {
namespace {

class FlashVsMath : public ::testing::TestWithParam<Cfg> {};

std::vector<float> randn(std::mt19937_64& g, int64_t n, DType dt, float sd = 1.f) {
  std::normal_distribution<float> nd(0.f, sd);
  std::vector<float> v(n);
  for (auto& x : v)
    x = round_to(dt, nd(g));
  return v;
}

TEST_P(FlashVsMath, MatchesOracle) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  const Cfg& c = GetParam();
  const bool varlen = !c.lens_q.empty();
  const int64_t B = varlen ? static_cast<int64_t>(c.lens_q.size()) : c.b;
  int64_t tq = 0, tk = 0;
  std::vector<int32_t> cuq{0}, cuk{0};
  for (size_t i = 0; i < c.lens_q.size(); ++i) {
    tq += c.lens_q[i];
    tk += c.lens_k[i];
    cuq.push_back(static_cast<int32_t>(tq));
    cuk.push_back(static_cast<int32_t>(tk));
  }
  std::mt19937_64 g(std::hash<std::string>{}(c.name()));
  auto make = [&](int64_t s, int64_t h) {
    Tensor t;
    if (varlen) {
      t.rank = 3;
      t.shape = {s, h, c.d, 0};
    } else {
      t.rank = 4;
      t.shape = {B, s, h, c.d};
    }
    t.host = randn(g, t.numel(), c.dt);
    return t;
  };
  Tensor q = make(varlen ? tq : c.sq, c.hq), k = make(varlen ? tk : c.sk, c.hkv),
         v = make(varlen ? tk : c.sk, c.hkv);
  Tensor out = make(varlen ? tq : c.sq, c.hq), dout = make(varlen ? tq : c.sq, c.hq);
  std::fill(out.host.begin(), out.host.end(), NAN);
  for (Tensor* t : {&q, &k, &v, &out, &dout})
    upload(*t, c.dt, c.bhsd, c.padded);

  Options o;
  o.softcap = c.softcap;
  o.causal = c.causal;
  o.window_left = c.wl;
  o.window_right = c.wr;
  o.dropout_p = c.dropout;
  o.dropout_seed = 0x1234abcdull;
  o.dropout_offset = 77;
  Options o_ref = o, o_gpu = o;
  o_ref.backend = "math";
  o_gpu.backend = "flash";
  o_gpu.deterministic = c.det;

  // Side inputs, host and device.
  std::vector<float> slopes;
  std::vector<uint8_t> mask_b;
  std::vector<float> mask_f;
  std::unique_ptr<DevBuf> d_slopes, d_mask, d_cuq, d_cuk;
  auto to_dev = [](const void* src, size_t bytes) {
    auto b = std::make_unique<DevBuf>(bytes);
    EXPECT_EQ(cudaMemcpy(b->p, src, bytes, cudaMemcpyHostToDevice), cudaSuccess);
    return b;
  };
  if (c.alibi) {
    const int64_t n = c.alibi == 2 ? B * c.hq : c.hq;
    for (int64_t i = 0; i < n; ++i)
      slopes.push_back(std::exp2(-8.0f * ((i % c.hq) + 1) / c.hq) * (1 + i / c.hq));
    d_slopes = to_dev(slopes.data(), slopes.size() * 4);
    TensorView a = c.alibi == 2 ? TensorView::contiguous(slopes.data(), DType::f32, {B, c.hq})
                                : TensorView::contiguous(slopes.data(), DType::f32, {c.hq});
    o_ref.alibi_slopes = a;
    a.data = d_slopes->p;
    a.device = Device::cuda(0);
    o_gpu.alibi_slopes = a;
  }
  if (c.mask == 1) {
    std::bernoulli_distribution keep(0.7);
    mask_b.resize(B * c.hq * c.sq * c.sk);
    for (int64_t e = 0; e < static_cast<int64_t>(mask_b.size()); ++e) {
      const int64_t i = (e / c.sk) % c.sq;
      mask_b[e] = (i == 3) ? 0 : keep(g);  // row 3: no visible key -> out 0, lse -inf
    }
    d_mask = to_dev(mask_b.data(), mask_b.size());
    TensorView m = TensorView::contiguous(mask_b.data(), DType::b8, {B, c.hq, c.sq, c.sk});
    o_ref.mask = m;
    m.data = d_mask->p;
    m.device = Device::cuda(0);
    o_gpu.mask = m;
  } else if (c.mask == 2) {
    std::uniform_real_distribution<float> u(0.f, 1.f);
    std::normal_distribution<float> nd(0.f, 1.f);
    mask_f.resize(c.sq * c.sk);
    for (auto& x : mask_f)
      x = u(g) < 0.1f ? -INFINITY : nd(g);
    d_mask = to_dev(mask_f.data(), mask_f.size() * 4);
    TensorView m = TensorView::contiguous(mask_f.data(), DType::f32, {c.sq, c.sk});
    o_ref.mask = m;
    m.data = d_mask->p;
    m.device = Device::cuda(0);
    o_gpu.mask = m;
  }
  if (varlen) {
    d_cuq = to_dev(cuq.data(), cuq.size() * 4);
    d_cuk = to_dev(cuk.data(), cuk.size() * 4);
    o_ref.cu_seqlens_q = TensorView::contiguous(cuq.data(), DType::i32, {B + 1});
    o_ref.cu_seqlens_k = TensorView::contiguous(cuk.data(), DType::i32, {B + 1});
    o_gpu.cu_seqlens_q = o_ref.cu_seqlens_q;
    o_gpu.cu_seqlens_k = o_ref.cu_seqlens_k;
    o_gpu.cu_seqlens_q.data = d_cuq->p;
    o_gpu.cu_seqlens_q.device = Device::cuda(0);
    o_gpu.cu_seqlens_k.data = d_cuk->p;
    o_gpu.cu_seqlens_k.device = Device::cuda(0);
    o_ref.max_seqlen_q = o_gpu.max_seqlen_q = *std::max_element(c.lens_q.begin(), c.lens_q.end());
    o_ref.max_seqlen_k = o_gpu.max_seqlen_k = *std::max_element(c.lens_k.begin(), c.lens_k.end());
  }

  // lse: [B, Hq, Sq] or varlen [Hq, total_q]
  const std::array<int64_t, 3> lse_shape = {varlen ? c.hq : B, varlen ? tq : c.hq, c.sq};
  const int64_t lse_n = varlen ? c.hq * tq : B * c.hq * c.sq;
  std::vector<float> lse_ref(lse_n, NAN);
  DevBuf d_lse(lse_n * 4);
  ASSERT_EQ(cudaMemset(d_lse.p, 0xff, lse_n * 4), cudaSuccess);
  auto lse_view = [&](void* data, Device dev) {
    TensorView t = varlen ? TensorView::contiguous(data, DType::f32, {lse_shape[0], lse_shape[1]})
                          : TensorView::contiguous(data, DType::f32,
                                                   {lse_shape[0], lse_shape[1], lse_shape[2]});
    t.device = dev;
    return t;
  };

  std::vector<float> out_ref(out.numel(), NAN);
  Tensor out_ref_t;  // host-only view holder
  out_ref_t.rank = out.rank;
  out_ref_t.shape = out.shape;
  out_ref_t.host = out_ref;
  ASSERT_EQ(forward({q.host_view(), k.host_view(), v.host_view(), out_ref_t.host_view(),
                     lse_view(lse_ref.data(), Device::cpu())},
                    o_ref),
            "math");
  ASSERT_EQ(cudaMemset(out.dev->p, 0xff, out.dev->bytes), cudaSuccess);
  if (!c.tail_env.empty()) setenv("ATTNKIT_FLASH_FWD_TAIL", c.tail_env.c_str(), 1);
  const std::string backend = forward({q.dev_view(c.dt), k.dev_view(c.dt), v.dev_view(c.dt),
                                       out.dev_view(c.dt), lse_view(d_lse.p, Device::cuda(0))},
                                      o_gpu);
  if (!c.tail_env.empty()) unsetenv("ATTNKIT_FLASH_FWD_TAIL");
  ASSERT_EQ(backend, "flash");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // A split that silently did not happen would still pass the oracle: the launch says whether.
  if (c.expect_tail == 1) EXPECT_GT(flash::last_fwd_tail_tiles(), 0) << "split tail tiles";
  if (c.expect_tail == 0) EXPECT_EQ(flash::last_fwd_tail_tiles(), 0) << "split tail tiles";

  const Err eo = compare(download(out, c.dt), out_ref_t.host);
  EXPECT_EQ(eo.nonfinite, 0) << "out";
  EXPECT_LE(eo.rel, 1e-2) << "out rel";
  std::vector<float> lse_gpu(lse_n);
  ASSERT_EQ(cudaMemcpy(lse_gpu.data(), d_lse.p, lse_n * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  const Err el = compare(lse_gpu, lse_ref);
  EXPECT_EQ(el.nonfinite, 0) << "lse";
  EXPECT_LE(el.max_abs, 2e-3) << "lse max abs";
  if (!c.bwd) return;

  // Backward: reference from the oracle's own out/lse; flash from its own.
  Tensor dq = make(varlen ? tq : c.sq, c.hq), dk = make(varlen ? tk : c.sk, c.hkv),
         dv = make(varlen ? tk : c.sk, c.hkv);
  std::vector<float> rq(dq.numel(), NAN), rk(dk.numel(), NAN), rv(dv.numel(), NAN);
  for (Tensor* t : {&dq, &dk, &dv})
    upload(*t, c.dt, c.bhsd, c.padded);
  auto host_like = [](const Tensor& t, std::vector<float>& data) {
    Tensor h;
    h.rank = t.rank;
    h.shape = t.shape;
    TensorView view = h.host_view();
    view.data = data.data();
    return view;
  };
  ASSERT_EQ(backward({dout.host_view(), q.host_view(), k.host_view(), v.host_view(),
                      out_ref_t.host_view(), lse_view(lse_ref.data(), Device::cpu()),
                      host_like(dq, rq), host_like(dk, rk), host_like(dv, rv)},
                     o_ref),
            "math");
  for (Tensor* t : {&dq, &dk, &dv})
    ASSERT_EQ(cudaMemset(t->dev->p, 0xff, t->dev->bytes), cudaSuccess);
  ASSERT_EQ(backward({dout.dev_view(c.dt), q.dev_view(c.dt), k.dev_view(c.dt), v.dev_view(c.dt),
                      out.dev_view(c.dt), lse_view(d_lse.p, Device::cuda(0)), dq.dev_view(c.dt),
                      dk.dev_view(c.dt), dv.dev_view(c.dt)},
                     o_gpu),
            "flash");
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  const char* names[3] = {"dq", "dk", "dv"};
  const std::vector<float>* refs[3] = {&rq, &rk, &rv};
  const Tensor* got[3] = {&dq, &dk, &dv};
  for (int i = 0; i < 3; ++i) {
    const Err e = compare(download(*got[i], c.dt), *refs[i]);
    EXPECT_EQ(e.nonfinite, 0) << names[i];
    EXPECT_LE(e.rel, 2e-2) << names[i] << " rel";
  }
}

std::vector<Cfg> cases() {
  std::vector<Cfg> base;
  auto add = [&](Cfg c) { base.push_back(c); };
  {
    Cfg c;
    c.tag = "plain";
    c.b = 2;
    c.sq = 100;
    c.sk = 133;
    c.hq = 4;
    c.hkv = 2;
    add(c);
  }
  {
    Cfg c;
    c.tag = "causal_tl";
    c.b = 1;
    c.sq = 77;
    c.sk = 150;
    c.hq = 2;
    c.hkv = 2;
    c.causal = Causal::top_left;
    add(c);
  }
  {
    Cfg c;
    c.tag = "causal_br_empty_rows";
    c.b = 1;
    c.sq = 150;
    c.sk = 77;
    c.hq = 2;
    c.hkv = 1;
    c.causal = Causal::bottom_right;
    add(c);
  }
  {
    Cfg c;
    c.tag = "causal_square";
    c.b = 1;
    c.sq = 256;
    c.sk = 256;
    c.hq = 2;
    c.hkv = 1;
    c.causal = Causal::top_left;
    add(c);
  }
  {
    Cfg c;
    c.tag = "window";
    c.b = 1;
    c.sq = 200;
    c.sk = 230;
    c.hq = 2;
    c.hkv = 2;
    c.wl = 40;
    c.wr = 9;
    add(c);
  }
  {
    Cfg c;
    c.tag = "gqa8";
    c.b = 1;
    c.sq = 65;
    c.sk = 129;
    c.hq = 8;
    c.hkv = 1;
    add(c);
  }
  {
    Cfg c;
    c.tag = "softcap_alibi";
    c.b = 2;
    c.sq = 70;
    c.sk = 90;
    c.hq = 2;
    c.hkv = 1;
    c.softcap = 5.0;
    c.alibi = 2;
    c.causal = Causal::bottom_right;
    add(c);
  }
  {
    Cfg c;
    c.tag = "bool_mask";
    c.b = 2;
    c.sq = 33;
    c.sk = 97;
    c.hq = 2;
    c.hkv = 2;
    c.mask = 1;
    add(c);
  }
  {
    Cfg c;
    c.tag = "additive_mask_causal";
    c.b = 1;
    c.sq = 80;
    c.sk = 80;
    c.hq = 2;
    c.hkv = 1;
    c.mask = 2;
    c.causal = Causal::top_left;
    add(c);
  }
  {
    Cfg c;
    c.tag = "dropout";
    c.b = 1;
    c.sq = 70;
    c.sk = 130;
    c.hq = 2;
    c.hkv = 1;
    c.dropout = 0.2;
    add(c);
  }
  {
    Cfg c;
    c.tag = "varlen";
    c.hq = 4;
    c.hkv = 2;
    c.lens_q = {0, 17, 130, 1};
    c.lens_k = {5, 0, 129, 64};
    c.causal = Causal::bottom_right;
    add(c);
  }
  {
    Cfg c;
    c.tag = "bhsd_alibi1";
    c.b = 2;
    c.sq = 40;
    c.sk = 41;
    c.hq = 3;
    c.hkv = 3;
    c.bhsd = true;
    c.alibi = 1;
    add(c);
  }
  {
    Cfg c;
    c.tag = "padded";
    c.b = 1;
    c.sq = 64;
    c.sk = 64;
    c.hq = 2;
    c.hkv = 1;
    c.padded = true;
    add(c);
  }
  {
    Cfg c;
    c.tag = "len1";
    c.b = 3;
    c.sq = 1;
    c.sk = 1;
    c.hq = 1;
    c.hkv = 1;
    add(c);
  }
  std::vector<Cfg> all;
  std::vector<int64_t> dims(std::begin(flash::kBuiltHeadDims), std::end(flash::kBuiltHeadDims));
  if (flash::kBuiltHeadDims[0] < 80 && dims.back() >= 80) dims.push_back(80);  // padded up
  for (int64_t d : dims)
    for (DType dt : {DType::bf16, DType::f16})
      for (bool bwd : {false, true})
        for (Cfg c : base) {
          c.d = d;
          c.dt = dt;
          c.bwd = bwd;
          all.push_back(c);
          // The backward has two schedules (FA-2 with dQ atomics by default, atomic-free when
          // deterministic): both run every option, in bf16.
          if (bwd && dt == DType::bf16) {
            c.det = true;
            all.push_back(c);
          }
        }
  const auto built = [](int d) {
    return std::find(std::begin(flash::kBuiltHeadDims), std::end(flash::kBuiltHeadDims), d) !=
           std::end(flash::kBuiltHeadDims);
  };
  // One forward shape, non-causal as `tag` and bottom-right causal as `tag`_causal.
  const auto add_pair = [&all](const char* tag, int64_t b, int64_t sq, int64_t sk, int64_t hq,
                               int64_t hkv, int64_t d) {
    Cfg c;
    c.tag = tag;
    c.b = b;
    c.sq = sq;
    c.sk = sk;
    c.hq = hq;
    c.hkv = hkv;
    c.d = d;
    all.push_back(c);
    c.tag += "_causal";
    c.causal = Causal::bottom_right;
    all.push_back(c);
  };
  if (built(256)) {
    // D = 256 forward with more query tiles (160) than an H100 / H200 has SMs: the persistent
    // launch (ATTNKIT_FLASH_FWD_PERSIST=1) gives CTAs two tiles or more, the next one's Q and
    // first K prefetched during the first one's last key block (a partial last query block too);
    // causal: uneven tiles, taken from the counter in the grid's order.
    add_pair("many_tiles", 2, 520, 520, 16, 4, 256);
    // head_dim 200 on the D = 256 kernels (zero-filled columns 200..255 in every K / V / Q tile)
    // with a partial last key block (sk = 200: 3 x 64 + 8), non-causal and causal: the column and
    // row predicates of TileLoader::load_tid (ATTNKIT_FLASH_FWD_BM64_DIET_256 = 32) on the 64-row
    // kernel (ATTNKIT_FLASH_FWD_NONCAUSAL_BM64_MAX_S; causal: _CAUSAL_BM64_MAX_S) and the
    // partial-tile path of the 128-row one.
    add_pair("partial_cols", 1, 150, 200, 2, 1, 200);
    // The forward's split tail (fwd_tail.cuh), forced on small shapes with a few CTAs standing in
    // for the device's slots (ATTNKIT_FLASH_FWD_TAIL "1:N"). Shapes: (b, sq, sk, hq, hkv, d).
    const auto add_tail = [&all](const char* tag, int64_t b, int64_t sq, int64_t sk, int64_t hq,
                                 int64_t hkv, int64_t d, const char* env, int expect,
                                 DType dt = DType::bf16, Causal causal = Causal::none,
                                 bool bhsd = false, bool padded = false) {
      Cfg c;
      c.tag = tag;
      c.b = b;
      c.sq = sq;
      c.sk = sk;
      c.hq = hq;
      c.hkv = hkv;
      c.d = d;
      c.dt = dt;
      c.causal = causal;
      c.bhsd = bhsd;
      c.padded = padded;
      c.tail_env = env;
      c.expect_tail = expect;
      all.push_back(c);
    };
    // 40 tiles on 7 slots: no full batch before the tail (one launch: 35 whole tiles, then 5
    // tiles' 80 key blocks over 7 CTAs, ranges across tiles), GQA, a partial last key block.
    add_tail("tail_split_nofirst", 1, 640, 1000, 4, 2, 256, "1:7", 1);
    // 30 tiles on 8 slots: two batches in the first launch, 4 whole tiles and 6 split (4.5 key
    // blocks per CTA) in the second; a partial last query tile (300 rows) among the split ones.
    add_tail("tail_split", 3, 300, 384, 2, 1, 256, "1:8", 1);
    add_tail("tail_split", 3, 300, 384, 2, 1, 256, "1:8", 1, DType::f16);
    add_tail("tail_split_bhsd", 3, 300, 384, 2, 1, 256, "1:8", 1, DType::bf16, Causal::none, true);
    add_tail("tail_split_padded", 3, 300, 384, 2, 1, 256, "1:8", 1, DType::bf16, Causal::none,
             false, true);
    // 1-2 key blocks per CTA (sk = 100: 64 + 36): pieces of one block, tiles over 2-3 CTAs.
    add_tail("tail_split_short", 2, 512, 100, 3, 3, 256, "1:5", 1);
    // One tile over 7 CTAs (47 key blocks: ~6.7 per piece): a 7-piece merge.
    add_tail("tail_split_long", 2, 128, 3000, 2, 1, 256, "1:7", 1);
    // head_dim 200 (columns 200..255 zero-filled): the merge stores only the valid columns.
    add_tail("tail_split_hd200", 2, 300, 200, 2, 1, 200, "1:6", 1);
    // Forced off; causal (never split); the auto rule on a shape with fewer tiles than slots.
    add_tail("tail_off", 3, 300, 384, 2, 1, 256, "0", 0);
    add_tail("tail_causal", 3, 300, 384, 2, 1, 256, "1:8", 0, DType::bf16, Causal::bottom_right);
    add_tail("tail_auto_small", 3, 300, 384, 2, 1, 256, "auto", 0);
    // The auto rule on 7 slots: 65 key blocks per tile split (ATTNKIT_FLASH_FWD_TAIL_MIN_BLOCKS
    // 64), 16 not.
    add_tail("tail_auto_long", 2, 128, 4100, 2, 1, 256, "auto:7", 1);
    add_tail("tail_auto_short", 2, 128, 1000, 2, 1, 256, "auto:7", 0);
  }
  // D = 128 forward over many key blocks (sk = 1000: 15 full 64-key blocks + 40 keys, or 31 full
  // 32-key blocks + 8), both causal modes: the online-softmax rescale across blocks and the
  // partial last block of the BN_128 = 64 tile (ATTNKIT_FLASH_FWD_BN64_DIET) on its fast path.
  // sq = 200 (here and at D = 64): the second 128-row query tile has two full warps (O stored
  // from running row pointers, ATTNKIT_FLASH_FWD_EPI_ROWPTR), one partial and one empty warp
  // (the checked store loop).
  if (built(128)) {
    add_pair("many_blocks", 1, 200, 1000, 4, 2, 128);
    // head_dim 112 on the D = 128 kernels (zero-filled columns 112..127 in every K / V / Q tile)
    // with a partial last key block (sk = 200: 3 x 64 + 8), non-causal and causal: the column and
    // row predicates of TileLoader::load_tid on the D = 128 fast path (ATTNKIT_FLASH_FWD_BN64_DIET
    // bit 32) and its full / partial TileLoader branch by default.
    add_pair("partial_cols", 1, 150, 200, 2, 1, 112);
  }
  // D = 64: head_dim 48 (zero-filled columns 48..63 in every K / V / Q tile) with a partial last
  // key block, sk = 200 (3 x 64 + 8: the KV2 kernel where ATTNKIT_FLASH_FWD_KV2_64_MAX_S >= 200,
  // the one-pair kernel by default) and sk = 1000 (15 x 64 + 40), and head_dim 64 over sk = 1000
  // (full tiles then a partial one), non-causal and causal: the column and row predicates of
  // TileLoader::load_tid and its full-tile branch (ATTNKIT_FLASH_FWD_DIET_64 bits 32 / 128).
  if (built(64)) {
    add_pair("many_blocks", 1, 200, 1000, 4, 2, 64);
    add_pair("partial_cols", 1, 150, 200, 2, 1, 48);
    add_pair("partial_cols_long", 1, 150, 1000, 2, 1, 48);
  }
  return all;
}

INSTANTIATE_TEST_SUITE_P(All, FlashVsMath, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Cfg>& i) { return i.param.name(); });

}  // namespace
}  // namespace attnkit::flash_test
