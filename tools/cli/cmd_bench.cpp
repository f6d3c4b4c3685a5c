// attnkit bench: times backends over the BENCHMARKS.md sweeps or given shapes. Host clock around
// each call after a device synchronize (fine for the shapes here: ms-scale calls); median of
// --reps runs after --warmup. The precise GPU peer comparison is bench/peers.py (CUDA events, L2
// rotation, peers in the same process); this command is the quick, dependency-free view.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "args.hpp"
#include "attnkit/attnkit.hpp"
#include "commands.hpp"
#include "core/build_config.hpp"
#include "core/device_runtime.hpp"
#include "problem.hpp"

namespace attnkit::cli {
namespace {

/// Peak resident set size of this process since the last reset, in bytes (Linux; 0 elsewhere).
long long peak_rss_bytes() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  return 0;
}
void reset_peak_rss() {
  std::ofstream f("/proc/self/clear_refs");
  if (f) f << "5";  // resets VmHWM to the current RSS (Linux >= 4.0)
}

struct Row {
  std::string impl, pass;
  ProblemShape shape;
  double ms = 0, tflops = 0;
  long long peak_extra_bytes = -1;  // CPU: peak RSS above the inputs during the timed calls
  std::string error;
};

std::vector<ProblemShape> sweep(const std::string& name, const ProblemShape& base) {
  std::vector<ProblemShape> out;
  if (name == "gpu") {  // 16k tokens, hidden 2048 (FlashAttention-3 paper's shapes)
    for (int d : {64, 128, 256})
      for (bool causal : {false, true})
        for (int s : {512, 1024, 2048, 4096, 8192, 16384}) {
          ProblemShape p = base;
          p.b = 16384 / s;
          p.sq = p.sk = s;
          p.hq = p.hkv = 2048 / d;
          p.d = p.dv = d;
          p.opts.causal = causal ? Causal::top_left : Causal::none;
          out.push_back(p);
        }
  } else if (name == "cpu") {  // B=2, H=16
    for (DType dt : {DType::f32, DType::bf16})
      for (int d : {64, 128})
        for (bool causal : {false, true})
          for (int s : {512, 1024, 2048, 4096}) {
            ProblemShape p = base;
            p.dtype = dt;
            p.b = 2;
            p.sq = p.sk = s;
            p.hq = p.hkv = 16;
            p.d = p.dv = d;
            p.opts.causal = causal ? Causal::top_left : Causal::none;
            out.push_back(p);
          }
  } else {
    out.push_back(base);
  }
  return out;
}

std::string today() {
  std::time_t t = std::time(nullptr);
  char buf[16];
  std::strftime(buf, sizeof buf, "%Y-%m-%d", std::gmtime(&t));
  return buf;
}

}  // namespace

int cmd_bench(int argc, char** argv) {
  auto specs = problem_option_specs();
  specs.push_back({"backends", "LIST", "backends to time (default: auto's choice)", "auto"});
  specs.push_back({"sweep", "NAME", "gpu | cpu | none: the BENCHMARKS.md shape sweeps", "none"});
  specs.push_back({"passes", "LIST", "fwd,bwd", "fwd"});
  specs.push_back({"reps", "N", "timed runs per row (median reported)", "20"});
  specs.push_back({"warmup", "N", "untimed runs first", "3"});
  specs.push_back({"json", "FILE", "write rows in the bench/results format", ""});
  Args a("bench",
         "Times backends on given shapes or a BENCHMARKS.md sweep; prints ms, TFLOP/s (forward "
         "4*B*H*Sq*Sk*D, halved for causal Sq == Sk; backward 2.5x) and, on the CPU, the peak "
         "memory above the inputs during the runs.",
         specs);
  a.parse(argc, argv, 2);
  if (a.help()) {
    std::printf("%s", a.usage().c_str());
    return 0;
  }
  const ProblemShape base = shape_from_args(a);
  const auto shapes = sweep(a.str("sweep"), base);
  const auto backends = a.str_list("backends");
  const auto passes = a.str_list("passes");
  const int reps = static_cast<int>(std::max(1LL, a.integer("reps")));
  const int warmup = static_cast<int>(std::max(0LL, a.integer("warmup")));
  std::vector<Row> rows;
  size_t done = 0;
  const size_t total = shapes.size() * backends.size() * passes.size();
  std::printf("%-10s %-4s %-62s %10s %9s %11s\n", "backend", "pass", "shape", "ms", "TFLOP/s",
              "peak MiB");
  for (const auto& shape : shapes) {
    const bool need_bwd = std::find(passes.begin(), passes.end(), "bwd") != passes.end();
    Problem prob(shape, need_bwd, 1);
    auto& rt = device_runtime(shape.device.type);
    for (const auto& be : backends) {
      for (const auto& pass : passes) {
        Row row;
        row.pass = pass;
        row.shape = shape;
        Options o = prob.options();
        o.backend = be == "auto" ? "" : be;
        try {
          // The backward needs the forward's out and lse.
          row.impl = forward(prob.forward_args(), o);
          auto call = [&] {
            if (pass == "bwd")
              backward(prob.backward_args(), o);
            else
              forward(prob.forward_args(), o);
          };
          for (int i = 0; i < warmup; ++i)
            call();
          rt.synchronize(shape.device);
          reset_peak_rss();
          const long long rss0 = peak_rss_bytes();
          std::vector<double> t;
          for (int i = 0; i < reps; ++i) {
            const auto t0 = std::chrono::steady_clock::now();
            call();
            rt.synchronize(shape.device);
            t.push_back(
                std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                    .count());
          }
          if (shape.device.type == DeviceType::cpu) row.peak_extra_bytes = peak_rss_bytes() - rss0;
          std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
          row.ms = t[t.size() / 2];
          const double flops = shape.forward_flops() * (pass == "bwd" ? 2.5 : 1.0);
          row.tflops = flops / (row.ms * 1e-3) / 1e12;
        } catch (const Error& e) {
          row.impl = be;
          row.error = e.what();
        }
        ++done;
        if (row.error.empty())
          std::printf("%-10s %-4s %-62s %10.3f %9.4g %11s\n", row.impl.c_str(), pass.c_str(),
                      shape.describe().c_str(), row.ms, row.tflops,
                      row.peak_extra_bytes >= 0
                          ? std::to_string(row.peak_extra_bytes / (1024 * 1024)).c_str()
                          : "-");
        else
          std::printf("%-10s %-4s %-62s  error: %s\n", row.impl.c_str(), pass.c_str(),
                      shape.describe().c_str(), row.error.c_str());
        std::fprintf(stderr, "[bench] %zu/%zu\n", done, total);
        std::fflush(stdout);
        rows.push_back(row);
      }
    }
  }
  if (a.given("json")) {
    std::string device_name = "cpu";
    for (const auto& d : list_devices())
      if (d.device == base.device) device_name = d.name;
    std::ofstream f(a.str("json"));
    f << "{\"gpu\": \"" << device_name << "\", \"date\": \"" << today() << "\", \"commit\": \""
      << ATTNKIT_BUILD_GIT_COMMIT << "\", \"attnkit\": \"" << ATTNKIT_VERSION
      << "\", \"source\": \"attnkit bench\", \"rows\": [";
    bool first = true;
    for (const auto& r : rows) {
      if (!r.error.empty()) continue;
      f << (first ? "\n" : ",\n") << "  {\"impl\": \"attnkit:" << r.impl << "\", \"pass\": \""
        << r.pass << "\", \"dtype\": \"" << dtype_name(r.shape.dtype) << "\", \"b\": " << r.shape.b
        << ", \"h\": " << r.shape.hq << ", \"s\": " << r.shape.sq << ", \"d\": " << r.shape.d
        << ", \"causal\": " << (r.shape.opts.causal != Causal::none ? "true" : "false")
        << ", \"ms\": " << r.ms << ", \"tflops\": " << r.tflops;
      if (r.peak_extra_bytes >= 0) f << ", \"peak_extra_bytes\": " << r.peak_extra_bytes;
      f << "}";
      first = false;
    }
    f << "\n]}\n";
    std::printf("wrote %s\n", a.str("json").c_str());
  }
  for (const auto& r : rows)
    if (!r.error.empty()) return 1;
  return 0;
}

}  // namespace attnkit::cli
