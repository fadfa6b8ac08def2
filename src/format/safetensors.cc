#include "format/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <utility>

#include "format/json_util.h"
#include "format/text_util.h"

namespace jisu {
namespace {

constexpr uint64_t kMaxHeaderBytes = 100ull << 20;

struct DTypeEntry {
  std::string_view name;
  DType dtype;
  uint64_t itemsize;
};

constexpr DTypeEntry kSupported[] = {
    {"F32", DType::kF32, 4}, {"F16", DType::kF16, 2}, {"BF16", DType::kBF16, 2},
    {"F64", DType::kF64, 8}, {"I8", DType::kI8, 1},   {"I16", DType::kI16, 2},
    {"I32", DType::kI32, 4}, {"I64", DType::kI64, 8},
};

const DTypeEntry* FindDType(std::string_view name) {
  for (const DTypeEntry& e : kSupported) {
    if (e.name == name) return &e;
  }
  return nullptr;
}

// Reads a JSON integer that must be in [0, INT64_MAX].
bool GetNonNegative(const nlohmann::json& j, uint64_t* out) {
  if (j.is_number_unsigned()) {
    const uint64_t v = j.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return false;
    *out = v;
    return true;
  }
  if (j.is_number_integer()) {
    const int64_t v = j.get<int64_t>();
    if (v < 0) return false;
    *out = static_cast<uint64_t>(v);
    return true;
  }
  return false;
}

struct Span {
  uint64_t begin;
  uint64_t end;
  size_t index;
};

Status ParseTensor(const std::string& name, const nlohmann::json& j, uint64_t data_size,
                   SafetensorsTensor* t, Span* span) {
  if (!j.is_object()) return Status::Corrupt("entry is not an object");
  const auto dtype_it = j.find("dtype");
  const auto shape_it = j.find("shape");
  const auto offsets_it = j.find("data_offsets");
  if (dtype_it == j.end() || !dtype_it->is_string()) {
    return Status::Corrupt("missing or non-string \"dtype\"");
  }
  if (shape_it == j.end() || !shape_it->is_array()) {
    return Status::Corrupt("missing or non-array \"shape\"");
  }
  if (offsets_it == j.end() || !offsets_it->is_array() || offsets_it->size() != 2) {
    return Status::Corrupt("\"data_offsets\" must be an array [begin, end]");
  }
  const std::string& dtype_name = dtype_it->get_ref<const std::string&>();
  const DTypeEntry* dt = FindDType(dtype_name);
  if (dt == nullptr) return Status::Unsupported("unsupported dtype " + QuoteName(dtype_name));
  t->name = name;
  t->dtype = dt->dtype;

  uint64_t numel = 1;
  t->shape.clear();
  for (const nlohmann::json& d : *shape_it) {
    uint64_t v = 0;
    if (!GetNonNegative(d, &v)) {
      return Status::Corrupt("shape entries must be non-negative integers");
    }
    if (v != 0 && numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / v) {
      return Status::Corrupt("element count overflows");
    }
    numel *= v;
    t->shape.push_back(static_cast<int64_t>(v));
  }
  // The product is bounded by INT64_MAX even if a later dimension is 0, so the numel check
  // above also guards NumElements().
  uint64_t begin = 0;
  uint64_t end = 0;
  if (!GetNonNegative((*offsets_it)[0], &begin) || !GetNonNegative((*offsets_it)[1], &end) ||
      begin > end) {
    return Status::Corrupt("\"data_offsets\" must be non-negative integers with begin <= end");
  }
  if (end > data_size) {
    return Status::Corrupt("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) +
                           "] extend past the " + std::to_string(data_size) + "-byte data section");
  }
  if (numel > std::numeric_limits<uint64_t>::max() / dt->itemsize ||
      end - begin != numel * dt->itemsize) {
    return Status::Corrupt("data size " + std::to_string(end - begin) + " does not match shape x " +
                           dtype_name + " (" + std::to_string(numel) + " elements)");
  }
  t->num_bytes = end - begin;
  span->begin = begin;
  span->end = end;
  return Status::Ok();
}

}  // namespace

int64_t SafetensorsTensor::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // bounded at parse time
  return n;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(const std::string& path) {
  JISU_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
  JISU_ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsFile> file,
                        Parse(mapped->data(), mapped->size(), path));
  file->file_ = std::move(mapped);
  return file;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Parse(const uint8_t* data, size_t size,
                                                                std::string name) {
  const auto fail = [&](const Status& st) { return st.WithContext(name); };
  if (size < 8) return fail(Status::Corrupt("file too short for a safetensors header"));
  uint64_t header_len = 0;
  std::memcpy(&header_len, data, 8);  // little-endian host
  if (header_len > kMaxHeaderBytes) {
    return fail(Status::Corrupt("header length " + std::to_string(header_len) +
                                " exceeds the 100 MB limit"));
  }
  if (header_len > size - 8) {
    return fail(Status::Corrupt("header length " + std::to_string(header_len) +
                                " exceeds the file size " + std::to_string(size)));
  }
  const std::string_view text(reinterpret_cast<const char*>(data + 8),
                              static_cast<size_t>(header_len));
  Result<nlohmann::json> parsed = ParseJson(text);
  if (!parsed.ok()) return fail(parsed.status().WithContext("header"));
  const nlohmann::json& header = *parsed;
  if (!header.is_object()) return fail(Status::Corrupt("header is not a JSON object"));

  std::unique_ptr<SafetensorsFile> file(new SafetensorsFile());
  const uint8_t* const data_section = data + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  std::vector<Span> spans;
  for (const auto& [key, value] : header.items()) {
    if (key == "__metadata__") {
      if (!value.is_object()) return fail(Status::Corrupt("__metadata__ is not an object"));
      for (const auto& [mk, mv] : value.items()) {
        if (!mv.is_string()) {
          return fail(
              Status::Corrupt("__metadata__ value for " + QuoteName(mk) + " is not a string"));
        }
        file->metadata_.emplace(mk, mv.get<std::string>());
      }
      continue;
    }
    SafetensorsTensor t;
    Span span{};
    if (Status st = ParseTensor(key, value, data_size, &t, &span); !st.ok()) {
      return fail(st.WithContext("tensor " + QuoteName(key)));
    }
    span.index = file->tensors_.size();
    t.data = data_section + span.begin;
    spans.push_back(span);
    file->tensors_.push_back(std::move(t));
  }

  // Tensors must not share bytes (zero-size tensors share nothing).
  std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t covered = 0;
  size_t covered_by = 0;
  for (const Span& s : spans) {
    if (s.begin < covered && s.end > s.begin) {
      return fail(Status::Corrupt("tensors " + QuoteName(file->tensors_[covered_by].name) +
                                  " and " + QuoteName(file->tensors_[s.index].name) + " overlap"));
    }
    if (s.end > covered) {
      covered = s.end;
      covered_by = s.index;
    }
  }

  // Expose tensors in file order, which is how writers lay them out.
  std::vector<SafetensorsTensor> ordered;
  ordered.reserve(spans.size());
  for (const Span& s : spans) ordered.push_back(std::move(file->tensors_[s.index]));
  file->tensors_ = std::move(ordered);
  for (size_t k = 0; k < file->tensors_.size(); ++k) {
    file->index_.emplace(file->tensors_[k].name, k);
  }
  return file;
}

const SafetensorsTensor* SafetensorsFile::Find(std::string_view name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace jisu
