// attnkit explain: for given shapes and options, which backend would run (and by which rule) and
// why every other backend cannot.
#include <cstdio>

#include "args.hpp"
#include "attnkit/attnkit.hpp"
#include "commands.hpp"
#include "problem.hpp"

namespace attnkit::cli {

int cmd_explain(int argc, char** argv) {
  auto specs = problem_option_specs();
  specs.push_back({"backward", "", "explain the backward pass", ""});
  specs.push_back({"backend", "NAME", "a per-call backend (as a caller would pass it)", ""});
  Args a("explain",
         "For the given shapes and options: the backend that would run and the rule that chose it "
         "(per-call, scoped guard, process default, env ATTNKIT_BACKEND, auto), then every backend "
         "with 'ok' or the reasons it cannot run the call.",
         specs);
  a.parse(argc, argv, 2);
  if (a.help()) {
    std::printf("%s", a.usage().c_str());
    return 0;
  }
  ProblemShape s = shape_from_args(a);
  s.opts.backend = a.str("backend");
  const Problem p(s, false, 1);
  std::printf("call: %s%s\n", s.describe().c_str(), a.flag("backward") ? " (backward)" : "");
  const Explanation ex = explain(p.forward_args(), p.options(), a.flag("backward"));
  std::printf("%s", ex.str().c_str());
  return ex.selected.empty() ? 1 : 0;
}

}  // namespace attnkit::cli
