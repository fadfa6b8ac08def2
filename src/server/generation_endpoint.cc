// The two EndpointShapes of generation_endpoint.h: ChatShape for /v1/chat/completions (the
// model's chat template renders the messages; leading system/developer messages are the
// shared prefix; logprobs are content entries with bytes; a streamed choice opens with the
// assistant role) and CompletionShape for /v1/completions (text or token-id prompts, echo,
// logprobs as tokens / token_logprobs / top_logprobs / text_offset arrays).
#include "server/generation_endpoint.h"

#include <utility>

#include "server/http_server.h"

namespace jisu::server {
namespace {

using Json = nlohmann::json;

std::string TokenText(const Tokenizer& tok, int32_t id) { return tok.TokenBytes(id); }

class ChatShape final : public EndpointShape {
 public:
  const char* id_prefix() const override { return "chatcmpl-"; }
  const char* object() const override { return "chat.completion"; }
  const char* chunk_object() const override { return "chat.completion.chunk"; }

  std::optional<ApiError> BuildPrompts(const GenerationRequest& g, const GenerationContext& ctx,
                                       std::vector<PreparedPrompt>* out) const override {
    const Model& model = *ctx.served->model;
    const Tokenizer& tok = model.tokenizer();
    if (ctx.chat_template == nullptr) {
      return ApiError::BadRequest(
          "this model has no chat template; use /v1/completions, or start the server with "
          "--chat-template FILE");
    }
    std::string text;
    if (auto err =
            RenderChat(g.messages, g.tools.tools, ctx, /*add_generation_prompt=*/true, &text)) {
      return err;
    }
    PreparedPrompt p;
    p.tokens = tok.Encode(text, /*add_special=*/false);
    // Leading system/developer messages are the shared prefix: their tokens are the common
    // prefix of their own rendering and the full prompt (templates may join them differently).
    size_t k = 0;
    while (k < g.messages.size() &&
           (g.messages[k]["role"] == "system" || g.messages[k]["role"] == "developer")) {
      ++k;
    }
    if (k > 0 && k < g.messages.size()) {
      const nlohmann::ordered_json leading(g.messages.begin(), g.messages.begin() + k);
      std::string sys;
      if (!RenderChat(leading, g.tools.tools, ctx, /*add_generation_prompt=*/false, &sys)) {
        const std::vector<int32_t> st = tok.Encode(sys, false);
        size_t n = 0;
        while (n < st.size() && n < p.tokens.size() && st[n] == p.tokens[n]) ++n;
        p.num_shared_prefix = static_cast<int64_t>(n);
      }
    }
    out->push_back(std::move(p));
    return std::nullopt;
  }
  const char* prompt_param() const override { return "messages"; }
  int64_t DefaultMaxTokens(int64_t room) const override { return room; }

  Json EmptyLogprobs() const override { return Json::array(); }
  void AddLogprobs(const Tokenizer& tok, const SampledLogprobs& lp, Choice* c,
                   Json* delta) const override {
    const std::string bytes = TokenText(tok, lp.token_id);
    const std::string text = ValidUtf8(bytes);
    Json entry = {{"token", text}, {"logprob", lp.logprob}, {"bytes", BytesJson(bytes)}};
    Json top = Json::array();
    for (const TokenLogprob& t : lp.top) {
      const std::string tb = TokenText(tok, t.id);
      top.push_back({{"token", ValidUtf8(tb)}, {"logprob", t.logprob}, {"bytes", BytesJson(tb)}});
    }
    entry["top_logprobs"] = std::move(top);
    if (delta) delta->push_back(entry);
    c->logprobs.push_back(std::move(entry));
  }

  void FillChoice(const Choice& c, bool with_logprobs, Json* ch) const override {
    if (c.tool_calls.empty()) {
      (*ch)["message"] = {{"role", "assistant"}, {"content", ValidUtf8(c.text)}};
    } else {  // OpenAI: content null when the reply is only calls
      (*ch)["message"] = {{"role", "assistant"},
                          {"content", c.text.empty() ? Json() : Json(ValidUtf8(c.text))},
                          {"tool_calls", c.tool_calls}};
    }
    (*ch)["logprobs"] = with_logprobs ? Json{{"content", c.logprobs}} : Json();
  }

  Json OpeningDelta() const override { return Json{{"role", "assistant"}, {"content", ""}}; }
  const char* delta_key() const override { return "delta"; }
  Json TextDelta(const std::string& text) const override { return Json{{"content", text}}; }
  Json EmptyDelta() const override { return Json::object(); }
  Json ChunkLogprobs(Json delta) const override { return {{"content", std::move(delta)}}; }
};

class CompletionShape final : public EndpointShape {
 public:
  const char* id_prefix() const override { return "cmpl-"; }
  const char* object() const override { return "text_completion"; }
  const char* chunk_object() const override { return "text_completion"; }

  std::optional<ApiError> BuildPrompts(const GenerationRequest& g, const GenerationContext& ctx,
                                       std::vector<PreparedPrompt>* out) const override {
    const Model& model = *ctx.served->model;
    const Tokenizer& tok = model.tokenizer();
    const int64_t vocab = model.config().vocab_size;
    for (size_t i = 0; i < g.prompts.size(); ++i) {
      const PromptInput& in = g.prompts[i];
      PreparedPrompt p;
      if (in.is_tokens) {
        for (int32_t id : in.tokens) {
          if (id >= vocab) {
            return ApiError::BadRequest("token id " + std::to_string(id) +
                                            " is outside the vocabulary of " +
                                            std::to_string(vocab),
                                        "prompt");
          }
        }
        p.tokens = in.tokens;
        if (g.echo) p.echo_text = tok.Decode(in.tokens, /*skip_special=*/true);
      } else {
        p.tokens = tok.Encode(in.text, /*add_special=*/true);
        if (g.echo) p.echo_text = in.text;
      }
      if (p.tokens.empty()) return ApiError::BadRequest("the prompt has no tokens", "prompt");
      out->push_back(std::move(p));
    }
    return std::nullopt;
  }
  const char* prompt_param() const override { return "prompt"; }
  int64_t DefaultMaxTokens(int64_t) const override { return 16; }

  Json EmptyLogprobs() const override {
    return {{"tokens", Json::array()},
            {"token_logprobs", Json::array()},
            {"top_logprobs", Json::array()},
            {"text_offset", Json::array()}};
  }
  void AddLogprobs(const Tokenizer& tok, const SampledLogprobs& lp, Choice* c,
                   Json* delta) const override {
    const std::string text = ValidUtf8(TokenText(tok, lp.token_id));
    Json top = Json::object();
    for (const TokenLogprob& t : lp.top) top[ValidUtf8(TokenText(tok, t.id))] = t.logprob;
    for (Json* lps : {&c->logprobs, delta}) {
      if (lps == nullptr) continue;
      if (lps->is_null()) *lps = EmptyLogprobs();
      (*lps)["tokens"].push_back(text);
      (*lps)["token_logprobs"].push_back(lp.logprob);
      (*lps)["top_logprobs"].push_back(top);
      (*lps)["text_offset"].push_back(c->text_offset);
    }
    c->text_offset += static_cast<int64_t>(text.size());
  }

  void FillChoice(const Choice& c, bool with_logprobs, Json* ch) const override {
    (*ch)["text"] = ValidUtf8(c.text);
    (*ch)["logprobs"] = with_logprobs ? c.logprobs : Json();
  }

  Json OpeningDelta() const override { return Json(); }
  const char* delta_key() const override { return "text"; }
  Json TextDelta(const std::string& text) const override { return Json(text); }
  Json EmptyDelta() const override { return Json(""); }
  Json ChunkLogprobs(Json delta) const override { return delta; }
};

}  // namespace

const char* ChoiceFinishName(const Choice& c) {
  if (c.finish_reason == FinishReason::kStop && !c.tool_calls.empty() && !c.named_tool) {
    return "tool_calls";
  }
  return FinishReasonName(c.finish_reason);
}

std::optional<ApiError> RenderChat(const nlohmann::ordered_json& messages,
                                   const nlohmann::ordered_json& tools,
                                   const GenerationContext& ctx, bool add_generation_prompt,
                                   std::string* text) {
  const Model& model = *ctx.served->model;
  ChatTemplateInputs in;
  in.messages = messages;
  if (!tools.is_null()) in.extra["tools"] = tools;
  in.add_generation_prompt = add_generation_prompt;
  in.bos_token = model.bos_token();
  in.eos_token = model.eos_token();
  auto rendered = ctx.chat_template->Render(in);
  if (!rendered.ok()) {
    return ApiError::BadRequest(
        "the chat template rejected the messages: " + rendered.status().message(), "messages");
  }
  *text = std::move(*rendered);
  return std::nullopt;
}

const EndpointShape& ShapeOf(Endpoint endpoint) {
  static const ChatShape chat;
  static const CompletionShape completion;
  if (endpoint == Endpoint::kChat) return chat;
  return completion;
}

}  // namespace jisu::server
