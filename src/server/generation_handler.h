// One /v1/chat/completions or /v1/completions request, from the parsed body to the HTTP answer:
// tokenize (chat template or plain text / token ids), submit n engine requests per prompt,
// then either wait and answer one JSON object or stream server-sent events. A failed write to
// the client cancels every engine request of the job at once, so its KV blocks are freed; a
// non-streamed request checks its connection while it waits (ConnectionProbe) to the same end.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <set>
#include <string>

#include "chat/chat_template.h"
#include "engine/engine.h"
#include "server/http_metrics.h"
#include "server/openai_protocol.h"
#include "server/tools/tool_call_format.h"
#include "server/tools/tool_call_grammar.h"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace jisu::server {

struct ServedModel;
class AccessControl;

// Engine request ids being served, so a drain can cancel what is left.
class LiveRequests {
 public:
  void Add(RequestId id);
  void Remove(RequestId id);
  void CancelAll(Engine* engine);

 private:
  std::mutex mu_;
  std::set<RequestId> ids_;
};

struct GenerationContext {
  const ServedModel* served = nullptr;
  const ChatTemplate* chat_template = nullptr;                // null: the model has none
  ToolCallFormat tool_format = ToolCallFormat::kNone;         // how the model writes tool calls
  MistralCallSyntax tool_syntax = MistralCallSyntax::kArray;  // which Mistral spelling
  HttpMetrics* metrics = nullptr;
  LiveRequests* live = nullptr;
  std::atomic<int64_t>* in_flight = nullptr;  // HTTP generation requests not yet answered
  AccessControl* access = nullptr;            // keys, tenants, per-key limits
};

// Fills `res` (status, headers, body or a streaming provider).
void HandleGeneration(const httplib::Request& req, httplib::Response& res, Endpoint endpoint,
                      const GenerationContext& ctx);

// Writes an OpenAI error object into `res`.
void SetError(httplib::Response& res, const ApiError& error);

}  // namespace jisu::server
