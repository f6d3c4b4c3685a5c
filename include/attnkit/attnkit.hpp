// Umbrella header of attnkit's public C++ API.
#pragma once

#include "attnkit/attention.hpp"
#include "attnkit/backend_info.hpp"
#include "attnkit/error.hpp"
#include "attnkit/options.hpp"
#include "attnkit/tensor.hpp"
#include "attnkit/version.hpp"
