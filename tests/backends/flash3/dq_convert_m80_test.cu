// The 80-row D 128 backward's dQ conversion (bwd_kernel.cuh 3t, bwd_dq_convert_m80_kernel) on a
// synthetic workspace laid out in the dQ^T fragment order (bwd_traits.hpp kDqTrans): every dq
// element gets its scaled, bf16-rounded value, and nothing outside the dq view is written. Both
// store paths: 16-byte rows (vec) and 16-bit stores, the latter with a d-stride of 2 and with rows
// that are not 16-byte aligned (the backend's harness never reaches them: its padded layouts fail
// flash3's TMA rules for q / k / v first). Head dims 128 and 96 (columns >= 96 left alone); Sq
// around the 80-row block (1, 79, 80, 81, 173). Values are small integers times 0.5: exact in bf16.
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "backends/flash3/bwd_kernel.cuh"
#include "backends/flash3/bwd_launch.cuh"
#include "common/cuda_skip.hpp"
#include "device_views.hpp"

namespace attnkit::testing {
namespace {

constexpr uint16_t kPoison = 0xABCD;

uint16_t bf16_bits(float f) {
  const __nv_bfloat16 b = __float2bfloat16_rn(f);
  uint16_t u;
  std::memcpy(&u, &b, 2);
  return u;
}

/// The workspace value of dQ[b][h][q][c] (before the conversion's scale): integers in [-125, 125].
float ws_value(int b, int h, int q, int c) {
  return static_cast<float>((b * 131 + h * 17 + q * 7 + c * 3) % 251 - 125);
}

/// Layout of dq: mode 0 contiguous [B, S, H, hd]; 1 d-stride 2; 2 rows padded by 3 elements and
/// the view starting one element in (neither 16-byte aligned).
struct DqLayout {
  int mode;
  const char* name;
};

void expect_convert_right(int B, int H, int S, int hd, DqLayout lay) {
  SCOPED_TRACE("S " + std::to_string(S) + " head dim " + std::to_string(hd) + " " + lay.name);
  const int m_blocks = (S + 79) / 80, sq_pad = m_blocks * 80;
  const size_t ws_floats = static_cast<size_t>(B) * H * sq_pad * 128;
  // Tile (b, h, t) at ((b H + h) sq_pad + 80 t) 128; part p (D columns 64 p ..) 5120 floats on;
  // thread tid's float4 j at (j 128 + tid) 4: dQ^T rows c, c + 8 x queries q, q + 1.
  std::vector<float> ws(ws_floats, 0.f);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < H; ++h)
      for (int t = 0; t < m_blocks; ++t) {
        float* tile = ws.data() + ((static_cast<size_t>(b) * H + h) * sq_pad + t * 80) * 128;
        for (int p = 0; p < 2; ++p)
          for (int j = 0; j < 10; ++j)
            for (int tid = 0; tid < 128; ++tid) {
              const int c = 64 * p + 16 * (tid / 32) + (tid % 32) / 4;
              const int q = t * 80 + 8 * j + 2 * (tid % 4);
              float* f = tile + p * 5120 + (j * 128 + tid) * 4;
              f[0] = ws_value(b, h, q, c);
              f[1] = ws_value(b, h, q + 1, c);
              f[2] = ws_value(b, h, q, c + 8);
              f[3] = ws_value(b, h, q + 1, c + 8);
            }
      }
  const int64_t row = hd + (lay.mode == 2 ? 3 : 0), ds = lay.mode == 1 ? 2 : 1;
  const int64_t off = lay.mode == 2 ? 1 : 0;
  const Strides4 st{S * H * row * ds, H * row * ds, row * ds, ds};
  const size_t guard = 4096, view = static_cast<size_t>(B) * S * H * row * ds;
  const size_t total = view + 2 * guard + 8;
  std::vector<uint16_t> out(total, kPoison);
  DeviceBuffer ws_buf(ws_floats * sizeof(float)), dq_buf(total * sizeof(uint16_t));
  ASSERT_NE(ws_buf.p, nullptr);
  ASSERT_NE(dq_buf.p, nullptr);
  const float* d_ws = static_cast<const float*>(ws_buf.p);
  uint16_t* d_dq = static_cast<uint16_t*>(dq_buf.p);
  ASSERT_EQ(cudaMemcpy(dq_buf.p, out.data(), dq_buf.bytes, cudaMemcpyHostToDevice), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(ws_buf.p, ws.data(), ws_buf.bytes, cudaMemcpyHostToDevice), cudaSuccess);
  Params p;
  p.batch = B;
  p.heads_q = H;
  p.seqlen_q = S;
  p.head_dim = hd;
  p.scale = 0.5f;
  p.dq = d_dq + guard + off;
  p.dq_st = st;
  const int vec = flash3::bwd::rows16(p.dq, p.dq_st) ? 1 : 0;
  EXPECT_EQ(vec, lay.mode == 0 ? 1 : 0) << "the layout does not select the path it tests";
  flash3::bwd::bwd_dq_convert_m80_kernel<128, true>
      <<<dim3(m_blocks, H, B), 256>>>(p, sq_pad, d_ws, vec);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(out.data(), dq_buf.p, dq_buf.bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<char> owned(total, 0);
  int64_t wrong = 0, stray = 0;
  for (int b = 0; b < B; ++b)
    for (int i = 0; i < S; ++i)
      for (int h = 0; h < H; ++h)
        for (int c = 0; c < hd; ++c) {
          const size_t x = guard + off + b * st.b + i * st.s + h * st.h + c * st.d;
          owned[x] = 1;
          wrong += out[x] != bf16_bits(ws_value(b, h, i, c) * 0.5f);
        }
  for (size_t x = 0; x < total; ++x)
    stray += !owned[x] && out[x] != kPoison;
  EXPECT_EQ(wrong, 0) << "dq elements with the wrong value";
  EXPECT_EQ(stray, 0) << "elements outside the dq view written";
}

TEST(Flash3DqConvertM80, EveryElementOnceBothPaths) {
  ATTNKIT_SKIP_IF_NO_CUDA();
  for (const DqLayout lay : {DqLayout{0, "contiguous"}, DqLayout{1, "d-stride 2"},
                             DqLayout{2, "padded, unaligned rows"}})
    for (const int hd : {128, 96})
      for (const int s : {1, 79, 80, 81, 173})
        expect_convert_right(2, 3, s, hd, lay);
}

}  // namespace
}  // namespace attnkit::testing
