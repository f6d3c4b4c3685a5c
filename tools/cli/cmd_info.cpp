// attnkit info: like `python -m xformers.info` — version, build, devices, and each backend's
// capabilities and availability on this machine.
#include <cstdio>
#include <string>

#include "args.hpp"
#include "attnkit/attnkit.hpp"
#include "commands.hpp"

namespace attnkit::cli {

bool backend_device(const BackendDescription& b, Device* device, std::string* why) {
  if (!b.built) {
    if (why) *why = "not built: " + b.not_built_reason;
    return false;
  }
  if (b.caps.device == DeviceType::cpu) {
    if (device) *device = Device::cpu();
    return true;
  }
  bool any_cuda = false;
  for (const auto& d : list_devices()) {
    if (!d.device.is_cuda()) continue;
    any_cuda = true;
    if ((b.caps.min_arch == 0 || d.arch >= b.caps.min_arch) &&
        (b.caps.max_arch == 0 || d.arch <= b.caps.max_arch)) {
      if (device) *device = d.device;
      return true;
    }
  }
  if (why) {
    if (!any_cuda) {
      *why = "built, but no CUDA device is present";
    } else {
      *why = "no CUDA device with arch in [sm";
      *why += std::to_string(b.caps.min_arch);
      *why += ", sm";
      *why += b.caps.max_arch ? std::to_string(b.caps.max_arch) : std::string("*");
      *why += ']';
    }
  }
  return false;
}

static std::string dtypes_str(const Capabilities& c) {
  std::string s;
  for (size_t i = 0; i < c.dtypes.size(); ++i) {
    if (i) s += ',';
    s += dtype_name(c.dtypes[i]);
  }
  return s;
}

static std::string dims_str(const Capabilities& c) {
  if (c.head_dims.empty()) return "<=" + std::to_string(c.max_head_dim);
  std::string s;
  for (size_t i = 0; i < c.head_dims.size(); ++i) {
    if (i) s += ',';
    s += std::to_string(c.head_dims[i]);
  }
  return s;
}

/// The backend feature matrix as a Markdown table (docs/backends.md is generated from it).
static void print_markdown_matrix() {
  const auto all = list_backends();
  std::printf("| feature |");
  for (const auto& b : all)
    std::printf(" `%s` |", b.name.c_str());
  std::printf("\n|---|");
  for (size_t i = 0; i < all.size(); ++i)
    std::printf("---|");
  std::printf("\n");
  auto row = [&](const char* label, auto fn) {
    std::printf("| %s |", label);
    for (const auto& b : all)
      std::printf(" %s |", b.built ? fn(b.caps).c_str() : "—");
    std::printf("\n");
  };
  auto yes = [](bool v) { return std::string(v ? "yes" : "no"); };
  row("built here", [](const Capabilities&) { return std::string("yes"); });
  row("device", [](const Capabilities& c) {
    if (c.device == DeviceType::cpu) return std::string("cpu");
    if (c.min_arch == 0 && c.max_arch == 0) return std::string("cuda (any arch)");
    std::string s = "cuda sm";
    s += std::to_string(c.min_arch);
    if (c.max_arch == c.min_arch) return s;
    s += c.max_arch ? "–" + std::to_string(c.max_arch) : std::string("+");
    return s;
  });
  row("dtypes", [](const Capabilities& c) { return dtypes_str(c); });
  row("head dims", [](const Capabilities& c) { return dims_str(c); });
  row("Dv ≠ D", [&](const Capabilities& c) { return yes(c.head_dim_v_differs); });
  row("backward", [&](const Capabilities& c) { return yes(c.backward); });
  row("causal top_left", [&](const Capabilities& c) { return yes(c.causal_top_left); });
  row("causal bottom_right", [&](const Capabilities& c) { return yes(c.causal_bottom_right); });
  row("sliding window", [&](const Capabilities& c) { return yes(c.window); });
  row("softcap", [&](const Capabilities& c) { return yes(c.softcap); });
  row("ALiBi", [&](const Capabilities& c) { return yes(c.alibi); });
  row("bool mask", [&](const Capabilities& c) { return yes(c.mask_bool); });
  row("additive mask", [&](const Capabilities& c) { return yes(c.mask_additive); });
  row("GQA/MQA", [&](const Capabilities& c) { return yes(c.gqa); });
  row("varlen", [&](const Capabilities& c) { return yes(c.varlen); });
  row("lse", [&](const Capabilities& c) { return yes(c.lse); });
  row("dropout", [&](const Capabilities& c) { return yes(c.dropout); });
  row("deterministic bwd", [&](const Capabilities& c) { return yes(c.deterministic); });
  row("tier", [](const Capabilities& c) {
    return std::string(c.tier == AccuracyTier::exact ? "exact" : "quantized");
  });
  std::printf("\nNot built in this binary:\n\n");
  for (const auto& b : all)
    if (!b.built) std::printf("- `%s`: %s\n", b.name.c_str(), b.not_built_reason.c_str());
}

int cmd_info(int argc, char** argv) {
  Args a("info",
         "Version, build options, devices, and every backend: capabilities and whether it "
         "is available on this machine.",
         {{"markdown", "", "print only the backend feature matrix as a Markdown table", ""}});
  a.parse(argc, argv, 2);
  if (a.help()) {
    std::printf("%s", a.usage().c_str());
    return 0;
  }
  if (a.flag("markdown")) {
    print_markdown_matrix();
    return 0;
  }
  const BuildInfo b = build_info();
  std::printf("attnkit %s\n", b.version.c_str());
  std::printf("build: %s, %s, CUDA %s%s%s, head dims %s, cuDNN backend %s\n", b.build_type.c_str(),
              b.compiler.c_str(), b.cuda ? "on" : "off", b.cuda ? ", archs " : "",
              b.cuda ? b.cuda_archs.c_str() : "", b.head_dims.c_str(),
              b.cudnn ? "built" : "not built");
  std::printf("cpu threads: %d (ATTNKIT_NUM_THREADS or set_num_threads)\n", num_threads());
  std::printf("\ndevices:\n");
  for (const auto& d : list_devices()) {
    if (!d.device.is_cuda()) {
      std::printf("  %-8s host CPU\n", d.device.str().c_str());
      continue;
    }
    std::printf("  %-8s %s, sm%d, %d SMs, %.1f GiB\n", d.device.str().c_str(), d.name.c_str(),
                d.arch, d.sm_count, d.memory_bytes / (1024.0 * 1024 * 1024));
  }
  std::printf("\nbackends (in auto's preference order):\n");
  std::printf("  %-10s %-10s %-5s %-16s %-20s %s\n", "name", "status", "dev", "dtypes", "head dims",
              "features");
  for (const auto& be : list_backends()) {
    std::string why;
    Device dev;
    const bool here = backend_device(be, &dev, &why);
    if (!be.built) {
      std::printf("  %-10s %-10s %s\n", be.name.c_str(), "-", why.c_str());
    } else {
      const Capabilities& c = be.caps;
      std::string f;
      auto add = [&](bool on, const char* n) {
        if (!on) return;
        if (!f.empty()) f += ' ';
        f += n;
      };
      add(true, "fwd");
      add(c.backward, "bwd");
      add(c.causal_top_left, "causal_tl");
      add(c.causal_bottom_right, "causal_br");
      add(c.window, "window");
      add(c.softcap, "softcap");
      add(c.alibi, "alibi");
      add(c.mask_bool, "mask_bool");
      add(c.mask_additive, "mask_add");
      add(c.gqa, "gqa");
      add(c.varlen, "varlen");
      add(c.lse, "lse");
      add(c.dropout, "dropout");
      add(c.deterministic, "deterministic");
      add(c.head_dim_v_differs, "dv!=d");
      add(c.tier == AccuracyTier::quantized, "QUANTIZED");
      std::string arch = "cpu";
      if (c.device == DeviceType::cuda) {
        arch = "cuda sm";
        arch += std::to_string(c.min_arch);
        if (c.max_arch) {
          arch += '-';
          arch += std::to_string(c.max_arch);
        } else {
          arch += '+';
        }
      }
      std::printf("  %-10s %-10s %-5s %-16s %-20s %s\n", be.name.c_str(),
                  here ? "available" : "built", c.device == DeviceType::cpu ? "cpu" : "cuda",
                  dtypes_str(c).c_str(), dims_str(c).c_str(), f.c_str());
      if (!here) std::printf("  %-10s %-10s (%s; needs %s)\n", "", "", why.c_str(), arch.c_str());
    }
    if (!be.aliases.empty()) {
      std::string al;
      for (const auto& x : be.aliases) {
        if (!al.empty()) al += ", ";
        al += x;
      }
      std::printf("  %-10s aliases: %s\n", "", al.c_str());
    }
  }
  return 0;
}

}  // namespace attnkit::cli
