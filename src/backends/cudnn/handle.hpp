// Per-(thread, device) cuDNN handles.
#pragma once

#include <cudnn.h>

namespace attnkit::cudnn {

/// The calling thread's cuDNN handle for `device` (created on first use, destroyed at thread
/// exit). cuDNN handles must not be used by two threads at once.
cudnnHandle_t thread_handle(int device);

}  // namespace attnkit::cudnn
