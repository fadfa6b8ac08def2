#include "jisu/request_options.h"

#include <array>

namespace jisu {
namespace {

template <typename E, size_t N>
Result<E> ParseName(std::string_view name, const char* what,
                    const std::array<std::pair<const char*, E>, N>& names) {
  for (const auto& [n, e] : names) {
    if (name == n) return e;
  }
  std::string list;
  for (const auto& [n, e] : names) list += (list.empty() ? "" : ", ") + std::string(n);
  return Status::InvalidArgument(std::string(what) + " must be one of " + list + " (got '" +
                                 std::string(name) + "')");
}

constexpr std::array<std::pair<const char*, MatmulPath>, 3> kMatmulNames{
    {{"auto", MatmulPath::kAuto}, {"float", MatmulPath::kFloat}, {"int8", MatmulPath::kInt8}}};
constexpr std::array<std::pair<const char*, SamplingPlacement>, 3> kSamplingNames{
    {{"auto", SamplingPlacement::kAuto},
     {"device", SamplingPlacement::kDevice},
     {"host", SamplingPlacement::kHost}}};
constexpr std::array<std::pair<const char*, AttentionVariant>, 2> kAttentionNames{
    {{"auto", AttentionVariant::kAuto}, {"dense", AttentionVariant::kDense}}};

template <typename E, size_t N>
const char* NameOf(E e, const std::array<std::pair<const char*, E>, N>& names) {
  for (const auto& [n, v] : names) {
    if (v == e) return n;
  }
  return "?";
}

}  // namespace

const char* MatmulPathName(MatmulPath path) { return NameOf(path, kMatmulNames); }
const char* SamplingPlacementName(SamplingPlacement p) { return NameOf(p, kSamplingNames); }
const char* AttentionVariantName(AttentionVariant v) { return NameOf(v, kAttentionNames); }

Result<MatmulPath> ParseMatmulPath(std::string_view name) {
  return ParseName(name, "matmul", kMatmulNames);
}
Result<SamplingPlacement> ParseSamplingPlacement(std::string_view name) {
  return ParseName(name, "sampling", kSamplingNames);
}
Result<AttentionVariant> ParseAttentionVariant(std::string_view name) {
  return ParseName(name, "attention", kAttentionNames);
}

Status RequestOptions::Validate() const {
  if (speculative && (*speculative < 0 || *speculative > kMaxSpeculative)) {
    return Status::InvalidArgument("speculative must be between 0 and " +
                                   std::to_string(kMaxSpeculative) + " (got " +
                                   std::to_string(*speculative) + ")");
  }
  // Names end up in error messages and cache keys: short printable ASCII only.
  if (weights.size() > 64) return Status::InvalidArgument("weights must be at most 64 bytes");
  for (char c : weights) {
    if (c < 0x21 || c > 0x7e) {
      return Status::InvalidArgument("weights must be printable ASCII without spaces");
    }
  }
  return Status::Ok();
}

RequestOptions RequestOptions::Over(const RequestOptions& d) const {
  RequestOptions r = *this;
  if (r.matmul == MatmulPath::kAuto) r.matmul = d.matmul;
  if (r.sampling == SamplingPlacement::kAuto) r.sampling = d.sampling;
  if (r.attention == AttentionVariant::kAuto) r.attention = d.attention;
  if (r.weights.empty()) r.weights = d.weights;
  if (!r.speculative) r.speculative = d.speculative;
  return r;
}

StepOptions StepOptionsOf(const RequestOptions& resolved) {
  return StepOptions{resolved.weights, resolved.matmul};
}

std::string KvCacheKeyOf(const RequestOptions& r) {
  // Dense attention is what "auto" runs today, so both name the same K/V.
  const AttentionVariant attention =
      r.attention == AttentionVariant::kAuto ? AttentionVariant::kDense : r.attention;
  return "w=" + r.weights + ";m=" + MatmulPathName(r.matmul) +
         ";a=" + AttentionVariantName(attention);
}

}  // namespace jisu
