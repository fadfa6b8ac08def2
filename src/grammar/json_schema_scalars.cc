#include "grammar/json_schema_scalars.h"

#include <algorithm>
#include <cmath>

namespace jisu::grammar {
namespace {

const std::set<std::string> kTypes = {"object",  "array",   "string", "number",
                                      "integer", "boolean", "null"};

// Errors from the JSON rules (ranges, formats, patterns) with the place they came from.
Result<Expr> At(const std::string& ptr, Result<Expr> r) {
  if (r.ok()) return r;
  return SchemaError(ptr, r.status().message());
}

}  // namespace

static bool Matches(const Json& v, const std::string& type);
static Result<Expr> ConstExpr(const Json& v, JsonRules* rules);
static Result<std::optional<double>> Bound(const Json& s, const char* key, const std::string& ptr);

bool Nullable(const Json& s) {
  auto it = s.find("nullable");
  return it != s.end() && it->is_boolean() && it->get<bool>();
}

Result<std::vector<std::string>> TypesOf(const Json& s, const std::string& ptr) {
  if (s.contains("nullable") && !s["nullable"].is_boolean())
    return SchemaError(ptr, "nullable must be a boolean");
  std::vector<std::string> types;
  if (s.contains("type")) {
    const Json& t = s["type"];
    if (t.is_string()) {
      types.push_back(t.get<std::string>());
    } else if (t.is_array() && !t.empty()) {
      for (const Json& e : t) {
        if (!e.is_string()) return SchemaError(ptr, "type must be a string or an array of strings");
        types.push_back(e.get<std::string>());
      }
    } else {
      return SchemaError(ptr, "type must be a string or a non-empty array of strings");
    }
    for (const std::string& ty : types) {
      if (!kTypes.count(ty)) return SchemaError(ptr, "unknown type '" + ty + "'");
    }
    return types;
  }
  auto any_of = [&](std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
      if (s.contains(k)) return true;
    }
    return false;
  };
  if (any_of(
          {"properties", "required", "additionalProperties", "minProperties", "maxProperties"})) {
    types.push_back("object");
  }
  if (any_of({"items", "prefixItems", "minItems", "maxItems"})) types.push_back("array");
  if (any_of({"minLength", "maxLength", "pattern", "format"})) types.push_back("string");
  if (any_of({"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"})) {
    types.push_back("number");
  }
  if (types.empty()) types.push_back("any");
  return types;
}

static bool Matches(const Json& v, const std::string& type) {
  if (type == "object") return v.is_object();
  if (type == "array") return v.is_array();
  if (type == "string") return v.is_string();
  if (type == "integer") {
    return v.is_number_integer() ||
           (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>());
  }
  if (type == "number") return v.is_number();
  if (type == "boolean") return v.is_boolean();
  return v.is_null();
}

Result<Expr> EnumExpr(const Json& s, const std::string& ptr, JsonRules* rules) {
  Json rest = Constraints(s, {"enum", "const", "type", "nullable"});
  if (!rest.empty()) {
    return SchemaError(ptr,
                       "enum/const together with '" + rest.begin().key() + "' is not supported");
  }
  std::vector<Json> values;
  if (s.contains("const")) {
    values.push_back(s["const"]);
    if (s.contains("enum") &&
        (!s["enum"].is_array() ||
         std::find(s["enum"].begin(), s["enum"].end(), s["const"]) == s["enum"].end())) {
      return SchemaError(ptr, "const is not one of enum");
    }
  } else {
    if (!s["enum"].is_array() || s["enum"].empty())
      return SchemaError(ptr, "enum must be a non-empty array");
    for (const Json& v : s["enum"]) values.push_back(v);
  }
  std::vector<std::string> types;
  if (s.contains("type")) {
    JISU_ASSIGN_OR_RETURN(types, TypesOf(s, ptr));
    if (Nullable(s)) types.push_back("null");
  }
  std::vector<Expr> alts;
  for (const Json& v : values) {
    bool ok = types.empty();
    for (const std::string& t : types) ok |= Matches(v, t);
    if (!ok) continue;
    JISU_ASSIGN_OR_RETURN(Expr e, ConstExpr(v, rules));
    alts.push_back(std::move(e));
  }
  if (Nullable(s) && types.empty()) alts.push_back(Expr::Literal("null"));
  if (alts.empty()) return SchemaError(ptr, "no enum/const value has the schema's type");
  return Expr::Alt(std::move(alts));
}

// One JSON value exactly, with the usual whitespace allowed inside objects and arrays.
static Result<Expr> ConstExpr(const Json& v, JsonRules* rules) {
  if (!v.is_object() && !v.is_array()) return Expr::Literal(v.dump());
  JISU_ASSIGN_OR_RETURN(Expr ws, rules->Ws());
  const bool obj = v.is_object();
  std::vector<Expr> seq = {Expr::Literal(obj ? "{" : "["), ws};
  bool first = true;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (!first) seq.push_back(Expr::Seq({ws, Expr::Literal(","), ws}));
    first = false;
    if (obj) {
      seq.push_back(Expr::Literal(Json(it.key()).dump()));
      seq.push_back(Expr::Seq({ws, Expr::Literal(":"), ws}));
    }
    JISU_ASSIGN_OR_RETURN(Expr e, ConstExpr(it.value(), rules));
    seq.push_back(std::move(e));
  }
  if (!v.empty()) seq.push_back(ws);
  seq.push_back(Expr::Literal(obj ? "}" : "]"));
  return Expr::Seq(std::move(seq));
}

Result<uint32_t> Count(const Json& s, const char* key, const std::string& ptr, uint32_t def) {
  if (!s.contains(key)) return def;
  const Json& v = s[key];
  if (!v.is_number_integer() || v.get<int64_t>() < 0)
    return SchemaError(ptr, std::string(key) + " must be a non-negative integer");
  if (v.get<int64_t>() > Grammar::kMaxRepeat) {
    return SchemaError(ptr, std::string(key) + " above " + std::to_string(Grammar::kMaxRepeat) +
                                " is not supported");
  }
  return static_cast<uint32_t>(v.get<int64_t>());
}

// (sep item){lo, hi} after a first element.
Result<Expr> StringExpr(const Json& s, const std::string& ptr, JsonRules* rules) {
  const bool length = s.contains("minLength") || s.contains("maxLength");
  const int kinds = int(length) + int(s.contains("pattern")) + int(s.contains("format"));
  if (kinds > 1)
    return SchemaError(ptr, "combining minLength/maxLength, pattern and format is not supported");
  if (s.contains("pattern")) {
    if (!s["pattern"].is_string()) return SchemaError(ptr, "pattern must be a string");
    return At(ptr + "/pattern", rules->StringPattern(s["pattern"].get<std::string>()));
  }
  if (s.contains("format")) {
    if (!s["format"].is_string()) return SchemaError(ptr, "format must be a string");
    return At(ptr, rules->StringFormat(s["format"].get<std::string>()));
  }
  if (length) {
    JISU_ASSIGN_OR_RETURN(uint32_t lo, Count(s, "minLength", ptr, 0));
    JISU_ASSIGN_OR_RETURN(uint32_t hi, Count(s, "maxLength", ptr, kUnbounded));
    if (lo > hi) return SchemaError(ptr, "minLength is above maxLength");
    return At(ptr, rules->StringOfLength(lo, hi));
  }
  return rules->String();
}

static Result<std::optional<double>> Bound(const Json& s, const char* key, const std::string& ptr) {
  if (!s.contains(key)) return std::optional<double>();
  const Json& v = s[key];
  if (!v.is_number()) return SchemaError(ptr, std::string(key) + " must be a number");
  const double d = v.get<double>();
  if (!(std::fabs(d) <= static_cast<double>(JsonRules::kMaxBound))) {
    return SchemaError(ptr, std::string(key) + " beyond +-10^15 is not supported");
  }
  return std::optional<double>(d);
}

Result<Expr> IntegerExpr(const Json& s, const std::string& ptr, JsonRules* rules) {
  JISU_ASSIGN_OR_RETURN(auto min, Bound(s, "minimum", ptr));
  JISU_ASSIGN_OR_RETURN(auto max, Bound(s, "maximum", ptr));
  std::optional<int64_t> lo, hi;
  if (min) lo = static_cast<int64_t>(std::ceil(*min));
  if (max) hi = static_cast<int64_t>(std::floor(*max));
  for (const char* key : {"exclusiveMinimum", "exclusiveMaximum"}) {
    if (!s.contains(key)) continue;
    const bool is_min = key[9] == 'M' && key[10] == 'i';
    if (s[key].is_boolean()) {  // draft 4: the bound itself is excluded
      if (!s[key].get<bool>()) continue;
      if (is_min && min) lo = static_cast<int64_t>(std::floor(*min)) + 1;
      if (!is_min && max) hi = static_cast<int64_t>(std::ceil(*max)) - 1;
      continue;
    }
    JISU_ASSIGN_OR_RETURN(auto b, Bound(s, key, ptr));
    if (is_min) {
      const int64_t v = static_cast<int64_t>(std::floor(*b)) + 1;
      lo = lo ? std::max(*lo, v) : v;
    } else {
      const int64_t v = static_cast<int64_t>(std::ceil(*b)) - 1;
      hi = hi ? std::min(*hi, v) : v;
    }
  }
  if (!lo && !hi) return rules->Integer();
  if (lo && hi && *lo > *hi) return SchemaError(ptr, "no integer lies between minimum and maximum");
  return At(ptr, rules->IntegerRange(lo, hi));
}

Result<Expr> NumberExpr(const Json& s, const std::string& ptr, JsonRules* rules) {
  if (s.contains("exclusiveMinimum") || s.contains("exclusiveMaximum")) {
    return SchemaError(
        ptr,
        "exclusiveMinimum/exclusiveMaximum on numbers are not supported (on integers they are)");
  }
  JISU_ASSIGN_OR_RETURN(auto min, Bound(s, "minimum", ptr));
  JISU_ASSIGN_OR_RETURN(auto max, Bound(s, "maximum", ptr));
  if (!min && !max) return rules->Number();
  for (auto b : {min, max}) {
    if (b && std::floor(*b) != *b) {
      return SchemaError(
          ptr,
          "minimum/maximum on numbers must be integers (non-integer bounds are not supported)");
    }
  }
  std::optional<int64_t> lo, hi;
  if (min) lo = static_cast<int64_t>(*min);
  if (max) hi = static_cast<int64_t>(*max);
  return At(ptr, rules->NumberRange(lo, hi));
}

}  // namespace jisu::grammar
