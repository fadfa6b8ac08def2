// The unfused baseline for the fusion study (`jisu bench-gpu --unfused`): every elementwise
// step of a layer as its own kernel, reading and writing its tensors through global memory, as
// an eager framework runs them. Numerically the same as the fused kernels in kernels.cu (same
// float operations in the same order), so the study compares launches and memory traffic only.
#include <cuda_bf16.h>

#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels.h"

namespace jisu::cuda {
namespace {

using bf16 = __nv_bfloat16;

__global__ void AddBiasKernel(float* x, const float* b, int n, int stride) {
  float* row = x + static_cast<size_t>(blockIdx.x) * stride;
  for (int i = threadIdx.x; i < n; i += blockDim.x) row[i] += b[i];
}

__global__ void RopeInPlaceKernel(float* qkv, const int32_t* positions, int heads, int kv_heads,
                                  int head_dim, const float* inv_freq, bool interleaved) {
  const int t = blockIdx.x;
  const int half = head_dim / 2;
  const int row_len = (heads + 2 * kv_heads) * head_dim;
  float* row = qkv + static_cast<size_t>(t) * row_len;
  const float pos = static_cast<float>(positions[t]);
  for (int idx = threadIdx.x; idx < (heads + kv_heads) * half; idx += blockDim.x) {
    const int h = idx / half;
    const int i = idx % half;
    const int i0 = interleaved ? 2 * i : i;
    const int i1 = interleaved ? 2 * i + 1 : i + half;
    float* head = row + h * head_dim;
    RopeRotate(pos, inv_freq[i], head[i0], head[i1]);
  }
}

__global__ void SplitQkvToCacheKernel(const float* qkv, const int32_t* slots, int heads,
                                      int kv_heads, int head_dim, float q_scale, float* q_out,
                                      bf16* kv_layer, int block_size) {
  const int t = blockIdx.x;
  const int q_dim = heads * head_dim;
  const int kv_dim = kv_heads * head_dim;
  const float* row = qkv + static_cast<size_t>(t) * (q_dim + 2 * kv_dim);
  const int slot = slots[t];
  const size_t head_stride = static_cast<size_t>(block_size) * head_dim;
  bf16* k_block = CacheSlotK(kv_layer, slot, block_size, kv_heads, head_dim);
  bf16* v_block = k_block + kv_heads * head_stride;
  for (int i = threadIdx.x; i < q_dim; i += blockDim.x) {
    q_out[static_cast<size_t>(t) * q_dim + i] = row[i] * q_scale;
  }
  for (int i = threadIdx.x; i < kv_dim; i += blockDim.x) {
    const size_t dst = (i / head_dim) * head_stride + i % head_dim;
    k_block[dst] = __float2bfloat16(row[q_dim + i]);
    v_block[dst] = __float2bfloat16(row[q_dim + kv_dim + i]);
  }
}

__global__ void SiluInPlaceKernel(float* gate_up, int ffn) {
  float* g = gate_up + static_cast<size_t>(blockIdx.x) * 2 * ffn;
  for (int i = blockIdx.y * blockDim.x + threadIdx.x; i < ffn; i += gridDim.y * blockDim.x) {
    const float x = g[i];
    g[i] = x / (1.0f + __expf(-x));
  }
}

__global__ void MulToBf16Kernel(const float* gate_up, int ffn, bf16* out) {
  const float* g = gate_up + static_cast<size_t>(blockIdx.x) * 2 * ffn;
  bf16* o = out + static_cast<size_t>(blockIdx.x) * ffn;
  for (int i = blockIdx.y * blockDim.x + threadIdx.x; i < ffn; i += gridDim.y * blockDim.x) {
    o[i] = __float2bfloat16(g[i] * g[ffn + i]);
  }
}

__global__ void AddKernel(float* x, const float* y, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x) {
    x[i] += y[i];
  }
}

}  // namespace

void LaunchAddBias(float* x, const float* b, int tokens, int n, int stride, cudaStream_t stream) {
  AddBiasKernel<<<tokens, 256, 0, stream>>>(x, b, n, stride);
}

void LaunchRopeInPlace(float* qkv, const int32_t* positions, int tokens, int heads, int kv_heads,
                       int head_dim, const float* inv_freq, bool interleaved, cudaStream_t stream) {
  RopeInPlaceKernel<<<tokens, 256, 0, stream>>>(qkv, positions, heads, kv_heads, head_dim, inv_freq,
                                                interleaved);
}

void LaunchSplitQkvToCache(const float* qkv, const int32_t* slots, int tokens, int heads,
                           int kv_heads, int head_dim, float q_scale, float* q_out,
                           uint16_t* kv_layer, int block_size, cudaStream_t stream) {
  SplitQkvToCacheKernel<<<tokens, 256, 0, stream>>>(qkv, slots, heads, kv_heads, head_dim, q_scale,
                                                    q_out, reinterpret_cast<bf16*>(kv_layer),
                                                    block_size);
}

void LaunchSiluInPlace(float* gate_up, int tokens, int ffn, cudaStream_t stream) {
  SiluInPlaceKernel<<<dim3(tokens, (ffn + 1023) / 1024), 256, 0, stream>>>(gate_up, ffn);
}

void LaunchMulToBf16(const float* gate_up, int tokens, int ffn, uint16_t* out,
                     cudaStream_t stream) {
  MulToBf16Kernel<<<dim3(tokens, (ffn + 1023) / 1024), 256, 0, stream>>>(
      gate_up, ffn, reinterpret_cast<bf16*>(out));
}

void LaunchAdd(float* x, const float* y, size_t n, cudaStream_t stream) {
  const int blocks = static_cast<int>(std::min<size_t>((n + 255) / 256, 4096));
  AddKernel<<<blocks, 256, 0, stream>>>(x, y, n);
}

}  // namespace jisu::cuda
