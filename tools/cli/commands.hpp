// The attnkit CLI's subcommands. Each returns the process exit code.
#pragma once

#include <string>

#include "attnkit/backend_info.hpp"

namespace attnkit::cli {

int cmd_info(int argc, char** argv);
int cmd_explain(int argc, char** argv);
int cmd_check(int argc, char** argv);
int cmd_bench(int argc, char** argv);

/// Where backend `b` runs here: the CPU, or the first CUDA device whose arch is in b's range.
/// Returns false (and says why) when b is not built or no such device is present.
bool backend_device(const BackendDescription& b, Device* device, std::string* why);

}  // namespace attnkit::cli
