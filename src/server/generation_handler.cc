#include "server/generation_handler.h"

#include <httplib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <memory>
#include <random>

#include "server/connection_probe.h"
#include "server/http_server.h"
#include "server/server_cpu.h"
#include "server/stream_chunk.h"

namespace jisu::server {
namespace {

using Json = nlohmann::json;

// Events from the engine's loop thread to the connection thread of one HTTP request.
struct Job {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<size_t, EngineOutput>> events;  // choice index, output
};

struct Choice {
  RequestId id = 0;
  size_t prompt_index = 0;
  std::string text;
  int64_t num_tokens = 0;
  int64_t num_prompt_tokens = 0;
  int64_t num_cached_tokens = 0;
  std::string finish_reason;
  Status error;
  bool done = false;
  bool started = false;                   // streaming: the role chunk was sent
  Json logprobs_content = Json::array();  // chat: logprobs.content entries
  Json completion_logprobs = {{"tokens", Json::array()},
                              {"token_logprobs", Json::array()},
                              {"top_logprobs", Json::array()},
                              {"text_offset", Json::array()}};
  int64_t text_offset = 0;
};

struct PreparedPrompt {
  std::vector<int32_t> tokens;
  int64_t num_shared_prefix = 0;
  std::string echo_text;
};

std::string NewId(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%016llx%08llx", prefix, static_cast<unsigned long long>(salt),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return buf;
}

std::string TokenText(const Tokenizer& tok, int32_t id) { return tok.TokenBytes(id); }

// Appends one token's logprob entries in the endpoint's shape.
void AddLogprobs(const Tokenizer& tok, Endpoint endpoint, const SampledLogprobs& lp, Choice* c,
                 Json* chat_delta_content) {
  const std::string bytes = TokenText(tok, lp.token_id);
  const std::string text = ValidUtf8(bytes);
  if (endpoint == Endpoint::kChat) {
    Json entry = {{"token", text}, {"logprob", lp.logprob}, {"bytes", BytesJson(bytes)}};
    Json top = Json::array();
    for (const TokenLogprob& t : lp.top) {
      const std::string tb = TokenText(tok, t.id);
      top.push_back({{"token", ValidUtf8(tb)}, {"logprob", t.logprob}, {"bytes", BytesJson(tb)}});
    }
    entry["top_logprobs"] = std::move(top);
    if (chat_delta_content) chat_delta_content->push_back(entry);
    c->logprobs_content.push_back(std::move(entry));
  } else {
    Json top = Json::object();
    for (const TokenLogprob& t : lp.top) top[ValidUtf8(TokenText(tok, t.id))] = t.logprob;
    c->completion_logprobs["tokens"].push_back(text);
    c->completion_logprobs["token_logprobs"].push_back(lp.logprob);
    c->completion_logprobs["top_logprobs"].push_back(std::move(top));
    c->completion_logprobs["text_offset"].push_back(c->text_offset);
    c->text_offset += static_cast<int64_t>(text.size());
  }
}

ApiError ContextError(int64_t prompt_tokens, int64_t max_len, const char* param) {
  ApiError e = ApiError::BadRequest(
      "This model's maximum context length is " + std::to_string(max_len) +
          " tokens; the prompt has " + std::to_string(prompt_tokens) +
          " tokens, which leaves no room for a completion. Shorten the prompt.",
      param);
  e.code = "context_length_exceeded";
  return e;
}

// Tokenizes the request's prompt(s).
std::optional<ApiError> Prepare(const GenerationRequest& g, const GenerationContext& ctx,
                                std::vector<PreparedPrompt>* out) {
  const Model& model = *ctx.served->model;
  const Tokenizer& tok = model.tokenizer();
  const int64_t vocab = model.config().vocab_size;
  const int64_t max_len = ctx.served->max_model_len;
  if (g.endpoint == Endpoint::kChat) {
    if (ctx.chat_template == nullptr) {
      return ApiError::BadRequest("this model has no chat template; use /v1/completions");
    }
    ChatTemplateInputs in;
    in.messages = g.messages;
    in.add_generation_prompt = true;
    in.bos_token = model.bos_token();
    in.eos_token = model.eos_token();
    auto text = ctx.chat_template->Render(in);
    if (!text.ok()) {
      return ApiError::BadRequest(
          "the chat template rejected the messages: " + text.status().message(), "messages");
    }
    PreparedPrompt p;
    p.tokens = tok.Encode(*text, /*add_special=*/false);
    // Leading system/developer messages are the shared prefix: their tokens are the common
    // prefix of their own rendering and the full prompt (templates may join them differently).
    size_t k = 0;
    while (k < g.messages.size() &&
           (g.messages[k]["role"] == "system" || g.messages[k]["role"] == "developer")) {
      ++k;
    }
    if (k > 0 && k < g.messages.size()) {
      in.messages = nlohmann::ordered_json(g.messages.begin(), g.messages.begin() + k);
      in.add_generation_prompt = false;
      auto sys = ctx.chat_template->Render(in);
      if (sys.ok()) {
        const std::vector<int32_t> st = tok.Encode(*sys, false);
        size_t n = 0;
        while (n < st.size() && n < p.tokens.size() && st[n] == p.tokens[n]) ++n;
        p.num_shared_prefix = static_cast<int64_t>(n);
      }
    }
    out->push_back(std::move(p));
  } else {
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
  }
  for (const PreparedPrompt& p : *out) {
    const int64_t n = static_cast<int64_t>(p.tokens.size());
    if (n >= max_len) {
      return ContextError(n, max_len, g.endpoint == Endpoint::kChat ? "messages" : "prompt");
    }
  }
  return std::nullopt;
}

ApiError SubmitError(const Status& s) {
  ApiError e = ApiError::BadRequest(s.message());
  if (s.code() == Status::Code::kResourceExhausted) {
    const bool closing = s.message().find("shutting down") != std::string::npos;
    e.http_status = closing ? 503 : 429;
    e.type = closing ? "service_unavailable" : "rate_limit_error";
    e.code = closing ? "shutting_down" : "queue_full";
  }
  return e;
}

class GenerationRun {
 public:
  GenerationRun(std::shared_ptr<const GenerationRequest> g, const GenerationContext& ctx)
      : owned_(std::move(g)),
        g_(*owned_),
        ctx_(ctx),
        tok_(ctx.served->model->tokenizer()),
        job_(std::make_shared<Job>()),
        id_(NewId(g_.endpoint == Endpoint::kChat ? "chatcmpl-" : "cmpl-")),
        created_(static_cast<int64_t>(std::time(nullptr))) {
    ctx_.in_flight->fetch_add(1);
  }

  ~GenerationRun() {
    CancelUnfinished();
    ctx_.in_flight->fetch_sub(1);
  }

  // Submits every choice; on failure cancels what was submitted.
  std::optional<ApiError> Submit(const std::vector<PreparedPrompt>& prompts) {
    Engine& engine = *ctx_.served->engine;
    const int64_t max_len = ctx_.served->max_model_len;
    for (size_t p = 0; p < prompts.size(); ++p) {
      for (int32_t i = 0; i < g_.n; ++i) {
        EngineRequest r;
        r.prompt = prompts[p].tokens;
        r.sampling = g_.sampling;
        const int64_t room = max_len - static_cast<int64_t>(r.prompt.size());
        int64_t want = g_.max_tokens_given > 0          ? g_.max_tokens_given
                       : g_.endpoint == Endpoint::kChat ? room
                                                        : 16;
        r.sampling.max_tokens = static_cast<int32_t>(std::min(want, room));
        if (r.sampling.seed && i > 0) r.sampling.seed = *r.sampling.seed + uint64_t(i);
        r.tenant = engine.InternTenant(g_.user);
        r.num_shared_prefix_tokens = prompts[p].num_shared_prefix;
        r.top_logprobs = g_.top_logprobs;
        Choice c;
        c.prompt_index = p;
        c.text_offset = static_cast<int64_t>(prompts[p].echo_text.size());
        if (g_.echo) c.text = prompts[p].echo_text;
        c.num_prompt_tokens = static_cast<int64_t>(r.prompt.size());
        const size_t index = choices_.size();
        choices_.push_back(std::move(c));
        std::shared_ptr<Job> job = job_;
        auto id = engine.Submit(std::move(r), [job, index](const EngineOutput& o) {
          {
            std::lock_guard<std::mutex> lock(job->mu);
            job->events.emplace_back(index, o);
          }
          // After unlocking, so the woken thread does not block on the mutex at once. `job` is
          // owned by this callback, so it outlives the notify.
          job->cv.notify_one();
        });
        if (!id.ok()) {
          choices_.pop_back();
          return SubmitError(id.status());
        }
        choices_.back().id = *id;
        ctx_.live->Add(*id);
      }
    }
    return std::nullopt;
  }

  // Non-streaming: waits for every choice and builds the response. While waiting, checks every
  // kProbeInterval whether the client is still connected; if not, cancels the choices (freeing
  // their KV blocks) and answers 499 (nginx's "client closed request"; nobody reads it).
  std::pair<int, Json> Collect(ConnectionProbe* probe) {
    static constexpr std::chrono::milliseconds kProbeInterval{100};
    auto next_probe = std::chrono::steady_clock::now() + kProbeInterval;
    while (!AllDone()) {
      for (auto& [index, out] : NextEvents(kProbeInterval)) Apply(index, out, nullptr);
      ServerCpu::Charge(CpuStage::kRespond);
      if (probe == nullptr || AllDone() || std::chrono::steady_clock::now() < next_probe) continue;
      next_probe = std::chrono::steady_clock::now() + kProbeInterval;
      if (probe->ClientGone()) {
        CancelUnfinished();
        ApiError e = ApiError::BadRequest("the client closed the connection");
        e.http_status = 499;
        return {499, e.ToJson()};
      }
    }
    for (const Choice& c : choices_) {
      if (c.finish_reason == "error") {
        ApiError e = ApiError::BadRequest("generation failed: " + c.error.message());
        e.http_status = 500;
        e.type = "server_error";
        return {500, e.ToJson()};
      }
      if (c.finish_reason == "cancelled") {
        ApiError e = ApiError::BadRequest("the request was cancelled: the server is shutting down");
        e.http_status = 503;
        e.type = "service_unavailable";
        return {503, e.ToJson()};
      }
    }
    Json choices = Json::array();
    for (size_t i = 0; i < choices_.size(); ++i) {
      const Choice& c = choices_[i];
      Json ch = {{"index", i}};
      if (g_.endpoint == Endpoint::kChat) {
        ch["message"] = {{"role", "assistant"}, {"content", ValidUtf8(c.text)}};
        ch["logprobs"] = g_.top_logprobs >= 0 ? Json{{"content", c.logprobs_content}} : Json();
      } else {
        ch["text"] = ValidUtf8(c.text);
        ch["logprobs"] = g_.top_logprobs >= 0 ? c.completion_logprobs : Json();
      }
      ch["finish_reason"] = c.finish_reason;
      choices.push_back(std::move(ch));
    }
    Json body = Header(g_.endpoint == Endpoint::kChat ? "chat.completion" : "text_completion");
    body["choices"] = std::move(choices);
    body["usage"] = Usage();
    return {200, body};
  }

  // Streaming: writes SSE events until every choice is done; false if the client went away.
  bool Stream(httplib::DataSink& sink) {
    auto send = [&](const Json& j) {
      const std::string line = "data: " + j.dump() + "\n\n";
      ServerCpu::Charge(CpuStage::kStream);
      const bool ok = sink.write(line.data(), line.size());
      ServerCpu::Charge(CpuStage::kWrite);
      return ok;
    };
    StreamChunkFormatter chunks(g_.endpoint == Endpoint::kChat, id_, created_, ctx_.served->name,
                                g_.include_usage);
    while (!AllDone()) {
      for (auto& [index, out] : NextEvents()) {
        Json delta_logprobs;  // null until a logprob is added: no allocation per token
        const size_t before = choices_[index].text.size();
        const bool was_started = choices_[index].started;
        Apply(index, out, &delta_logprobs);
        Choice& c = choices_[index];
        const std::string delta = c.text.substr(g_.echo && !was_started ? 0 : before);
        c.started = true;
        const bool fin = c.done;
        std::string reason = c.finish_reason;
        if (reason == "cancelled") reason = "abort";
        if (reason == "error") {
          ApiError e = ApiError::BadRequest("generation failed: " + c.error.message());
          e.type = "server_error";
          e.http_status = 500;
          if (!send(e.ToJson())) return Abandon();
          continue;
        }
        if (!was_started && g_.endpoint == Endpoint::kChat) {
          if (!send(Chunk(index, Json{{"role", "assistant"}, {"content", ""}}, Json(), Json())))
            return Abandon();
        }
        const bool has_lp = g_.top_logprobs >= 0 && (g_.endpoint == Endpoint::kChat
                                                         ? !delta_logprobs.empty()
                                                         : !delta_completion_lp_["tokens"].empty());
        if (!has_lp && (!delta.empty() || fin)) {  // the per-token path: no JSON tree
          const std::string& line = chunks.Chunk(index, ValidUtf8(delta), fin ? reason : "");
          ServerCpu::Charge(CpuStage::kStream);
          const bool ok = sink.write(line.data(), line.size());
          ServerCpu::Charge(CpuStage::kWrite);
          if (!ok) return Abandon();
        } else if (!delta.empty() || has_lp) {
          Json lp;
          if (has_lp && g_.endpoint == Endpoint::kChat) lp = {{"content", delta_logprobs}};
          if (has_lp && g_.endpoint == Endpoint::kCompletion) lp = delta_completion_lp_;
          Json d = g_.endpoint == Endpoint::kChat ? Json{{"content", ValidUtf8(delta)}}
                                                  : Json(ValidUtf8(delta));
          if (!send(Chunk(index, d, lp, fin ? Json(reason) : Json()))) return Abandon();
        } else if (fin) {
          Json d = g_.endpoint == Endpoint::kChat ? Json::object() : Json("");
          if (!send(Chunk(index, d, Json(), Json(reason)))) return Abandon();
        }
      }
    }
    if (g_.include_usage) {
      Json last =
          Header(g_.endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
      last["choices"] = Json::array();
      last["usage"] = Usage();
      if (!send(last)) return Abandon();
    }
    static const std::string kDone = "data: [DONE]\n\n";
    if (!sink.write(kDone.data(), kDone.size())) return Abandon();
    sink.done();
    return true;
  }

  int64_t completion_tokens() const {
    int64_t n = 0;
    for (const Choice& c : choices_) n += c.num_tokens;
    return n;
  }
  int64_t prompt_tokens() const {
    int64_t n = 0;
    for (const Choice& c : choices_) n += c.num_prompt_tokens;
    return n;
  }

  void CancelUnfinished() {
    for (Choice& c : choices_) {
      if (c.done || c.id == 0) continue;
      ctx_.served->engine->Cancel(c.id);
      ctx_.live->Remove(c.id);
      c.done = true;
      c.finish_reason = "cancelled";
    }
  }

 private:
  bool Abandon() {
    CancelUnfinished();
    return false;
  }

  bool AllDone() const {
    return std::all_of(choices_.begin(), choices_.end(), [](const Choice& c) { return c.done; });
  }

  // The events so far, waiting for at least one (at most `timeout`, then possibly none).
  std::deque<std::pair<size_t, EngineOutput>> NextEvents(
      std::chrono::milliseconds timeout = std::chrono::milliseconds::max()) {
    std::deque<std::pair<size_t, EngineOutput>> ev;
    std::unique_lock<std::mutex> lock(job_->mu);
    auto ready = [&] { return !job_->events.empty(); };
    if (timeout == std::chrono::milliseconds::max()) {
      job_->cv.wait(lock, ready);
    } else {
      job_->cv.wait_for(lock, timeout, ready);
    }
    ev.swap(job_->events);
    lock.unlock();
    ServerCpu::Charge(CpuStage::kWait);
    return ev;
  }

  void Apply(size_t index, const EngineOutput& o, Json* chat_delta_logprobs) {
    Choice& c = choices_[index];
    if (c.done) return;
    c.text += o.text;
    c.num_tokens += static_cast<int64_t>(o.token_ids.size());
    if (o.num_prompt_tokens > 0) c.num_prompt_tokens = o.num_prompt_tokens;
    c.num_cached_tokens = std::max(c.num_cached_tokens, o.num_cached_prompt_tokens);
    if (g_.top_logprobs >= 0) {
      delta_completion_lp_ = {{"tokens", Json::array()},
                              {"token_logprobs", Json::array()},
                              {"top_logprobs", Json::array()},
                              {"text_offset", Json::array()}};
      for (const SampledLogprobs& lp : o.logprobs) {
        AddLogprobs(tok_, g_.endpoint, lp, &c, chat_delta_logprobs);
        if (g_.endpoint == Endpoint::kCompletion) {
          for (const char* k : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
            delta_completion_lp_[k].push_back(c.completion_logprobs[k].back());
          }
        }
      }
    }
    if (o.finished) {
      c.done = true;
      c.finish_reason = o.finish_reason;
      c.error = o.error;
      ctx_.live->Remove(c.id);
    }
  }

  Json Header(const char* object) const {
    return {{"id", id_}, {"object", object}, {"created", created_}, {"model", ctx_.served->name}};
  }

  Json Chunk(size_t index, Json delta, Json logprobs, Json finish_reason) const {
    Json j = Header(g_.endpoint == Endpoint::kChat ? "chat.completion.chunk" : "text_completion");
    Json ch = {{"index", index}};
    if (g_.endpoint == Endpoint::kChat) {
      ch["delta"] = std::move(delta);
    } else {
      ch["text"] = std::move(delta);
    }
    ch["logprobs"] = std::move(logprobs);
    ch["finish_reason"] = std::move(finish_reason);
    j["choices"] = Json::array({std::move(ch)});
    if (g_.include_usage) j["usage"] = nullptr;
    return j;
  }

  // Prompt tokens count once per prompt (not per choice), as OpenAI counts them.
  Json Usage() const {
    int64_t prompt = 0, cached = 0, completion = 0;
    std::vector<bool> seen;
    for (const Choice& c : choices_) {
      completion += c.num_tokens;
      if (seen.size() <= c.prompt_index) seen.resize(c.prompt_index + 1, false);
      if (seen[c.prompt_index]) continue;
      seen[c.prompt_index] = true;
      prompt += c.num_prompt_tokens;
      cached += c.num_cached_tokens;
    }
    return UsageJson(prompt, completion, cached);
  }

  std::shared_ptr<const GenerationRequest> owned_;
  const GenerationRequest& g_;
  const GenerationContext& ctx_;  // the server's, outlives every run
  const Tokenizer& tok_;
  std::shared_ptr<Job> job_;
  std::vector<Choice> choices_;
  std::string id_;
  int64_t created_;
  Json delta_completion_lp_;
};

}  // namespace

void LiveRequests::Add(RequestId id) {
  std::lock_guard<std::mutex> lock(mu_);
  ids_.insert(id);
}

void LiveRequests::Remove(RequestId id) {
  std::lock_guard<std::mutex> lock(mu_);
  ids_.erase(id);
}

void LiveRequests::CancelAll(Engine* engine) {
  std::lock_guard<std::mutex> lock(mu_);
  for (RequestId id : ids_) engine->Cancel(id);
}

void SetError(httplib::Response& res, const ApiError& error) {
  res.status = error.http_status;
  if (error.http_status == 429 || error.http_status == 503) res.set_header("Retry-After", "1");
  res.set_content(error.ToJson().dump() + "\n", "application/json");
}

void HandleGeneration(const httplib::Request& req, httplib::Response& res, Endpoint endpoint,
                      const GenerationContext& ctx) {
  ServerCpu::Charge(CpuStage::kHttp);  // cpp-httplib read the body
  auto g = std::make_shared<GenerationRequest>();
  auto err = ParseGenerationRequest(req.body, endpoint, g.get());
  ServerCpu::Charge(CpuStage::kParse);
  if (err) return SetError(res, *err);
  if (!g->model.empty() && g->model != ctx.served->name) {
    return SetError(res, ApiError::NotFound("The model '" + g->model +
                                                "' does not exist; this server serves '" +
                                                ctx.served->name + "'",
                                            "model"));
  }
  std::vector<PreparedPrompt> prompts;
  err = Prepare(*g, ctx, &prompts);
  ServerCpu::Charge(CpuStage::kPrepare);
  if (err) return SetError(res, *err);
  auto run = std::make_shared<GenerationRun>(g, ctx);
  err = run->Submit(prompts);
  ServerCpu::Charge(CpuStage::kSubmit);
  if (err) return SetError(res, *err);
  if (!g->stream) {
    ConnectionProbe probe(req.remote_addr, req.remote_port, req.local_addr, req.local_port);
    auto [status, body] = run->Collect(&probe);
    res.status = status;
    res.set_content(body.dump() + "\n", "application/json");
    ServerCpu::Charge(CpuStage::kRespond);
    return;
  }
  res.set_header("Cache-Control", "no-cache");
  // The provider owns the run; the releaser cancels what is
  // left if the connection ends before the provider finished (client gone, server stopping).
  res.set_chunked_content_provider(
      "text/event-stream", [run](size_t, httplib::DataSink& sink) { return run->Stream(sink); },
      [run](bool) { run->CancelUnfinished(); });
}

}  // namespace jisu::server
