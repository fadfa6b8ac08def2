// The public Llm (include/jisu/llm.h) over the engine: options become EngineOptions and
// BackendOptions (validated by their owners), requests become EngineRequests, and each
// request's outputs are queued for its LlmStream.
#include "jisu/llm.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <nlohmann/json.hpp>

#include "backend/backend_factory.h"
#include "chat/chat_template.h"
#include "engine/engine.h"
#include "kv/prefix_cache.h"
#include "model/model.h"
#include "runner/chat_prompt.h"

namespace jisu {
namespace {

// The model and the engine that reads it, kept alive by the Llm and by every open stream (the
// engine's destructor stops its loop and ends every request as cancelled).
struct Core {
  std::unique_ptr<Model> model;
  std::unique_ptr<Engine> engine;  // declared last, so destroyed first
};

// One request's chunks, filled by the engine's loop thread, drained by Next().
struct StreamState {
  std::mutex mu;
  std::condition_variable ready;
  std::deque<LlmChunk> chunks;
  bool finished = false;  // the last chunk is queued
  bool done = false;      // ... and was returned
};

class StreamImpl final : public LlmStream {
 public:
  StreamImpl(std::shared_ptr<Core> core, std::shared_ptr<StreamState> state, RequestId id)
      : core_(std::move(core)), state_(std::move(state)), id_(id) {}
  ~StreamImpl() override {
    bool finished;
    {
      std::lock_guard<std::mutex> lock(state_->mu);
      finished = state_->finished;
    }
    if (!finished) core_->engine->Cancel(id_);
  }

  std::optional<LlmChunk> Next() override {
    std::unique_lock<std::mutex> lock(state_->mu);
    if (state_->done) return std::nullopt;
    state_->ready.wait(lock, [&] { return !state_->chunks.empty(); });
    LlmChunk chunk = std::move(state_->chunks.front());
    state_->chunks.pop_front();
    if (chunk.finish_reason != FinishReason::kNone) state_->done = true;
    return chunk;
  }

  void Cancel() override { core_->engine->Cancel(id_); }

 private:
  std::shared_ptr<Core> core_;
  std::shared_ptr<StreamState> state_;
  RequestId id_;
};

class LlmImpl final : public Llm {
 public:
  explicit LlmImpl(std::shared_ptr<Core> core) : core_(std::move(core)) {}

  Result<std::unique_ptr<LlmStream>> Submit(const LlmRequest& request) override {
    const int given =
        !request.prompt.empty() + !request.prompt_ids.empty() + !request.messages.empty();
    if (given != 1) {
      return Status::InvalidArgument("a request needs exactly one of prompt, prompt_ids, messages");
    }
    JISU_RETURN_IF_ERROR(core_->engine->CheckOptions(request.options, request.sampling));
    EngineRequest r;
    r.sampling = request.sampling;
    r.options = request.options;
    r.tenant = request.user.empty() ? 0 : core_->engine->InternTenant(request.user);
    const Model& model = *core_->model;
    if (!request.prompt.empty()) {
      r.prompt = model.tokenizer().Encode(request.prompt, /*add_special=*/true);
    } else if (!request.prompt_ids.empty()) {
      r.prompt = request.prompt_ids;
    } else {
      nlohmann::ordered_json messages = nlohmann::ordered_json::array();
      for (const ChatMessage& m : request.messages) {
        messages.push_back({{"role", m.role}, {"content", m.content}});
      }
      JISU_ASSIGN_OR_RETURN(r.prompt, TokenizeChatPrompt(model, messages, true));
    }
    auto state = std::make_shared<StreamState>();
    auto on_output = [state](const EngineOutput& o) {
      LlmChunk c;
      c.text = o.text;
      c.token_ids = o.token_ids;
      c.num_prompt_tokens = o.num_prompt_tokens;
      c.num_cached_prompt_tokens = o.num_cached_prompt_tokens;
      if (o.finished) {
        c.finish_reason = o.finish_reason;
        c.error = o.error;
      }
      std::lock_guard<std::mutex> lock(state->mu);
      state->finished |= o.finished;
      state->chunks.push_back(std::move(c));
      state->ready.notify_all();
    };
    JISU_ASSIGN_OR_RETURN(RequestId id, core_->engine->Submit(std::move(r), on_output));
    return std::unique_ptr<LlmStream>(new StreamImpl(core_, std::move(state), id));
  }

  std::vector<int32_t> Tokenize(std::string_view text, bool add_special) const override {
    return core_->model->tokenizer().Encode(text, add_special);
  }
  std::string Detokenize(const std::vector<int32_t>& ids) const override {
    return core_->model->tokenizer().Decode(ids, /*skip_special=*/false);
  }
  std::string device() const override { return core_->engine->backend().description(); }
  std::string model_description() const override {
    return core_->model->path() + " (" + core_->model->config().Describe() + ")";
  }

 private:
  std::shared_ptr<Core> core_;
};

}  // namespace

Result<std::unique_ptr<Llm>> Llm::Open(const LlmOptions& o) {
  JISU_ASSIGN_OR_RETURN(KvMemory kv_memory, KvMemory::Parse(o.kv_memory));
  JISU_ASSIGN_OR_RETURN(PrefixCacheMode prefix_mode, ParsePrefixCacheMode(o.prefix_cache));
  if (o.num_threads < 0) return Status::InvalidArgument("num_threads must be >= 0");
  if (o.max_model_len < 0) return Status::InvalidArgument("max_model_len must be >= 0");
  std::string path = o.model;
  if (path.empty()) {
    JISU_ASSIGN_OR_RETURN(path, ResolveDefaultModel());
  }
  LoadOptions load_options;
  if (!o.chat_template.empty()) {
    auto parsed = ChatTemplate::Parse(o.chat_template);
    if (!parsed.ok()) return parsed.status().WithContext("chat_template");
    load_options.chat_template = o.chat_template;
  }
  auto core = std::make_shared<Core>();
  JISU_ASSIGN_OR_RETURN(core->model, Model::Load(path, load_options));
  const ModelConfig& c = core->model->config();
  EngineOptions options;
  options.num_threads = o.num_threads;
  options.prefix_cache = prefix_mode;
  options.scheduler.max_seqs = o.max_seqs;
  options.scheduler.max_model_len =
      o.max_model_len > 0 ? o.max_model_len : std::min<int64_t>(c.max_position, 8192);
  options.defaults = o.defaults;
  BackendOptions backend;
  backend.matmul = o.defaults.matmul;
  backend.device = o.device;
  backend.kv_memory = kv_memory;
  backend.block_size = options.scheduler.block_size;
  backend.num_threads = o.num_threads;
  JISU_ASSIGN_OR_RETURN(auto forward, CreateBackend(*core->model, backend));
  JISU_ASSIGN_OR_RETURN(core->engine, Engine::Create(*core->model, options, std::move(forward)));
  return std::unique_ptr<Llm>(new LlmImpl(std::move(core)));
}

Result<LlmChunk> Llm::Generate(const LlmRequest& request) {
  JISU_ASSIGN_OR_RETURN(std::unique_ptr<LlmStream> stream, Submit(request));
  LlmChunk all;
  while (std::optional<LlmChunk> c = stream->Next()) {
    all.text += c->text;
    all.token_ids.insert(all.token_ids.end(), c->token_ids.begin(), c->token_ids.end());
    all.finish_reason = c->finish_reason;
    all.error = c->error;
    all.num_prompt_tokens = c->num_prompt_tokens;
    all.num_cached_prompt_tokens = c->num_cached_prompt_tokens;
  }
  if (all.finish_reason == FinishReason::kError) return all.error;
  return all;
}

}  // namespace jisu
