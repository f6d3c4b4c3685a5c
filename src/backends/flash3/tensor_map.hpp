// Host side, shared by the flash3 forward and backward launchers: TMA tensor maps over the
// caller's [B, S, H, D] 16-bit tensors.
#pragma once

#include <cstdint>
#include <string>

#include "attnkit/error.hpp"
#include "core/params.hpp"
#include "cuda/ptx_sm90.hpp"

namespace attnkit::flash3 {

/// Tensor map over a logical [B, S, H, D] 16-bit tensor with element strides st (d-stride 1),
/// box (64, box_rows, 1, 1), 128B swizzle. Size-1 dims get a harmless valid stride (TMA rejects
/// 0 and non-multiples of 16 bytes). `who` starts the error message ("flash3", "flash3
/// backward"), `what` names the tensor.
/// make_map without the throw: the CUresult of the encode (0 = success; the driver rejects a
/// misaligned base, strides that are not multiples of 16 bytes or >= 2^40, negative ones too).
inline int make_map_nothrow(CUtensorMap* map, const void* base, const Strides4& st, int64_t b,
                            int64_t s, int64_t h, int64_t d, uint32_t box_rows, bool bf16) {
  const uint64_t dims[4] = {static_cast<uint64_t>(d), static_cast<uint64_t>(s < 1 ? 1 : s),
                            static_cast<uint64_t>(h), static_cast<uint64_t>(b)};
  const int64_t raw[3] = {st.s, st.h, st.b};
  uint64_t bytes[3];
  for (int i = 0; i < 3; ++i)
    bytes[i] =
        dims[i + 1] == 1 ? static_cast<uint64_t>(d) * 2 * 16 : static_cast<uint64_t>(raw[i]) * 2;
  const uint32_t box[4] = {64, box_rows, 1, 1};
  return cuda::sm90::encode_tensor_map_16bit<4>(map, base, dims, bytes, box, bf16);
}

/// A [B, S, H, D] 16-bit tensor can be a TMA store target (the forward's O with kVarTmaEpi, the
/// backward's dK / dV with kTmaKV): 16-byte aligned base, d-stride 1, every stride of a dim with
/// more than one index a positive multiple of 8 elements (16 bytes) below 2^39. Checked as well as
/// by the encode, so that the STG fallback does not rest on the driver's checks alone.
inline bool store_map_ok(const void* base, const Strides4& st, int64_t b, int64_t s, int64_t h) {
  if ((reinterpret_cast<uintptr_t>(base) & 15) != 0 || st.d != 1) return false;
  const int64_t str[3] = {st.s, st.h, st.b};
  const int64_t n[3] = {s, h, b};
  for (int i = 0; i < 3; ++i)
    if (n[i] > 1 && (str[i] <= 0 || str[i] % 8 != 0 || str[i] >= (int64_t{1} << 39))) return false;
  return true;
}

inline void make_map(CUtensorMap* map, const void* base, const Strides4& st, int64_t b, int64_t s,
                     int64_t h, int64_t d, uint32_t box_rows, bool bf16, const char* what,
                     const char* who = "flash3") {
  const int r = make_map_nothrow(map, base, st, b, s, h, d, box_rows, bf16);
  if (r != 0)
    throw Error(ErrorCode::kCudaError, std::string(who) + ": cuTensorMapEncodeTiled failed for " +
                                           what + " (CUresult " + std::to_string(r) + ")");
}

}  // namespace attnkit::flash3
