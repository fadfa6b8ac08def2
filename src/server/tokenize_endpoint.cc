#include "server/tokenize_endpoint.h"

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "chat/chat_template.h"
#include "format/json_util.h"
#include "model/model.h"
#include "server/http_server.h"
#include "server/openai_protocol.h"

namespace jisu::server {
namespace {

using Json = nlohmann::ordered_json;

// The body as a JSON object, or the error to answer.
std::optional<ApiError> ParseBody(const std::string& body, Json* out) {
  if (!JsonDepthWithin(body)) {
    return ApiError::BadRequest("the request body is nested deeper than " +
                                std::to_string(kMaxJsonDepth) + " levels");
  }
  *out = Json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out->is_discarded() || !out->is_object()) {
    return ApiError::BadRequest("the request body must be a JSON object");
  }
  return std::nullopt;
}

// An optional boolean field (null = absent).
std::optional<ApiError> Flag(const Json& j, const char* name, bool* out) {
  auto it = j.find(name);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean())
    return ApiError::BadRequest(std::string("'") + name + "' must be a boolean", name);
  *out = it->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> CheckModel(const Json& j, const GenerationContext& ctx) {
  auto it = j.find("model");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_string()) return ApiError::BadRequest("'model' must be a string", "model");
  if (it->get<std::string>() != ctx.served->name) {
    return ApiError::NotFound("The model '" + it->get<std::string>() +
                                  "' does not exist; this server serves '" + ctx.served->name + "'",
                              "model");
  }
  return std::nullopt;
}

// The chat prompt of a vLLM chat-style tokenize request: its messages, validated as
// /v1/chat/completions validates them, through the served template.
std::optional<ApiError> ChatTokens(const std::string& body, const Json& j,
                                   const GenerationContext& ctx, std::vector<int32_t>* out) {
  GenerationRequest g;
  if (auto err = ParseGenerationRequest(body, Endpoint::kChat, &g)) return err;
  if (ctx.chat_template == nullptr) {
    return ApiError::BadRequest("this model has no chat template", "messages");
  }
  bool add_generation_prompt = true, add_special = false;
  if (auto err = Flag(j, "add_generation_prompt", &add_generation_prompt)) return err;
  if (auto err = Flag(j, "add_special_tokens", &add_special)) return err;
  const Model& model = *ctx.served->model;
  ChatTemplateInputs in;
  in.messages = g.messages;
  // As /v1/chat/completions renders them, so the count is its prompt's (vLLM takes tools too).
  if (!g.tools.tools.is_null()) in.extra["tools"] = g.tools.tools;
  in.add_generation_prompt = add_generation_prompt;
  in.bos_token = model.bos_token();
  in.eos_token = model.eos_token();
  auto text = ctx.chat_template->Render(in);
  if (!text.ok()) {
    return ApiError::BadRequest(
        "the chat template rejected the messages: " + text.status().message(), "messages");
  }
  *out = model.tokenizer().Encode(*text, add_special);
  return std::nullopt;
}

}  // namespace

void HandleTokenize(const httplib::Request& req, httplib::Response& res,
                    const GenerationContext& ctx) {
  Json j;
  if (auto err = ParseBody(req.body, &j)) return SetError(res, *err);
  if (auto err = CheckModel(j, ctx)) return SetError(res, *err);
  const Tokenizer& tok = ctx.served->model->tokenizer();
  bool with_pieces = false, token_strs = false;
  if (auto err = Flag(j, "with_pieces", &with_pieces)) return SetError(res, *err);
  if (auto err = Flag(j, "return_token_strs", &token_strs)) return SetError(res, *err);
  std::vector<int32_t> ids;
  const bool has_messages = j.contains("messages") && !j["messages"].is_null();
  const char* text_field = j.contains("prompt") ? "prompt" : "content";
  if (has_messages) {
    if (j.contains("prompt") || j.contains("content")) {
      return SetError(res, ApiError::BadRequest("give either 'messages' or a text, not both"));
    }
    if (auto err = ChatTokens(req.body, j, ctx, &ids)) return SetError(res, *err);
  } else {
    auto it = j.find(text_field);
    if (it == j.end() || !it->is_string()) {
      return SetError(res, ApiError::BadRequest(
                               "'prompt' (or 'content', or 'messages') is required and must be "
                               "a string",
                               text_field));
    }
    // vLLM adds the special tokens by default, llama.cpp's "add_special" does not.
    bool add_special = std::string(text_field) == "prompt";
    if (auto err = Flag(j, "add_special_tokens", &add_special)) return SetError(res, *err);
    if (auto err = Flag(j, "add_special", &add_special)) return SetError(res, *err);
    ids = tok.Encode(it->get<std::string>(), add_special);
  }
  Json tokens = Json::array();
  Json strs = Json::array();
  for (int32_t id : ids) {
    if (with_pieces) {
      tokens.push_back({{"id", id}, {"piece", ValidUtf8(tok.IdToToken(id))}});
    } else {
      tokens.push_back(id);
    }
    if (token_strs) strs.push_back(ValidUtf8(tok.IdToToken(id)));
  }
  Json out = {{"count", ids.size()},
              {"max_model_len", ctx.served->max_model_len},
              {"tokens", std::move(tokens)}};
  if (token_strs) out["token_strs"] = std::move(strs);
  res.set_content(out.dump() + "\n", "application/json");
}

void HandleDetokenize(const httplib::Request& req, httplib::Response& res,
                      const GenerationContext& ctx) {
  Json j;
  if (auto err = ParseBody(req.body, &j)) return SetError(res, *err);
  if (auto err = CheckModel(j, ctx)) return SetError(res, *err);
  auto it = j.find("tokens");
  if (it == j.end() || !it->is_array()) {
    return SetError(res,
                    ApiError::BadRequest("'tokens' is required and must be an array", "tokens"));
  }
  const int64_t vocab = ctx.served->model->config().vocab_size;
  std::vector<int32_t> ids;
  ids.reserve(it->size());
  for (const Json& t : *it) {
    if (!t.is_number_integer() || t.get<int64_t>() < 0 || t.get<int64_t>() >= vocab) {
      return SetError(
          res, ApiError::BadRequest("'tokens' must hold token ids in [0, " + std::to_string(vocab) +
                                        ") (got " + t.dump() + ")",
                                    "tokens"));
    }
    ids.push_back(static_cast<int32_t>(t.get<int64_t>()));
  }
  const std::string text =
      ValidUtf8(ctx.served->model->tokenizer().Decode(ids, /*skip_special=*/false));
  res.set_content(Json{{"prompt", text}, {"content", text}}.dump() + "\n", "application/json");
}

}  // namespace jisu::server
