// Elementwise kernels of the layer-program ops beyond the Llama family's (cuda_program.h):
// Gemma's norm of a product's output before the residual add, the GELU-tanh gate and the final
// logit softcap. Each is one memory pass; they run on the per-op path, not the fused GEMVs.
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "backend/cuda/kernels.h"
#include "backend/cuda/reduce.cuh"

namespace jisu::cuda {
namespace {

using bf16 = __nv_bfloat16;

// One block a token: x += RMSNorm(y) * w, with the CPU's rounding order (weight * (y * r)).
__global__ void RmsNormAddKernel(float* x, const float* y, int hidden, const float* weight,
                                 float eps) {
  __shared__ float scratch[32];
  const size_t row = static_cast<size_t>(blockIdx.x) * hidden;
  const float* in = y + row;
  float ss = 0.0f;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) ss += in[i] * in[i];
  ss = BlockSum(ss, scratch);
  const float r = rsqrtf(ss / static_cast<float>(hidden) + eps);
  float* out = x + row;
  for (int i = threadIdx.x; i < hidden; i += blockDim.x) out[i] += weight[i] * (in[i] * r);
}

// PyTorch's gelu(approximate="tanh") of the gate times up, as the CPU's GeluTanhMul.
__global__ void GeluTanhMulKernel(const float* gate_up, int ffn, bf16* out) {
  constexpr float kSqrt2OverPi = 0.7978845608028654f;
  const int t = blockIdx.x;
  const float* g = gate_up + static_cast<size_t>(t) * 2 * ffn;
  const float* u = g + ffn;
  bf16* o = out + static_cast<size_t>(t) * ffn;
  for (int i = blockIdx.y * blockDim.x + threadIdx.x; i < ffn; i += gridDim.y * blockDim.x) {
    const float v = g[i];
    const float inner = kSqrt2OverPi * (v + 0.044715f * v * v * v);
    o[i] = __float2bfloat16(0.5f * v * (1.0f + tanhf(inner)) * u[i]);
  }
}

__global__ void SoftcapKernel(float* x, size_t n, float cap) {
  const float inv = 1.0f / cap;
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    x[i] = cap * tanhf(x[i] * inv);
  }
}

}  // namespace

void LaunchRmsNormAdd(float* x, const float* y, int num_tokens, int hidden, const float* weight,
                      float eps, cudaStream_t stream) {
  if (num_tokens == 0) return;
  RmsNormAddKernel<<<num_tokens, hidden >= 2048 ? 1024 : 256, 0, stream>>>(x, y, hidden, weight,
                                                                           eps);
}

void LaunchGeluTanhMul(const float* gate_up, int num_tokens, int ffn, uint16_t* out,
                       cudaStream_t stream) {
  if (num_tokens == 0) return;
  dim3 grid(num_tokens, (ffn + 1023) / 1024);
  GeluTanhMulKernel<<<grid, 256, 0, stream>>>(gate_up, ffn, reinterpret_cast<bf16*>(out));
}

void LaunchSoftcap(float* x, size_t n, float cap, cudaStream_t stream) {
  if (n == 0) return;
  const size_t blocks = std::min<size_t>(1024, (n + 255) / 256);
  SoftcapKernel<<<static_cast<unsigned>(blocks), 256, 0, stream>>>(x, n, cap);
}

}  // namespace jisu::cuda
