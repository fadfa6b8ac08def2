#include <algorithm>
#include <optional>

#include "grammar/json_schema_internal.h"

namespace jisu::grammar {

const std::set<std::string> kAnnotations = {"title",    "description", "default",  "examples",
                                            "$schema",  "$id",         "$comment", "deprecated",
                                            "readOnly", "writeOnly"};

Status SchemaError(const std::string& ptr, const std::string& what) {
  return Status::InvalidArgument("json_schema at " + ptr + ": " + what);
}

// The schema without the keys that only annotate or hold definitions.
Json Constraints(const Json& s, std::initializer_list<const char*> also_drop) {
  Json out = Json::object();
  for (auto it = s.begin(); it != s.end(); ++it) {
    if (kAnnotations.count(it.key()) || it.key() == "$defs" || it.key() == "definitions") continue;
    bool drop = false;
    for (const char* d : also_drop) drop |= it.key() == d;
    if (!drop) out[it.key()] = it.value();
  }
  return out;
}

namespace {

// Merges one resolved branch into `dst`: properties and required unite, types intersect, bounds
// take the tighter value, a false additionalProperties wins; other disagreements are errors.
Status MergeInto(Json* dst, const Json& src, const std::string& ptr) {
  for (auto it = src.begin(); it != src.end(); ++it) {
    const std::string& key = it.key();
    const Json& v = it.value();
    if (kAnnotations.count(key)) continue;
    if (!dst->contains(key)) {
      (*dst)[key] = v;
      continue;
    }
    Json& d = (*dst)[key];
    if (d == v) continue;
    if (key == "properties" && d.is_object() && v.is_object()) {
      for (auto p = v.begin(); p != v.end(); ++p) {
        if (!d.contains(p.key())) {
          d[p.key()] = p.value();
        } else if (d[p.key()] != p.value()) {
          d[p.key()] = Json{{"allOf", Json::array({d[p.key()], p.value()})}};
        }
      }
    } else if ((key == "required") && d.is_array() && v.is_array()) {
      for (const Json& k : v) {
        if (std::find(d.begin(), d.end(), k) == d.end()) d.push_back(k);
      }
    } else if ((key == "$defs" || key == "definitions") && d.is_object() && v.is_object()) {
      for (auto p = v.begin(); p != v.end(); ++p) d[p.key()] = p.value();
    } else if (key == "type") {
      auto as_set = [](const Json& t) {
        std::vector<Json> out;
        if (t.is_array()) {
          for (const Json& e : t) out.push_back(e);
        } else {
          out.push_back(t);
        }
        return out;
      };
      Json both = Json::array();
      for (const Json& a : as_set(d)) {
        for (const Json& b : as_set(v)) {
          if (a == b || (a == "number" && b == "integer")) both.push_back(b);
          if (a == "integer" && b == "number") both.push_back(a);
        }
      }
      if (both.empty())
        return SchemaError(ptr, "allOf: the branches' types have nothing in common");
      d = both.size() == 1 ? both[0] : both;
    } else if ((key == "minLength" || key == "minItems" || key == "minimum" ||
                key == "exclusiveMinimum") &&
               d.is_number() && v.is_number()) {
      if (v.get<double>() > d.get<double>()) d = v;
    } else if ((key == "maxLength" || key == "maxItems" || key == "maximum" ||
                key == "exclusiveMaximum") &&
               d.is_number() && v.is_number()) {
      if (v.get<double>() < d.get<double>()) d = v;
    } else if (key == "additionalProperties" && (d == false || v == false)) {
      d = false;
    } else {
      return SchemaError(ptr, "allOf: the branches disagree on '" + key + "' (not supported)");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Json> MergeAllOf(const Json& s, const std::string& ptr, const ResolveFn& Resolve,
                        int depth) {
  if (++depth > kMaxSchemaDepth)
    return SchemaError(ptr, "allOf/$ref nest deeper than " + std::to_string(kMaxSchemaDepth));
  const Json& branches = s["allOf"];
  if (!branches.is_array() || branches.empty())
    return SchemaError(ptr, "allOf must be a non-empty array");
  Json out = Constraints(s, {"allOf"});
  std::optional<std::set<std::string>> allowed;  // keys permitted by additionalProperties: false
  auto restrict = [&](const Json& b) {
    auto ap = b.find("additionalProperties");
    if (ap == b.end() || !ap->is_boolean() || ap->get<bool>()) return;
    std::set<std::string> keys;
    if (b.contains("properties") && b["properties"].is_object()) {
      for (auto it = b["properties"].begin(); it != b["properties"].end(); ++it)
        keys.insert(it.key());
    }
    if (!allowed) {
      allowed = keys;
    } else {
      std::set<std::string> both;
      for (const std::string& k : keys) {
        if (allowed->count(k)) both.insert(k);
      }
      allowed = both;
    }
  };
  restrict(out);
  for (size_t i = 0; i < branches.size(); ++i) {
    const std::string p = ptr + "/allOf/" + std::to_string(i);
    Json b = branches[i];
    if (b.is_boolean()) {
      if (b.get<bool>()) continue;
      return SchemaError(p, "the schema false matches nothing");
    }
    if (!b.is_object()) return SchemaError(p, "a schema must be an object or a boolean");
    if (b.contains("$ref")) {
      JISU_ASSIGN_OR_RETURN(const Json* target,
                            Resolve(b["$ref"].is_string() ? b["$ref"].get<std::string>() : "", p));
      Json rest = Constraints(b, {"$ref"});
      b = Json{{"allOf", rest.empty() ? Json::array({*target}) : Json::array({*target, rest})}};
    }
    if (b.contains("allOf")) {
      JISU_ASSIGN_OR_RETURN(b, MergeAllOf(b, p, Resolve, depth));
    }
    restrict(b);
    JISU_RETURN_IF_ERROR(MergeInto(&out, b, p));
  }
  if (allowed) {
    if (out.contains("properties")) {
      Json kept = Json::object();
      for (auto it = out["properties"].begin(); it != out["properties"].end(); ++it) {
        if (allowed->count(it.key())) kept[it.key()] = it.value();
      }
      out["properties"] = kept;
    }
    if (out.contains("required")) {
      for (const Json& k : out["required"]) {
        if (k.is_string() && !allowed->count(k.get<std::string>())) {
          return SchemaError(ptr,
                             "allOf: required property '" + k.get<std::string>() +
                                 "' is excluded by additionalProperties: false in another branch");
        }
      }
    }
    out["additionalProperties"] = false;
  }
  return out;
}

}  // namespace jisu::grammar
