// DLPack import: a TensorView over a DLTensor, zero-copy and non-owning. Available when attnkit
// was built with DLPack's header (Debian: libdlpack-dev; ATTNKIT_WITH_DLPACK).
#pragma once

#include <dlpack/dlpack.h>

#include "attnkit/tensor.hpp"

namespace attnkit {

/// The view of `t` (data + byte_offset, dtype, device, shape, strides in elements; NULL strides
/// mean row-major). `name` is used in error messages. Throws Error(kInvalidArgument) naming the
/// argument for what attnkit cannot view: rank > 4, vector lanes, unsupported dtype or device.
TensorView from_dlpack(const DLTensor& t, const char* name = "tensor");

}  // namespace attnkit
