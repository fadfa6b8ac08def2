// tojson and template inputs: Value <-> JSON (jinja_value.h's ToJson and FromJson), printed as
// Python's json.dumps prints (separators, indent, sort_keys, ensure_ascii, float repr).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_value.h"

namespace jisu::jinja {

namespace {

void AppendJsonString(const std::string& s, bool ensure_ascii, std::string* out) {
  out->push_back('"');
  for (size_t p = 0; p < s.size();) {
    uint32_t cp = DecodeUtf8(s, &p);
    char buf[16];
    switch (cp) {
      case '"':
        *out += "\\\"";
        continue;
      case '\\':
        *out += "\\\\";
        continue;
      case '\n':
        *out += "\\n";
        continue;
      case '\r':
        *out += "\\r";
        continue;
      case '\t':
        *out += "\\t";
        continue;
      case '\b':
        *out += "\\b";
        continue;
      case '\f':
        *out += "\\f";
        continue;
      default:
        break;
    }
    if (cp < 0x20 || (ensure_ascii && cp >= 0x7F)) {
      if (cp >= 0x10000) {
        uint32_t v = cp - 0x10000;
        std::snprintf(buf, sizeof(buf), "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
      } else {
        std::snprintf(buf, sizeof(buf), "\\u%04x", cp);
      }
      *out += buf;
    } else {
      AppendUtf8(cp, out);
    }
  }
  out->push_back('"');
}

std::string JsonFloat(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d > 0 ? "Infinity" : "-Infinity";
  return FormatFloat(d);
}

class JsonWriter {
 public:
  JsonWriter(const JsonOptions& o, size_t max_bytes) : o_(o), max_bytes_(max_bytes) {}

  Status Write(const Value& v, int level) {
    if (level > 256) return Status::InvalidArgument("tojson: value nested too deeply");
    if (out_.size() > max_bytes_) {
      return Status::ResourceExhausted("tojson: output exceeds the size limit");
    }
    switch (v.kind()) {
      case Value::Kind::kNone:
        out_ += "null";
        return Status::Ok();
      case Value::Kind::kBool:
        out_ += v.b() ? "true" : "false";
        return Status::Ok();
      case Value::Kind::kInt:
        out_ += std::to_string(v.i());
        return Status::Ok();
      case Value::Kind::kFloat:
        out_ += JsonFloat(v.f());
        return Status::Ok();
      case Value::Kind::kString:
        AppendJsonString(v.s(), o_.ensure_ascii, &out_);
        return Status::Ok();
      case Value::Kind::kList:
      case Value::Kind::kTuple: {
        const List& items = v.list();
        if (items.empty()) {
          out_ += "[]";
          return Status::Ok();
        }
        out_ += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          if (i) out_ += o_.item_separator;
          Newline(level + 1);
          JISU_RETURN_IF_ERROR(Write(items[i], level + 1));
        }
        Newline(level);
        out_ += ']';
        return Status::Ok();
      }
      case Value::Kind::kDict:
        return WriteDict(v.dict(), level);
      default:
        return Status::InvalidArgument("Object of type " + TypeName(v) +
                                       " is not JSON serializable");
    }
  }

  std::string Take() { return std::move(out_); }

 private:
  void Newline(int level) {
    if (!o_.has_indent) return;
    out_ += '\n';
    for (int i = 0; i < level; ++i) out_ += o_.indent;
  }

  Status WriteDict(const Dict& d, int level) {
    if (d.items.empty()) {
      out_ += "{}";
      return Status::Ok();
    }
    std::vector<std::pair<std::string, const Value*>> entries;
    for (const auto& [k, v] : d.items) {
      std::string key;
      switch (k.kind()) {
        case Value::Kind::kString:
          key = k.s();
          break;
        case Value::Kind::kNone:
          key = "null";
          break;
        case Value::Kind::kBool:
          key = k.b() ? "true" : "false";
          break;
        case Value::Kind::kInt:
          key = std::to_string(k.i());
          break;
        case Value::Kind::kFloat:
          key = JsonFloat(k.f());
          break;
        default:
          return Status::InvalidArgument("keys must be str, int, float, bool or None, not " +
                                         TypeName(k));
      }
      entries.emplace_back(std::move(key), &v);
    }
    if (o_.sort_keys) {
      // Python sorts the original keys; for the string keys templates use this is the same.
      std::stable_sort(entries.begin(), entries.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
    }
    out_ += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i) out_ += o_.item_separator;
      Newline(level + 1);
      AppendJsonString(entries[i].first, o_.ensure_ascii, &out_);
      out_ += o_.key_separator;
      JISU_RETURN_IF_ERROR(Write(*entries[i].second, level + 1));
    }
    Newline(level);
    out_ += '}';
    return Status::Ok();
  }

  const JsonOptions& o_;
  size_t max_bytes_;
  std::string out_;
};

}  // namespace

Result<std::string> ToJson(const Value& v, const JsonOptions& options, size_t max_bytes) {
  JsonWriter w(options, max_bytes);
  JISU_RETURN_IF_ERROR(w.Write(v, 0));
  std::string s = w.Take();
  if (s.size() > max_bytes)
    return Status::ResourceExhausted("tojson: output exceeds the size limit");
  return s;
}

Result<Value> FromJson(const nlohmann::ordered_json& j, int depth) {
  if (depth > 512) return Status::InvalidArgument("JSON input nested too deeply");
  switch (j.type()) {
    case nlohmann::ordered_json::value_t::null:
      return Value::None();
    case nlohmann::ordered_json::value_t::boolean:
      return Value::Bool(j.get<bool>());
    case nlohmann::ordered_json::value_t::number_integer:
      return Value::Int(j.get<int64_t>());
    case nlohmann::ordered_json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u <= uint64_t(INT64_MAX)) return Value::Int(int64_t(u));
      return Value::Float(double(u));
    }
    case nlohmann::ordered_json::value_t::number_float:
      return Value::Float(j.get<double>());
    case nlohmann::ordered_json::value_t::string:
      return Value::String(j.get<std::string>());
    case nlohmann::ordered_json::value_t::array: {
      List items;
      items.reserve(j.size());
      for (const auto& e : j) {
        JISU_ASSIGN_OR_RETURN(Value v, FromJson(e, depth + 1));
        items.push_back(std::move(v));
      }
      return Value::MakeList(std::move(items));
    }
    case nlohmann::ordered_json::value_t::object: {
      Dict d;
      d.items.reserve(j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        JISU_ASSIGN_OR_RETURN(Value v, FromJson(it.value(), depth + 1));
        d.items.emplace_back(Value::String(it.key()), std::move(v));
      }
      return Value::MakeDict(std::move(d));
    }
    default:
      return Value::None();  // binary/discarded: not produced by JSON parsing
  }
}

}  // namespace jisu::jinja
