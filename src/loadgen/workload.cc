#include "loadgen/workload.h"

#include <fstream>
#include <map>
#include <sstream>

#include "loadgen/random.h"

namespace jisu::loadgen {
namespace {

Result<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open workload file " + path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

// Splits on lines for which `is_separator` holds; drops empty pieces.
template <typename Pred>
std::vector<std::string> SplitOnLines(const std::string& text, Pred is_separator) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line, current;
  auto flush = [&] {
    std::string t = Trim(current);
    if (!t.empty()) out.push_back(std::move(t));
    current.clear();
  };
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (is_separator(line)) {
      flush();
    } else {
      current += line;
      current += '\n';
    }
  }
  flush();
  return out;
}

std::vector<std::string> Words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(std::move(w));
  return words;
}

const char* const kCodeTasks[] = {
    "Rewrite this code in Python, keeping its behaviour, and explain each step:",
    "Write thorough unit tests for this code, covering edge cases:",
    "Extend this code with error handling and input validation, then show the full result:",
    "Explain what this code does line by line, then write an improved version:",
    "Write a complete program that uses this code, with a command line interface:",
};

const char* const kSummaryTasks[] = {
    "Summarize the following text in three sentences.",
    "Give a short summary of this passage.",
    "What is the main point of the following text? Answer briefly.",
};

const char* const kFollowUps[] = {
    "Can you explain that in simpler terms?",
    "Give me an example.",
    "Why is that?",
    "What would be a good next step?",
    "Can you say more about the second point?",
};

}  // namespace

const char* RequestClassName(RequestClass c) {
  switch (c) {
    case RequestClass::kChat:
      return "chat";
    case RequestClass::kSummarize:
      return "summarize";
    case RequestClass::kCode:
      return "code";
  }
  return "?";
}

Result<Corpus> LoadCorpus(const std::string& dir) {
  Corpus c;
  JISU_ASSIGN_OR_RETURN(std::string prose, ReadFile(dir + "/prose.txt"));
  JISU_ASSIGN_OR_RETURN(std::string code, ReadFile(dir + "/code.txt"));
  JISU_ASSIGN_OR_RETURN(std::string questions, ReadFile(dir + "/questions.txt"));
  JISU_ASSIGN_OR_RETURN(std::string system, ReadFile(dir + "/system_prompt.txt"));
  c.passages = SplitOnLines(prose, [](const std::string& l) { return Trim(l).empty(); });
  c.code = SplitOnLines(code, [](const std::string& l) { return l.rfind("-----", 0) == 0; });
  {
    std::istringstream in(questions);
    for (std::string line; std::getline(in, line);) {
      std::string t = Trim(line);
      if (!t.empty() && t[0] != '#') c.questions.push_back(std::move(t));
    }
  }
  c.system_prompt = Trim(system);
  if (c.passages.empty() || c.code.empty() || c.questions.empty() || c.system_prompt.empty()) {
    return Status::InvalidArgument("workload corpus in " + dir +
                                   " has an empty part (prose, code, questions or system prompt)");
  }
  return c;
}

Status WorkloadOptions::Validate() const {
  double total = 0;
  for (double w : mix) {
    if (!(w >= 0)) return Status::InvalidArgument("--mix: weights must be >= 0");
    total += w;
  }
  if (!(total > 0)) return Status::InvalidArgument("--mix: at least one weight must be > 0");
  for (int32_t m : max_tokens) {
    if (m <= 0) return Status::InvalidArgument("max_tokens per class must be > 0");
  }
  if (!(shared_prefix_share >= 0 && shared_prefix_share <= 1)) {
    return Status::InvalidArgument("--shared-prefix-share must be in [0, 1]");
  }
  if (num_users <= 0 || num_users > 10'000'000) {
    return Status::InvalidArgument("--num-users must be in [1, 1e7]");
  }
  if (!(zipf_s >= 0 && zipf_s <= 10)) return Status::InvalidArgument("--zipf-s must be in [0, 10]");
  if (summarize_words <= 0) return Status::InvalidArgument("--summarize-words must be > 0");
  if (max_chat_history < 0) return Status::InvalidArgument("--max-chat-history must be >= 0");
  if (num_requests == 0) return Status::InvalidArgument("--num-requests must be > 0");
  return Status::Ok();
}

Result<std::vector<RequestSpec>> GenerateWorkload(const Corpus& corpus, const WorkloadOptions& o) {
  JISU_RETURN_IF_ERROR(o.Validate());
  if (corpus.passages.empty() || corpus.code.empty() || corpus.questions.empty()) {
    return Status::InvalidArgument("workload corpus is empty");
  }
  Rng rng(o.seed);
  const ZipfSampler users(o.num_users, o.zipf_s);
  double total = 0;
  for (double w : o.mix) total += w;

  // Flattened prose for summarization windows that cross passage boundaries.
  std::vector<std::string> words;
  for (const auto& p : corpus.passages) {
    for (auto& w : Words(p)) words.push_back(std::move(w));
  }
  // Per user: the conversation so far (user/assistant pairs), continued by the next chat turn.
  std::map<int64_t, std::vector<Message>> conversations;

  std::vector<RequestSpec> out(o.num_requests);
  for (RequestSpec& r : out) {
    double u = rng.Uniform() * total;
    int cls = 0;
    while (cls < kNumClasses - 1 && u >= o.mix[static_cast<size_t>(cls)]) {
      u -= o.mix[static_cast<size_t>(cls)];
      ++cls;
    }
    // Skip zero-weight classes the float walk could land on at the boundary.
    while (o.mix[static_cast<size_t>(cls)] == 0) cls = (cls + kNumClasses - 1) % kNumClasses;
    r.cls = static_cast<RequestClass>(cls);
    r.max_tokens = o.max_tokens[static_cast<size_t>(cls)];
    const int64_t user = users.Sample(rng);
    r.user = "user-" + std::to_string(user);
    r.shared_prefix = rng.Uniform() < o.shared_prefix_share;
    if (r.shared_prefix) r.messages.push_back({"system", corpus.system_prompt});

    switch (r.cls) {
      case RequestClass::kChat: {
        std::vector<Message>& conv = conversations[user];
        if (conv.size() / 2 >= static_cast<size_t>(o.max_chat_history)) conv.clear();
        std::string question;
        if (conv.empty() || rng.Uniform() < 0.5) {
          question = corpus.questions[rng.Below(corpus.questions.size())];
        } else {
          question = kFollowUps[rng.Below(std::size(kFollowUps))];
        }
        for (const Message& m : conv) r.messages.push_back(m);
        r.messages.push_back({"user", question});
        // The earlier reply is fixed text, not the server's answer: the request set must not
        // depend on what a server generated.
        const std::string& reply = corpus.passages[rng.Below(corpus.passages.size())];
        conv.push_back({"user", question});
        conv.push_back({"assistant", reply.substr(0, 600)});
        break;
      }
      case RequestClass::kSummarize: {
        const size_t n = std::min<size_t>(static_cast<size_t>(o.summarize_words), words.size());
        const size_t start = rng.Below(words.size() - n + 1);
        std::string text = kSummaryTasks[rng.Below(std::size(kSummaryTasks))];
        text += "\n\n";
        for (size_t i = start; i < start + n; ++i) {
          if (i > start) text += ' ';
          text += words[i];
        }
        r.messages.push_back({"user", std::move(text)});
        break;
      }
      case RequestClass::kCode: {
        std::string text = kCodeTasks[rng.Below(std::size(kCodeTasks))];
        text += "\n\n";
        text += corpus.code[rng.Below(corpus.code.size())];
        r.messages.push_back({"user", std::move(text)});
        break;
      }
    }
  }
  return out;
}

std::string FlattenPrompt(const std::vector<Message>& messages) {
  std::string p;
  for (const Message& m : messages) {
    if (m.role == "system") {
      p += m.content + "\n\n";
    } else {
      p += (m.role == "user" ? "User: " : "Assistant: ") + m.content + "\n";
    }
  }
  p += "Assistant:";
  return p;
}

Status FixedWorkloadOptions::Validate() const {
  if (num_requests == 0) return Status::InvalidArgument("fixed workload: no requests");
  if (prompt_tokens < 1 || prompt_tokens > 1'000'000) {
    return Status::InvalidArgument("--prompt-tokens must be in [1, 1e6]");
  }
  if (max_tokens < 1) return Status::InvalidArgument("--output-tokens must be >= 1");
  if (token_id_limit < 4) return Status::InvalidArgument("--token-id-limit must be >= 4");
  return Status::Ok();
}

std::vector<RequestSpec> GenerateFixedWorkload(const FixedWorkloadOptions& o) {
  std::vector<RequestSpec> specs(o.num_requests);
  Rng rng(o.seed ^ 0x6a09e667f3bcc909ULL);
  const uint64_t span = static_cast<uint64_t>(o.token_id_limit - 3);
  for (size_t i = 0; i < specs.size(); ++i) {
    RequestSpec& s = specs[i];
    s.cls = RequestClass::kChat;  // reported as one class
    s.user = "fixed-" + std::to_string(i);
    s.max_tokens = o.max_tokens;
    s.prompt_tokens.resize(static_cast<size_t>(o.prompt_tokens));
    for (int32_t& t : s.prompt_tokens) t = 3 + static_cast<int32_t>(rng.Below(span));
  }
  return specs;
}

}  // namespace jisu::loadgen
