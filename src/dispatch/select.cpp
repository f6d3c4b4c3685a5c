#include "dispatch/select.hpp"

#include <algorithm>
#include <sstream>

#include "dispatch/registry.hpp"

namespace attnkit {

std::string resolve_backend_name(const std::string& name, DeviceType device) {
  if (name.empty()) return "auto";
  if (name == "native") return device == DeviceType::cpu ? "cpu_flash" : "auto";
  if (auto c = lookup_canonical(name)) return *c;
  std::ostringstream os;
  os << "backend = '" << name << "', expected a known backend name or alias: auto";
  for (const auto& kb : known_backends()) {
    os << ", " << kb.name;
    for (const char* a : kb.aliases)
      os << ", " << a;
  }
  throw Error(ErrorCode::kUnknownBackend, os.str());
}

static std::string join_reasons(const std::vector<std::string>& reasons) {
  std::string s;
  for (size_t i = 0; i < reasons.size(); ++i)
    s += (i ? "; " : "") + reasons[i];
  return s;
}

Selection select_backend(const SelectionRequest& req,
                         const std::vector<SelectionCandidate>& candidates) {
  return select_backend(req, candidates, [](const SelectionCandidate& c) { return c.reasons; });
}

Selection select_backend(const SelectionRequest& req,
                         const std::vector<SelectionCandidate>& candidates,
                         const ReasonsOf& reasons_of) {
  // 1. Which rule names the backend?
  struct Rule {
    const std::string* value;
    const char* label;
  };
  const Rule rules[] = {{&req.per_call, "per-call"},
                        {&req.scoped, "scoped guard"},
                        {&req.process_default, "process default"},
                        {&req.env_default, "env ATTNKIT_BACKEND"}};
  std::string name = "auto", rule = "auto";
  for (const Rule& r : rules) {
    if (!r.value->empty()) {
      name = resolve_backend_name(*r.value, req.device);
      rule = r.label;
      // An explicit "auto" at a higher level means auto; it does not defer to lower levels.
      break;
    }
  }

  // 2. Explicit backend: it runs the call or we explain why not.
  if (name != "auto") {
    for (const auto& c : candidates) {
      if (c.name != name) continue;
      if (!c.built) throw Error(ErrorCode::kNotBuilt, name + ": not built: " + c.not_built_reason);
      const std::vector<std::string> reasons = reasons_of(c);
      if (!reasons.empty())
        throw Error(ErrorCode::kUnsupported,
                    "backend '" + name + "' (chosen by " + rule +
                        ") cannot run this call: " + join_reasons(reasons));
      return Selection{name, rule};
    }
    throw Error(ErrorCode::kNotBuilt, name + ": not built: not part of this binary");
  }

  // 3. auto: first built candidate for this device that supports the call, req.prefer's first.
  std::vector<const SelectionCandidate*> order;
  for (const auto& name_first : req.prefer)
    for (const auto& c : candidates)
      if (c.name == name_first) order.push_back(&c);
  for (const auto& c : candidates)
    if (std::find(order.begin(), order.end(), &c) == order.end()) order.push_back(&c);
  std::ostringstream why;
  for (const SelectionCandidate* cp : order) {
    const SelectionCandidate& c = *cp;
    if (!c.built || c.device != req.device) continue;
    if (c.tier == AccuracyTier::quantized && !req.allow_quantized) {
      why << "\n  " << c.name << ": quantized tier (set allow_quantized to use it)";
      continue;
    }
    const std::vector<std::string> reasons = reasons_of(c);
    if (reasons.empty()) return Selection{c.name, rule};
    why << "\n  " << c.name << ": " << join_reasons(reasons);
  }
  throw Error(ErrorCode::kUnsupported,
              "no backend built for " +
                  std::string(req.device == DeviceType::cpu ? "cpu" : "cuda") +
                  " can run this call:" + (why.str().empty() ? " (none built)" : why.str()));
}

}  // namespace attnkit
