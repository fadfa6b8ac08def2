#include "format/gguf.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include "format/gguf_internal.h"

namespace jisu {
namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" read as a little-endian u32
constexpr uint32_t kMaxDims = 4;

// Sequential little-endian reader over an untrusted buffer. Every read checks the remaining
// length first, so a count from the file never sizes an allocation beyond what the file holds.
class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  size_t pos() const { return pos_; }
  // Metadata array elements that may still be allocated (see kMaxMetadataElements).
  uint64_t& element_budget() { return element_budget_; }
  size_t remaining() const { return size_ - pos_; }

  template <typename T>
  Status Read(T* out, const char* what) {
    if (remaining() < sizeof(T)) return Truncated(what);
    // Little-endian host assumed (x86-64, aarch64); GGUF is little-endian.
    std::memcpy(out, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return Status::Ok();
  }

  Status ReadString(std::string* out, const char* what) {
    uint64_t len = 0;
    JISU_RETURN_IF_ERROR(Read(&len, what));
    if (len > remaining()) {
      return Status::Corrupt(std::string(what) + ": string length " + std::to_string(len) +
                             " exceeds the " + std::to_string(remaining()) +
                             " bytes left in the file");
    }
    out->assign(reinterpret_cast<const char*>(data_ + pos_), static_cast<size_t>(len));
    pos_ += static_cast<size_t>(len);
    return Status::Ok();
  }

  Status Truncated(const char* what) const {
    return Status::Corrupt(std::string("truncated file while reading ") + what + " at offset " +
                           std::to_string(pos_));
  }

 private:
  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  uint64_t element_budget_ = 0;
};

// Smallest encoded size of one value of `type`; used to bound array counts before reserving.
uint64_t MinEncodedSize(GgufType type) {
  switch (type) {
    case GgufType::kU8:
    case GgufType::kI8:
    case GgufType::kBool:
      return 1;
    case GgufType::kU16:
    case GgufType::kI16:
      return 2;
    case GgufType::kU32:
    case GgufType::kI32:
    case GgufType::kF32:
      return 4;
    case GgufType::kU64:
    case GgufType::kI64:
    case GgufType::kF64:
    case GgufType::kString:
      return 8;
    case GgufType::kArray:
      return 12;
  }
  return 1;
}

// Nested arrays are legal, but each level recurses; real files use at most one level.
constexpr int kMaxArrayDepth = 8;
// A GgufValue is ~88 bytes, so a 1-byte array element costs ~88x its file size in memory.
// Capping the total number of array elements bounds that (~740 MB worst case); the largest
// real vocabularies (tokens + scores + types + merges) hold ~1M.
constexpr uint64_t kMaxMetadataElements = uint64_t{1} << 23;

Status ReadValue(Cursor& in, GgufType type, int depth, GgufValue* out);

Status ReadArray(Cursor& in, int depth, GgufValue* out) {
  if (depth >= kMaxArrayDepth) {
    return Status::Unsupported("metadata arrays nested deeper than " +
                               std::to_string(kMaxArrayDepth) + " levels");
  }
  uint32_t raw_elem = 0;
  JISU_RETURN_IF_ERROR(in.Read(&raw_elem, "array element type"));
  if (!IsValidGgufType(raw_elem)) {
    return Status::Corrupt("unknown array element type " + std::to_string(raw_elem));
  }
  const GgufType elem = static_cast<GgufType>(raw_elem);
  uint64_t count = 0;
  JISU_RETURN_IF_ERROR(in.Read(&count, "array length"));
  if (count > in.remaining() / MinEncodedSize(elem)) {
    return Status::Corrupt("array of " + std::to_string(count) + " " +
                           std::string(GgufTypeName(elem)) + " elements does not fit in the " +
                           std::to_string(in.remaining()) + " bytes left in the file");
  }
  if (count > in.element_budget()) {
    return Status::Unsupported("metadata arrays hold more than " +
                               std::to_string(kMaxMetadataElements) + " elements in total");
  }
  in.element_budget() -= count;
  out->array_type = elem;
  out->array.resize(static_cast<size_t>(count));
  for (uint64_t k = 0; k < count; ++k) {
    Status st = ReadValue(in, elem, depth + 1, &out->array[k]);
    if (!st.ok()) return st.WithContext("array element " + std::to_string(k));
  }
  return Status::Ok();
}

Status ReadValue(Cursor& in, GgufType type, int depth, GgufValue* out) {
  out->type = type;
  switch (type) {
    case GgufType::kU8: {
      uint8_t v = 0;
      JISU_RETURN_IF_ERROR(in.Read(&v, "u8 value"));
      out->u = v;
      return Status::Ok();
    }
    case GgufType::kI8: {
      int8_t v = 0;
      JISU_RETURN_IF_ERROR(in.Read(&v, "i8 value"));
      out->i = v;
      return Status::Ok();
    }
    case GgufType::kU16: {
      uint16_t v = 0;
      JISU_RETURN_IF_ERROR(in.Read(&v, "u16 value"));
      out->u = v;
      return Status::Ok();
    }
    case GgufType::kI16: {
      int16_t v = 0;
      JISU_RETURN_IF_ERROR(in.Read(&v, "i16 value"));
      out->i = v;
      return Status::Ok();
    }
    case GgufType::kU32: {
      uint32_t v = 0;
      JISU_RETURN_IF_ERROR(in.Read(&v, "u32 value"));
      out->u = v;
      return Status::Ok();
    }
    case GgufType::kI32: {
      int32_t v = 0;
      JISU_RETURN_IF_ERROR(in.Read(&v, "i32 value"));
      out->i = v;
      return Status::Ok();
    }
    case GgufType::kU64: {
      JISU_RETURN_IF_ERROR(in.Read(&out->u, "u64 value"));
      return Status::Ok();
    }
    case GgufType::kI64: {
      JISU_RETURN_IF_ERROR(in.Read(&out->i, "i64 value"));
      return Status::Ok();
    }
    case GgufType::kF32: {
      float v = 0;
      JISU_RETURN_IF_ERROR(in.Read(&v, "f32 value"));
      out->f = v;
      return Status::Ok();
    }
    case GgufType::kF64: {
      JISU_RETURN_IF_ERROR(in.Read(&out->f, "f64 value"));
      return Status::Ok();
    }
    case GgufType::kBool: {
      uint8_t v = 0;
      JISU_RETURN_IF_ERROR(in.Read(&v, "bool value"));
      if (v > 1) return Status::Corrupt("bool value " + std::to_string(v) + " is not 0 or 1");
      out->i = v;
      return Status::Ok();
    }
    case GgufType::kString:
      return in.ReadString(&out->s, "string value");
    case GgufType::kArray:
      return ReadArray(in, depth, out);
  }
  return Status::Corrupt("unknown value type");
}

bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

Status ParseAlignment(const GgufValue& v, uint64_t* alignment) {
  const std::optional<int64_t> a = v.AsInt();
  if (!a.has_value()) {
    return Status::Corrupt("general.alignment must be an integer, got " +
                           std::string(GgufTypeName(v.type)));
  }
  // Bounded so that padding arithmetic on file offsets cannot overflow.
  if (*a <= 0 || !IsPowerOfTwo(static_cast<uint64_t>(*a)) || *a > (int64_t{1} << 30)) {
    return Status::Corrupt("general.alignment " + std::to_string(*a) +
                           " is not a power of two in [1, 2^30]");
  }
  *alignment = static_cast<uint64_t>(*a);
  return Status::Ok();
}

Status ReadTensorInfo(Cursor& in, GgufTensorInfo* t, uint64_t* rel_offset) {
  JISU_RETURN_IF_ERROR(in.ReadString(&t->name, "tensor name"));
  if (!IsValidUtf8(t->name)) return Status::Corrupt("tensor name is not valid UTF-8");
  const std::string ctx = "tensor " + QuoteName(t->name);
  uint32_t n_dims = 0;
  JISU_RETURN_IF_ERROR(in.Read(&n_dims, "tensor dimension count"));
  if (n_dims > kMaxDims) {
    return Status::Corrupt(ctx + ": " + std::to_string(n_dims) + " dimensions (at most " +
                           std::to_string(kMaxDims) + " supported)");
  }
  uint64_t ne[kMaxDims] = {1, 1, 1, 1};
  uint64_t num_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    JISU_RETURN_IF_ERROR(in.Read(&ne[d], "tensor dimension"));
    if (ne[d] == 0 || ne[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Status::Corrupt(ctx + ": dimension " + std::to_string(d) + " has invalid size " +
                             std::to_string(ne[d]));
    }
    if (num_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / ne[d]) {
      return Status::Corrupt(ctx + ": element count overflows");
    }
    num_elements *= ne[d];
  }
  uint32_t raw_type = 0;
  JISU_RETURN_IF_ERROR(in.Read(&raw_type, "tensor type"));
  const std::optional<DTypeTraits> traits = GetDTypeTraits(raw_type);
  if (!traits.has_value()) {
    return Status::Unsupported(ctx + ": unknown tensor type " + std::to_string(raw_type));
  }
  t->dtype = traits->dtype;
  JISU_RETURN_IF_ERROR(in.Read(rel_offset, "tensor data offset"));

  const uint64_t row = n_dims > 0 ? ne[0] : 1;
  const std::optional<uint64_t> row_bytes = RowBytes(t->dtype, row);
  if (!row_bytes.has_value()) {
    return Status::Corrupt(ctx + ": row of " + std::to_string(row) + " elements is not a multiple" +
                           " of the " + std::string(traits->name) + " block size " +
                           std::to_string(traits->block_size));
  }
  const uint64_t rows = num_elements / row;
  if (*row_bytes != 0 && rows > std::numeric_limits<uint64_t>::max() / *row_bytes) {
    return Status::Corrupt(ctx + ": byte size overflows");
  }
  t->num_bytes = rows * *row_bytes;
  t->shape.clear();
  for (uint32_t d = n_dims; d > 0; --d) t->shape.push_back(static_cast<int64_t>(ne[d - 1]));
  return Status::Ok();
}

}  // namespace

bool GgufValue::IsInteger() const { return IsIntegerGgufType(type); }

std::string_view GgufTypeName(GgufType type) {
  switch (type) {
    case GgufType::kU8:
      return "u8";
    case GgufType::kI8:
      return "i8";
    case GgufType::kU16:
      return "u16";
    case GgufType::kI16:
      return "i16";
    case GgufType::kU32:
      return "u32";
    case GgufType::kI32:
      return "i32";
    case GgufType::kF32:
      return "f32";
    case GgufType::kBool:
      return "bool";
    case GgufType::kString:
      return "string";
    case GgufType::kArray:
      return "array";
    case GgufType::kU64:
      return "u64";
    case GgufType::kI64:
      return "i64";
    case GgufType::kF64:
      return "f64";
  }
  return "unknown";
}

std::optional<int64_t> GgufValue::AsInt() const {
  if (!IsInteger()) return std::nullopt;
  if (IsUnsignedGgufType(type)) {
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  return i;
}

std::optional<double> GgufValue::AsFloat() const {
  if (type == GgufType::kF32 || type == GgufType::kF64) return f;
  if (!IsInteger()) return std::nullopt;
  if (IsUnsignedGgufType(type)) return static_cast<double>(u);
  return static_cast<double>(i);
}

int64_t GgufTensorInfo::NumElements() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;  // validated not to overflow at parse time
  return n;
}

Result<std::unique_ptr<GgufFile>> GgufFile::Open(const std::string& path) {
  JISU_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::Open(path));
  JISU_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file,
                        Parse(mapped->data(), mapped->size(), path));
  file->file_ = std::move(mapped);
  return file;
}

Result<std::unique_ptr<GgufFile>> GgufFile::Parse(const uint8_t* data, size_t size,
                                                  std::string name) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->name_ = std::move(name);
  Cursor in(data, size);
  in.element_budget() = kMaxMetadataElements;
  const auto fail = [&](const Status& st) { return st.WithContext(file->name_); };

  uint32_t magic = 0;
  if (Status st = in.Read(&magic, "magic"); !st.ok()) return fail(st);
  if (magic != kGgufMagic) return fail(Status::Corrupt("not a GGUF file (bad magic)"));
  if (Status st = in.Read(&file->version_, "version"); !st.ok()) return fail(st);
  if (file->version_ == 1) {
    return fail(
        Status::Unsupported("GGUF version 1 is not supported (re-convert the model to GGUF v3)"));
  }
  if (file->version_ == 0x02000000 || file->version_ == 0x03000000) {
    return fail(Status::Unsupported("big-endian GGUF files are not supported"));
  }
  if (file->version_ != 2 && file->version_ != 3) {
    return fail(Status::Unsupported("unsupported GGUF version " + std::to_string(file->version_) +
                                    " (expected 2 or 3)"));
  }
  uint64_t n_tensors = 0;
  uint64_t n_kv = 0;
  if (Status st = in.Read(&n_tensors, "tensor count"); !st.ok()) return fail(st);
  if (Status st = in.Read(&n_kv, "metadata count"); !st.ok()) return fail(st);
  // Each key/value takes at least 13 bytes (key length, type, 1-byte value); each tensor info
  // at least 24 (name length, n_dims, type, offset).
  if (n_kv > in.remaining() / 13) {
    return fail(
        Status::Corrupt("metadata count " + std::to_string(n_kv) + " does not fit in the file"));
  }
  if (n_tensors > in.remaining() / 24) {
    return fail(
        Status::Corrupt("tensor count " + std::to_string(n_tensors) + " does not fit in the file"));
  }

  for (uint64_t k = 0; k < n_kv; ++k) {
    std::string key;
    if (Status st = in.ReadString(&key, "metadata key"); !st.ok()) {
      return fail(st.WithContext("metadata entry " + std::to_string(k)));
    }
    if (!IsValidUtf8(key)) {
      return fail(Status::Corrupt("metadata key " + std::to_string(k) + " is not valid UTF-8"));
    }
    uint32_t raw_type = 0;
    GgufValue value;
    Status st = in.Read(&raw_type, "metadata value type");
    if (st.ok() && !IsValidGgufType(raw_type)) {
      st = Status::Corrupt("unknown value type " + std::to_string(raw_type));
    }
    if (st.ok()) st = ReadValue(in, static_cast<GgufType>(raw_type), 0, &value);
    if (!st.ok()) return fail(st.WithContext("metadata key " + QuoteName(key)));
    if (file->metadata_.count(key) != 0) {
      return fail(Status::Corrupt("duplicate metadata key " + QuoteName(key)));
    }
    file->metadata_.emplace(std::move(key), std::move(value));
  }

  if (const GgufValue* a = file->Find("general.alignment"); a != nullptr) {
    if (Status st = ParseAlignment(*a, &file->alignment_); !st.ok()) return fail(st);
  }

  std::vector<uint64_t> rel_offsets(static_cast<size_t>(n_tensors));
  file->tensors_.resize(static_cast<size_t>(n_tensors));
  for (uint64_t k = 0; k < n_tensors; ++k) {
    GgufTensorInfo& t = file->tensors_[k];
    if (Status st = ReadTensorInfo(in, &t, &rel_offsets[k]); !st.ok()) {
      return fail(st.WithContext("tensor info " + std::to_string(k)));
    }
    if (!file->tensor_index_.emplace(t.name, static_cast<size_t>(k)).second) {
      return fail(Status::Corrupt("duplicate tensor name " + QuoteName(t.name)));
    }
  }

  // The data section starts at the next multiple of the alignment after the tensor infos.
  // pos <= size and alignment <= 2^30, so this cannot overflow.
  const uint64_t data_start = (static_cast<uint64_t>(in.pos()) + file->alignment_ - 1) /
                              file->alignment_ * file->alignment_;
  for (size_t k = 0; k < file->tensors_.size(); ++k) {
    GgufTensorInfo& t = file->tensors_[k];
    const std::string ctx = "tensor " + QuoteName(t.name);
    if (rel_offsets[k] % file->alignment_ != 0) {
      return fail(Status::Corrupt(ctx + ": data offset " + std::to_string(rel_offsets[k]) +
                                  " is not a multiple of the alignment " +
                                  std::to_string(file->alignment_)));
    }
    if (data_start > size || rel_offsets[k] > size - data_start ||
        t.num_bytes > size - data_start - rel_offsets[k]) {
      return fail(Status::Corrupt(ctx + ": data [" + std::to_string(rel_offsets[k]) + ", +" +
                                  std::to_string(t.num_bytes) +
                                  ") extends past the end of the file"));
    }
    t.offset = data_start + rel_offsets[k];
    t.data = data + t.offset;
  }

  // Tensors must not share bytes: a writer never produces that, and a kernel writing into
  // one (e.g. in-place repacking) must not change another.
  std::vector<size_t> order(file->tensors_.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return file->tensors_[a].offset < file->tensors_[b].offset;
  });
  for (size_t k = 1; k < order.size(); ++k) {
    const GgufTensorInfo& prev = file->tensors_[order[k - 1]];
    const GgufTensorInfo& cur = file->tensors_[order[k]];
    if (prev.offset + prev.num_bytes > cur.offset) {
      return fail(Status::Corrupt("tensors " + QuoteName(prev.name) + " and " +
                                  QuoteName(cur.name) + " overlap"));
    }
  }
  return file;
}

const GgufValue* GgufFile::Find(std::string_view key) const {
  const auto it = metadata_.find(std::string(key));
  return it == metadata_.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::FindTensor(std::string_view name) const {
  const auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

Status MissingKey(std::string_view key, const std::string& file) {
  return Status::NotFound(file + ": metadata key " + QuoteName(key) + " not found");
}

Status WrongType(std::string_view key, const GgufValue& v, const char* wanted,
                 const std::string& file) {
  std::string got(GgufTypeName(v.type));
  if (v.type == GgufType::kArray) got += " of " + std::string(GgufTypeName(v.array_type));
  return Status::InvalidArgument(file + ": metadata key " + QuoteName(key) + " is " + got +
                                 ", expected " + wanted);
}

}  // namespace

Result<std::string> GgufFile::GetString(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return MissingKey(key, name_);
  if (v->type != GgufType::kString) return WrongType(key, *v, "string", name_);
  return v->s;
}

Result<int64_t> GgufFile::GetInt(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return MissingKey(key, name_);
  const std::optional<int64_t> i = v->AsInt();
  if (!i.has_value()) {
    if (v->IsInteger()) {
      return Status::InvalidArgument(name_ + ": metadata key " + QuoteName(key) + " value " +
                                     std::to_string(v->u) + " does not fit in int64");
    }
    return WrongType(key, *v, "an integer", name_);
  }
  return *i;
}

Result<double> GgufFile::GetFloat(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return MissingKey(key, name_);
  const std::optional<double> f = v->AsFloat();
  if (!f.has_value()) return WrongType(key, *v, "a number", name_);
  return *f;
}

Result<bool> GgufFile::GetBool(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return MissingKey(key, name_);
  if (v->type != GgufType::kBool) return WrongType(key, *v, "bool", name_);
  return v->i != 0;
}

Result<std::vector<std::string>> GgufFile::GetStringArray(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return MissingKey(key, name_);
  if (v->type != GgufType::kArray || v->array_type != GgufType::kString) {
    return WrongType(key, *v, "array of string", name_);
  }
  std::vector<std::string> out;
  out.reserve(v->array.size());
  for (const GgufValue& e : v->array) out.push_back(e.s);
  return out;
}

Result<std::vector<int64_t>> GgufFile::GetIntArray(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return MissingKey(key, name_);
  if (v->type != GgufType::kArray || !IsIntegerGgufType(v->array_type)) {
    return WrongType(key, *v, "array of integers", name_);
  }
  std::vector<int64_t> out;
  out.reserve(v->array.size());
  for (size_t k = 0; k < v->array.size(); ++k) {
    const std::optional<int64_t> i = v->array[k].AsInt();
    if (!i.has_value()) {
      return Status::InvalidArgument(name_ + ": metadata key " + QuoteName(key) + " element " +
                                     std::to_string(k) + " does not fit in int64");
    }
    out.push_back(*i);
  }
  return out;
}

Result<std::vector<float>> GgufFile::GetFloatArray(std::string_view key) const {
  const GgufValue* v = Find(key);
  if (v == nullptr) return MissingKey(key, name_);
  const bool numeric = v->array_type == GgufType::kF32 || v->array_type == GgufType::kF64 ||
                       IsIntegerGgufType(v->array_type);
  if (v->type != GgufType::kArray || !numeric) {
    return WrongType(key, *v, "array of numbers", name_);
  }
  std::vector<float> out;
  out.reserve(v->array.size());
  for (const GgufValue& e : v->array) out.push_back(static_cast<float>(*e.AsFloat()));
  return out;
}

}  // namespace jisu
