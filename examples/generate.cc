// A program that embeds jisu through its public API only (include/jisu/): loads a model, asks it
// one chat question and one plain completion, and streams the text as it is produced.
//
//   example_generate [MODEL] [--device cpu|cuda|auto]
// MODEL: a .gguf file or a Hugging Face folder (default: the one jisu picks, see README).
#include <jisu/llm.h>

#include <cstdio>
#include <cstring>
#include <string>

int main(int argc, char** argv) {
  jisu::LlmOptions options;
  options.kv_memory = "256MiB";
  options.max_model_len = 1024;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
      options.device = argv[++i];
    } else {
      options.model = argv[i];
    }
  }
  auto llm = jisu::Llm::Open(options);
  if (!llm.ok()) {
    std::fprintf(stderr, "example_generate: %s\n", llm.status().ToString().c_str());
    return 1;
  }
  std::printf("model: %s\ndevice: %s\n", (*llm)->model_description().c_str(),
              (*llm)->device().c_str());

  // Streamed chat, greedy.
  jisu::LlmRequest chat;
  chat.messages = {{"user", "Write a Python function that adds two numbers."}};
  chat.sampling.temperature = 0;
  chat.sampling.max_tokens = 48;
  auto stream = (*llm)->Submit(chat);
  if (!stream.ok()) {
    std::fprintf(stderr, "example_generate: %s\n", stream.status().ToString().c_str());
    return 1;
  }
  int64_t tokens = 0;
  jisu::FinishReason reason = jisu::FinishReason::kNone;
  while (auto chunk = (*stream)->Next()) {
    std::fputs(chunk->text.c_str(), stdout);
    tokens += static_cast<int64_t>(chunk->token_ids.size());
    reason = chunk->finish_reason;
  }
  std::printf("\n[chat: %lld tokens, finish %s]\n", static_cast<long long>(tokens),
              jisu::FinishReasonName(reason));

  // A plain completion, read whole.
  jisu::LlmRequest completion;
  completion.prompt = "def fibonacci(n):";
  completion.sampling.temperature = 0;
  completion.sampling.max_tokens = 16;
  auto out = (*llm)->Generate(completion);
  if (!out.ok()) {
    std::fprintf(stderr, "example_generate: %s\n", out.status().ToString().c_str());
    return 1;
  }
  std::printf("%s%s\n[completion: %zu tokens, finish %s]\n", completion.prompt.c_str(),
              out->text.c_str(), out->token_ids.size(), jisu::FinishReasonName(out->finish_reason));
  return tokens > 0 && !out->token_ids.empty() ? 0 : 1;
}
