// attnkit check: every available backend against the exact `math` oracle on the hostile shapes
// (and, for GPU backends with --large, large shapes against cuda_math). Pass/fail table with error
// figures; exit code 1 on any failure.
#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "args.hpp"
#include "attnkit/attnkit.hpp"
#include "check/check.hpp"
#include "commands.hpp"

namespace attnkit::cli {

namespace {

struct Row {
  std::string backend, dtype;
  int pass = 0, fail = 0, skipped = 0;
  double out_rel = 0, lse_abs = 0, grad_rel = 0;
  std::vector<std::string> failures;
};

void absorb(Row& row, const check::Report& r) {
  if (r.skipped) {
    ++row.skipped;
    return;
  }
  (r.pass ? row.pass : row.fail)++;
  for (const auto& m : r.metrics) {
    if (m.what == "out")
      row.out_rel = std::max(row.out_rel, m.rel);
    else if (m.what == "lse")
      row.lse_abs = std::max(row.lse_abs, m.max_abs);
    else
      row.grad_rel = std::max(row.grad_rel, m.rel);
  }
  if (!r.pass) row.failures.push_back(r.case_name + ": " + r.detail);
}

}  // namespace

int cmd_check(int argc, char** argv) {
  Args a("check",
         "Runs every available backend (or --backends) against the exact math oracle on hostile "
         "shapes — odd and prime lengths, Sq != Sk with both causal alignments, lengths 0 and 1, "
         "varlen with empty sequences, GQA, head dims 32..256, Dv != D, strided views, masks "
         "broadcast every way, window, softcap, ALiBi, dropout — forward, lse and backward. "
         "Exit code 1 on any failure.",
         {{"backends", "LIST", "comma-separated backend names (default: every available one)", ""},
          {"dtypes", "LIST", "comma-separated dtypes (default: the backend's float dtypes)", ""},
          {"quick", "", "every 4th case only", ""},
          {"large", "", "also large shapes vs cuda_math (GPU backends)", ""},
          {"filter", "TEXT", "only cases whose name contains TEXT", ""},
          {"seed", "N", "random seed", "1"},
          {"verbose", "", "print every case", ""}});
  a.parse(argc, argv, 2);
  if (a.help()) {
    std::printf("%s", a.usage().c_str());
    return 0;
  }
  const auto wanted = a.str_list("backends");
  std::vector<BackendDescription> targets;
  for (const auto& b : list_backends()) {
    if (!wanted.empty()) {
      bool hit = false;
      for (const auto& w : wanted)
        hit |= canonical_backend_name(w) == b.name;
      if (!hit) continue;
    }
    std::string why;
    if (!backend_device(b, nullptr, &why)) {
      if (!wanted.empty()) std::printf("%-10s skipped: %s\n", b.name.c_str(), why.c_str());
      continue;
    }
    if (b.name == "math") {
      if (wanted.empty()) continue;  // the oracle against itself checks only the harness
    }
    targets.push_back(b);
  }
  const uint64_t seed = static_cast<uint64_t>(a.integer("seed"));
  const std::string filter = a.str("filter");
  std::vector<Row> rows;
  for (const auto& b : targets) {
    Device dev;
    backend_device(b, &dev, nullptr);
    std::vector<DType> dtypes;
    if (a.given("dtypes")) {
      for (const auto& n : a.str_list("dtypes"))
        dtypes.push_back(dtype_from_name(n));
    } else {
      for (DType t : b.caps.dtypes)
        if (t == DType::f32 || t == DType::f16 || t == DType::bf16) dtypes.push_back(t);
    }
    const int max_d = b.caps.head_dims.empty()
                          ? std::min(b.caps.max_head_dim, 256)
                          : *std::max_element(b.caps.head_dims.begin(), b.caps.head_dims.end());
    for (DType dt : dtypes) {
      Row row;
      row.backend = b.name;
      row.dtype = dtype_name(dt);
      auto cases = check::hostile_cases(dt, max_d);
      if (a.flag("large") && b.caps.device == DeviceType::cuda)
        for (auto& c : check::large_cases(dt))
          cases.push_back(c);
      size_t n = 0, total = 0;
      for (size_t i = 0; i < cases.size(); ++i)
        if ((!a.flag("quick") || i % 4 == 0) && cases[i].name().find(filter) != std::string::npos)
          ++total;
      for (size_t i = 0; i < cases.size(); ++i) {
        const check::Case& c = cases[i];
        if (a.flag("quick") && i % 4 != 0) continue;
        if (c.name().find(filter) == std::string::npos) continue;
        ++n;
        const bool large = c.sq * c.sk * c.b * c.hq > (int64_t{1} << 26);
        const check::Report r = large
                                    ? check::run_case_against(c, b.name, "cuda_math", dev, seed + i,
                                                              check::default_tolerance(dt))
                                    : check::run_case(c, b.name, dev, seed + i);
        absorb(row, r);
        if (a.flag("verbose"))
          std::printf("  %-10s %-5s %-60s %s\n", b.name.c_str(), row.dtype.c_str(),
                      c.name().c_str(), r.skipped ? "skipped" : (r.pass ? "pass" : "FAIL"));
        if (n % 50 == 0 || n == total)
          std::fprintf(stderr, "\r[check] %s %s: %zu/%zu cases", b.name.c_str(), row.dtype.c_str(),
                       n, total);
      }
      std::fprintf(stderr, "\n");
      rows.push_back(row);
    }
  }
  if (rows.empty()) {
    std::printf("no backend to check (attnkit info lists what is built and available)\n");
    return 0;
  }
  int failed = 0;
  std::printf("\n%-10s %-5s %6s %6s %8s %12s %12s %12s\n", "backend", "dtype", "pass", "FAIL",
              "skipped", "max out rel", "max lse abs", "max grad rel");
  for (const auto& r : rows) {
    std::printf("%-10s %-5s %6d %6d %8d %12.3g %12.3g %12.3g\n", r.backend.c_str(), r.dtype.c_str(),
                r.pass, r.fail, r.skipped, r.out_rel, r.lse_abs, r.grad_rel);
    failed += r.fail;
  }
  for (const auto& r : rows)
    for (const auto& f : r.failures)
      std::printf("FAIL %s %s: %s\n", r.backend.c_str(), r.dtype.c_str(), f.c_str());
  std::printf("\n%s\n", failed ? "check: FAILED" : "check: all passed");
  return failed ? 1 : 0;
}

}  // namespace attnkit::cli
