// Load-time weight re-layouts MatMul can read instead of the GGUF rows: the integer GEMM's
// prepacked int8 panels (IntPanelBytes / PackIntPanels) and the interleaved 16-row groups of the
// decode kernels, as bf16 pairs where the bf16 GEMM applies (InterleavedBytes,
// InterleavesToBf16, InterleaveWeights). Sizes are 0 where a matrix has no such layout.
#include <algorithm>
#include <optional>

#include "ops/matmul.h"
#include "ops/matmul_bf16.h"
#include "ops/matmul_int.h"
#include "ops/matmul_interleaved.h"
#include "ops/matmul_kernels.h"

namespace jisu {
namespace {

using matmul_internal::kIntNr;
using matmul_internal::kIntPanelBlockBytes;
using matmul_internal::WeightKind;

}  // namespace

size_t IntPanelBytes(const WeightMatrix& w) {
  const std::optional<WeightKind> kind = matmul_internal::WeightKindOf(w.dtype);
  if (!kind.has_value() || !matmul_internal::IsIntKind(*kind) || w.rows <= 0 || w.cols % 32 != 0) {
    return 0;
  }
  const int64_t panels = (w.rows + kIntNr - 1) / kIntNr;
  return static_cast<size_t>(panels * (w.cols / 32) * kIntPanelBlockBytes);
}

void PackIntPanels(const WeightMatrix& w, uint8_t* out, ThreadPool& pool) {
  const std::optional<WeightKind> kind = matmul_internal::WeightKindOf(w.dtype);
  if (IntPanelBytes(w) == 0) return;
  const int64_t nb = w.cols / 32;
  const int64_t panels = (w.rows + kIntNr - 1) / kIntNr;
  const auto* base = static_cast<const uint8_t*>(w.data);
  pool.ParallelFor(panels, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const int64_t r0 = i * kIntNr;
      matmul_internal::PackIntPanel(*kind, base + static_cast<size_t>(r0) * w.row_bytes,
                                    w.row_bytes,
                                    static_cast<int>(std::min<int64_t>(kIntNr, w.rows - r0)), 0, nb,
                                    out + static_cast<size_t>(i * nb) * kIntPanelBlockBytes);
    }
  });
}

size_t InterleavedBytes(const WeightMatrix& w) {
  const std::optional<WeightKind> kind = matmul_internal::WeightKindOf(w.dtype);
  using matmul_internal::Isa;
  using matmul_internal::IsaAvailable;
  // The ISA MatMul picks on this CPU when nothing is forced.
  const Isa best = IsaAvailable(Isa::kAvx512) ? Isa::kAvx512
                   : IsaAvailable(Isa::kAvx2) ? Isa::kAvx2
                                              : Isa::kScalar;
  if (!kind.has_value() || !matmul_internal::HasIlLayout(best, *kind)) {
    return 0;
  }
  return matmul_internal::InterleavedBytes(*kind, w.rows, w.cols);
}

bool InterleavesToBf16(const WeightMatrix& w, MatmulPath path) {
  const std::optional<WeightKind> kind = matmul_internal::WeightKindOf(w.dtype);
  return kind.has_value() && matmul_internal::IsIlFloatKind(*kind) && InterleavedBytes(w) > 0 &&
         matmul_internal::IsaAvailable(matmul_internal::Isa::kAvx512) &&
         matmul_internal::Avx512Bf16Gemm() != nullptr &&
         matmul_internal::UseBf16Numerics(path == MatmulPath::kFloat
                                              ? std::optional(matmul_internal::ActPath::kFloat)
                                              : std::nullopt);
}

void InterleaveWeights(const WeightMatrix& w, uint8_t* out, ThreadPool& pool, MatmulPath path) {
  const std::optional<WeightKind> kind = matmul_internal::WeightKindOf(w.dtype);
  if (!kind.has_value() || matmul_internal::InterleavedBytes(*kind, w.rows, w.cols) == 0) return;
  const bool bf16_pairs = InterleavesToBf16(w, path);
  const int64_t groups = (w.rows + matmul_internal::kIlRows - 1) / matmul_internal::kIlRows;
  pool.ParallelFor(groups, 1, [&](int64_t begin, int64_t end) {
    matmul_internal::InterleaveGroups(*kind, static_cast<const uint8_t*>(w.data), w.row_bytes,
                                      w.rows, w.cols, begin, end, out, bf16_pairs);
  });
}

}  // namespace jisu
