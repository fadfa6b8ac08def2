// The generation flow shared by /v1/chat/completions and /v1/completions: parse, check the
// model, build and tokenize the prompt(s), submit n engine requests per prompt, then either
// wait and answer one JSON object or stream server-sent events, cancelling the engine
// requests when the client goes away. Where the endpoints differ (prompt building, logprobs,
// the shapes of choices and deltas) it asks the request's EndpointShape
// (generation_endpoint.h).
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

#include "server/access_control.h"
#include "server/connection_probe.h"
#include "server/generation_endpoint.h"
#include "server/http_server.h"
#include "server/server_cpu.h"
#include "server/stream_chunk.h"
#include "server/tools/tool_choice.h"
#include "server/tools/tool_fields.h"

namespace jisu::server {
namespace {

using Json = nlohmann::json;

// Events from the engine's loop thread to the connection thread of one HTTP request.
struct Job {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<std::pair<size_t, EngineOutput>> events;  // choice index, output
};

std::string NewId(const char* prefix) {
  static std::atomic<uint64_t> counter{0};
  static const uint64_t salt = std::random_device{}();
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%016llx%08llx", prefix, static_cast<unsigned long long>(salt),
                static_cast<unsigned long long>(counter.fetch_add(1)));
  return buf;
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

// Tokenizes the request's prompt(s) and checks that each leaves room for a completion.
std::optional<ApiError> Prepare(const EndpointShape& shape, const GenerationRequest& g,
                                const GenerationContext& ctx, std::vector<PreparedPrompt>* out) {
  const int64_t max_len = ctx.served->max_model_len;
  if (auto err = shape.BuildPrompts(g, ctx, out)) return err;
  for (const PreparedPrompt& p : *out) {
    const int64_t n = static_cast<int64_t>(p.tokens.size());
    if (n >= max_len) return ContextError(n, max_len, shape.prompt_param());
  }
  return std::nullopt;
}

ApiError SubmitError(const Status& s) {
  ApiError e = ApiError::BadRequest(s.message());
  const bool closing = s.code() == Status::Code::kUnavailable;
  if (closing || s.code() == Status::Code::kResourceExhausted) {
    e.http_status = closing ? 503 : 429;
    e.type = closing ? "service_unavailable" : "rate_limit_error";
    e.code = closing ? "shutting_down" : "queue_full";
  }
  return e;
}

class GenerationRun {
 public:
  GenerationRun(std::shared_ptr<const GenerationRequest> g, const GenerationContext& ctx,
                Caller caller)
      : owned_(std::move(g)),
        g_(*owned_),
        shape_(ShapeOf(g_.endpoint)),
        ctx_(ctx),
        tok_(ctx.served->model->tokenizer()),
        job_(std::make_shared<Job>()),
        id_(NewId(shape_.id_prefix())),
        created_(static_cast<int64_t>(std::time(nullptr))),
        caller_(std::move(caller)) {
    ctx_.in_flight->fetch_add(1);
  }

  // Every way a request ends (answered, failed, client gone, server stopping) ends here: the
  // key's concurrency slot is freed and its completion tokens charged.
  ~GenerationRun() {
    CancelUnfinished();
    caller_.lease.Release(completion_tokens());
    ctx_.in_flight->fetch_sub(1);
  }

  // Submission failed: nothing ran, the prompt tokens are not the key's to pay.
  void RefundPrompt() { caller_.lease.RefundPrompt(); }

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
        int64_t want =
            g_.max_tokens_given > 0 ? g_.max_tokens_given : shape_.DefaultMaxTokens(room);
        r.sampling.max_tokens = static_cast<int32_t>(std::min(want, room));
        if (r.sampling.seed && i > 0) r.sampling.seed = *r.sampling.seed + uint64_t(i);
        r.tenant = engine.InternTenant(caller_.tenant);
        r.cache_salt = caller_.cache_salt;
        r.num_shared_prefix_tokens = prompts[p].num_shared_prefix;
        r.top_logprobs = g_.top_logprobs;
        r.options = g_.options;
        Choice c;
        c.prompt_index = p;
        c.logprobs = shape_.EmptyLogprobs();
        c.text_offset = static_cast<int64_t>(prompts[p].echo_text.size());
        if (g_.echo) c.text = prompts[p].echo_text;
        c.num_prompt_tokens = static_cast<int64_t>(r.prompt.size());
        if (g_.endpoint == Endpoint::kChat && g_.tools.parses_calls()) {
          c.tools = std::make_unique<ToolOutputDecoder>(
              tok_, ctx_.tool_format, ctx_.served->model->eos_ids(), g_.sampling.ignore_eos,
              g_.sampling.stop, g_.tools.parallel);
          c.named_tool = g_.tools.choice == ToolChoice::kFunction;
        }
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
      if (c.finish_reason == FinishReason::kError) {
        ApiError e = ApiError::BadRequest("generation failed: " + c.error.message());
        e.http_status = 500;
        e.type = "server_error";
        return {500, e.ToJson()};
      }
      if (c.finish_reason == FinishReason::kCancelled) {
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
      shape_.FillChoice(c, g_.top_logprobs >= 0, &ch);
      ch["finish_reason"] = ChoiceFinishName(c);
      choices.push_back(std::move(ch));
    }
    Json body = Header(shape_.object());
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
        const std::string reason =
            c.finish_reason == FinishReason::kCancelled ? "abort" : ChoiceFinishName(c);
        if (c.finish_reason == FinishReason::kError) {
          ApiError e = ApiError::BadRequest("generation failed: " + c.error.message());
          e.type = "server_error";
          e.http_status = 500;
          if (!send(e.ToJson())) return Abandon();
          continue;
        }
        if (!was_started) {
          Json opening = shape_.OpeningDelta();
          if (!opening.is_null() && !send(Chunk(index, std::move(opening), Json(), Json()))) {
            return Abandon();
          }
        }
        const bool has_lp = g_.top_logprobs >= 0 && !delta_logprobs.is_null();
        if (c.tools) {
          Json lp = has_lp ? shape_.ChunkLogprobs(std::move(delta_logprobs)) : Json();
          if (!StreamToolDeltas(index, std::move(lp), fin ? reason : "", send)) return Abandon();
          continue;
        }
        if (!has_lp && (!delta.empty() || fin)) {  // the per-token path: no JSON tree
          const std::string& line = chunks.Chunk(index, ValidUtf8(delta), fin ? reason : "");
          ServerCpu::Charge(CpuStage::kStream);
          const bool ok = sink.write(line.data(), line.size());
          ServerCpu::Charge(CpuStage::kWrite);
          if (!ok) return Abandon();
        } else if (!delta.empty() || has_lp) {
          Json lp = has_lp ? shape_.ChunkLogprobs(std::move(delta_logprobs)) : Json();
          Json d = shape_.TextDelta(ValidUtf8(delta));
          if (!send(Chunk(index, d, lp, fin ? Json(reason) : Json()))) return Abandon();
        } else if (fin) {
          if (!send(Chunk(index, shape_.EmptyDelta(), Json(), Json(reason)))) return Abandon();
        }
      }
    }
    if (g_.include_usage) {
      Json last = Header(shape_.chunk_object());
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
      c.finish_reason = FinishReason::kCancelled;
    }
  }

 private:
  // A tool-parsing choice's new content and calls as OpenAI streams them: a call opens with a
  // chunk naming it (index, id, type, name, empty arguments), then one with its arguments.
  // `logprobs` ride on the first chunk (or an empty delta); `finish` ends the choice.
  template <typename Send>
  bool StreamToolDeltas(size_t index, Json logprobs, const std::string& finish, Send& send) {
    Choice& c = choices_[index];
    std::vector<ToolDelta> deltas;
    deltas.swap(c.tool_deltas);
    for (const ToolDelta& d : deltas) {
      std::vector<Json> chunks;
      if (d.call_index < 0) {
        chunks.push_back(shape_.TextDelta(ValidUtf8(d.content)));
      } else {
        const Json& call = c.tool_calls[static_cast<size_t>(d.call_index)];
        Json fn = {{"name", call["function"]["name"]}, {"arguments", ""}};
        chunks.push_back({{"tool_calls", Json::array({{{"index", d.call_index},
                                                       {"id", call["id"]},
                                                       {"type", "function"},
                                                       {"function", std::move(fn)}}})}});
        chunks.push_back(
            {{"tool_calls",
              Json::array({{{"index", d.call_index},
                            {"function", {{"arguments", call["function"]["arguments"]}}}}})}});
      }
      for (Json& delta : chunks) {
        if (!send(Chunk(index, std::move(delta), std::move(logprobs), Json()))) return false;
        logprobs = Json();
      }
    }
    if (!logprobs.is_null() && !send(Chunk(index, shape_.EmptyDelta(), logprobs, Json()))) {
      return false;
    }
    if (!finish.empty() && !send(Chunk(index, shape_.EmptyDelta(), Json(), Json(finish)))) {
      return false;
    }
    return true;
  }

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

  // Adds an output to its choice; with `delta_logprobs`, also the output's logprobs there.
  void Apply(size_t index, const EngineOutput& o, Json* delta_logprobs) {
    Choice& c = choices_[index];
    if (c.done) return;
    if (c.tools) {
      ApplyTools(o, &c);
    } else {
      c.text += o.text;
    }
    c.num_tokens += static_cast<int64_t>(o.token_ids.size());
    if (o.num_prompt_tokens > 0) c.num_prompt_tokens = o.num_prompt_tokens;
    c.num_cached_tokens = std::max(c.num_cached_tokens, o.num_cached_prompt_tokens);
    if (g_.top_logprobs >= 0) {
      for (const SampledLogprobs& lp : o.logprobs) {
        shape_.AddLogprobs(tok_, lp, &c, delta_logprobs);
      }
    }
    if (o.finished) {
      c.done = true;
      c.finish_reason = o.finish_reason;
      c.error = o.error;
      ctx_.live->Remove(c.id);
    }
  }

  // Parses a tool-calling choice's output: content into text, calls into tool_calls (with
  // new ids), and both into tool_deltas for a stream.
  void ApplyTools(const EngineOutput& o, Choice* c) {
    std::vector<ToolParseEvent> events;
    c->tools->Push(o.token_ids, o.finished, &events);
    for (ToolParseEvent& e : events) {
      if (!e.call) {
        c->text += e.content;
        if (g_.stream) c->tool_deltas.push_back({std::move(e.content), -1});
        continue;
      }
      c->tool_calls.push_back(
          {{"id", NewToolCallId(ctx_.tool_format, &rng_)},
           {"type", "function"},
           {"function", {{"name", e.call->name}, {"arguments", e.call->arguments}}}});
      if (g_.stream) c->tool_deltas.push_back({"", static_cast<int>(c->tool_calls.size()) - 1});
    }
  }

  Json Header(const char* object) const {
    return {{"id", id_}, {"object", object}, {"created", created_}, {"model", ctx_.served->name}};
  }

  Json Chunk(size_t index, Json delta, Json logprobs, Json finish_reason) const {
    Json j = Header(shape_.chunk_object());
    Json ch = {{"index", index}};
    ch[shape_.delta_key()] = std::move(delta);
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
  const EndpointShape& shape_;
  const GenerationContext& ctx_;  // the server's, outlives every run
  const Tokenizer& tok_;
  std::shared_ptr<Job> job_;
  std::vector<Choice> choices_;
  std::string id_;
  int64_t created_;
  std::mt19937_64 rng_{std::random_device{}()};  // tool call ids
  Caller caller_;
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
  Caller caller;
  if (auto no = ctx.access->Admit(req.get_header_value("Authorization"), &caller)) {
    return SetRefusal(res, *no);
  }
  auto g = std::make_shared<GenerationRequest>();
  auto err = ParseGenerationRequest(req.body, endpoint, g.get());
  ServerCpu::Charge(CpuStage::kParse);
  if (err) return SetError(res, *err);
  ctx.access->NameTenant(g->user, &caller);
  if (!g->model.empty() && g->model != ctx.served->name) {
    return SetError(res, ApiError::NotFound("The model '" + g->model +
                                                "' does not exist; this server serves '" +
                                                ctx.served->name + "'",
                                            "model"));
  }
  if (Status s = ctx.served->engine->CheckOptions(g->options, g->sampling); !s.ok()) {
    return SetError(res, OptionError(s));
  }
  if (auto e = CheckToolsServable(g->tools, ctx.tool_format)) return SetError(res, *e);
  if (auto e = ConstrainToolChoice(ctx.tool_format, ctx.tool_syntax, g.get())) {
    return SetError(res, *e);
  }
  const int64_t vocab = ctx.served->engine->backend().config().vocab_size;
  for (const auto& [id, bias] : g->sampling.logit_bias) {
    if (id >= vocab) {
      return SetError(res, ApiError::BadRequest("'logit_bias' token id " + std::to_string(id) +
                                                    " is not below the vocabulary size " +
                                                    std::to_string(vocab),
                                                "logit_bias"));
    }
  }
  // Compiles the constraint (cached: Submit finds it) so a bad one names its field.
  if (Status s = ctx.served->engine->CheckStructuredOutput(g->sampling.structured); !s.ok()) {
    return SetError(res, ApiError::BadRequest(s.message(), g->constraint_param));
  }
  std::vector<PreparedPrompt> prompts;
  err = Prepare(ShapeOf(g->endpoint), *g, ctx, &prompts);
  ServerCpu::Charge(CpuStage::kPrepare);
  if (err) return SetError(res, *err);
  int64_t prompt_tokens = 0;
  for (const PreparedPrompt& p : prompts) prompt_tokens += static_cast<int64_t>(p.tokens.size());
  if (auto no = AccessControl::ChargePrompt(prompt_tokens, &caller)) return SetRefusal(res, *no);
  auto run = std::make_shared<GenerationRun>(g, ctx, std::move(caller));
  err = run->Submit(prompts);
  ServerCpu::Charge(CpuStage::kSubmit);
  if (err) {
    run->RefundPrompt();
    return SetError(res, *err);
  }
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
