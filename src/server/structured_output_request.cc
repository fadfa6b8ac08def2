#include "server/structured_output_request.h"

#include <cstdio>
#include <string>

#include "format/json_util.h"

namespace jisu::server {
namespace {

using Json = nlohmann::ordered_json;
using Kind = StructuredOutput::Kind;

ApiError Bad(const std::string& param, const std::string& what) {
  return ApiError::BadRequest("'" + param + "' " + what, param);
}

// GBNF for "exactly one of these strings".
std::string ChoiceGrammar(const std::vector<std::string>& choices) {
  std::string g = "root ::= ";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i) g += " | ";
    g += '"';
    for (unsigned char c : choices[i]) {
      if (c == '"' || c == '\\') {
        g += '\\';
        g += static_cast<char>(c);
      } else if (c < 0x20 || c == 0x7F) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\x%02X", c);
        g += buf;
      } else {
        g += static_cast<char>(c);
      }
    }
    g += '"';
  }
  return g;
}

class Parser {
 public:
  Parser(const Json& body, GenerationRequest* out) : body_(body), out_(out) {}

  std::optional<ApiError> Run() {
    for (const char* field : {"functions", "function_call"}) {
      if (Has(body_, field)) {
        return Bad(field, "is not supported (deprecated by OpenAI; tools replace it)");
      }
    }
    for (const char* field : {"guided_whitespace_pattern", "structural_tag"}) {
      if (Has(body_, field)) return Bad(field, "is not supported");
    }
    if (auto e = LogitBias()) return e;
    if (auto e = ResponseFormat()) return e;
    if (auto e = Schema(body_, "guided_json")) return e;
    if (auto e = Text(body_, "guided_regex", Kind::kRegex)) return e;
    if (auto e = Text(body_, "guided_grammar", Kind::kGrammar)) return e;
    if (auto e = Choice(body_, "guided_choice")) return e;
    if (auto e = Text(body_, "grammar", Kind::kGrammar)) return e;
    if (auto e = Schema(body_, "json_schema")) return e;
    if (auto e = Nested("structured_outputs", /*vendor=*/false)) return e;
    if (auto e = Nested("jisu", /*vendor=*/true)) return e;
    if (Has(body_, "guided_decoding_backend") && !body_["guided_decoding_backend"].is_string()) {
      return Bad("guided_decoding_backend", "must be a string");
    }
    return std::nullopt;
  }

 private:
  static bool Has(const Json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && !it->is_null();
  }

  // Records the constraint; a second one is an error naming it.
  std::optional<ApiError> Set(const std::string& param, Kind kind, std::string text, bool strict) {
    if (!out_->constraint_param.empty()) {
      return Bad(param, "cannot be combined with '" + out_->constraint_param +
                            "': give one structured-output constraint");
    }
    out_->constraint_param = param;
    out_->sampling.structured.kind = kind;
    out_->sampling.structured.text = std::move(text);
    out_->sampling.structured.strict = strict;
    return std::nullopt;
  }

  // A schema: an object or boolean, or JSON text of one.
  std::optional<ApiError> SchemaValue(const Json& v, const std::string& param, bool strict) {
    if (v.is_object() || v.is_boolean()) return Set(param, Kind::kJsonSchema, v.dump(), strict);
    if (v.is_string()) {
      const auto parsed = ParseUntrustedJson<Json>(v.get<std::string>(), param);
      if (!parsed.ok() || !(parsed->is_object() || parsed->is_boolean())) {
        return Bad(param, "must be a JSON Schema (an object, or its JSON text)");
      }
      return Set(param, Kind::kJsonSchema, v.get<std::string>(), strict);
    }
    return Bad(param, "must be a JSON Schema (an object, or its JSON text)");
  }

  std::optional<ApiError> Schema(const Json& o, const char* key, const std::string& prefix = "") {
    if (!Has(o, key)) return std::nullopt;
    return SchemaValue(o[key], prefix + key, /*strict=*/true);
  }

  std::optional<ApiError> Text(const Json& o, const char* key, Kind kind,
                               const std::string& prefix = "") {
    if (!Has(o, key)) return std::nullopt;
    const std::string param = prefix + key;
    if (!o[key].is_string() || o[key].get<std::string>().empty()) {
      return Bad(param, "must be a non-empty string");
    }
    return Set(param, kind, o[key].get<std::string>(), false);
  }

  std::optional<ApiError> Choice(const Json& o, const char* key, const std::string& prefix = "") {
    if (!Has(o, key)) return std::nullopt;
    const std::string param = prefix + key;
    const Json& v = o[key];
    if (!v.is_array() || v.empty()) return Bad(param, "must be a non-empty array of strings");
    std::vector<std::string> choices;
    for (const Json& c : v) {
      if (!c.is_string() || c.get<std::string>().empty()) {
        return Bad(param, "must be a non-empty array of non-empty strings");
      }
      choices.push_back(c.get<std::string>());
    }
    return Set(param, Kind::kGrammar, ChoiceGrammar(choices), false);
  }

  std::optional<ApiError> ResponseFormat() {
    if (!Has(body_, "response_format")) return std::nullopt;
    const Json& rf = body_["response_format"];
    const std::string param = "response_format";
    if (!rf.is_object()) return Bad(param, "must be an object");
    if (!rf.contains("type") || !rf["type"].is_string()) {
      return Bad(param + ".type", "must be \"text\", \"json_object\" or \"json_schema\"");
    }
    const std::string type = rf["type"].get<std::string>();
    if (type == "text") return std::nullopt;
    if (type == "json_object") {
      if (Has(rf, "schema")) return SchemaValue(rf["schema"], param + ".schema", true);
      return Set(param, Kind::kJsonObject, "", false);
    }
    if (type != "json_schema") {
      return Bad(param + ".type",
                 "must be \"text\", \"json_object\" or \"json_schema\" (got \"" + type + "\")");
    }
    if (!Has(rf, "json_schema") || !rf["json_schema"].is_object()) {
      return Bad(param + ".json_schema", "must be an object with a 'schema'");
    }
    const Json& js = rf["json_schema"];
    const std::string p = param + ".json_schema";
    if (Has(js, "name") && !js["name"].is_string()) return Bad(p + ".name", "must be a string");
    bool strict = false;
    if (Has(js, "strict")) {
      if (!js["strict"].is_boolean()) return Bad(p + ".strict", "must be a boolean");
      strict = js["strict"].get<bool>();
    }
    if (!Has(js, "schema")) return Bad(p + ".schema", "is required");
    return SchemaValue(js["schema"], p + ".schema", strict);
  }

  // structured_outputs (vLLM) or the "jisu" vendor object (grammar and regex only; its other
  // keys are RequestOptions, parsed elsewhere).
  std::optional<ApiError> Nested(const char* key, bool vendor) {
    if (!Has(body_, key)) return std::nullopt;
    const Json& o = body_[key];
    const std::string prefix = std::string(key) + ".";
    if (!o.is_object()) {
      if (vendor) return std::nullopt;  // ParseOptions reports it
      return Bad(key, "must be an object");
    }
    if (!vendor) {
      for (auto it = o.begin(); it != o.end(); ++it) {
        const std::string& k = it.key();
        if (k != "json" && k != "regex" && k != "grammar" && k != "choice" && !it->is_null()) {
          return Bad(prefix + k, "is not supported (json, regex, grammar or choice)");
        }
      }
      if (auto e = Schema(o, "json", prefix)) return e;
      if (auto e = Choice(o, "choice", prefix)) return e;
    }
    if (auto e = Text(o, "regex", Kind::kRegex, prefix)) return e;
    return Text(o, "grammar", Kind::kGrammar, prefix);
  }

  std::optional<ApiError> LogitBias() {
    if (!Has(body_, "logit_bias")) return std::nullopt;
    const Json& lb = body_["logit_bias"];
    const std::string param = "logit_bias";
    if (!lb.is_object()) return Bad(param, "must be an object mapping token ids to biases");
    if (lb.size() > SamplingParams::kMaxLogitBias) {
      return Bad(param,
                 "has more than " + std::to_string(SamplingParams::kMaxLogitBias) + " entries");
    }
    for (auto it = lb.begin(); it != lb.end(); ++it) {
      const std::string& k = it.key();
      if (k.empty() || k.size() > 9 || k.find_first_not_of("0123456789") != std::string::npos) {
        return Bad(param, "keys must be token ids (got \"" + k + "\")");
      }
      if (!it->is_number() || !(it->get<double>() >= -100.0 && it->get<double>() <= 100.0)) {
        return Bad(param, "values must be numbers in [-100, 100] (token " + k + ")");
      }
      out_->sampling.logit_bias.emplace_back(std::stoi(k), it->get<float>());
    }
    return std::nullopt;
  }

  const Json& body_;
  GenerationRequest* out_;
};

}  // namespace

std::optional<ApiError> ParseStructuredOutput(const Json& body, GenerationRequest* out) {
  return Parser(body, out).Run();
}

}  // namespace jisu::server
