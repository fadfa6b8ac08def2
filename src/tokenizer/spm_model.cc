#include "tokenizer/spm_model.h"

#include <cstdint>
#include <cstring>

#include "core/utf8.h"

namespace jisu {
namespace {

enum WireType : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

// A cursor over one message's bytes.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool done() const { return pos_ >= data_.size(); }

  Status Varint(uint64_t* out) {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) return Status::Corrupt("truncated varint");
      const uint8_t b = static_cast<uint8_t>(data_[pos_++]);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        *out = v;
        return Status::Ok();
      }
    }
    return Status::Corrupt("varint longer than 10 bytes");
  }
  Status Tag(uint32_t* field, uint32_t* wire) {
    uint64_t t = 0;
    JISU_RETURN_IF_ERROR(Varint(&t));
    if (t >> 32) return Status::Corrupt("field tag out of range");
    *field = static_cast<uint32_t>(t >> 3);
    *wire = static_cast<uint32_t>(t & 7);
    if (*field == 0) return Status::Corrupt("field number 0");
    return Status::Ok();
  }
  Status Bytes(std::string_view* out) {
    uint64_t n = 0;
    JISU_RETURN_IF_ERROR(Varint(&n));
    if (n > data_.size() - pos_) return Status::Corrupt("length runs past the end");
    *out = data_.substr(pos_, n);
    pos_ += n;
    return Status::Ok();
  }
  Status Fixed32(uint32_t* out) {
    if (data_.size() - pos_ < 4) return Status::Corrupt("truncated fixed32");
    const auto* p = reinterpret_cast<const uint8_t*>(data_.data() + pos_);
    *out = uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
    pos_ += 4;
    return Status::Ok();
  }
  Status Skip(uint32_t wire) {
    uint64_t v = 0;
    std::string_view s;
    uint32_t f32 = 0;
    switch (wire) {
      case kVarint:
        return Varint(&v);
      case kFixed64:
        if (data_.size() - pos_ < 8) return Status::Corrupt("truncated fixed64");
        pos_ += 8;
        return Status::Ok();
      case kLengthDelimited:
        return Bytes(&s);
      case kFixed32:
        return Fixed32(&f32);
      default:  // groups (3, 4) are not used by sentencepiece_model.proto
        return Status::Corrupt("unsupported wire type " + std::to_string(wire));
    }
  }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

Status Expect(uint32_t wire, uint32_t want, const char* field) {
  if (wire != want) return Status::Corrupt(std::string(field) + ": unexpected wire type");
  return Status::Ok();
}

// int32 fields are varints holding the sign-extended 64-bit value.
Status ReadInt32(Reader& r, uint32_t wire, const char* field, int32_t* out) {
  JISU_RETURN_IF_ERROR(Expect(wire, kVarint, field));
  uint64_t v = 0;
  JISU_RETURN_IF_ERROR(r.Varint(&v));
  const auto s = static_cast<int64_t>(v);
  if (s < INT32_MIN || s > INT32_MAX) return Status::Corrupt(std::string(field) + " out of range");
  *out = static_cast<int32_t>(s);
  return Status::Ok();
}

Status ReadBool(Reader& r, uint32_t wire, const char* field, bool* out) {
  JISU_RETURN_IF_ERROR(Expect(wire, kVarint, field));
  uint64_t v = 0;
  JISU_RETURN_IF_ERROR(r.Varint(&v));
  *out = v != 0;
  return Status::Ok();
}

Status ParsePiece(std::string_view bytes, SpmModel::Piece* out) {
  Reader r(bytes);
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    JISU_RETURN_IF_ERROR(r.Tag(&field, &wire));
    if (field == 1) {
      JISU_RETURN_IF_ERROR(Expect(wire, kLengthDelimited, "piece"));
      std::string_view s;
      JISU_RETURN_IF_ERROR(r.Bytes(&s));
      out->text.assign(s);
    } else if (field == 2) {
      JISU_RETURN_IF_ERROR(Expect(wire, kFixed32, "score"));
      uint32_t bits = 0;
      JISU_RETURN_IF_ERROR(r.Fixed32(&bits));
      std::memcpy(&out->score, &bits, sizeof bits);
    } else if (field == 3) {
      JISU_RETURN_IF_ERROR(ReadInt32(r, wire, "type", &out->type));
    } else {
      JISU_RETURN_IF_ERROR(r.Skip(wire));
    }
  }
  if (!utf8::IsValid(out->text)) return Status::Corrupt("a piece is not valid UTF-8");
  if (out->type < SpmModel::kNormal || out->type > SpmModel::kByte) {
    return Status::Corrupt("piece '" + out->text + "' has unknown type " +
                           std::to_string(out->type));
  }
  return Status::Ok();
}

Status ParseTrainer(std::string_view bytes, SpmModel* out) {
  Reader r(bytes);
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    JISU_RETURN_IF_ERROR(r.Tag(&field, &wire));
    switch (field) {
      case 3:
        JISU_RETURN_IF_ERROR(ReadInt32(r, wire, "trainer_spec.model_type", &out->model_type));
        break;
      case 35:
        JISU_RETURN_IF_ERROR(ReadBool(r, wire, "trainer_spec.byte_fallback", &out->byte_fallback));
        break;
      case 40:
        JISU_RETURN_IF_ERROR(ReadInt32(r, wire, "trainer_spec.unk_id", &out->unk_id));
        break;
      case 41:
        JISU_RETURN_IF_ERROR(ReadInt32(r, wire, "trainer_spec.bos_id", &out->bos_id));
        break;
      case 42:
        JISU_RETURN_IF_ERROR(ReadInt32(r, wire, "trainer_spec.eos_id", &out->eos_id));
        break;
      case 43:
        JISU_RETURN_IF_ERROR(ReadInt32(r, wire, "trainer_spec.pad_id", &out->pad_id));
        break;
      default:
        JISU_RETURN_IF_ERROR(r.Skip(wire));
    }
  }
  return Status::Ok();
}

Status ParseNormalizer(std::string_view bytes, SpmModel* out) {
  Reader r(bytes);
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    JISU_RETURN_IF_ERROR(r.Tag(&field, &wire));
    if (field == 1) {
      JISU_RETURN_IF_ERROR(Expect(wire, kLengthDelimited, "normalizer_spec.name"));
      std::string_view s;
      JISU_RETURN_IF_ERROR(r.Bytes(&s));
      out->normalizer_name.assign(s);
    } else if (field == 3) {
      JISU_RETURN_IF_ERROR(ReadBool(r, wire, "add_dummy_prefix", &out->add_dummy_prefix));
    } else if (field == 4) {
      JISU_RETURN_IF_ERROR(
          ReadBool(r, wire, "remove_extra_whitespaces", &out->remove_extra_whitespaces));
    } else if (field == 5) {
      JISU_RETURN_IF_ERROR(ReadBool(r, wire, "escape_whitespaces", &out->escape_whitespaces));
    } else {
      JISU_RETURN_IF_ERROR(r.Skip(wire));
    }
  }
  return Status::Ok();
}

}  // namespace

Result<SpmModel> ParseSpmModel(std::string_view bytes) {
  SpmModel model;
  Reader r(bytes);
  while (!r.done()) {
    uint32_t field = 0, wire = 0;
    Status s = r.Tag(&field, &wire);
    if (s.ok() && (field == 1 || field == 2 || field == 3)) {
      std::string_view sub;
      s = Expect(wire, kLengthDelimited, "ModelProto field");
      if (s.ok()) s = r.Bytes(&sub);
      if (s.ok() && field == 1) {
        model.pieces.emplace_back();
        s = ParsePiece(sub, &model.pieces.back())
                .WithContext("piece " + std::to_string(model.pieces.size() - 1));
      } else if (s.ok() && field == 2) {
        s = ParseTrainer(sub, &model);
      } else if (s.ok()) {
        s = ParseNormalizer(sub, &model);
      }
    } else if (s.ok()) {
      s = r.Skip(wire);
    }
    if (!s.ok()) return s.WithContext("tokenizer.model");
  }
  if (model.pieces.empty()) return Status::Corrupt("tokenizer.model: no pieces");
  const auto n = static_cast<int64_t>(model.pieces.size());
  for (int32_t id : {model.unk_id, model.bos_id, model.eos_id, model.pad_id}) {
    if (id < -1 || id >= n) {
      return Status::Corrupt("tokenizer.model: special id " + std::to_string(id) + " outside the " +
                             std::to_string(n) + " pieces");
    }
  }
  return model;
}

}  // namespace jisu
