#include "server/tools/tool_call_parser.h"

#include <nlohmann/json.hpp>
#include <utility>

#include "format/json_util.h"

namespace jisu::server {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::string_view kHermesOpen = "<tool_call>";
constexpr std::string_view kHermesClose = "</tool_call>";
constexpr std::string_view kPythonTag = "<|python_tag|>";
constexpr std::string_view kMistralCalls = "[TOOL_CALLS]";
constexpr std::string_view kMistralArgs = "[ARGS]";
constexpr std::string_view kMistralCallId = "[CALL_ID]";

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

size_t SkipSpace(std::string_view s, size_t i = 0) {
  while (i < s.size() && IsSpace(s[i])) ++i;
  return i;
}

std::string_view Trim(std::string_view s) {
  const size_t b = SkipSpace(s);
  size_t e = s.size();
  while (e > b && IsSpace(s[e - 1])) --e;
  return s.substr(b, e - b);
}

// Whether s is a proper prefix of `marker` (the rest may still arrive).
bool IsMarkerPrefix(std::string_view s, std::string_view marker) {
  return s.size() < marker.size() && marker.substr(0, s.size()) == s;
}

// The length of the longest suffix of `s` that is a proper prefix of `marker`.
size_t HeldPrefix(std::string_view s, std::string_view marker) {
  for (size_t n = std::min(s.size(), marker.size() - 1); n > 0; --n) {
    if (marker.substr(0, n) == s.substr(s.size() - n)) return n;
  }
  return 0;
}

bool IsNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-' || c == '.';
}

// Parses untrusted JSON text (depth-bounded first: nlohmann's destructor recurses per level).
std::optional<Json> ParseBounded(std::string_view text) {
  if (!JsonDepthWithin(text)) return std::nullopt;
  Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return std::nullopt;
  return j;
}

std::optional<ToolCall> CallFromObject(const Json& obj) {
  if (!obj.is_object()) return std::nullopt;
  auto name = obj.find("name");
  if (name == obj.end() || !name->is_string() || name->get<std::string>().empty()) {
    return std::nullopt;
  }
  Json args = Json::object();
  for (const char* key : {"arguments", "parameters"}) {
    auto it = obj.find(key);
    if (it == obj.end()) continue;
    args = *it;
    break;
  }
  if (args.is_string()) {  // arguments as JSON text, as OpenAI sends them
    auto inner = ParseBounded(args.get<std::string>());
    if (!inner) return std::nullopt;
    args = std::move(*inner);
  }
  if (!args.is_object()) return std::nullopt;
  return ToolCall{name->get<std::string>(),
                  args.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

}  // namespace

size_t JsonValueEnd(std::string_view s) {
  if (s.empty() || (s[0] != '{' && s[0] != '[')) return 0;
  std::string closers;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{') {
      closers.push_back('}');
    } else if (c == '[') {
      closers.push_back(']');
    } else if (c == '}' || c == ']') {
      // A mismatched bracket ends the value here: it fails to parse, as it should.
      if (c != closers.back()) return i + 1;
      closers.pop_back();
      if (closers.empty()) return i + 1;
    }
  }
  return std::string_view::npos;
}

std::optional<ToolCall> ToolCallFromJson(std::string_view value) {
  auto j = ParseBounded(value);
  if (!j) return std::nullopt;
  return CallFromObject(*j);
}

ToolCallParser::ToolCallParser(ToolCallFormat format) : format_(format) {}

void ToolCallParser::Push(std::string_view text, std::vector<ToolParseEvent>* out) {
  buf_.append(text);
  Advance(/*final=*/false, out);
}

void ToolCallParser::Finish(std::vector<ToolParseEvent>* out) {
  Advance(/*final=*/true, out);
  if (num_calls_ == 0 && !held_ws_.empty()) {
    AppendContent(held_ws_, out);  // a reply without calls keeps every byte
  }
  held_ws_.clear();
}

void ToolCallParser::Advance(bool final, std::vector<ToolParseEvent>* out) {
  for (;;) {
    bool progressed = false;
    switch (state_) {
      case State::kText:
        progressed = format_ == ToolCallFormat::kLlama3Json ? StepLlamaText(final, out)
                                                            : StepText(final, out);
        break;
      case State::kPlain:
        EmitText(buf_, out);
        buf_.clear();
        break;
      case State::kHermesCall:
        progressed = StepHermesCall(final, out);
        break;
      case State::kJsonCall:
        progressed = StepJsonCall(final, out);
        break;
      case State::kMistralHead:
        progressed = StepMistralHead(final, out);
        break;
      case State::kMistralArgs:
        progressed = StepMistralArgs(final, out);
        break;
    }
    if (!progressed) return;
  }
}

bool ToolCallParser::StepText(bool final, std::vector<ToolParseEvent>* out) {
  if (format_ == ToolCallFormat::kNone) {
    EmitText(buf_, out);
    buf_.clear();
    return false;
  }
  const bool hermes = format_ == ToolCallFormat::kHermes;
  const std::string_view marker = hermes ? kHermesOpen : kMistralCalls;
  const size_t p = buf_.find(marker);
  if (p == std::string::npos) {
    const size_t keep = final ? 0 : HeldPrefix(buf_, marker);
    EmitText(std::string_view(buf_).substr(0, buf_.size() - keep), out);
    buf_.erase(0, buf_.size() - keep);
    return false;
  }
  EmitText(std::string_view(buf_).substr(0, p), out);
  block_ = held_ws_ + std::string(marker);
  held_ws_.clear();
  buf_.erase(0, p + marker.size());
  state_ = hermes ? State::kHermesCall : State::kMistralHead;
  return true;
}

// A Llama reply is a call when, after whitespace and an optional <|python_tag|>, it opens with
// '{'; after a call, ';' separates the next one.
bool ToolCallParser::StepLlamaText(bool final, std::vector<ToolParseEvent>* out) {
  size_t i = 0;
  for (;;) {
    i = SkipSpace(buf_, i);
    if (num_calls_ > 0 && i < buf_.size() && buf_[i] == ';') {
      ++i;
      continue;
    }
    if (buf_.compare(i, kPythonTag.size(), kPythonTag) == 0) {
      i += kPythonTag.size();
      continue;
    }
    break;
  }
  const std::string_view rest = std::string_view(buf_).substr(i);
  if (!final && (rest.empty() || IsMarkerPrefix(rest, kPythonTag))) return false;  // undecided
  if (!rest.empty() && rest[0] == '{') {
    block_ = held_ws_ + buf_.substr(0, i);
    held_ws_.clear();
    buf_.erase(0, i);
    state_ = State::kJsonCall;
    return true;
  }
  state_ = State::kPlain;  // prose: everything from here is content
  return true;
}

bool ToolCallParser::StepHermesCall(bool final, std::vector<ToolParseEvent>* out) {
  const size_t p = buf_.find(kHermesClose);
  if (p == std::string::npos && !final) return false;
  const size_t body_end = p == std::string::npos ? buf_.size() : p;
  const size_t consumed = p == std::string::npos ? buf_.size() : p + kHermesClose.size();
  auto call = ToolCallFromJson(Trim(std::string_view(buf_).substr(0, body_end)));
  if (call) {
    EmitCall(std::move(*call), out);
  } else {
    AppendContent(block_ + buf_.substr(0, consumed), out);
  }
  buf_.erase(0, consumed);
  block_.clear();
  state_ = State::kText;
  return true;
}

bool ToolCallParser::StepJsonCall(bool final, std::vector<ToolParseEvent>* out) {
  const size_t end = JsonValueEnd(buf_);
  if (end == std::string::npos) {
    if (!final) return false;
    AppendContent(block_ + buf_, out);
    buf_.clear();
    block_.clear();
    state_ = State::kPlain;
    return true;
  }
  auto call = ToolCallFromJson(std::string_view(buf_).substr(0, end));
  if (call) {
    EmitCall(std::move(*call), out);
    state_ = State::kText;
  } else {
    AppendContent(block_ + buf_.substr(0, end), out);
    state_ = State::kPlain;
  }
  buf_.erase(0, end);
  block_.clear();
  return true;
}

// After [TOOL_CALLS]: a JSON array of calls (Nemo), or a function name, an optional
// [CALL_ID] id, then [ARGS] (later Mistral models).
bool ToolCallParser::StepMistralHead(bool final, std::vector<ToolParseEvent>* out) {
  const size_t i = SkipSpace(buf_);
  auto fail = [&] {  // the marker was text: what follows is read as text again
    AppendContent(block_, out);
    block_.clear();
    state_ = State::kText;
    return true;
  };
  if (i == buf_.size()) return final ? fail() : false;
  if (buf_[i] == '[') {  // a name cannot start with '[': "[ARGS]" here is malformed too
    const std::string_view rest = std::string_view(buf_).substr(i);
    const size_t end = JsonValueEnd(rest);
    if (end == std::string::npos) {
      if (!final) return false;
      AppendContent(block_ + buf_, out);
      buf_.clear();
      block_.clear();
      state_ = State::kText;
      return true;
    }
    std::vector<ToolCall> calls;
    auto arr = ParseBounded(rest.substr(0, end));
    if (arr && arr->is_array()) {
      for (const Json& e : *arr) {
        auto c = CallFromObject(e);
        if (!c) {
          calls.clear();
          break;
        }
        calls.push_back(std::move(*c));
      }
    }
    if (calls.empty()) {
      AppendContent(block_ + buf_.substr(0, i + end), out);
    } else {
      for (ToolCall& c : calls) EmitCall(std::move(c), out);
    }
    buf_.erase(0, i + end);
    block_.clear();
    state_ = State::kText;
    return true;
  }
  // name ([CALL_ID] id)? [ARGS]
  const size_t args = buf_.find(kMistralArgs, i);
  const size_t scan_end = args == std::string::npos ? buf_.size() : args;
  size_t name_end = std::string::npos;
  for (size_t j = i; j < scan_end;) {
    const std::string_view rest = std::string_view(buf_).substr(j, scan_end - j);
    if (rest.substr(0, kMistralCallId.size()) == kMistralCallId) {
      if (name_end != std::string::npos) return fail();
      name_end = j;
      j += kMistralCallId.size();
      continue;
    }
    if (args == std::string::npos &&
        (IsMarkerPrefix(rest, kMistralArgs) || IsMarkerPrefix(rest, kMistralCallId))) {
      break;  // a marker may be arriving
    }
    if (!IsNameChar(buf_[j])) return fail();
    ++j;
  }
  if (args == std::string::npos) return final ? fail() : false;
  if (name_end == std::string::npos) name_end = args;
  mistral_name_ = buf_.substr(i, name_end - i);
  if (mistral_name_.empty()) return fail();
  block_ += buf_.substr(0, args + kMistralArgs.size());
  buf_.erase(0, args + kMistralArgs.size());
  state_ = State::kMistralArgs;
  return true;
}

bool ToolCallParser::StepMistralArgs(bool final, std::vector<ToolParseEvent>* out) {
  const size_t i = SkipSpace(buf_);
  const std::string_view rest = std::string_view(buf_).substr(i);
  const size_t end = rest.empty() ? std::string::npos : JsonValueEnd(rest);
  if (!rest.empty() && rest[0] != '{') {
    AppendContent(block_, out);  // no arguments object: the rest is text again
    block_.clear();
    state_ = State::kText;
    return true;
  }
  if (end == std::string::npos) {
    if (!final) return false;
    AppendContent(block_ + buf_, out);
    buf_.clear();
    block_.clear();
    state_ = State::kText;
    return true;
  }
  auto args = ParseBounded(rest.substr(0, end));
  if (args && args->is_object()) {
    EmitCall({mistral_name_, args->dump(-1, ' ', false, Json::error_handler_t::replace)}, out);
  } else {
    AppendContent(block_ + buf_.substr(0, i + end), out);
  }
  buf_.erase(0, i + end);
  block_.clear();
  state_ = State::kText;
  return true;
}

void ToolCallParser::EmitText(std::string_view text, std::vector<ToolParseEvent>* out) {
  if (after_call_) {
    text = text.substr(SkipSpace(text));
    if (text.empty()) return;
    after_call_ = false;
  }
  size_t end = text.size();
  while (end > 0 && IsSpace(text[end - 1])) --end;
  if (end == 0) {
    held_ws_.append(text);
    return;
  }
  std::string s = std::move(held_ws_);
  s.append(text.substr(0, end));
  held_ws_.assign(text.substr(end));
  AppendContent(s, out);
}

void ToolCallParser::AppendContent(std::string_view text, std::vector<ToolParseEvent>* out) {
  if (text.empty()) return;
  after_call_ = false;
  if (!out->empty() && !out->back().call) {
    out->back().content.append(text);
  } else {
    out->push_back({std::string(text), std::nullopt});
  }
}

void ToolCallParser::EmitCall(ToolCall call, std::vector<ToolParseEvent>* out) {
  ++num_calls_;
  after_call_ = true;
  held_ws_.clear();
  out->push_back({"", std::move(call)});
}

}  // namespace jisu::server
