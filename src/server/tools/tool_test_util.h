// Helpers of the tool-call tests: the calls a real chat template renders for an assistant turn,
// which is what the model was trained to write (the reference for the parser and the grammars).
#pragma once

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "chat/chat_template.h"

namespace jisu::server::tool_testing {

inline std::string ReadFile(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// The two functions RenderedCalls offers the template; calls use them.
inline nlohmann::ordered_json TestTools() {
  return nlohmann::ordered_json::parse(R"([
    {"type": "function", "function": {"name": "get_weather", "description": "Weather.",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}},
    {"type": "function", "function": {"name": "get_time", "description": "Time.",
      "parameters": {"type": "object", "properties": {"zone": {"type": "string"}}}}}])");
}

// What an upstream template renders for an assistant turn with `calls`: the rendering of the
// conversation with that turn, from where the generation prompt ends (after the last user
// message and the text the prompt puts after it; some templates move the system message or the
// tools next to the last user message, so the whole prompt is not a prefix), less the
// end-of-turn text after the calls.
inline std::optional<std::string> RenderedCalls(const ChatTemplate& t,
                                                const nlohmann::ordered_json& calls,
                                                const std::string& eos) {
  const nlohmann::ordered_json tools = TestTools();
  const std::string question = "Weather in Paris and time in Tokyo?";
  ChatTemplateInputs in;
  in.bos_token = "<s>";
  in.eos_token = eos;
  in.extra["tools"] = tools;
  in.messages = nlohmann::ordered_json::array(
      {{{"role", "system"}, {"content", "Use tools."}}, {{"role", "user"}, {"content", question}}});
  in.add_generation_prompt = true;
  auto prompt = t.Render(in);
  // As the server passes an OpenAI message with null content.
  in.messages.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", calls}});
  in.add_generation_prompt = false;
  auto full = t.Render(in);
  if (!prompt.ok() || !full.ok()) return std::nullopt;
  const size_t q_prompt = prompt->rfind(question), q_full = full->rfind(question);
  if (q_prompt == std::string::npos || q_full == std::string::npos) return std::nullopt;
  std::string after_question = prompt->substr(q_prompt + question.size());
  // QwQ's generation prompt opens (or opens and closes) the thinking the model writes; past
  // turns show none.
  if (const size_t think = after_question.find("<think>"); think != std::string::npos) {
    after_question.resize(think);
  }
  const size_t start = q_full + question.size() + after_question.size();
  if (full->compare(q_full + question.size(), after_question.size(), after_question) != 0) {
    return std::nullopt;
  }
  std::string turn = full->substr(start);
  // Reasoning templates (Qwen3, QwQ) open the turn with its (here empty) thinking.
  if (const size_t p = turn.find("</think>"); p != std::string::npos) turn.erase(0, p + 8);
  for (const std::string& end :
       {eos, std::string("<|eot_id|>"), std::string("<|eom_id|>"), std::string("<|im_end|>"),
        std::string("</s>"), std::string("<|end_of_text|>"), std::string("<sep>")}) {
    if (const size_t p = turn.rfind(end); !end.empty() && p != std::string::npos) {
      turn.resize(p);
    }
  }
  return turn;
}

}  // namespace jisu::server::tool_testing
