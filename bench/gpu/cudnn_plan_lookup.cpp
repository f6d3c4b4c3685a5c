// Host cost of a cudnn plan-cache hit: map_call + make_plan_key + LruCache lookup, exactly the
// code run.cpp executes before reaching cuDNN on a cached configuration (the cached value is a
// stand-in; the lookup does not touch it). Prints ns per hit, median of 7 rounds of 200k hits,
// with 64 other keys in the cache.
//
//   g++ -O2 -std=c++20 -Iinclude -I<build>/include -Isrc bench/gpu/cudnn_plan_lookup.cpp
//       <build>/libattnkit.a -lpthread -o /tmp/lookup && /tmp/lookup
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "backends/cudnn/plan_cache.hpp"
#include "backends/cudnn/plan_key.hpp"
#include "backends/cudnn/support.hpp"

using namespace attnkit;

int main() {
  alignas(16) static char buf[64];
  Params p;
  p.batch = 8;
  p.seqlen_q = p.seqlen_k = 2048;
  p.heads_q = p.heads_kv = 16;
  p.head_dim = p.head_dim_v = 128;
  p.dtype = DType::bf16;
  p.device = Device::cuda(0);
  p.q = p.k = p.v = p.out = buf;
  p.q_st = p.k_st = p.v_st = p.out_st = {2048 * 16 * 128, 16 * 128, 128, 1};
  p.causal = Causal::top_left;
  cudnn::LruCache<int> cache(256);
  for (int i = 0; i < 64; ++i) {  // other configurations in the cache
    Params o = p;
    o.seqlen_k = 64 + i;
    cache.get_or_build(cudnn::make_plan_key(o, cudnn::map_call(o), false),
                       [] { return std::make_shared<int>(0); });
  }
  cache.get_or_build(cudnn::make_plan_key(p, cudnn::map_call(p), false),
                     [] { return std::make_shared<int>(1); });
  std::vector<double> rounds;
  long sink = 0;
  for (int r = 0; r < 7; ++r) {
    constexpr int kHits = 200000;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kHits; ++i) {
      const cudnn::Mapping m = cudnn::map_call(p);
      auto v = cache.get_or_build(cudnn::make_plan_key(p, m, false),
                                  [] { return std::make_shared<int>(2); });
      sink += *v;
    }
    const auto t1 = std::chrono::steady_clock::now();
    rounds.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() / kHits);
  }
  std::sort(rounds.begin(), rounds.end());
  std::printf(
      "cudnn plan-cache hit (map_call + make_plan_key + lookup): %.1f ns median, %.1f ns "
      "min; builds %llu (expect 65), sink %ld\n",
      rounds[rounds.size() / 2], rounds[0], (unsigned long long)cache.builds(), sink);
  return cache.builds() == 65 ? 0 : 1;
}
