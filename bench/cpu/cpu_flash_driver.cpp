// Stand-alone timing driver for cpu_flash (not built by CMake; for perf stat / callgrind / CPU
// time). Runs `reps` forwards (or backwards) on [B, H, S, D]-contiguous tensors (torch's layout,
// as bench_cpu_flash.py passes them), random normal data, and prints the CPU time and wall time
// per call. Build (Release attnkit in build-cpu3):
//   g++ -O2 -std=c++20 -Iinclude bench/cpu/cpu_flash_driver.cpp build-cpu3/libattnkit.a -lpthread
// Usage: a.out S D causal(0/1) dtype(f32|bf16|f16) threads reps [bwd]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "attnkit/attnkit.hpp"

using namespace attnkit;

static double cpu_s() {
  timespec t;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return t.tv_sec + 1e-9 * t.tv_nsec;
}

static uint16_t to16(float x, DType t) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if (t == DType::bf16) return static_cast<uint16_t>((u + 0x7fff + ((u >> 16) & 1)) >> 16);
  // f16, truncating (inputs only need to be plausible): |x| < 65504, denormals flushed
  const uint32_t sign = (u >> 16) & 0x8000u;
  const int32_t e = static_cast<int32_t>((u >> 23) & 0xff) - 127 + 15;
  if (e <= 0) return static_cast<uint16_t>(sign);
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(e) << 10) | ((u >> 13) & 0x3ffu));
}

int main(int argc, char** argv) {
  if (argc < 7) {
    std::fprintf(stderr, "usage: S D causal dtype threads reps [bwd]\n");
    return 2;
  }
  const int64_t B = 2, H = 16, S = std::atoll(argv[1]), D = std::atoll(argv[2]);
  const bool causal = std::atoi(argv[3]) != 0;
  const DType dt = dtype_from_name(argv[4]);
  const int threads = std::atoi(argv[5]), reps = std::atoi(argv[6]);
  const bool bwd = argc > 7 && std::string(argv[7]) == "bwd";
  set_num_threads(threads);
  const int64_t n = B * H * S * D, es = dtype_size(dt);
  // Cheap normal-ish data (sum of 4 uniforms from an xorshift, variance 1):
  // std::normal_distribution made the setup take longer than the timed calls.
  uint64_t st = 0x9E3779B97F4A7C15ull;
  auto uni = [&] {
    st ^= st << 13;
    st ^= st >> 7;
    st ^= st << 17;
    return static_cast<float>(st >> 40) * (1.0f / 16777216.0f);
  };
  auto nd = [&] { return (uni() + uni() + uni() + uni() - 2.0f) * 1.7320508f; };
  // 64-byte aligned data, as torch's CPU allocator gives (a large std::vector is 16 mod 64)
  auto al = [](std::vector<char>& b) {
    return b.data() + ((64 - reinterpret_cast<uintptr_t>(b.data()) % 64) % 64);
  };
  auto make = [&](bool rnd) {
    std::vector<char> buf(n * es + 64);
    char* d = al(buf);
    for (int64_t i = 0; i < n; ++i) {
      const float x = rnd ? nd() : 0.0f;
      if (dt == DType::f32)
        std::memcpy(d + 4 * i, &x, 4);
      else {
        const uint16_t h = to16(x, dt);
        std::memcpy(d + 2 * i, &h, 2);
      }
    }
    return buf;
  };
  auto q = make(true), k = make(true), v = make(true), o = make(false), dout = make(true);
  auto dq = make(false), dk = make(false), dv = make(false);
  std::vector<float> lse(B * H * S);
  // [B, H, S, D] memory seen as logical [B, S, H, D]
  auto view = [&](std::vector<char>& b) {
    TensorView t = TensorView::contiguous(al(b), dt, {B, S, H, D});
    t.stride = {H * S * D, D, S * D, 1};
    return t;
  };
  TensorView lv = TensorView::contiguous(lse.data(), DType::f32, {B, H, S});
  Options opt;
  opt.backend = "cpu_flash";
  opt.causal = causal ? Causal::top_left : Causal::none;
  ForwardArgs fa{view(q), view(k), view(v), view(o), lv};
  forward(fa, opt);  // warm-up (arena, pool)
  BackwardArgs ba{view(dout), view(q), view(k), view(v), view(o), lv, view(dq), view(dk), view(dv)};
  if (bwd) backward(ba, opt);
  double best_cpu = 1e30, best_wall = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double c0 = cpu_s();
    const auto w0 = std::chrono::steady_clock::now();
    if (bwd)
      backward(ba, opt);
    else
      forward(fa, opt);
    const double w = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
    const double c = cpu_s() - c0;
    if (c < best_cpu) best_cpu = c;
    if (w < best_wall) best_wall = w;
  }
  const double fl = 4.0 * B * H * S * S * D * (causal ? 0.5 : 1.0) * (bwd ? 2.5 : 1.0);
  std::printf(
      "%s %s S=%lld D=%lld causal=%d threads=%d: best cpu %.1f ms (%.1f GFLOP/s/cpu), "
      "best wall %.1f ms (%.1f GFLOP/s)\n",
      bwd ? "bwd" : "fwd", argv[4], (long long)S, (long long)D, causal, threads, best_cpu * 1e3,
      fl / best_cpu / 1e9, best_wall * 1e3, fl / best_wall / 1e9);
  return 0;
}
