// The hostile case set (DESIGN.md §5) and the large GPU set. Sizes are kept small (S <= 300,
// B * Hq <= 16) so the fp64 oracle runs the whole hostile set in seconds.
#include <set>
#include <string>

#include "attnkit/error.hpp"
#include "check/check.hpp"

namespace attnkit::check {
namespace {

Case base(DType t, int64_t sq, int64_t sk) {
  Case c;
  c.dtype = t;
  c.b = 2;
  c.hq = 2;
  c.hkv = 1;
  c.sq = sq;
  c.sk = sk;
  c.d = c.dv = 64;
  return c;
}

Case varlen_case(DType t, std::vector<int64_t> lq, std::vector<int64_t> lk) {
  return varlen_shape_case(t, std::move(lq), std::move(lk), 4, 2, 64, Causal::none, false);
}

// Appends c and, when `both`, its backward variant.
void add(std::vector<Case>& out, Case c, bool both = true) {
  c.backward = false;
  out.push_back(c);
  if (both) {
    c.backward = true;
    out.push_back(c);
  }
}

}  // namespace

std::vector<Case> hostile_cases(DType dtype, int max_d) {
  std::vector<Case> v;
  const Causal causals[] = {Causal::none, Causal::top_left, Causal::bottom_right};

  // Lengths: 0, 1, odd and prime, Sq < Sk and Sq > Sk, with every causal alignment. The backward
  // variant for a subset.
  struct L {
    int64_t sq, sk;
    bool bwd;
  };
  for (L l : {L{1, 1, true}, L{1, 7, false}, L{7, 1, false}, L{13, 13, true}, L{31, 67, true},
              L{67, 31, true}, L{127, 127, false}, L{0, 5, true}, L{5, 0, true}, L{0, 0, false}})
    for (Causal cz : causals) {
      Case c = base(dtype, l.sq, l.sk);
      c.causal = cz;
      add(v, c, l.bwd);
    }

  // Head dims (the instantiated list plus 32 and 80), causal bottom-right on half of them.
  int i = 0;
  for (int64_t d : {32, 64, 80, 96, 128, 192, 256}) {
    Case c = base(dtype, 37, 53);
    c.d = c.dv = d;
    c.causal = (i++ % 2) ? Causal::bottom_right : Causal::none;
    if (d <= max_d) add(v, c);
  }
  // Dv != D.
  for (auto [d, dv] : {std::pair<int64_t, int64_t>{64, 32}, {128, 64}, {64, 128}}) {
    Case c = base(dtype, 29, 41);
    c.d = d;
    c.dv = dv;
    if (d <= max_d && dv <= max_d) add(v, c);
  }

  // GQA ratios 1, 2, 8.
  for (auto [hq, hkv] : {std::pair<int64_t, int64_t>{2, 2}, {4, 2}, {8, 1}}) {
    Case c = base(dtype, 61, 61);
    c.b = 1;
    c.hq = hq;
    c.hkv = hkv;
    c.causal = Causal::bottom_right;
    add(v, c);
  }

  // Layouts and strides.
  for (Layout lay : {Layout::bshd, Layout::bhsd})
    for (bool nc : {false, true}) {
      if (lay == Layout::bshd && !nc) continue;  // the default everywhere else
      Case c = base(dtype, 45, 71);
      c.layout = lay;
      c.noncontiguous = nc;
      c.hq = 4;
      c.hkv = 2;
      add(v, c);
    }

  // Masks: both kinds, every broadcast pattern (bit 0 batch, 1 head, 2 rows); bool masks have
  // fully masked rows, additive ones rows of -inf. Backward for a few patterns; mask + causal.
  for (MaskCase mk : {MaskCase::keep_bool, MaskCase::additive})
    for (MaskBroadcast bc = 0; bc < 8; ++bc) {
      Case c = base(dtype, 19, 29);
      c.mask = mk;
      c.mask_broadcast = bc;
      add(v, c, bc == 0 || bc == 5 || bc == 7);
    }
  // An additive mask whose dtype differs from q's.
  {
    Case c = base(dtype, 19, 29);
    c.mask = MaskCase::additive;
    c.mask_dtype = dtype == DType::f32 ? DType::bf16 : DType::f32;
    c.mask_broadcast = 1;
    add(v, c);
  }
  // Expanded (stride-0) broadcast dims instead of size-1 dims.
  for (MaskBroadcast bc : {MaskBroadcast(3 | kMaskExpanded), MaskBroadcast(4 | kMaskExpanded)}) {
    Case c = base(dtype, 19, 29);
    c.mask = (bc & 4) ? MaskCase::additive : MaskCase::keep_bool;
    c.mask_broadcast = bc;
    add(v, c, (bc & 4) != 0);
  }
  for (MaskCase mk : {MaskCase::keep_bool, MaskCase::additive}) {
    Case c = base(dtype, 23, 17);
    c.mask = mk;
    c.mask_broadcast = 1;
    c.causal = Causal::bottom_right;  // Sq > Sk: early rows have no key at all
    c.layout = Layout::bhsd;
    c.noncontiguous = true;
    add(v, c);
  }

  // Sliding windows: left only, right only, both; with Sq = Sk and Sq != Sk; with causal.
  struct W {
    int64_t l, r;
    Causal cz;
  };
  for (W w : {W{16, -1, Causal::none}, W{-1, 8, Causal::none}, W{8, 0, Causal::none},
              W{4, 4, Causal::none}, W{0, 0, Causal::none}, W{20, -1, Causal::bottom_right}})
    for (auto [sq, sk] : {std::pair<int64_t, int64_t>{97, 97}, {50, 120}}) {
      Case c = base(dtype, sq, sk);
      c.window_left = w.l;
      c.window_right = w.r;
      c.causal = w.cz;
      add(v, c, sq == sk);
    }

  // Softcap, ALiBi, dropout.
  for (double cap : {5.0, 30.0}) {
    Case c = base(dtype, 43, 59);
    c.softcap = cap;
    c.causal = cap == 5.0 ? Causal::bottom_right : Causal::none;
    add(v, c);
  }
  for (bool per_batch : {false, true}) {
    Case c = base(dtype, 47, 47);
    c.hq = 4;
    c.hkv = 2;
    c.alibi = true;
    c.alibi_per_batch = per_batch;
    c.causal = per_batch ? Causal::none : Causal::bottom_right;
    add(v, c);
  }
  for (double p : {0.1, 0.5}) {
    Case c = base(dtype, 33, 70);  // Sk not a multiple of 4: partial Philox word
    c.dropout_p = p;
    add(v, c);
  }
  {
    Case c = base(dtype, 70, 70);
    c.dropout_p = 0.2;
    c.hq = 8;
    c.hkv = 2;
    c.causal = Causal::top_left;
    add(v, c);
  }

  // Varlen with empty sequences (q, k or both), GQA, layouts, maxima given or not.
  add(v, varlen_case(dtype, {5, 0, 17, 1}, {9, 3, 0, 1}));
  {
    Case c = varlen_case(dtype, {13, 0, 31, 7, 2}, {13, 0, 29, 11, 2});
    c.causal = Causal::bottom_right;
    add(v, c);
    c.causal = Causal::top_left;
    c.layout = Layout::bhsd;
    c.noncontiguous = true;
    add(v, c);
  }
  {
    Case c = varlen_case(dtype, {0, 0}, {0, 4});
    add(v, c, false);
    c = varlen_case(dtype, {130, 7, 64}, {7, 130, 64});
    c.varlen_max_given = false;
    c.causal = Causal::bottom_right;
    c.window_left = 32;
    add(v, c);
    c = varlen_case(dtype, {40, 25}, {40, 60});
    c.dropout_p = 0.25;
    c.softcap = 10.0;
    c.alibi = true;
    add(v, c);
  }

  // Larger shapes (S up to 300, D 128).
  {
    Case c = base(dtype, 256, 256);
    c.d = c.dv = std::min<int64_t>(128, max_d);
    c.causal = Causal::bottom_right;
    add(v, c);
    c = base(dtype, 300, 257);
    c.hq = 4;
    c.hkv = 4;
    c.b = 1;
    add(v, c, false);
  }

  // Deterministic backward, lse not requested, explicit scale.
  {
    Case c = base(dtype, 57, 83);
    c.hq = 8;
    c.hkv = 2;
    c.causal = Causal::bottom_right;
    c.deterministic = true;
    c.backward = true;
    v.push_back(c);
    c = base(dtype, 21, 34);
    c.lse = false;
    v.push_back(c);
    c = base(dtype, 21, 34);
    c.scale = 0.3;
    add(v, c);
    // Large scores (scale 3, D 64: |s| up to ~100): exp without the row maximum overflows fp32.
    c = base(dtype, 40, 50);
    c.scale = 3.0;
    c.causal = Causal::top_left;
    add(v, c);
  }

  // Everything at once.
  {
    Case c = base(dtype, 53, 77);
    c.hq = 4;
    c.hkv = 2;
    c.layout = Layout::bhsd;
    c.noncontiguous = true;
    c.causal = Causal::bottom_right;
    c.window_left = 40;
    c.window_right = 5;
    c.softcap = 15.0;
    c.alibi = true;
    c.alibi_per_batch = true;
    c.mask = MaskCase::additive;
    c.mask_broadcast = 2;
    c.dropout_p = 0.15;
    add(v, c);
  }

  std::set<std::string> names;
  for (const Case& c : v)
    if (!names.insert(c.name()).second)
      throw Error(ErrorCode::kInternal, "hostile_cases: duplicate case name " + c.name());
  return v;
}

Case shape_case(DType dtype, int64_t b, int64_t sq, int64_t sk, int64_t hq, int64_t hkv, int64_t d,
                Causal causal, bool backward) {
  Case c;
  c.dtype = dtype;
  c.b = b;
  c.sq = sq;
  c.sk = sk;
  c.hq = hq;
  c.hkv = hkv;
  c.d = c.dv = d;
  c.causal = causal;
  c.backward = backward;
  return c;
}

Case varlen_shape_case(DType dtype, std::vector<int64_t> lq, std::vector<int64_t> lk, int64_t hq,
                       int64_t hkv, int64_t d, Causal causal, bool backward) {
  Case c = shape_case(dtype, static_cast<int64_t>(lq.size()), 0, 0, hq, hkv, d, causal, backward);
  c.varlen = true;
  for (int64_t x : lq)
    c.sq = std::max(c.sq, x);
  for (int64_t x : lk)
    c.sk = std::max(c.sk, x);
  c.seqlens_q = std::move(lq);
  c.seqlens_k = std::move(lk);
  return c;
}

std::vector<Case> large_cases(DType dtype) {
  std::vector<Case> v;
  auto make = [&](int64_t b, int64_t sq, int64_t sk, int64_t hq, int64_t hkv, int64_t d, Causal cz,
                  bool bwd) { v.push_back(shape_case(dtype, b, sq, sk, hq, hkv, d, cz, bwd)); };
  make(2, 1024, 1024, 8, 8, 64, Causal::none, false);
  make(2, 1024, 1024, 8, 8, 64, Causal::bottom_right, true);
  make(1, 2048, 2048, 8, 2, 128, Causal::bottom_right, false);
  make(1, 2048, 2048, 8, 2, 128, Causal::none, true);
  make(1, 4096, 4096, 4, 4, 128, Causal::none, false);
  make(1, 4096, 4096, 4, 1, 64, Causal::bottom_right, true);
  make(2, 1000, 3000, 4, 2, 64, Causal::top_left, false);
  make(1, 3001, 1531, 4, 4, 128, Causal::bottom_right, false);
  Case c;
  c.dtype = dtype;
  c.varlen = true;
  c.seqlens_q = {1024, 3000, 17, 2048};
  c.seqlens_k = {1024, 3000, 17, 2048};
  c.b = 4;
  c.sq = c.sk = 3000;
  c.hq = 8;
  c.hkv = 2;
  c.d = c.dv = 128;
  c.causal = Causal::bottom_right;
  v.push_back(c);
  c.backward = true;
  v.push_back(c);
  return v;
}

}  // namespace attnkit::check
