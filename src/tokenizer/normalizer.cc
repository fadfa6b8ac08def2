#include "tokenizer/normalizer.h"

#include "tokenizer/json_util.h"
#include "tokenizer/unicode_nfc.h"

namespace jisu {

using json_util::Json;

Result<Pattern> ParsePattern(const Json& j) {
  if (!j.is_object()) return Status::InvalidArgument("pattern is not an object");
  std::string s;
  std::string regex;
  if (json_util::Has(j, "String")) {
    JISU_RETURN_IF_ERROR(json_util::GetString(j, "String", &s, true));
    if (s.empty()) return Status::InvalidArgument("empty String pattern");
    regex = Regex::Quote(s);
  } else if (json_util::Has(j, "Regex")) {
    JISU_RETURN_IF_ERROR(json_util::GetString(j, "Regex", &regex, true));
  } else {
    return Status::InvalidArgument("pattern is neither String nor Regex");
  }
  JISU_ASSIGN_OR_RETURN(auto compiled, Regex::Compile(regex));
  return Pattern{std::shared_ptr<const Regex>(std::move(compiled))};
}

std::string ReplaceAll(const Pattern& pattern, std::string_view text, std::string_view content) {
  std::vector<Regex::Span> spans;
  pattern.regex->FindAll(text, &spans);
  if (spans.empty()) return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t prev = 0;
  for (const auto& [b, e] : spans) {
    if (b == e) continue;  // tokenizers never replaces empty matches
    out.append(text.substr(prev, b - prev));
    out.append(content);
    prev = e;
  }
  out.append(text.substr(prev));
  return out;
}

Normalizer Normalizer::Nfc() {
  Normalizer n;
  n.steps_.push_back(Step{});
  return n;
}

Result<Normalizer> Normalizer::FromJson(const Json& j) {
  Normalizer n;
  if (j.is_null()) return n;
  JISU_RETURN_IF_ERROR(n.Add(j, 0).WithContext("normalizer"));
  return n;
}

Status Normalizer::Add(const Json& j, int depth) {
  if (depth > 16) return Status::InvalidArgument("nesting too deep");
  if (j.is_null()) return Status::Ok();
  if (!j.is_object()) return Status::InvalidArgument("not an object");
  std::string type;
  JISU_RETURN_IF_ERROR(json_util::GetString(j, "type", &type, true));
  if (type == "Sequence") {
    if (!j.contains("normalizers") || !j["normalizers"].is_array()) {
      return Status::InvalidArgument("Sequence without 'normalizers' array");
    }
    for (const Json& sub : j["normalizers"]) JISU_RETURN_IF_ERROR(Add(sub, depth + 1));
    return Status::Ok();
  }
  Step step;
  if (type == "NFC") {
    step.kind = Step::Kind::kNfc;
  } else if (type == "Prepend") {
    step.kind = Step::Kind::kPrepend;
    JISU_RETURN_IF_ERROR(json_util::GetString(j, "prepend", &step.text, true));
  } else if (type == "Replace") {
    step.kind = Step::Kind::kReplace;
    if (!j.contains("pattern")) return Status::InvalidArgument("Replace without 'pattern'");
    JISU_ASSIGN_OR_RETURN(step.pattern, ParsePattern(j["pattern"]));
    JISU_RETURN_IF_ERROR(json_util::GetString(j, "content", &step.text, true));
  } else if (type == "Strip") {
    step.kind = Step::Kind::kStrip;
    JISU_RETURN_IF_ERROR(json_util::GetBool(j, "strip_left", &step.left));
    JISU_RETURN_IF_ERROR(json_util::GetBool(j, "strip_right", &step.right));
    JISU_ASSIGN_OR_RETURN(auto ws, Regex::Compile("^\\s+|\\s+$"));
    step.pattern.regex = std::move(ws);
  } else {
    return Status::Unsupported("normalizer type '" + type + "'");
  }
  steps_.push_back(std::move(step));
  return Status::Ok();
}

std::string Normalizer::Apply(std::string_view text) const {
  std::string s(text);
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Step::Kind::kNfc:
        s = NfcNormalize(s);
        break;
      case Step::Kind::kPrepend:
        if (!s.empty()) s = step.text + s;
        break;
      case Step::Kind::kReplace:
        s = ReplaceAll(step.pattern, s, step.text);
        break;
      case Step::Kind::kStrip: {
        std::vector<Regex::Span> spans;
        step.pattern.regex->FindAll(s, &spans);
        size_t b = 0, e = s.size();
        for (const auto& [mb, me] : spans) {
          if (mb == 0 && step.left) b = me;
          if (me == s.size() && mb > 0 && step.right) e = mb;
          if (me == s.size() && mb == 0 && step.right) e = b;  // all whitespace
        }
        s = b < e ? s.substr(b, e - b) : std::string();
        break;
      }
    }
  }
  return s;
}

}  // namespace jisu
