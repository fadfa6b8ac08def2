#include "format/gguf_writer.h"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <set>
#include <utility>

#include "format/gguf_internal.h"

namespace jisu {
namespace {

constexpr uint32_t kGgufMagic = 0x46554747;
constexpr uint32_t kGgufVersion = 3;
constexpr uint64_t kDefaultAlignment = 32;
constexpr int kMaxArrayDepth = 8;  // same limit as the reader

GgufValue Scalar(GgufType type) {
  GgufValue v;
  v.type = type;
  return v;
}

uint64_t PadTo(uint64_t n, uint64_t alignment) {
  return (n + alignment - 1) / alignment * alignment;
}

Status ValidateValue(const GgufValue& v, int depth) {
  if (!IsValidGgufType(static_cast<uint32_t>(v.type))) return Status::InvalidArgument("bad type");
  if (v.type == GgufType::kBool && v.i != 0 && v.i != 1) {
    return Status::InvalidArgument("bool value is not 0 or 1");
  }
  if (v.type != GgufType::kArray) return Status::Ok();
  if (depth >= kMaxArrayDepth) return Status::InvalidArgument("arrays nested too deeply");
  if (!IsValidGgufType(static_cast<uint32_t>(v.array_type))) {
    return Status::InvalidArgument("bad array element type");
  }
  for (size_t k = 0; k < v.array.size(); ++k) {
    if (v.array[k].type != v.array_type) {
      return Status::InvalidArgument("array element " + std::to_string(k) + " is " +
                                     std::string(GgufTypeName(v.array[k].type)) +
                                     " in an array of " + std::string(GgufTypeName(v.array_type)));
    }
    JISU_RETURN_IF_ERROR(ValidateValue(v.array[k], depth + 1));
  }
  return Status::Ok();
}

// Little-endian encoder into a small buffer; flushed by the caller.
class Encoder {
 public:
  template <typename T>
  void Put(T v) {
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    buf_.insert(buf_.end(), p, p + sizeof(T));
  }
  void PutString(const std::string& s) {
    Put<uint64_t>(s.size());
    buf_.insert(buf_.end(), s.begin(), s.end());
  }
  void PutValue(const GgufValue& v) {
    switch (v.type) {
      case GgufType::kU8:
        Put(static_cast<uint8_t>(v.u));
        break;
      case GgufType::kI8:
        Put(static_cast<int8_t>(v.i));
        break;
      case GgufType::kU16:
        Put(static_cast<uint16_t>(v.u));
        break;
      case GgufType::kI16:
        Put(static_cast<int16_t>(v.i));
        break;
      case GgufType::kU32:
        Put(static_cast<uint32_t>(v.u));
        break;
      case GgufType::kI32:
        Put(static_cast<int32_t>(v.i));
        break;
      case GgufType::kF32:
        Put(static_cast<float>(v.f));
        break;
      case GgufType::kBool:
        Put(static_cast<uint8_t>(v.i != 0));
        break;
      case GgufType::kString:
        PutString(v.s);
        break;
      case GgufType::kU64:
        Put(v.u);
        break;
      case GgufType::kI64:
        Put(v.i);
        break;
      case GgufType::kF64:
        Put(v.f);
        break;
      case GgufType::kArray:
        Put(static_cast<uint32_t>(v.array_type));
        Put<uint64_t>(v.array.size());
        for (const GgufValue& e : v.array) PutValue(e);
        break;
    }
  }
  std::vector<uint8_t>& bytes() { return buf_; }

 private:
  std::vector<uint8_t> buf_;
};

}  // namespace

void GgufWriter::AddValue(const std::string& key, const GgufValue& value) {
  for (auto& kv : kv_) {
    if (kv.first == key) {
      kv.second = value;
      return;
    }
  }
  kv_.emplace_back(key, value);
}

void GgufWriter::AddString(const std::string& key, const std::string& value) {
  GgufValue v = Scalar(GgufType::kString);
  v.s = value;
  AddValue(key, v);
}

void GgufWriter::AddU32(const std::string& key, uint32_t value) {
  GgufValue v = Scalar(GgufType::kU32);
  v.u = value;
  AddValue(key, v);
}

void GgufWriter::AddI32(const std::string& key, int32_t value) {
  GgufValue v = Scalar(GgufType::kI32);
  v.i = value;
  AddValue(key, v);
}

void GgufWriter::AddU64(const std::string& key, uint64_t value) {
  GgufValue v = Scalar(GgufType::kU64);
  v.u = value;
  AddValue(key, v);
}

void GgufWriter::AddF32(const std::string& key, float value) {
  GgufValue v = Scalar(GgufType::kF32);
  v.f = value;
  AddValue(key, v);
}

void GgufWriter::AddBool(const std::string& key, bool value) {
  GgufValue v = Scalar(GgufType::kBool);
  v.i = value ? 1 : 0;
  AddValue(key, v);
}

void GgufWriter::AddStringArray(const std::string& key, const std::vector<std::string>& values) {
  GgufValue v = Scalar(GgufType::kArray);
  v.array_type = GgufType::kString;
  v.array.reserve(values.size());
  for (const std::string& s : values) {
    GgufValue e = Scalar(GgufType::kString);
    e.s = s;
    v.array.push_back(std::move(e));
  }
  AddValue(key, v);
}

void GgufWriter::AddI32Array(const std::string& key, const std::vector<int32_t>& values) {
  GgufValue v = Scalar(GgufType::kArray);
  v.array_type = GgufType::kI32;
  v.array.reserve(values.size());
  for (int32_t x : values) {
    GgufValue e = Scalar(GgufType::kI32);
    e.i = x;
    v.array.push_back(std::move(e));
  }
  AddValue(key, v);
}

void GgufWriter::AddF32Array(const std::string& key, const std::vector<float>& values) {
  GgufValue v = Scalar(GgufType::kArray);
  v.array_type = GgufType::kF32;
  v.array.reserve(values.size());
  for (float x : values) {
    GgufValue e = Scalar(GgufType::kF32);
    e.f = x;
    v.array.push_back(std::move(e));
  }
  AddValue(key, v);
}

void GgufWriter::AddTensor(const std::string& name, DType dtype, std::vector<int64_t> shape,
                           std::vector<uint8_t> data) {
  const uint64_t n = data.size();
  tensors_.push_back(Tensor{name, dtype, std::move(shape), std::move(data), nullptr, n});
}

void GgufWriter::AddTensorStreamed(const std::string& name, DType dtype, std::vector<int64_t> shape,
                                   TensorFill fill) {
  // The size is only known valid after Validate; compute it leniently here.
  uint64_t n = 1;
  bool ok = !shape.empty();
  for (int64_t d : shape) {
    if (d <= 0 || n > (uint64_t{1} << 62) / static_cast<uint64_t>(d)) ok = false;
    if (ok) n *= static_cast<uint64_t>(d);
  }
  const std::optional<uint64_t> bytes = ok ? RowBytes(dtype, n) : std::nullopt;
  tensors_.push_back(Tensor{name, dtype, std::move(shape), {}, std::move(fill), bytes.value_or(0)});
}

Status GgufWriter::Validate(uint64_t* alignment) const {
  *alignment = kDefaultAlignment;
  for (const auto& [key, value] : kv_) {
    if (!IsValidUtf8(key)) return Status::InvalidArgument("metadata key is not valid UTF-8");
    Status st = ValidateValue(value, 0);
    if (!st.ok()) return st.WithContext("metadata key " + QuoteName(key));
    if (key == "general.alignment") {
      const std::optional<int64_t> a = value.AsInt();
      if (!a.has_value() || *a <= 0 || (*a & (*a - 1)) != 0 || *a > (int64_t{1} << 30)) {
        return Status::InvalidArgument("general.alignment must be a power of two in [1, 2^30]");
      }
      *alignment = static_cast<uint64_t>(*a);
    }
  }
  std::set<std::string> names;
  for (const Tensor& t : tensors_) {
    const std::string ctx = "tensor " + QuoteName(t.name);
    if (!IsValidUtf8(t.name)) return Status::InvalidArgument("tensor name is not valid UTF-8");
    if (!names.insert(t.name).second) return Status::InvalidArgument("duplicate " + ctx);
    if (!GetDTypeTraits(static_cast<uint32_t>(t.dtype)).has_value()) {
      return Status::InvalidArgument(ctx + ": unknown dtype");
    }
    if (t.shape.size() > 4) return Status::InvalidArgument(ctx + ": more than 4 dimensions");
    uint64_t n = 1;
    for (int64_t d : t.shape) {
      if (d <= 0) return Status::InvalidArgument(ctx + ": dimensions must be positive");
      if (n >
          static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / static_cast<uint64_t>(d)) {
        return Status::InvalidArgument(ctx + ": element count overflows");
      }
      n *= static_cast<uint64_t>(d);
    }
    const uint64_t row = t.shape.empty() ? 1 : static_cast<uint64_t>(t.shape.back());
    const std::optional<uint64_t> row_bytes = RowBytes(t.dtype, row);
    if (!row_bytes.has_value()) {
      return Status::InvalidArgument(ctx + ": innermost dimension " + std::to_string(row) +
                                     " is not a multiple of the " +
                                     std::string(DTypeName(t.dtype)) + " block size");
    }
    if (t.num_bytes / *row_bytes != n / row || t.num_bytes % *row_bytes != 0) {
      return Status::InvalidArgument(ctx + ": data has " + std::to_string(t.num_bytes) +
                                     " bytes, shape and dtype need " +
                                     std::to_string(n / row * *row_bytes));
    }
  }
  return Status::Ok();
}

template <typename WriteFn>
Status GgufWriter::Emit(uint64_t alignment, WriteFn&& write) const {
  Encoder enc;
  enc.Put(kGgufMagic);
  enc.Put(kGgufVersion);
  enc.Put<uint64_t>(tensors_.size());
  enc.Put<uint64_t>(kv_.size());
  for (const auto& [key, value] : kv_) {
    enc.PutString(key);
    enc.Put(static_cast<uint32_t>(value.type));
    enc.PutValue(value);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    enc.PutString(t.name);
    enc.Put(static_cast<uint32_t>(t.shape.size()));
    for (size_t d = t.shape.size(); d > 0; --d) enc.Put(static_cast<uint64_t>(t.shape[d - 1]));
    enc.Put(static_cast<uint32_t>(t.dtype));
    enc.Put(offset);
    offset += PadTo(t.num_bytes, alignment);
  }
  std::vector<uint8_t>& header = enc.bytes();
  header.resize(PadTo(header.size(), alignment), 0);
  if (!write(header.data(), header.size())) return Status::IoError("write failed");
  const std::vector<uint8_t> zeros(alignment, 0);
  std::vector<uint8_t> scratch;  // for streamed tensors, sized to the largest so far
  for (const Tensor& t : tensors_) {
    const uint8_t* bytes = t.data.data();
    if (t.fill) {
      if (scratch.size() < t.num_bytes) scratch.resize(t.num_bytes);
      JISU_RETURN_IF_ERROR(t.fill(scratch.data(), t.num_bytes).WithContext("tensor " + t.name));
      bytes = scratch.data();
    }
    if (!write(bytes, t.num_bytes)) return Status::IoError("write failed");
    const size_t pad = PadTo(t.num_bytes, alignment) - t.num_bytes;
    if (pad != 0 && !write(zeros.data(), pad)) return Status::IoError("write failed");
  }
  return Status::Ok();
}

Result<std::vector<uint8_t>> GgufWriter::Serialize() const {
  uint64_t alignment = 0;
  JISU_RETURN_IF_ERROR(Validate(&alignment));
  std::vector<uint8_t> out;
  JISU_RETURN_IF_ERROR(Emit(alignment, [&](const uint8_t* p, size_t n) {
    out.insert(out.end(), p, p + n);
    return true;
  }));
  return out;
}

Status GgufWriter::Write(const std::string& path) const {
  uint64_t alignment = 0;
  JISU_RETURN_IF_ERROR(Validate(&alignment).WithContext(path));
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  std::FILE* f = std::fopen(tmp.c_str(), "wb");
  if (f == nullptr) return Status::IoError(tmp + ": " + std::strerror(errno));
  Status st = Emit(alignment, [&](const uint8_t* p, size_t n) {
    return n == 0 || std::fwrite(p, 1, n, f) == n;
  });
  if (!st.ok() && st.code() == Status::Code::kIoError) {
    st = Status::IoError(std::string("write failed: ") + std::strerror(errno));
  }
  if (std::fclose(f) != 0 && st.ok()) {
    st = Status::IoError(std::string("close failed: ") + std::strerror(errno));
  }
  if (st.ok() && std::rename(tmp.c_str(), path.c_str()) != 0) {
    st = Status::IoError(std::string("rename failed: ") + std::strerror(errno));
  }
  if (!st.ok()) {
    std::remove(tmp.c_str());
    return st.WithContext(path);
  }
  return Status::Ok();
}

}  // namespace jisu
