#include "grammar/json_schema_to_grammar.h"

#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "format/json_util.h"
#include "grammar/json_rules.h"
#include "grammar/json_schema_internal.h"
#include "grammar/json_schema_scalars.h"

namespace jisu::grammar {
namespace {

const std::set<std::string> kKeywords = {"type",
                                         "properties",
                                         "required",
                                         "additionalProperties",
                                         "items",
                                         "prefixItems",
                                         "minItems",
                                         "maxItems",
                                         "enum",
                                         "const",
                                         "anyOf",
                                         "oneOf",
                                         "allOf",
                                         "$ref",
                                         "$defs",
                                         "definitions",
                                         "minLength",
                                         "maxLength",
                                         "pattern",
                                         "format",
                                         "minimum",
                                         "maximum",
                                         "exclusiveMinimum",
                                         "exclusiveMaximum",
                                         "nullable",
                                         "minProperties",
                                         "propertyNames",
                                         "maxProperties"};

std::string Sanitize(std::string_view s) {
  std::string out;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (ok) {
      out += c;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
    if (out.size() >= 40) break;
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  return out.empty() ? "x" : out;
}

std::string PointerPart(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') {
      out += "~0";
    } else if (c == '/') {
      out += "~1";
    } else {
      out += c;
    }
  }
  return out;
}

class SchemaConverter {
 public:
  SchemaConverter(const Json& root, const JsonSchemaOptions& options)
      : root_(root), options_(options), rules_(&g_) {}

  Result<Grammar> Run() {
    JISU_ASSIGN_OR_RETURN(root_rule_, g_.AddRule("root"));
    g_.set_root(root_rule_);
    JISU_ASSIGN_OR_RETURN(Expr body, Convert(root_, "#", "root"));
    g_.SetBody(root_rule_, std::move(body));
    return std::move(g_);
  }

 private:
  struct DepthGuard {
    explicit DepthGuard(int* d) : d_(d) { ++*d_; }
    ~DepthGuard() { --*d_; }
    int* d_;
  };

  static Status Bad(const std::string& ptr, const std::string& what) {
    return SchemaError(ptr, what);
  }
  // Errors from the JSON rules (ranges, formats, patterns) with the place they came from.
  static Result<Expr> At(const std::string& ptr, Result<Expr> r) {
    if (r.ok()) return r;
    return Bad(ptr, r.status().message());
  }

  Result<Expr> AsRef(Expr e, const std::string& name) {
    if (e.kind == Expr::Kind::kRef || e.kind == Expr::Kind::kLiteral) return e;
    JISU_ASSIGN_OR_RETURN(uint32_t id, g_.AddUniqueRule(name));
    g_.SetBody(id, std::move(e));
    return Expr::Ref(id);
  }

  Result<Expr> Convert(const Json& s, const std::string& ptr, const std::string& name) {
    DepthGuard guard(&depth_);
    if (depth_ > kMaxSchemaDepth)
      return Bad(ptr, "schemas nest deeper than " + std::to_string(kMaxSchemaDepth));
    if (s.is_boolean()) {
      if (s.get<bool>()) return rules_.Value();
      return Bad(ptr, "the schema false matches nothing");
    }
    if (!s.is_object()) return Bad(ptr, "a schema must be an object or a boolean");
    for (auto it = s.begin(); it != s.end(); ++it) {
      if (!kKeywords.count(it.key()) && !kAnnotations.count(it.key())) {
        return Bad(ptr, "keyword '" + it.key() + "' is not supported");
      }
    }
    if (s.contains("$ref")) {
      Json rest = Constraints(s, {"$ref"});
      if (rest.empty()) return RefExpr(s["$ref"], ptr);
      Json both = {{"allOf", Json::array({Json{{"$ref", s["$ref"]}}, rest})}};
      return Convert(both, ptr, name);
    }
    if (s.contains("allOf")) {
      JISU_ASSIGN_OR_RETURN(
          Json merged,
          MergeAllOf(
              s, ptr, [this](const std::string& r, const std::string& p) { return Resolve(r, p); },
              depth_));
      return Convert(merged, ptr, name);
    }
    if (s.contains("anyOf") || s.contains("oneOf")) {
      if (s.contains("anyOf") && s.contains("oneOf"))
        return Bad(ptr, "anyOf with oneOf is not supported");
      const char* key = s.contains("anyOf") ? "anyOf" : "oneOf";
      const Json& branches = s[key];
      if (!branches.is_array() || branches.empty())
        return Bad(ptr, std::string(key) + " must be a non-empty array");
      const Json rest = Constraints(s, {key});
      std::vector<Expr> alts;
      for (size_t i = 0; i < branches.size(); ++i) {
        const std::string p = ptr + "/" + key + "/" + std::to_string(i);
        Json branch =
            rest.empty() ? branches[i] : Json{{"allOf", Json::array({rest, branches[i]})}};
        JISU_ASSIGN_OR_RETURN(Expr e, Convert(branch, p, name + "-" + std::to_string(i)));
        alts.push_back(std::move(e));
      }
      return Expr::Alt(std::move(alts));
    }
    if (s.contains("enum") || s.contains("const")) return EnumExpr(s, ptr, &rules_);
    JISU_ASSIGN_OR_RETURN(std::vector<std::string> types, TypesOf(s, ptr));
    std::vector<Expr> alts;
    bool has_null = false;
    for (const std::string& t : types) {
      has_null |= t == "null";
      JISU_ASSIGN_OR_RETURN(Expr e, TypeExpr(t, s, ptr, types.size() > 1 ? name + "-" + t : name));
      alts.push_back(std::move(e));
    }
    if (Nullable(s) && !has_null) {
      JISU_ASSIGN_OR_RETURN(Expr n, rules_.Null());
      alts.push_back(std::move(n));
    }
    return Expr::Alt(std::move(alts));
  }

  Result<Expr> TypeExpr(const std::string& t, const Json& s, const std::string& ptr,
                        const std::string& name) {
    if (t == "any") return rules_.Value();
    if (t == "object") return ObjectExpr(s, ptr, name);
    if (t == "array") return ArrayExpr(s, ptr, name);
    if (t == "string") return StringExpr(s, ptr, &rules_);
    if (t == "integer") return IntegerExpr(s, ptr, &rules_);
    if (t == "number") return NumberExpr(s, ptr, &rules_);
    if (t == "boolean") return rules_.Boolean();
    return rules_.Null();
  }

  Result<Expr> RefExpr(const Json& ref, const std::string& ptr) {
    if (!ref.is_string()) return Bad(ptr, "$ref must be a string");
    const std::string r = ref.get<std::string>();
    if (r == "#") return Expr::Ref(root_rule_);
    if (r.rfind("#/", 0) != 0)
      return Bad(ptr, "$ref '" + r + "': only local references (\"#/...\") are supported");
    auto it = refs_.find(r);
    if (it != refs_.end()) return Expr::Ref(it->second);
    JISU_ASSIGN_OR_RETURN(const Json* target, Resolve(r, ptr));
    const std::string last = r.substr(r.rfind('/') + 1);
    JISU_ASSIGN_OR_RETURN(uint32_t id, g_.AddUniqueRule("ref-" + Sanitize(last)));
    refs_[r] = id;
    JISU_ASSIGN_OR_RETURN(Expr body, Convert(*target, r, g_.rule(id).name + "-body"));
    g_.SetBody(id, std::move(body));
    return Expr::Ref(id);
  }

  Result<const Json*> Resolve(const std::string& r, const std::string& ptr) {
    const Json* cur = &root_;
    size_t pos = 2;
    while (pos <= r.size()) {
      size_t end = r.find('/', pos);
      if (end == std::string::npos) end = r.size();
      std::string part = r.substr(pos, end - pos);
      std::string key;
      for (size_t i = 0; i < part.size(); ++i) {
        if (part[i] == '~' && i + 1 < part.size() && (part[i + 1] == '0' || part[i + 1] == '1')) {
          key += part[i + 1] == '0' ? '~' : '/';
          ++i;
        } else {
          key += part[i];
        }
      }
      if (cur->is_object() && cur->contains(key)) {
        cur = &(*cur)[key];
      } else if (cur->is_array() && !key.empty() &&
                 key.find_first_not_of("0123456789") == std::string::npos && key.size() < 9 &&
                 std::stoul(key) < cur->size()) {
        cur = &(*cur)[std::stoul(key)];
      } else {
        return Bad(ptr, "$ref '" + r + "' does not resolve");
      }
      pos = end + 1;
    }
    return cur;
  }

  // The key of an extra member: not one of the declared `keys`; with propertyNames (only
  // where nothing is declared: excluding keys from a pattern is not supported), a string of
  // that schema (length, pattern, format, enum).
  Result<Expr> KeyExpr(const Json& s, const std::string& ptr, const std::vector<std::string>& keys,
                       const std::string& name) {
    if (!s.contains("propertyNames")) return rules_.KeyNotIn(keys, name);
    const std::string p = ptr + "/propertyNames";
    if (!keys.empty()) return Bad(p, "propertyNames together with properties is not supported");
    const Json& names = s["propertyNames"];
    if (!names.is_object()) return Bad(p, "propertyNames must be a schema object");
    for (auto it = names.begin(); it != names.end(); ++it) {
      const std::string& k = it.key();
      if (k != "type" && k != "minLength" && k != "maxLength" && k != "pattern" && k != "format" &&
          k != "enum" && k != "const" && !kAnnotations.count(k)) {
        return Bad(p, "keyword '" + k + "' is not supported in propertyNames");
      }
    }
    if (names.contains("type") && names["type"] != "string") {
      return Bad(p, "propertyNames must describe strings");
    }
    if (names.contains("enum") || names.contains("const")) return EnumExpr(names, p, &rules_);
    return StringExpr(names, p, &rules_);
  }

  // Object with named properties in the schema's order. Members are chained so optional ones
  // may be absent without a stray comma: R_i = the members from i on, the first without a
  // comma; C_i = the members from i on, each after a comma.
  Result<Expr> ObjectExpr(const Json& s, const std::string& ptr, const std::string& name) {
    std::vector<std::pair<std::string, const Json*>> props;
    if (s.contains("properties")) {
      const Json& p = s["properties"];
      if (!p.is_object()) return Bad(ptr, "properties must be an object");
      for (auto it = p.begin(); it != p.end(); ++it) props.emplace_back(it.key(), &it.value());
    }
    std::set<std::string> required;
    if (s.contains("required")) {
      const Json& r = s["required"];
      if (!r.is_array()) return Bad(ptr, "required must be an array of strings");
      for (const Json& k : r) {
        if (!k.is_string()) return Bad(ptr, "required must be an array of strings");
        required.insert(k.get<std::string>());
      }
    }
    static const Json kAny = Json::object();
    const Json* additional = options_.strict ? nullptr : &kAny;
    if (s.contains("additionalProperties")) {
      const Json& a = s["additionalProperties"];
      if (a.is_boolean()) {
        additional = a.get<bool>() ? &kAny : nullptr;
      } else if (a.is_object()) {
        additional = &a;
      } else {
        return Bad(ptr, "additionalProperties must be a boolean or a schema");
      }
    }
    for (const std::string& k : required) {
      bool found = false;
      for (auto& [key, unused] : props) found |= key == k;
      if (found) continue;
      if (!additional) {
        return Bad(ptr, "required property '" + k +
                            "' is not in properties and additionalProperties is false");
      }
      props.emplace_back(k, additional);
    }
    JISU_ASSIGN_OR_RETURN(Expr ws, rules_.Ws());
    if (props.empty() && additional == &kAny && !s.contains("minProperties") &&
        !s.contains("maxProperties")) {
      return rules_.Object();
    }
    JISU_ASSIGN_OR_RETURN(uint32_t rule, g_.AddUniqueRule(name));
    std::vector<Expr> kvs;
    std::vector<bool> req;
    for (auto& [key, schema] : props) {
      const std::string p = ptr + "/properties/" + PointerPart(key);
      JISU_ASSIGN_OR_RETURN(Expr v, Convert(*schema, p, name + "-" + Sanitize(key)));
      JISU_ASSIGN_OR_RETURN(v, AsRef(std::move(v), name + "-" + Sanitize(key)));
      kvs.push_back(
          Expr::Seq({Expr::Literal(Json(key).dump()), ws, Expr::Literal(":"), ws, std::move(v)}));
      req.push_back(required.count(key) > 0);
    }
    std::optional<Expr> extra;
    if (additional) {
      std::vector<std::string> keys;
      for (auto& [key, unused] : props) keys.push_back(key);
      JISU_ASSIGN_OR_RETURN(Expr key, KeyExpr(s, ptr, keys, name));
      JISU_ASSIGN_OR_RETURN(Expr v,
                            Convert(*additional, ptr + "/additionalProperties", name + "-extra"));
      JISU_ASSIGN_OR_RETURN(v, AsRef(std::move(v), name + "-extra"));
      extra = Expr::Seq({std::move(key), ws, Expr::Literal(":"), ws, std::move(v)});
    }
    const Expr comma = Expr::Seq({ws, Expr::Literal(","), ws});
    // min/maxProperties bound the extra members: at least minProperties - required (the
    // optional properties may add more), at most maxProperties - properties (if all are given).
    JISU_ASSIGN_OR_RETURN(uint32_t min_props, Count(s, "minProperties", ptr, 0));
    JISU_ASSIGN_OR_RETURN(uint32_t max_props, Count(s, "maxProperties", ptr, kUnbounded));
    const uint32_t n_props = static_cast<uint32_t>(kvs.size());
    const uint32_t n_required = static_cast<uint32_t>(std::count(req.begin(), req.end(), true));
    if (min_props > max_props) return Bad(ptr, "minProperties is above maxProperties");
    if (max_props != kUnbounded && max_props < n_props) {
      return Bad(ptr, "maxProperties below the number of properties is not supported");
    }
    uint32_t extra_min = min_props > n_required ? min_props - n_required : 0;
    const uint32_t extra_max = max_props == kUnbounded ? kUnbounded : max_props - n_props;
    if (extra_min > 0 && !extra) {
      return Bad(ptr, "minProperties above the required properties needs additionalProperties");
    }
    if (extra_min > extra_max) return Bad(ptr, "minProperties and maxProperties leave no room");
    const bool all_required = std::all_of(req.begin(), req.end(), [](bool b) { return b; });
    if (all_required && !extra) {
      std::vector<Expr> seq = {Expr::Literal("{"), ws};
      for (size_t i = 0; i < kvs.size(); ++i) {
        if (i) seq.push_back(comma);
        seq.push_back(kvs[i]);
      }
      if (!kvs.empty()) seq.push_back(ws);
      seq.push_back(Expr::Literal("}"));
      g_.SetBody(rule, Expr::Seq(std::move(seq)));
      return Expr::Ref(rule);
    }
    const size_t n = kvs.size();
    std::vector<uint32_t> c(n + 1), r(n + 1);
    for (size_t i = 0; i <= n; ++i) {
      JISU_ASSIGN_OR_RETURN(c[i], g_.AddUniqueRule(name + "-c" + std::to_string(i)));
      JISU_ASSIGN_OR_RETURN(r[i], g_.AddUniqueRule(name + "-r" + std::to_string(i)));
    }
    if (extra && extra_max > 0) {
      const uint32_t more_max = extra_max == kUnbounded ? kUnbounded : extra_max - 1;
      g_.SetBody(c[n], Tail(comma, *extra, extra_min, extra_max));
      Expr first =
          Expr::Seq({*extra, Tail(comma, *extra, extra_min > 0 ? extra_min - 1 : 0, more_max)});
      g_.SetBody(r[n], extra_min > 0 ? std::move(first) : Expr::Optional(std::move(first)));
    }
    for (size_t i = n; i-- > 0;) {
      Expr with_comma = Expr::Seq({comma, kvs[i]});
      if (req[i]) {
        g_.SetBody(c[i], Expr::Seq({with_comma, Expr::Ref(c[i + 1])}));
        g_.SetBody(r[i], Expr::Seq({kvs[i], Expr::Ref(c[i + 1])}));
      } else {
        g_.SetBody(c[i], Expr::Seq({Expr::Optional(with_comma), Expr::Ref(c[i + 1])}));
        g_.SetBody(r[i],
                   Expr::Alt({Expr::Seq({kvs[i], Expr::Ref(c[i + 1])}), Expr::Ref(r[i + 1])}));
      }
    }
    g_.SetBody(rule, Expr::Seq({Expr::Literal("{"), ws, Expr::Ref(r[0]), ws, Expr::Literal("}")}));
    return Expr::Ref(rule);
  }

  static Expr Tail(const Expr& comma, const Expr& item, uint32_t lo, uint32_t hi) {
    return Expr::Repeat(Expr::Seq({comma, item}), lo, hi);
  }

  Result<Expr> ArrayExpr(const Json& s, const std::string& ptr, const std::string& name) {
    JISU_ASSIGN_OR_RETURN(uint32_t min, Count(s, "minItems", ptr, 0));
    JISU_ASSIGN_OR_RETURN(uint32_t max, Count(s, "maxItems", ptr, kUnbounded));
    if (min > max) return Bad(ptr, "minItems is above maxItems");
    JISU_ASSIGN_OR_RETURN(Expr ws, rules_.Ws());
    const Expr comma = Expr::Seq({ws, Expr::Literal(","), ws});
    std::optional<Expr> item;  // none: no (more) items allowed
    bool items_given = s.contains("items");
    if (items_given) {
      const Json& it = s["items"];
      if (it.is_boolean() && !it.get<bool>()) {
        item.reset();
      } else if (it.is_object() || it.is_boolean()) {
        JISU_ASSIGN_OR_RETURN(Expr e, Convert(it, ptr + "/items", name + "-item"));
        JISU_ASSIGN_OR_RETURN(e, AsRef(std::move(e), name + "-item"));
        item = std::move(e);
      } else {
        return Bad(ptr, "items must be a schema (a tuple is prefixItems)");
      }
    }
    JISU_ASSIGN_OR_RETURN(uint32_t rule, g_.AddUniqueRule(name));
    std::vector<Expr> seq = {Expr::Literal("["), ws};
    if (s.contains("prefixItems") && s["prefixItems"].is_array() && !s["prefixItems"].empty()) {
      const Json& pre = s["prefixItems"];
      const uint32_t k = static_cast<uint32_t>(pre.size());
      if (max < k) return Bad(ptr, "maxItems below the number of prefixItems is not supported");
      for (uint32_t i = 0; i < k; ++i) {
        JISU_ASSIGN_OR_RETURN(Expr e, Convert(pre[i], ptr + "/prefixItems/" + std::to_string(i),
                                              name + "-" + std::to_string(i)));
        if (i) seq.push_back(comma);
        seq.push_back(std::move(e));
      }
      const uint32_t extra_min = min > k ? min - k : 0;
      if (!items_given) {  // more items are allowed but not needed: only as many as minItems asks
        JISU_ASSIGN_OR_RETURN(Expr any, rules_.Value());
        seq.push_back(Tail(comma, any, extra_min, extra_min));
      } else if (!item) {
        if (extra_min > 0)
          return Bad(ptr, "minItems needs more items than prefixItems and items is false");
      } else {
        seq.push_back(Tail(comma, *item, extra_min, max == kUnbounded ? kUnbounded : max - k));
      }
      seq.push_back(ws);
    } else if (s.contains("prefixItems") && !s["prefixItems"].is_array()) {
      return Bad(ptr, "prefixItems must be an array of schemas");
    } else {
      if (!items_given) {
        JISU_ASSIGN_OR_RETURN(Expr any, rules_.Value());
        item = std::move(any);
      }
      if (!item) max = 0;
      if (min > max) return Bad(ptr, "minItems needs items but items is false");
      if (max > 0) {
        Expr body = Expr::Seq(
            {*item,
             Tail(comma, *item, min > 0 ? min - 1 : 0, max == kUnbounded ? kUnbounded : max - 1),
             ws});
        seq.push_back(min == 0 ? Expr::Optional(std::move(body)) : std::move(body));
      }
    }
    seq.push_back(Expr::Literal("]"));
    g_.SetBody(rule, Expr::Seq(std::move(seq)));
    return Expr::Ref(rule);
  }

  const Json& root_;
  JsonSchemaOptions options_;
  Grammar g_;
  JsonRules rules_;
  uint32_t root_rule_ = 0;
  std::map<std::string, uint32_t> refs_;
  int depth_ = 0;
};

}  // namespace

Result<Grammar> JsonSchemaToGrammar(std::string_view schema, const JsonSchemaOptions& options) {
  if (!JsonDepthWithin(schema)) {
    return Status::InvalidArgument("json_schema is nested deeper than " +
                                   std::to_string(kMaxJsonDepth) + " levels");
  }
  Json j = Json::parse(schema, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Status::InvalidArgument("json_schema is not valid JSON");
  return SchemaConverter(j, options).Run();
}

Result<Grammar> JsonObjectGrammar() {
  Grammar g;
  JISU_ASSIGN_OR_RETURN(uint32_t root, g.AddRule("root"));
  JsonRules rules(&g);
  JISU_ASSIGN_OR_RETURN(Expr object, rules.Object());
  g.SetBody(root, std::move(object));
  g.set_root(root);
  return g;
}

}  // namespace jisu::grammar
