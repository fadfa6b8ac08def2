#include "server/openai_protocol.h"

#include <cmath>
#include <limits>

#include "core/utf8.h"
#include "format/json_util.h"
#include "server/structured_output_request.h"
#include "server/tools/tool_fields.h"

namespace jisu::server {
namespace {

using Json = nlohmann::ordered_json;

// Reads optional typed fields of the request object; null counts as absent, as OpenAI does.
class FieldReader {
 public:
  explicit FieldReader(const Json& body) : body_(body) {}
  const std::optional<ApiError>& error() const { return error_; }

  const Json* Get(const char* name) {
    auto it = body_.find(name);
    if (it == body_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  bool Number(const char* name, float lo, float hi, float* out) {
    const Json* v = Get(name);
    if (!v || error_) return false;
    if (!v->is_number()) return Fail(name, "must be a number");
    const double d = v->get<double>();
    if (!(d >= lo && d <= hi)) {
      return Fail(name, "must be in [" + Fmt(lo) + ", " + Fmt(hi) + "] (got " + Fmt(d) + ")");
    }
    *out = static_cast<float>(d);
    return true;
  }
  bool Integer(const char* name, int64_t lo, int64_t hi, int64_t* out) {
    const Json* v = Get(name);
    if (!v || error_) return false;
    if (!v->is_number_integer()) return Fail(name, "must be an integer");
    const int64_t i = v->is_number_unsigned() && v->get<uint64_t>() > uint64_t(INT64_MAX)
                          ? INT64_MAX
                          : v->get<int64_t>();
    if (i < lo || i > hi) {
      return Fail(name, "must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                            " (got " + v->dump() + ")");
    }
    *out = i;
    return true;
  }
  bool Bool(const char* name, bool* out) {
    const Json* v = Get(name);
    if (!v || error_) return false;
    if (!v->is_boolean()) return Fail(name, "must be a boolean");
    *out = v->get<bool>();
    return true;
  }
  bool String(const char* name, std::string* out) {
    const Json* v = Get(name);
    if (!v || error_) return false;
    if (!v->is_string()) return Fail(name, "must be a string");
    *out = v->get<std::string>();
    return true;
  }
  bool Fail(const std::string& param, const std::string& what) {
    if (!error_) error_ = ApiError::BadRequest("'" + param + "' " + what, param);
    return false;
  }
  bool Fail(ApiError e) {
    if (!error_) error_ = std::move(e);
    return false;
  }

  static std::string Fmt(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%g", v);
    return buf;
  }

 private:
  const Json& body_;
  std::optional<ApiError> error_;
};

// Content of a message: a string, or an array of {"type": "text", "text": ...} parts (joined).
bool MessageContent(const Json& content, size_t index, std::string* out, FieldReader* r) {
  const std::string param = "messages[" + std::to_string(index) + "].content";
  if (content.is_string()) {
    *out = content.get<std::string>();
    return true;
  }
  if (!content.is_array()) return r->Fail(param, "must be a string or an array of parts");
  out->clear();
  for (const Json& part : content) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string()) {
      return r->Fail(param, "parts must be objects with a 'type'");
    }
    if (part["type"] != "text") {
      return r->Fail(param, "part type '" + part["type"].get<std::string>() +
                                "' is not supported (text only)");
    }
    if (!part.contains("text") || !part["text"].is_string()) {
      return r->Fail(param, "text parts need a string 'text'");
    }
    *out += part["text"].get<std::string>();
  }
  return true;
}

bool ParseMessages(const Json& body, FieldReader* r, Json* out) {
  const Json* m = r->Get("messages");
  if (!m) return r->Fail("messages", "is required");
  if (!m->is_array() || m->empty()) return r->Fail("messages", "must be a non-empty array");
  *out = Json::array();
  for (size_t i = 0; i < m->size(); ++i) {
    const Json& msg = (*m)[i];
    const std::string param = "messages[" + std::to_string(i) + "]";
    if (!msg.is_object()) return r->Fail(param, "must be an object");
    auto role = msg.find("role");
    if (role == msg.end() || !role->is_string()) return r->Fail(param + ".role", "is required");
    const std::string rs = role->get<std::string>();
    if (rs != "system" && rs != "developer" && rs != "user" && rs != "assistant" && rs != "tool") {
      return r->Fail(param + ".role", "must be system, developer, user, assistant or tool");
    }
    Json copy = msg;
    if (auto e = ParseMessageToolFields(msg, i, &copy)) return r->Fail(*e);
    auto content = msg.find("content");
    if (content == msg.end() || content->is_null()) {
      if (rs != "assistant") return r->Fail(param + ".content", "is required");
      // "" rather than no content (transformers drops None keys): real templates index an
      // assistant's content without checking it even when it has tool calls (Devstral's).
      copy["content"] = "";
    } else {
      std::string text;
      if (!MessageContent(*content, i, &text, r)) return false;
      copy["content"] = text;
    }
    out->push_back(std::move(copy));
  }
  (void)body;
  return true;
}

bool TokenArray(const Json& v, const std::string& param, PromptInput* out, FieldReader* r) {
  out->is_tokens = true;
  if (v.empty()) return r->Fail(param, "is empty");
  for (const Json& t : v) {
    if (!t.is_number_integer()) return r->Fail(param, "token ids must be integers");
    const int64_t id = t.get<int64_t>();
    if (id < 0 || id > std::numeric_limits<int32_t>::max()) {
      return r->Fail(param, "token id " + t.dump() + " is out of range");
    }
    out->tokens.push_back(static_cast<int32_t>(id));
  }
  return true;
}

bool ParsePrompts(FieldReader* r, std::vector<PromptInput>* out) {
  const Json* p = r->Get("prompt");
  if (!p) return r->Fail("prompt", "is required");
  if (p->is_string()) {
    out->push_back(PromptInput{p->get<std::string>(), {}, false});
    if (out->back().text.empty()) return r->Fail("prompt", "is empty");
    return true;
  }
  if (!p->is_array() || p->empty()) {
    return r->Fail("prompt", "must be a string, an array of strings, or token ids");
  }
  if ((*p)[0].is_number()) {
    out->emplace_back();
    return TokenArray(*p, "prompt", &out->back(), r);
  }
  if (p->size() > kMaxPrompts) {
    return r->Fail("prompt", "has more than " + std::to_string(kMaxPrompts) + " prompts");
  }
  for (size_t i = 0; i < p->size(); ++i) {
    const Json& e = (*p)[i];
    const std::string param = "prompt[" + std::to_string(i) + "]";
    out->emplace_back();
    if (e.is_string()) {
      out->back().text = e.get<std::string>();
      if (out->back().text.empty()) return r->Fail(param, "is empty");
    } else if (e.is_array()) {
      if (!TokenArray(e, param, &out->back(), r)) return false;
    } else {
      return r->Fail(param, "must be a string or an array of token ids");
    }
  }
  return true;
}

bool ParseStop(FieldReader* r, std::vector<std::string>* out) {
  const Json* s = r->Get("stop");
  if (!s) return true;
  if (s->is_string()) {
    if (!s->get<std::string>().empty()) out->push_back(s->get<std::string>());
    return true;
  }
  if (!s->is_array()) return r->Fail("stop", "must be a string or an array of strings");
  if (s->size() > SamplingParams::kMaxStopStrings) {
    return r->Fail("stop",
                   "has more than " + std::to_string(SamplingParams::kMaxStopStrings) + " strings");
  }
  for (const Json& e : *s) {
    if (!e.is_string()) return r->Fail("stop", "must contain only strings");
    if (e.get<std::string>().empty()) continue;  // OpenAI ignores empty stops
    if (e.get<std::string>().size() > SamplingParams::kMaxStopBytes) {
      return r->Fail("stop", "strings must be at most " +
                                 std::to_string(SamplingParams::kMaxStopBytes) + " bytes");
    }
    out->push_back(e.get<std::string>());
  }
  return true;
}

// An enum option by name: on error, the parser's message without its leading field name.
template <typename E>
bool OptionName(const Json& v, const std::string& param, Result<E> (*parse)(std::string_view),
                E* out, FieldReader* r) {
  if (!v.is_string()) return r->Fail(param, "must be a string");
  Result<E> e = parse(v.get<std::string>());
  if (!e.ok()) {
    const std::string& m = e.status().message();
    return r->Fail(param, m.substr(m.find(' ') + 1));
  }
  *out = *e;
  return true;
}

bool ParseOptions(FieldReader* r, RequestOptions* out) {
  const Json* j = r->Get("jisu");
  if (!j) return true;
  if (!j->is_object()) return r->Fail("jisu", "must be an object");
  for (auto it = j->begin(); it != j->end(); ++it) {
    const std::string& key = it.key();
    const std::string param = "jisu." + key;
    const Json& v = it.value();
    if (key == "matmul") {
      if (!v.is_null() && !OptionName(v, param, &ParseMatmulPath, &out->matmul, r)) return false;
    } else if (key == "sampling") {
      if (!v.is_null() && !OptionName(v, param, &ParseSamplingPlacement, &out->sampling, r)) {
        return false;
      }
    } else if (key == "attention") {
      if (!v.is_null() && !OptionName(v, param, &ParseAttentionVariant, &out->attention, r)) {
        return false;
      }
    } else if (key == "weights") {
      if (v.is_null()) continue;
      if (!v.is_string()) return r->Fail(param, "must be a string");
      out->weights = v.get<std::string>();
    } else if (key == "speculative") {
      if (v.is_null() || (v.is_string() && v.get<std::string>() == "auto")) continue;
      if (!v.is_number_integer()) return r->Fail(param, "must be an integer or \"auto\"");
      const int64_t k = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)
                            ? INT64_MAX
                            : v.get<int64_t>();
      if (k < 0 || k > RequestOptions::kMaxSpeculative) {
        return r->Fail(param, "must be between 0 and " +
                                  std::to_string(RequestOptions::kMaxSpeculative) + " (got " +
                                  v.dump() + ")");
      }
      out->speculative = static_cast<int32_t>(k);
    } else if (key == "grammar" || key == "regex") {
      continue;  // structured output: ParseStructuredOutput
    } else {
      return r->Fail(param,
                     "is not a jisu option (matmul, sampling, attention, weights, speculative, "
                     "grammar, regex)");
    }
  }
  if (Status s = out->Validate(); !s.ok()) {
    const ApiError e = OptionError(s);
    return r->Fail(e.param, s.message().substr(s.message().find(' ') + 1));
  }
  return true;
}

}  // namespace

ApiError ApiError::BadRequest(std::string message, std::string param) {
  ApiError e;
  e.http_status = 400;
  e.type = "invalid_request_error";
  e.message = std::move(message);
  e.param = std::move(param);
  return e;
}

ApiError ApiError::NotFound(std::string message, std::string param) {
  ApiError e = BadRequest(std::move(message), std::move(param));
  e.http_status = 404;
  e.code = "model_not_found";
  return e;
}

nlohmann::json ApiError::ToJson() const {
  nlohmann::json err = {{"message", ValidUtf8(message)}, {"type", type}};
  err["param"] = param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param);
  err["code"] = code.empty() ? nlohmann::json(nullptr) : nlohmann::json(code);
  return {{"error", err}};
}

std::optional<ApiError> ParseGenerationRequest(const std::string& body, Endpoint endpoint,
                                               GenerationRequest* out) {
  *out = GenerationRequest{};
  out->endpoint = endpoint;
  if (!JsonDepthWithin(body)) {
    return ApiError::BadRequest("the request body is nested deeper than " +
                                std::to_string(kMaxJsonDepth) + " levels");
  }
  Json j = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return ApiError::BadRequest("the request body is not valid JSON");
  if (!j.is_object()) return ApiError::BadRequest("the request body must be a JSON object");
  FieldReader r(j);
  r.String("model", &out->model);
  if (endpoint == Endpoint::kChat) {
    if (ParseMessages(j, &r, &out->messages)) {
      if (auto e = ParseToolRequest(j, &out->tools)) r.Fail(*e);
    }
  } else {
    ParsePrompts(&r, &out->prompts);
  }
  if (r.error()) return r.error();

  SamplingParams& s = out->sampling;
  s.max_tokens = -1;
  int64_t i64 = 0;
  const int64_t kMaxTokens = 1 << 20;
  if (r.Integer("max_tokens", 1, kMaxTokens, &i64)) out->max_tokens_given = i64;
  if (endpoint == Endpoint::kChat && r.Integer("max_completion_tokens", 1, kMaxTokens, &i64)) {
    out->max_tokens_given = i64;
  }
  r.Number("temperature", 0.0f, 2.0f, &s.temperature);
  r.Number("top_p", 0.0f, 1.0f, &s.top_p);
  if (r.Get("top_p") && !r.error() && !(s.top_p > 0.0f)) r.Fail("top_p", "must be > 0");
  if (r.Integer("top_k", -1, std::numeric_limits<int32_t>::max(), &i64)) {
    s.top_k = static_cast<int32_t>(i64);
  }
  r.Number("min_p", 0.0f, 1.0f, &s.min_p);
  r.Number("presence_penalty", -2.0f, 2.0f, &s.presence_penalty);
  r.Number("frequency_penalty", -2.0f, 2.0f, &s.frequency_penalty);
  r.Number("repetition_penalty", 0.0f, 10.0f, &s.repetition_penalty);
  if (r.Get("repetition_penalty") && !r.error() && !(s.repetition_penalty > 0.0f)) {
    r.Fail("repetition_penalty", "must be > 0");
  }
  if (const Json* seed = r.Get("seed"); seed && !r.error()) {
    if (!seed->is_number_integer()) {
      r.Fail("seed", "must be an integer");
    } else {
      s.seed = seed->is_number_unsigned() ? seed->get<uint64_t>()
                                          : static_cast<uint64_t>(seed->get<int64_t>());
    }
  }
  ParseStop(&r, &s.stop);
  r.Bool("ignore_eos", &s.ignore_eos);
  if (r.Integer("n", 1, kMaxN, &i64)) out->n = static_cast<int32_t>(i64);
  r.Bool("stream", &out->stream);
  if (const Json* so = r.Get("stream_options"); so && !r.error()) {
    if (!so->is_object()) {
      r.Fail("stream_options", "must be an object");
    } else if (auto iu = so->find("include_usage"); iu != so->end() && !iu->is_null()) {
      if (!iu->is_boolean()) {
        r.Fail("stream_options.include_usage", "must be a boolean");
      } else {
        out->include_usage = iu->get<bool>();
      }
    }
  }
  if (endpoint == Endpoint::kChat) {
    bool logprobs = false;
    r.Bool("logprobs", &logprobs);
    int64_t top = 0;
    const bool has_top = r.Integer("top_logprobs", 0, kMaxTopLogprobs, &top);
    if (has_top && !logprobs && !r.error()) {
      r.Fail("top_logprobs", "requires 'logprobs' to be true");
    }
    if (logprobs) out->top_logprobs = static_cast<int32_t>(top);
  } else {
    if (r.Integer("logprobs", 0, kMaxTopLogprobs, &i64)) out->top_logprobs = int32_t(i64);
    r.Bool("echo", &out->echo);
  }
  r.String("user", &out->user);
  ParseOptions(&r, &out->options);
  if (r.error()) return r.error();
  if (auto e = ParseStructuredOutput(j, out)) return e;
  if (Status st =
          [&] {
            SamplingParams check = s;
            check.max_tokens = 1;
            return check.Validate();
          }();
      !st.ok()) {
    return ApiError::BadRequest(st.message());
  }
  return std::nullopt;
}

ApiError OptionError(const Status& status) {
  const std::string& m = status.message();
  const size_t space = m.find(' ');
  const std::string param = "jisu." + m.substr(0, space);
  return ApiError::BadRequest("'" + param + "' " + m.substr(space + 1), param);
}

nlohmann::json UsageJson(int64_t prompt_tokens, int64_t completion_tokens, int64_t cached_tokens) {
  return {{"prompt_tokens", prompt_tokens},
          {"completion_tokens", completion_tokens},
          {"total_tokens", prompt_tokens + completion_tokens},
          {"prompt_tokens_details", {{"cached_tokens", cached_tokens}}}};
}

nlohmann::json BytesJson(const std::string& s) {
  nlohmann::json a = nlohmann::json::array();
  for (unsigned char c : s) a.push_back(static_cast<int>(c));
  return a;
}

std::string ValidUtf8(const std::string& s) { return utf8::IsValid(s) ? s : utf8::Sanitize(s); }

bool BearerMatches(const std::string& header, const std::string& key) {
  const std::string expected = "Bearer " + key;
  // Accumulate differences over the expected length so timing leaks only the lengths.
  unsigned diff = header.size() == expected.size() ? 0u : 1u;
  for (size_t i = 0; i < expected.size(); ++i) {
    const unsigned char a = i < header.size() ? static_cast<unsigned char>(header[i]) : 0;
    diff |= a ^ static_cast<unsigned char>(expected[i]);
  }
  return diff == 0;
}

}  // namespace jisu::server
