// The public entry points: validate → resolve → select → (checks) → backend.
#include <cstdio>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "attnkit/attention.hpp"
#include "attnkit/backend_info.hpp"
#include "attnkit/error.hpp"
#include "attnkit/version.hpp"
#include "core/build_config.hpp"
#include "core/checks.hpp"
#include "core/device_runtime.hpp"
#include "core/env.hpp"
#include "core/resolve.hpp"
#include "dispatch/registry.hpp"
#include "dispatch/select.hpp"

namespace attnkit {
namespace {

std::mutex g_default_mutex;
std::string g_default_backend;  // set_default_backend(); "" = unset
thread_local std::vector<std::string> t_guard_stack;

std::string process_default() {
  std::lock_guard<std::mutex> lock(g_default_mutex);
  return g_default_backend;
}

int device_arch(Device d) {
  if (d.type == DeviceType::cpu) return 0;
  return device_runtime(d.type).arch(d);
}

/// Every known backend as selection sees it, without reasons (those depend on the call): built
/// once per process, in preference order.
const std::vector<SelectionCandidate>& known_candidates() {
  static const std::vector<SelectionCandidate> list = [] {
    std::vector<SelectionCandidate> out;
    for (const auto& kb : known_backends()) {
      SelectionCandidate c;
      c.name = kb.name;
      if (Backend* b = built_backend(kb.name)) {
        c.built = true;
        c.device = b->description().caps.device;
        c.tier = b->description().caps.tier;
      } else {
        c.not_built_reason = not_built_reason(kb.name);
      }
      out.push_back(std::move(c));
    }
    return out;
  }();
  return list;
}

/// Why the built backend of candidate c cannot run p (empty = it can).
std::vector<std::string> reasons_for(const SelectionCandidate& c, const Params& p, int arch) {
  return backend_reasons(*built_backend(c.name), p, arch);
}

/// Every known backend with all of its reasons (for explain()).
std::vector<SelectionCandidate> candidates_for(const Params& p) {
  const int arch = device_arch(p.device);
  std::vector<SelectionCandidate> out = known_candidates();
  for (auto& c : out)
    if (c.built) c.reasons = reasons_for(c, p, arch);
  return out;
}

SelectionRequest request_for(const Options& o, const Params& p) {
  SelectionRequest r;
  r.per_call = o.backend;
  r.scoped = t_guard_stack.empty() ? std::string() : t_guard_stack.back();
  r.process_default = process_default();
  r.env_default = env::default_backend();
  r.device = p.device.type;
  r.allow_quantized = o.allow_quantized;
  // Varlen backward: flash3 before cuDNN (session 25, H200,
  // bench/results/2026-11-28-h200-flash3-varlen-bwd.md: 1.22-3.46x cuDNN's varlen backward, which
  // ran at half its dense speed at 1k-long sequences). The varlen forward keeps the table's order
  // (flash3 / cuDNN 0.97-1.15, 2026-11-28-h200-flash3-varlen.md).
  if (p.varlen && p.is_backward) r.prefer = {"flash3"};
  // Dense backwards where flash3 beat cuDNN at every S >= 1k in the same process (H200; sessions
  // 28-30, bench/results/2026-11-29-h200-flash3-s30.md): D 256 (1.04-1.28x in session 30, both
  // causal modes) and causal D 64 (1.06-1.11x). Plain calls
  // only: masks and windows keep the table's order (not compared with cuDNN's); softcap / ALiBi
  // reach flash3 anyway (cuDNN declines them). Where flash3 declines (dropout), the table's
  // order follows.
  // Session 34 (H200, bench/results/2026-11-29-h200-flash3-s34.md): the other plain dense
  // backwards, D 128 (both causal modes) and non-causal D 64, at S >= 1k (the range measured):
  // 1.01-1.08x cuDNN with both at the sustained (power-capped) clock, 1.00-1.06x by the standard
  // method of session 33 but for D 128 non-causal 4k's 0.89, which the sustained probe put at
  // 1.00 (cuDNN's block had run at boost). Non-deterministic calls only: flash3's deterministic
  // D 64 / 128 backward runs at 0.59-0.75 of its default and was not timed against cuDNN's.
  // Session 38 (H200, bench/results/2026-11-29-h200-flash3-s38.md, call 3): D 192 on flash3's
  // D 256 kernel against cuDNN's native D 192 backward: 1.02-1.03x at S 4k, 1.16-1.18x at 16k,
  // 1.00 / 0.88 at 1k (non-causal / causal), so from 4096 keys and queries. D 96 (0.94-1.00x
  // cuDNN) keeps the table's order.
  const bool plain = !p.has_mask() && p.window_left < 0 && p.window_right < 0;
  const bool measured_1k = !o.deterministic && p.seqlen_q >= 1024 && p.seqlen_k >= 1024;
  const bool measured_4k = !o.deterministic && p.seqlen_q >= 4096 && p.seqlen_k >= 4096;
  const bool d64 = p.head_dim == 64, causal = p.causal != Causal::none;
  if (p.is_backward && !p.varlen && plain &&
      (p.head_dim == 256 || (d64 && causal) || (measured_1k && (p.head_dim == 128 || d64)) ||
       (measured_4k && p.head_dim == 192)))
    r.prefer = {"flash3"};
  return r;
}

void log_selection(const Selection& s, const Params& p) {
  if (!env::log_enabled()) return;
  std::ostringstream key;
  key << (p.is_backward ? "bwd" : "fwd") << ' ' << dtype_name(p.dtype) << ' ' << p.device.str()
      << " B=" << p.batch << " Sq=" << p.seqlen_q << " Sk=" << p.seqlen_k << " Hq=" << p.heads_q
      << " Hkv=" << p.heads_kv << " D=" << p.head_dim << " Dv=" << p.head_dim_v
      << " causal=" << causal_name(p.causal) << (p.varlen ? " varlen" : "")
      << (p.has_mask() ? " mask" : "") << (p.has_dropout() ? " dropout" : "") << " -> " << s.backend
      << " (" << s.rule << ")";
  static std::mutex m;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(m);
  if (seen.insert(key.str()).second) std::fprintf(stderr, "[attnkit] %s\n", key.str().c_str());
}

Backend& chosen_backend(const Options& o, const Params& p, Selection& sel) {
  // Reasons are computed only for the candidates selection looks at (the named backend, or auto's
  // candidates up to the first that can run the call): this runs on every call.
  const int arch = device_arch(p.device);
  sel = select_backend(request_for(o, p), known_candidates(),
                       [&](const SelectionCandidate& c) { return reasons_for(c, p, arch); });
  log_selection(sel, p);
  Backend* b = built_backend(sel.backend);
  if (!b) throw Error(ErrorCode::kInternal, "selected backend '" + sel.backend + "' is not built");
  return *b;
}

}  // namespace

const char* causal_name(Causal c) {
  switch (c) {
    case Causal::none:
      return "none";
    case Causal::top_left:
      return "top_left";
    case Causal::bottom_right:
      return "bottom_right";
  }
  return "?";
}

std::string forward(const ForwardArgs& args, const Options& opts) {
  ResolvedCall rc;
  resolve_forward(args, opts, rc);
  Selection sel;
  Backend& b = chosen_backend(opts, rc.params, sel);
  const bool checks = env::checks_enabled();
  if (checks) {
    require_finite(args.q, "q", "before forward");
    require_finite(args.k, "k", "before forward");
    require_finite(args.v, "v", "before forward");
  }
  b.forward(rc.params);
  if (checks) require_finite(args.out, "out", ("after forward on " + sel.backend).c_str());
  return sel.backend;
}

std::string backward(const BackwardArgs& args, const Options& opts) {
  ResolvedCall rc;
  resolve_backward(args, opts, rc);
  Selection sel;
  Backend& b = chosen_backend(opts, rc.params, sel);
  const bool checks = env::checks_enabled();
  if (checks) {
    for (auto [t, n] : {std::pair{&args.dout, "dout"},
                        {&args.q, "q"},
                        {&args.k, "k"},
                        {&args.v, "v"},
                        {&args.out, "out"}})
      require_finite(*t, n, "before backward");
  }
  b.backward(rc.params);
  if (checks) {
    const std::string when = "after backward on " + sel.backend;
    for (auto [t, n] : {std::pair{&args.dq, "dq"}, {&args.dk, "dk"}, {&args.dv, "dv"}})
      require_finite(*t, n, when.c_str());
  }
  return sel.backend;
}

Explanation explain(const ForwardArgs& args, const Options& opts, bool is_backward) {
  ResolvedCall rc;
  resolve_forward(args, opts, rc);
  rc.params.is_backward = is_backward;
  const auto cands = candidates_for(rc.params);
  Explanation ex;
  for (const auto& c : cands) {
    BackendVerdict v;
    v.name = c.name;
    v.built = c.built;
    if (!c.built) {
      v.reasons = {"not built: " + c.not_built_reason};
    } else {
      v.reasons = c.reasons;
      v.ok = c.reasons.empty();
    }
    ex.backends.push_back(std::move(v));
  }
  try {
    const Selection s = select_backend(request_for(opts, rc.params), cands);
    ex.selected = s.backend;
    ex.rule = s.rule;
  } catch (const Error& e) {
    ex.selected = "";
    ex.rule = e.what();
  }
  return ex;
}

std::string Explanation::str() const {
  std::ostringstream os;
  if (!selected.empty())
    os << "selected: " << selected << " (" << rule << ")\n";
  else
    os << "selected: none\n  " << rule << "\n";
  for (const auto& b : backends) {
    os << "  " << b.name << std::string(b.name.size() < 10 ? 10 - b.name.size() : 1, ' ');
    if (b.ok) {
      os << "ok\n";
      continue;
    }
    for (size_t i = 0; i < b.reasons.size(); ++i)
      os << (i ? "\n            " : "") << b.reasons[i];
    os << "\n";
  }
  return os.str();
}

void set_default_backend(const std::string& name) {
  std::string canonical;
  if (!name.empty() && name != "auto") canonical = name;
  if (!canonical.empty()) resolve_backend_name(canonical, DeviceType::cpu);  // validates the name
  std::lock_guard<std::mutex> lock(g_default_mutex);
  g_default_backend = canonical;
}

std::string default_backend() {
  const std::string d = process_default();
  if (!d.empty()) return d;
  return env::default_backend().empty() ? std::string("auto") : env::default_backend();
}

BackendGuard::BackendGuard(const std::string& name) {
  resolve_backend_name(name, DeviceType::cpu);  // unknown names fail here, not at the call
  t_guard_stack.push_back(name);
}

BackendGuard::~BackendGuard() {
  t_guard_stack.pop_back();
}

std::string canonical_backend_name(const std::string& name) {
  if (name == "native") return "native";
  return resolve_backend_name(name, DeviceType::cpu);
}

std::vector<DeviceDescription> list_devices() {
  std::vector<DeviceDescription> out = device_runtime(DeviceType::cpu).devices();
#if defined(ATTNKIT_WITH_CUDA)
  for (auto& d : device_runtime(DeviceType::cuda).devices())
    out.push_back(d);
#endif
  return out;
}

BuildInfo build_info() {
  BuildInfo b;
  b.version = ATTNKIT_VERSION;
  b.cuda = ATTNKIT_BUILD_HAVE_CUDA != 0;
  b.cuda_archs = b.cuda ? ATTNKIT_BUILD_CUDA_ARCHS : "";
  b.head_dims = ATTNKIT_BUILD_HEAD_DIMS;
  b.cudnn = built_backend("cudnn") != nullptr;
  b.compiler = ATTNKIT_BUILD_COMPILER;
  b.build_type = ATTNKIT_BUILD_TYPE;
  return b;
}

}  // namespace attnkit
