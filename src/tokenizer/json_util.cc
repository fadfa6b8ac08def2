#include "tokenizer/json_util.h"

#include "core/utf8.h"

namespace jisu::json_util {

Status GetString(const Json& obj, const char* key, std::string* out, bool required) {
  if (!Has(obj, key)) {
    return required ? Status::InvalidArgument(std::string("missing '") + key + "'") : Status::Ok();
  }
  const Json& v = obj.at(key);
  if (!v.is_string()) return Status::InvalidArgument(std::string("'") + key + "' is not a string");
  *out = v.get_ref<const std::string&>();
  return Status::Ok();
}

Status GetBool(const Json& obj, const char* key, bool* out) {
  if (!Has(obj, key)) return Status::Ok();
  const Json& v = obj.at(key);
  if (!v.is_boolean()) return Status::InvalidArgument(std::string("'") + key + "' is not a bool");
  *out = v.get<bool>();
  return Status::Ok();
}

Status GetInt(const Json& obj, const char* key, int64_t* out, bool required) {
  if (!Has(obj, key)) {
    return required ? Status::InvalidArgument(std::string("missing '") + key + "'") : Status::Ok();
  }
  const Json& v = obj.at(key);
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) {
      return Status::InvalidArgument(std::string("'") + key + "' is out of range");
    }
    *out = static_cast<int64_t>(u);
    return Status::Ok();
  }
  if (!v.is_number_integer()) {
    return Status::InvalidArgument(std::string("'") + key + "' is not an integer");
  }
  *out = v.get<int64_t>();
  return Status::Ok();
}

Status GetChar(const Json& obj, const char* key, std::string* out) {
  std::string s;
  JISU_RETURN_IF_ERROR(GetString(obj, key, &s, /*required=*/true));
  if (s.empty() || utf8::CountCodePoints(s) != 1 || !utf8::IsValid(s)) {
    return Status::InvalidArgument(std::string("'") + key + "' must be one character");
  }
  *out = s;
  return Status::Ok();
}

Status GetTokenString(const Json& obj, const char* key, std::optional<std::string>* out) {
  if (!obj.is_object()) return Status::Ok();
  auto it = obj.find(key);
  if (it == obj.end()) return Status::Ok();
  if (it->is_null()) {
    *out = std::nullopt;
    return Status::Ok();
  }
  if (it->is_string()) {
    *out = it->get<std::string>();
    return Status::Ok();
  }
  if (it->is_object()) {
    std::string content;
    JISU_RETURN_IF_ERROR(GetString(*it, "content", &content, /*required=*/true));
    *out = content;
    return Status::Ok();
  }
  return Status::InvalidArgument(std::string("'") + key + "' is not a token");
}

}  // namespace jisu::json_util
