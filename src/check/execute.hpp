// One backend's run of a check case on a device: inputs copied over, outputs poisoned, forward
// (and backward) through the public API, results copied back to the host.
#pragma once

#include <string>

#include "check/inputs.hpp"

namespace attnkit::check::detail {

struct Outputs {
  HostTensor out, lse;
  bool has_grads = false;
  HostTensor dq, dk, dv;
  bool has_repeat = false;  // deterministic cases: a second backward into fresh buffers
  HostTensor dq2, dk2, dv2;
};

/// Runs forward, then (c.backward) backward on the forward's own out and lse. lse is requested
/// when c.lse or c.backward. Throws attnkit::Error as the API does; `stage` says which call
/// ("forward" / "backward") was running.
Outputs execute(const Case& c, const Inputs& in, const std::string& backend, Device device,
                std::string& stage);

}  // namespace attnkit::check::detail
