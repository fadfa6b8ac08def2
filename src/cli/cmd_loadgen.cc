// `jisu loadgen`: measures any OpenAI-compatible server (jisu serve, llama-server, vLLM) under
// the built-in mixed workload: Poisson arrivals at --rate or a fixed --concurrency, every
// response streamed, TTFT/TPOT/ITL/E2E percentiles, throughput, goodput under an SLO, errors.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/commands.h"
#include "core/source_tree.h"
#include "loadgen/client.h"
#include "loadgen/random.h"
#include "loadgen/report.h"
#include "loadgen/request_body.h"
#include "loadgen/runner.h"
#include "loadgen/workload.h"

namespace jisu::cli {
namespace {

using namespace jisu::loadgen;

struct LoadgenFlags {
  std::string base_url = "http://127.0.0.1:8080";
  std::string model;
  std::string api_key;
  bool insecure = false;
  std::string endpoint = "chat";
  double rate = 0;
  int concurrency = 0;
  int64_t num_requests = 200;
  uint64_t seed = 0;
  double duration = 0;
  std::string mix = "0.5,0.25,0.25";
  double shared_prefix_share = 0.4;
  int64_t num_users = 64;
  double zipf_s = 1.1;
  int32_t max_tokens_chat = 128;
  int32_t max_tokens_summarize = 32;
  int32_t max_tokens_code = 256;
  int32_t summarize_words = 350;
  bool ignore_eos = false;
  bool no_user = false;
  int32_t prompt_tokens = 0;  // > 0: the fixed workload
  int32_t output_tokens = 64;
  int32_t token_id_limit = 1000;
  double temperature = 0;
  double slo_ttft_ms = 2000;
  double slo_tpot_ms = 100;
  double timeout = 600;
  std::string workload_dir = std::string(SourceTree()) + "/bench/workload";
  std::string out;
  std::string save_requests;
  std::string label;
};

Result<std::array<double, kNumClasses>> ParseMix(const std::string& s) {
  std::array<double, kNumClasses> mix{};
  std::stringstream ss(s);
  std::string item;
  for (int i = 0; i < kNumClasses; ++i) {
    if (!std::getline(ss, item, ',')) break;
    char* end = nullptr;
    mix[static_cast<size_t>(i)] = std::strtod(item.c_str(), &end);
    if (item.empty() || *end != '\0') {
      return Status::InvalidArgument("--mix: '" + item + "' is not a number");
    }
    if (i == kNumClasses - 1 && std::getline(ss, item, ',')) {
      return Status::InvalidArgument("--mix takes three weights: chat,summarize,code");
    }
  }
  return mix;
}

Status RunLoadgen(const LoadgenFlags& f) {
  if (f.endpoint != "chat" && f.endpoint != "completions") {
    return Status::InvalidArgument("--endpoint must be chat or completions");
  }
  if (f.rate < 0 || !std::isfinite(f.rate)) return Status::InvalidArgument("--rate must be >= 0");
  if (f.concurrency < 0) return Status::InvalidArgument("--concurrency must be >= 0");
  if (f.rate == 0 && f.concurrency == 0) {
    return Status::InvalidArgument("give --rate (Poisson requests/s) or --concurrency (or both)");
  }
  if (f.num_requests <= 0 || f.num_requests > 10'000'000) {
    return Status::InvalidArgument("--num-requests must be in [1, 1e7]");
  }
  if (f.duration < 0 || f.timeout <= 0) {
    return Status::InvalidArgument("--duration must be >= 0 and --timeout > 0");
  }
  WorkloadOptions w;
  w.num_requests = static_cast<size_t>(f.num_requests);
  w.seed = f.seed;
  JISU_ASSIGN_OR_RETURN(w.mix, ParseMix(f.mix));
  w.max_tokens = {f.max_tokens_chat, f.max_tokens_summarize, f.max_tokens_code};
  w.summarize_words = f.summarize_words;
  w.shared_prefix_share = f.shared_prefix_share;
  w.num_users = f.num_users;
  w.zipf_s = f.zipf_s;
  JISU_RETURN_IF_ERROR(w.Validate());

  ClientOptions client;
  JISU_ASSIGN_OR_RETURN(client.base, ParseBaseUrl(f.base_url));
  client.api_key = f.api_key;
  client.verify_tls = !f.insecure;
  client.timeout_s = f.timeout;

  const bool fixed = f.prompt_tokens > 0;
  std::vector<RequestSpec> specs;
  if (fixed) {
    if (f.endpoint != "completions") {
      return Status::InvalidArgument("--prompt-tokens sends token ids: use --endpoint completions");
    }
    FixedWorkloadOptions fw;
    fw.num_requests = w.num_requests;
    fw.prompt_tokens = f.prompt_tokens;
    fw.max_tokens = f.output_tokens;
    fw.token_id_limit = f.token_id_limit;
    fw.seed = f.seed;
    JISU_RETURN_IF_ERROR(fw.Validate());
    specs = GenerateFixedWorkload(fw);
  } else {
    JISU_ASSIGN_OR_RETURN(Corpus corpus, LoadCorpus(f.workload_dir));
    JISU_ASSIGN_OR_RETURN(specs, GenerateWorkload(corpus, w));
  }
  BodyOptions body;
  body.model = f.model;
  if (body.model.empty()) {
    JISU_ASSIGN_OR_RETURN(body.model, FetchFirstModelId(client));
  }
  body.endpoint = f.endpoint == "chat" ? Endpoint::kChat : Endpoint::kCompletions;
  body.temperature = f.temperature;
  body.ignore_eos = f.ignore_eos || fixed;  // fixed lengths need it
  body.send_user = !f.no_user;
  std::vector<std::string> bodies;
  bodies.reserve(specs.size());
  for (const RequestSpec& s : specs) bodies.push_back(BuildRequestBody(s, body));

  if (!f.save_requests.empty()) {
    std::ofstream out(f.save_requests);
    for (const std::string& b : bodies) out << b << "\n";
    if (!out) return Status::IoError("cannot write --save-requests " + f.save_requests);
  }
  RunOptions run;
  if (f.rate > 0) run.arrivals = PoissonArrivals(specs.size(), f.rate, f.seed);
  run.max_concurrency = f.concurrency;
  run.duration_s = f.duration;
  std::fprintf(stderr, "loadgen: %zu requests to %s:%d%s/%s, model '%s', %s\n", specs.size(),
               client.base.host.c_str(), client.base.port, client.base.prefix.c_str(),
               f.endpoint.c_str(), body.model.c_str(),
               f.rate > 0 ? ("Poisson " + std::to_string(f.rate) + " req/s").c_str()
                          : ("concurrency " + std::to_string(f.concurrency)).c_str());
  const std::string path = EndpointPath(body.endpoint);
  RunOutcome outcome = RunLoad(specs.size(), run, [&](size_t i) {
    RequestResult r = SendStreaming(client, path, bodies[i]);
    r.cls = static_cast<int>(specs[i].cls);
    return r;
  });

  Report report = BuildReport(outcome.results, outcome.wall_s, {f.slo_ttft_ms, f.slo_tpot_ms});
  report.not_started = outcome.not_started;
  std::printf("%s", FormatReport(report).c_str());

  if (!f.out.empty()) {
    nlohmann::json j = ReportToJson(report);
    j["label"] = f.label;
    j["config"] = {{"base_url", f.base_url},
                   {"model", body.model},
                   {"endpoint", f.endpoint},
                   {"rate", f.rate},
                   {"concurrency", f.concurrency},
                   {"num_requests", f.num_requests},
                   {"seed", f.seed},
                   {"duration", f.duration},
                   {"mix", w.mix},
                   {"shared_prefix_share", w.shared_prefix_share},
                   {"num_users", w.num_users},
                   {"zipf_s", w.zipf_s},
                   {"max_tokens", w.max_tokens},
                   {"summarize_words", w.summarize_words},
                   {"ignore_eos", body.ignore_eos},
                   {"prompt_tokens", f.prompt_tokens},
                   {"output_tokens", fixed ? f.output_tokens : 0},
                   {"temperature", f.temperature}};
    nlohmann::json rows = nlohmann::json::array();
    for (const RequestResult& r : outcome.results) {
      const RequestSpec& s = specs[r.index];
      rows.push_back({{"i", r.index},
                      {"class", RequestClassName(s.cls)},
                      {"user", s.user},
                      {"shared_prefix", s.shared_prefix},
                      {"start_s", r.start_s},
                      {"ttft_ms", r.ttft_s * 1e3},
                      {"e2e_ms", r.e2e_s * 1e3},
                      {"prompt_tokens", r.prompt_tokens},
                      {"cached_tokens", r.cached_tokens},
                      {"output_tokens", r.output_tokens()},
                      {"error", r.ok() ? "" : ErrorKey(r)}});
    }
    j["requests"] = std::move(rows);
    std::ofstream out(f.out);
    if (!out) return Status::IoError("cannot write --out " + f.out);
    out << j.dump(1) << "\n";
    if (!out) return Status::IoError("writing --out " + f.out + " failed");
  }
  return Status::Ok();
}

}  // namespace

void RegisterLoadgen(CLI::App& app) {
  auto flags = std::make_shared<LoadgenFlags>();
  CLI::App* sub = app.add_subcommand(
      "loadgen", "Measure an OpenAI-compatible server under a mixed streaming workload");
  sub->add_option("--base-url", flags->base_url, "Server URL (http[s]://host:port[/v1])")
      ->capture_default_str();
  sub->add_option("--model", flags->model, "Model name (default: first id of GET /v1/models)");
  sub->add_option("--api-key", flags->api_key, "Bearer token");
  sub->add_flag("--insecure", flags->insecure,
                "https: do not verify the server's certificate (self-signed endpoints)");
  sub->add_option("--endpoint", flags->endpoint, "chat | completions")->capture_default_str();
  sub->add_option("--rate", flags->rate, "Poisson arrival rate, requests/s");
  sub->add_option("--concurrency", flags->concurrency,
                  "Requests in flight (alone: closed loop; with --rate: a cap)");
  sub->add_option("--num-requests", flags->num_requests, "Requests in the set")
      ->capture_default_str();
  sub->add_option("--seed", flags->seed, "Seed of the request set and arrival times")
      ->capture_default_str();
  sub->add_option("--duration", flags->duration, "Start no request after this many seconds");
  sub->add_option("--mix", flags->mix, "Weights chat,summarize,code")->capture_default_str();
  sub->add_option("--shared-prefix-share", flags->shared_prefix_share,
                  "Share of requests starting with the common system prompt")
      ->capture_default_str();
  sub->add_option("--num-users", flags->num_users, "Distinct `user` ids")->capture_default_str();
  sub->add_option("--zipf-s", flags->zipf_s, "Zipf exponent of user popularity")
      ->capture_default_str();
  sub->add_option("--max-tokens-chat", flags->max_tokens_chat)->capture_default_str();
  sub->add_option("--max-tokens-summarize", flags->max_tokens_summarize)->capture_default_str();
  sub->add_option("--max-tokens-code", flags->max_tokens_code)->capture_default_str();
  sub->add_option("--summarize-words", flags->summarize_words, "Document length to summarize")
      ->capture_default_str();
  sub->add_flag("--ignore-eos", flags->ignore_eos,
                "Send ignore_eos (vLLM extension) so outputs run to max_tokens");
  sub->add_flag("--no-user", flags->no_user, "Do not send the `user` field");
  sub->add_option("--prompt-tokens", flags->prompt_tokens,
                  "Fixed workload instead of the mixed one: prompts of this many random token "
                  "ids (distinct per request), --endpoint completions, ignore_eos");
  sub->add_option("--output-tokens", flags->output_tokens, "Fixed workload: max_tokens")
      ->capture_default_str();
  sub->add_option("--token-id-limit", flags->token_id_limit,
                  "Fixed workload: token ids are drawn from [3, this)")
      ->capture_default_str();
  sub->add_option("--temperature", flags->temperature)->capture_default_str();
  sub->add_option("--slo-ttft-ms", flags->slo_ttft_ms)->capture_default_str();
  sub->add_option("--slo-tpot-ms", flags->slo_tpot_ms)->capture_default_str();
  sub->add_option("--timeout", flags->timeout, "Seconds per request (and per silence)")
      ->capture_default_str();
  sub->add_option("--workload-dir", flags->workload_dir, "Corpus folder")->capture_default_str();
  sub->add_option("--out", flags->out, "Write the report as JSON here");
  sub->add_option("--save-requests", flags->save_requests,
                  "Write the request bodies here, one JSON per line (to replay elsewhere)");
  sub->add_option("--label", flags->label, "Free text stored in the JSON");
  sub->callback([flags] { ReportStatus(RunLoadgen(*flags)); });
}

}  // namespace jisu::cli
