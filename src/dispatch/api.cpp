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
#include "dispatch/flash3_preference.hpp"
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
  // The classes where flash3 measured faster than cuDNN (dispatch/flash3_preference.hpp).
  if (flash3_preferred(p, o.deterministic)) r.prefer = {"flash3"};
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
