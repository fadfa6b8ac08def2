#include "ops/quant_k.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/half.h"

namespace jisu {
namespace {

inline int RoundClamp(float v, int lo, int hi) {
  if (!(v == v)) return lo;  // NaN input: any valid code
  const float r = std::nearbyint(v);
  return static_cast<int>(std::min(static_cast<float>(hi), std::max(static_cast<float>(lo), r)));
}

// Fits x[i] ~= scale * q[i] - offset, q in [0, nmax], scale >= 0, offset >= 0 (the formats
// subtract a non-negative min, so a block that is all positive uses offset 0). Tries a few
// grid spacings around (max - min) / nmax; for each, rounds, then solves least squares for
// (scale, offset) given the codes and keeps the fit with the smallest squared error.
void FitAsymmetric(const float* x, int n, int nmax, float* scale, float* offset) {
  float mn = 0.0f, mx = x[0];
  for (int i = 0; i < n; ++i) {
    mn = std::min(mn, x[i]);
    mx = std::max(mx, x[i]);
  }
  if (!(mx > mn)) {  // constant (or non-finite) block
    *scale = 0.0f;
    *offset = std::isfinite(mn) ? -mn : 0.0f;
    return;
  }
  float best_s = (mx - mn) / nmax, best_b = mn;
  double best_err = 0;
  for (int i = 0; i < n; ++i) {
    const float q = static_cast<float>(RoundClamp((x[i] - mn) / best_s, 0, nmax));
    const double e = best_s * q + mn - x[i];
    best_err += e * e;
  }
  for (int step = -4; step <= 8; ++step) {
    const float iscale = (nmax + 0.1f * step) / (mx - mn);
    double sq = 0, sq2 = 0, sx = 0, sqx = 0;
    for (int i = 0; i < n; ++i) {
      const double q = RoundClamp(iscale * (x[i] - mn), 0, nmax);
      sq += q;
      sq2 += q * q;
      sx += x[i];
      sqx += q * x[i];
    }
    const double det = n * sq2 - sq * sq;
    if (det <= 0) continue;
    double s = (n * sqx - sq * sx) / det;
    double b = (sq2 * sx - sq * sqx) / det;
    if (b > 0) {  // offset must be <= 0 in x: refit the scale alone
      b = 0;
      s = sq2 > 0 ? sqx / sq2 : 0;
    }
    if (s <= 0) continue;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const double q = RoundClamp(static_cast<float>((x[i] - b) / s), 0, nmax);
      const double e = s * q + b - x[i];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best_s = static_cast<float>(s);
      best_b = static_cast<float>(b);
    }
  }
  *scale = best_s;
  *offset = -best_b;
}

// Shared by Q4_K and Q5_K: per-sub-block fit, 6-bit scales/mins, packed scales, codes.
template <int kBits>
void QuantizeK4Like(const float* x, uint16_t* d_out, uint16_t* dmin_out, uint8_t scales[12],
                    uint8_t codes[kQK_K]) {
  constexpr int kNmax = (1 << kBits) - 1;
  float sub_scale[8], sub_offset[8];
  float max_scale = 0, max_offset = 0;
  for (int j = 0; j < 8; ++j) {
    FitAsymmetric(x + 32 * j, 32, kNmax, &sub_scale[j], &sub_offset[j]);
    max_scale = std::max(max_scale, sub_scale[j]);
    max_offset = std::max(max_offset, sub_offset[j]);
  }
  *d_out = F32ToF16(max_scale / 63.0f);
  *dmin_out = F32ToF16(max_offset / 63.0f);
  const float d = F16ToF32(*d_out), dmin = F16ToF32(*dmin_out);
  int sc[8], m[8];
  for (int j = 0; j < 8; ++j) {
    sc[j] = d > 0 ? RoundClamp(sub_scale[j] / d, 0, 63) : 0;
    m[j] = dmin > 0 ? RoundClamp(sub_offset[j] / dmin, 0, 63) : 0;
  }
  for (int j = 0; j < 4; ++j) {
    scales[j] = static_cast<uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    scales[j + 4] = static_cast<uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    scales[j + 8] = static_cast<uint8_t>((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
  }
  // Codes against the stored (rounded) scales, as the dequantizer will see them.
  for (int j = 0; j < 8; ++j) {
    const float ds = d * static_cast<float>(sc[j]);
    const float dm = dmin * static_cast<float>(m[j]);
    for (int i = 0; i < 32; ++i) {
      codes[32 * j + i] =
          static_cast<uint8_t>(ds > 0 ? RoundClamp((x[32 * j + i] + dm) / ds, 0, kNmax) : 0);
    }
  }
}

// Symmetric fit x ~= scale * q, q in [-nneg, nneg - 1], the element of largest magnitude
// mapped to -nneg and refined by least squares over a few grids (as for Q6_K).
float FitSymmetric(const float* v, int n, int nneg) {
  float vmax = 0;
  for (int i = 0; i < n; ++i) {
    if (std::fabs(v[i]) > std::fabs(vmax)) vmax = v[i];
  }
  if (vmax == 0 || !std::isfinite(vmax)) return 0.0f;
  float best = vmax / -static_cast<float>(nneg);
  double best_err = 1e300;
  for (int step = -4; step <= 4; ++step) {
    const float iscale = -(nneg + 0.1f * step) / vmax;
    double sqx = 0, sq2 = 0;
    for (int i = 0; i < n; ++i) {
      const double q = RoundClamp(iscale * v[i], -nneg, nneg - 1);
      sqx += q * v[i];
      sq2 += q * q;
    }
    if (sq2 <= 0) continue;
    const double sc = sqx / sq2;
    double err = 0;
    for (int i = 0; i < n; ++i) {
      const double e = sc * RoundClamp(static_cast<float>(v[i] / sc), -nneg, nneg - 1) - v[i];
      err += e * e;
    }
    if (err < best_err) {
      best_err = err;
      best = static_cast<float>(sc);
    }
  }
  return best;
}

}  // namespace

void QuantizeQ2_K(const float* x, BlockQ2_K* out, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    float scale[16], offset[16], max_scale = 0, max_offset = 0;
    for (int s = 0; s < 16; ++s) {
      FitAsymmetric(x + 16 * s, 16, 3, &scale[s], &offset[s]);
      max_scale = std::max(max_scale, scale[s]);
      max_offset = std::max(max_offset, offset[s]);
    }
    out[b].d = F32ToF16(max_scale / 15.0f);
    out[b].dmin = F32ToF16(max_offset / 15.0f);
    const float d = F16ToF32(out[b].d), dmin = F16ToF32(out[b].dmin);
    int sc[16], m[16];
    for (int s = 0; s < 16; ++s) {
      sc[s] = d > 0 ? RoundClamp(scale[s] / d, 0, 15) : 0;
      m[s] = dmin > 0 ? RoundClamp(offset[s] / dmin, 0, 15) : 0;
      out[b].scales[s] = static_cast<uint8_t>(sc[s] | (m[s] << 4));
    }
    std::memset(out[b].qs, 0, sizeof out[b].qs);
    for (int e = 0; e < kQK_K; ++e) {
      const float ds = d * static_cast<float>(sc[e / 16]);
      const float dm = dmin * static_cast<float>(m[e / 16]);
      const int q = ds > 0 ? RoundClamp((x[e] + dm) / ds, 0, 3) : 0;
      const int h = e / 128, k = (e / 32) % 4, i = e % 32;
      out[b].qs[32 * h + i] |= static_cast<uint8_t>(q << (2 * k));
    }
  }
}

void QuantizeQ3_K(const float* x, BlockQ3_K* out, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    float scale[16], max_abs = 0, max_scale = 0;
    for (int s = 0; s < 16; ++s) {
      scale[s] = FitSymmetric(x + 16 * s, 16, 4);
      if (std::fabs(scale[s]) > max_abs) {
        max_abs = std::fabs(scale[s]);
        max_scale = scale[s];
      }
    }
    // The sub-scale of largest magnitude maps to -32 (6-bit signed range -32..31).
    out[b].d = F32ToF16(max_scale / -32.0f);
    const float d = F16ToF32(out[b].d);
    int sc[16];
    std::memset(out[b].scales, 0, sizeof out[b].scales);
    for (int s = 0; s < 16; ++s) {
      sc[s] = d != 0 ? RoundClamp(scale[s] / d, -32, 31) : 0;
      const int u = sc[s] + 32;  // 0..63
      if (s < 8) {
        out[b].scales[s] |= static_cast<uint8_t>(u & 15);
      } else {
        out[b].scales[s - 8] |= static_cast<uint8_t>((u & 15) << 4);
      }
      out[b].scales[8 + s % 4] |= static_cast<uint8_t>((u >> 4) << (2 * (s / 4)));
    }
    std::memset(out[b].qs, 0, sizeof out[b].qs);
    std::memset(out[b].hmask, 0, sizeof out[b].hmask);
    for (int e = 0; e < kQK_K; ++e) {
      const float ds = d * static_cast<float>(sc[e / 16]);
      const int u = (ds != 0 ? RoundClamp(x[e] / ds, -4, 3) : 0) + 4;  // 0..7
      const int h = e / 128, k = (e / 32) % 4, i = e % 32;
      out[b].qs[32 * h + i] |= static_cast<uint8_t>((u & 3) << (2 * k));
      if (u >= 4) out[b].hmask[i] |= static_cast<uint8_t>(1 << (e / 32));
    }
  }
}

void DequantizeQ2_K(const BlockQ2_K* in, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK_K) {
    const float d = F16ToF32(in[b].d), dmin = F16ToF32(in[b].dmin);
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, k = (e / 32) % 4, i = e % 32;
      const int q = (in[b].qs[32 * h + i] >> (2 * k)) & 3;
      const uint8_t s = in[b].scales[e / 16];
      const float dl = d * static_cast<float>(s & 15), ml = dmin * static_cast<float>(s >> 4);
      y[e] = dl * static_cast<float>(q) - ml;
    }
  }
}

void DequantizeQ3_K(const BlockQ3_K* in, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK_K) {
    const float d = F16ToF32(in[b].d);
    const uint8_t* sc = in[b].scales;
    for (int e = 0; e < kQK_K; ++e) {
      const int h = e / 128, k = (e / 32) % 4, i = e % 32, s = e / 16;
      const int low = s < 8 ? (sc[s] & 15) : (sc[s - 8] >> 4);
      const int high = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
      const int scale = (low | (high << 4)) - 32;
      const int q =
          ((in[b].qs[32 * h + i] >> (2 * k)) & 3) - (((in[b].hmask[i] >> (e / 32)) & 1) ? 0 : 4);
      y[e] = (d * static_cast<float>(scale)) * static_cast<float>(q);
    }
  }
}

void DequantizeQ4_K(const BlockQ4_K* in, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK_K) {
    const float d = F16ToF32(in[b].d), dmin = F16ToF32(in[b].dmin);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      UnpackScaleMinK4(in[b].scales, j, &sc, &m);
      const float ds = d * static_cast<float>(sc), dm = dmin * static_cast<float>(m);
      const uint8_t* q = in[b].qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int i = 0; i < 32; ++i) {
        y[32 * j + i] = ds * static_cast<float>((q[i] >> shift) & 15) - dm;
      }
    }
  }
}

void DequantizeQ5_K(const BlockQ5_K* in, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK_K) {
    const float d = F16ToF32(in[b].d), dmin = F16ToF32(in[b].dmin);
    for (int j = 0; j < 8; ++j) {
      int sc, m;
      UnpackScaleMinK4(in[b].scales, j, &sc, &m);
      const float ds = d * static_cast<float>(sc), dm = dmin * static_cast<float>(m);
      const uint8_t* q = in[b].qs + 32 * (j / 2);
      const int shift = 4 * (j % 2);
      for (int i = 0; i < 32; ++i) {
        const int v = ((q[i] >> shift) & 15) | (((in[b].qh[i] >> j) & 1) << 4);
        y[32 * j + i] = ds * static_cast<float>(v) - dm;
      }
    }
  }
}

void DequantizeQ6_K(const BlockQ6_K* in, float* y, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, y += kQK_K) {
    const float d = F16ToF32(in[b].d);
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 4; ++k) {
        const uint8_t* ql = in[b].ql + 64 * h + 32 * (k % 2);
        const uint8_t* qh = in[b].qh + 32 * h;
        const int lshift = 4 * (k / 2);
        for (int i = 0; i < 32; ++i) {
          const int e = 128 * h + 32 * k + i;
          const int q = (((ql[i] >> lshift) & 15) | (((qh[i] >> (2 * k)) & 3) << 4)) - 32;
          const float ds = d * static_cast<float>(in[b].scales[e / 16]);
          y[e] = ds * static_cast<float>(q);
        }
      }
    }
  }
}

void QuantizeQ4_K(const float* x, BlockQ4_K* out, int64_t nb) {
  uint8_t codes[kQK_K];
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    QuantizeK4Like<4>(x, &out[b].d, &out[b].dmin, out[b].scales, codes);
    for (int g = 0; g < 4; ++g) {
      for (int i = 0; i < 32; ++i) {
        out[b].qs[32 * g + i] =
            static_cast<uint8_t>(codes[64 * g + i] | (codes[64 * g + 32 + i] << 4));
      }
    }
  }
}

void QuantizeQ5_K(const float* x, BlockQ5_K* out, int64_t nb) {
  uint8_t codes[kQK_K];
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    QuantizeK4Like<5>(x, &out[b].d, &out[b].dmin, out[b].scales, codes);
    std::memset(out[b].qh, 0, sizeof out[b].qh);
    for (int g = 0; g < 4; ++g) {
      for (int i = 0; i < 32; ++i) {
        const int lo = codes[64 * g + i], hi = codes[64 * g + 32 + i];
        out[b].qs[32 * g + i] = static_cast<uint8_t>((lo & 15) | ((hi & 15) << 4));
        out[b].qh[i] |= static_cast<uint8_t>(((lo >> 4) << (2 * g)) | ((hi >> 4) << (2 * g + 1)));
      }
    }
  }
}

void QuantizeQ6_K(const float* x, BlockQ6_K* out, int64_t nb) {
  for (int64_t b = 0; b < nb; ++b, x += kQK_K) {
    // Symmetric per 16 elements: the element of largest magnitude maps to code -32 (the
    // longer side of the signed range), refined by a least-squares scale over a few grids.
    float sub[16];
    float max_abs = 0, max_scale = 0;
    for (int s = 0; s < 16; ++s) {
      const float* v = x + 16 * s;
      float vmax = 0;
      for (int i = 0; i < 16; ++i) {
        if (std::fabs(v[i]) > std::fabs(vmax)) vmax = v[i];
      }
      float best = vmax / -32.0f;
      double best_err = 1e300;
      if (vmax != 0 && std::isfinite(vmax)) {
        for (int step = -4; step <= 4; ++step) {
          const float iscale = -(32.0f + 0.25f * step) / vmax;
          double sqx = 0, sq2 = 0;
          for (int i = 0; i < 16; ++i) {
            const double q = RoundClamp(iscale * v[i], -32, 31);
            sqx += q * v[i];
            sq2 += q * q;
          }
          if (sq2 <= 0) continue;
          const double sc = sqx / sq2;
          double err = 0;
          for (int i = 0; i < 16; ++i) {
            const double e = sc * RoundClamp(static_cast<float>(v[i] / sc), -32, 31) - v[i];
            err += e * e;
          }
          if (err < best_err) {
            best_err = err;
            best = static_cast<float>(sc);
          }
        }
      } else {
        best = 0;
      }
      sub[s] = best;
      if (std::fabs(best) > max_abs) {
        max_abs = std::fabs(best);
        max_scale = best;
      }
    }
    // The sub-scale of largest magnitude maps to -128.
    out[b].d = F32ToF16(max_scale / -128.0f);
    const float d = F16ToF32(out[b].d);
    int8_t sc[16];
    for (int s = 0; s < 16; ++s) {
      sc[s] = static_cast<int8_t>(d != 0 ? RoundClamp(sub[s] / d, -128, 127) : 0);
      out[b].scales[s] = sc[s];
    }
    std::memset(out[b].ql, 0, sizeof out[b].ql);
    std::memset(out[b].qh, 0, sizeof out[b].qh);
    for (int h = 0; h < 2; ++h) {
      for (int k = 0; k < 4; ++k) {
        for (int i = 0; i < 32; ++i) {
          const int e = 128 * h + 32 * k + i;
          const float ds = d * static_cast<float>(sc[e / 16]);
          const int q = (ds != 0 ? RoundClamp(x[e] / ds, -32, 31) : 0) + 32;
          out[b].ql[64 * h + 32 * (k % 2) + i] |= static_cast<uint8_t>((q & 15) << (4 * (k / 2)));
          out[b].qh[32 * h + i] |= static_cast<uint8_t>((q >> 4) << (2 * k));
        }
      }
    }
  }
}

}  // namespace jisu
