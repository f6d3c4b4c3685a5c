// The oracle's memory cap (include/attnkit/math.hpp): the setting, the environment variable, and
// the bytes each worker allocates.
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <string>
#include <thread>

#include "attnkit/error.hpp"
#include "attnkit/math.hpp"
#include "backends/math/budget.hpp"
#include "backends/math/math_core.hpp"

namespace attnkit {
namespace {
std::atomic<uint64_t> g_max_bytes{0};  // 0 = not set: environment or default

// "123", "64K", "512M", "4G" (binary multiples); nullopt-like false on anything else.
bool parse_bytes(const std::string& text, uint64_t& out) {
  size_t pos = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos])))
    ++pos;
  if (pos == 0 || pos > 19) return false;
  uint64_t v = std::stoull(text.substr(0, pos));
  std::string suffix = text.substr(pos);
  if (suffix == "K" || suffix == "k" || suffix == "KiB")
    v <<= 10;
  else if (suffix == "M" || suffix == "m" || suffix == "MiB")
    v <<= 20;
  else if (suffix == "G" || suffix == "g" || suffix == "GiB")
    v <<= 30;
  else if (!suffix.empty())
    return false;
  out = v;
  return true;
}
}  // namespace

void set_math_max_bytes(uint64_t bytes) {
  g_max_bytes.store(bytes);
}

uint64_t math_max_bytes() {
  if (const uint64_t set = g_max_bytes.load()) return set;
  const char* env = std::getenv("ATTNKIT_MATH_MAX_BYTES");
  if (env == nullptr || *env == '\0') return kMathDefaultMaxBytes;
  uint64_t v = 0;
  if (!parse_bytes(env, v) || v == 0)
    throw Error(ErrorCode::kInvalidArgument,
                std::string("ATTNKIT_MATH_MAX_BYTES = '") + env +
                    "', expected a positive byte count, optionally suffixed K, M or G");
  return v;
}

namespace math_core {

uint64_t worker_bytes(const Params& p, bool backward) {
  const uint64_t sq = static_cast<uint64_t>(p.seqlen_q), sk = static_cast<uint64_t>(p.seqlen_k);
  const uint64_t d = static_cast<uint64_t>(p.head_dim), dv = static_cast<uint64_t>(p.head_dim_v);
  uint64_t elems;
  if (backward) {
    elems =
        sq * sk * (p.softcap > 0.0f ? 2 : 1) + sq * (2 * d + dv + 1) + sk * (2 * d + 2 * dv + 2);
  } else {
    elems = sq * sk + sq * (d + dv + 1) + sk * (d + dv + 1);
  }
  return elems * sizeof(double);
}

int worker_count(const Params& p, bool backward, uint64_t cap) {
  int64_t want = p.num_threads > 0 ? p.num_threads : std::thread::hardware_concurrency();
  if (want < 1) want = 1;
  const int64_t tasks = task_count(p);
  if (tasks >= 1 && want > tasks) want = tasks;
  const uint64_t per = worker_bytes(p, backward);
  if (per > 0 && static_cast<uint64_t>(want) > cap / per) want = static_cast<int64_t>(cap / per);
  return want < 1 ? 1 : static_cast<int>(want);
}

std::string cap_reason(const Params& p, bool backward) {
  uint64_t cap = 0;
  try {
    cap = math_max_bytes();
  } catch (const Error& e) {
    return e.what();
  }
  const uint64_t per = worker_bytes(p, backward);
  if (per <= cap) return "";
  return "needs " + std::to_string(per) +
         " bytes of fp64 scratch (Sq*Sk scores of one head "
         "and its rows; Sq = " +
         std::to_string(p.seqlen_q) + ", Sk = " + std::to_string(p.seqlen_k) +
         "), above the cap of " + std::to_string(cap) +
         " bytes; raise it with attnkit::set_math_max_bytes() or env ATTNKIT_MATH_MAX_BYTES";
}

}  // namespace math_core
}  // namespace attnkit
