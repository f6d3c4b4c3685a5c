// attnkit — command-line front end: info, check, bench, explain.
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

#include "attnkit/attnkit.hpp"
#include "commands.hpp"

namespace {

void usage() {
  std::printf(
      "attnkit %s — one dispatcher, many attention backends\n\n"
      "usage: attnkit <command> [options]   (attnkit <command> --help for its options)\n\n"
      "commands:\n"
      "  info      version, build options, devices, every backend with its capabilities\n"
      "  check     every available backend vs the exact oracle on random and hostile shapes\n"
      "  bench     time backends over the BENCHMARKS.md sweeps or given shapes (TFLOP/s, JSON)\n"
      "  explain   for given shapes and options: which backend runs, and why each other cannot\n",
      ATTNKIT_VERSION);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help") ||
      !std::strcmp(argv[1], "help")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  const std::string cmd = argv[1];
  try {
    if (cmd == "info") return attnkit::cli::cmd_info(argc, argv);
    if (cmd == "check") return attnkit::cli::cmd_check(argc, argv);
    if (cmd == "bench") return attnkit::cli::cmd_bench(argc, argv);
    if (cmd == "explain") return attnkit::cli::cmd_explain(argc, argv);
    if (cmd == "--version" || cmd == "version") {
      std::printf("attnkit %s\n", ATTNKIT_VERSION);
      return 0;
    }
    std::fprintf(stderr, "attnkit: unknown command '%s'\n\n", cmd.c_str());
    usage();
    return 2;
  } catch (const attnkit::Error& e) {
    std::fprintf(stderr, "attnkit %s: error [%s]: %s\n", cmd.c_str(),
                 attnkit::error_code_name(e.code()), e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "attnkit %s: %s\n", cmd.c_str(), e.what());
    return 2;
  }
}
