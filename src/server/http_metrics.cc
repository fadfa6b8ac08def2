#include "server/http_metrics.h"

#include <cstdio>

namespace jisu::server {
namespace {

void Gauge(std::string* out, const char* name, const char* help, const std::string& labels,
           double value, const char* type = "gauge") {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  *out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n" +
          name + labels + " " + buf + "\n";
}

// Label values escaped as the exposition format requires (backslash, quote, newline).
std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

}  // namespace

void HttpMetrics::CountRequest(const std::string& endpoint, int status) {
  std::lock_guard<std::mutex> lock(mu_);
  ++requests_[{endpoint, status}];
}

void HttpMetrics::CountTokens(int64_t prompt, int64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  prompt_tokens_ += prompt;
  generation_tokens_ += generation;
}

std::string HttpMetrics::Render(const Engine* engine, const std::string& model_name,
                                int64_t block_size, int64_t in_flight) const {
  std::string out;
  const std::string labels = "{model_name=\"" + Escape(model_name) + "\"}";
  {
    std::lock_guard<std::mutex> lock(mu_);
    out += "# HELP jisu_http_requests_total HTTP requests by endpoint and status code.\n";
    out += "# TYPE jisu_http_requests_total counter\n";
    for (const auto& [key, count] : requests_) {
      out += "jisu_http_requests_total{endpoint=\"" + Escape(key.first) + "\",status=\"" +
             std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
    }
    Gauge(&out, "vllm:prompt_tokens_total", "Prompt tokens of finished requests.", labels,
          double(prompt_tokens_), "counter");
    Gauge(&out, "vllm:generation_tokens_total", "Generated tokens of finished requests.", labels,
          double(generation_tokens_), "counter");
  }
  Gauge(&out, "jisu_http_requests_in_flight", "Generation requests being served.", "",
        double(in_flight));
  if (engine == nullptr) return out;
  const SchedulerStats s = engine->scheduler_stats();
  const BlockPoolStats p = engine->pool_stats();
  const PrefixCacheStats c = engine->prefix_stats();
  Gauge(&out, "vllm:num_requests_running", "Requests running (holding KV blocks).", labels,
        double(s.num_running));
  Gauge(&out, "vllm:num_requests_waiting", "Requests queued, not yet running.", labels,
        double(s.num_waiting));
  Gauge(&out, "vllm:gpu_cache_usage_perc", "KV-cache usage, 1 = full (device-neutral).", labels,
        p.Usage());
  Gauge(&out, "vllm:kv_cache_usage_perc", "KV-cache usage, 1 = full.", labels, p.Usage());
  Gauge(&out, "vllm:num_preemptions_total", "Preemptions so far.", labels,
        double(s.num_preemptions), "counter");
  Gauge(&out, "vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.",
        labels, double(c.total.query_tokens), "counter");
  Gauge(&out, "vllm:prefix_cache_hits_total", "Prompt tokens served from the prefix cache.",
        labels, double(c.total.hit_tokens), "counter");
  Gauge(&out, "jisu_kv_blocks_total", "KV blocks in the pool.", labels, double(p.num_blocks));
  Gauge(&out, "jisu_kv_blocks_in_use", "KV blocks referenced by requests.", labels,
        double(p.num_in_use));
  Gauge(&out, "jisu_kv_blocks_cached", "KV blocks registered in the prefix cache.", labels,
        double(p.num_cached));
  out += "# HELP vllm:cache_config_info KV-cache configuration.\n";
  out += "# TYPE vllm:cache_config_info gauge\n";
  out += "vllm:cache_config_info{block_size=\"" + std::to_string(block_size) +
         "\",num_gpu_blocks=\"" + std::to_string(p.num_blocks) + "\"} 1\n";
  return out;
}

}  // namespace jisu::server
