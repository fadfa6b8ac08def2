#include "tokenizer/pre_tokenizer.h"

#include <algorithm>

#include "tokenizer/byte_level.h"
#include "tokenizer/json_util.h"
#include "tokenizer/normalizer.h"

namespace jisu {

using json_util::Json;

namespace {

struct Span {
  size_t begin, end;
  bool flag;  // is_match before the behavior fold; "remove" after
};

Result<SplitBehavior> ParseBehavior(const std::string& s) {
  if (s == "Removed") return SplitBehavior::kRemoved;
  if (s == "Isolated") return SplitBehavior::kIsolated;
  if (s == "MergedWithPrevious") return SplitBehavior::kMergedWithPrevious;
  if (s == "MergedWithNext") return SplitBehavior::kMergedWithNext;
  if (s == "Contiguous") return SplitBehavior::kContiguous;
  return Status::InvalidArgument("unknown split behavior '" + s + "'");
}

Result<PrependScheme> ParseScheme(const std::string& s) {
  if (s == "always") return PrependScheme::kAlways;
  if (s == "first") return PrependScheme::kFirst;
  if (s == "never") return PrependScheme::kNever;
  return Status::InvalidArgument("unknown prepend_scheme '" + s + "'");
}

}  // namespace

void SplitPiece(const Piece& piece, const Regex& pattern, SplitBehavior behavior, bool invert,
                std::vector<Piece>* out) {
  const std::string& s = piece.text;
  std::vector<Span> matches;
  if (s.empty()) {
    matches.push_back({0, 0, false});
  } else {
    std::vector<Regex::Span> found;
    pattern.FindAll(s, &found);
    size_t prev = 0;
    for (const auto& [b, e] : found) {
      if (b < prev) continue;
      if (b != prev) matches.push_back({prev, b, false});
      matches.push_back({b, e, true});
      prev = e;
    }
    if (prev != s.size()) matches.push_back({prev, s.size(), false});
  }
  if (invert) {
    for (Span& m : matches) m.flag = !m.flag;
  }
  std::vector<Span> splits;  // flag = remove
  switch (behavior) {
    case SplitBehavior::kIsolated:
      for (const Span& m : matches) splits.push_back({m.begin, m.end, false});
      break;
    case SplitBehavior::kRemoved:
      splits = matches;
      break;
    case SplitBehavior::kContiguous: {
      bool previous_match = false;
      for (const Span& m : matches) {
        if (m.flag == previous_match && !splits.empty()) {
          splits.back().end = m.end;
        } else {
          splits.push_back({m.begin, m.end, false});
        }
        previous_match = m.flag;
      }
      break;
    }
    case SplitBehavior::kMergedWithPrevious: {
      bool previous_match = false;
      for (const Span& m : matches) {
        if (m.flag && !previous_match && !splits.empty()) {
          splits.back().end = m.end;
        } else {
          splits.push_back({m.begin, m.end, false});
        }
        previous_match = m.flag;
      }
      break;
    }
    case SplitBehavior::kMergedWithNext: {
      bool previous_match = false;
      for (auto it = matches.rbegin(); it != matches.rend(); ++it) {
        if (it->flag && !previous_match && !splits.empty()) {
          splits.back().begin = it->begin;
        } else {
          splits.push_back({it->begin, it->end, false});
        }
        previous_match = it->flag;
      }
      std::reverse(splits.begin(), splits.end());
      break;
    }
  }
  for (const Span& sp : splits) {
    if (sp.flag || sp.end <= sp.begin) continue;
    out->push_back(Piece{s.substr(sp.begin, sp.end - sp.begin), piece.at_start && sp.begin == 0});
  }
}

Result<PreTokenizer::Step> PreTokenizer::ByteLevelStep(bool add_prefix_space, bool use_regex) {
  Step step;
  step.kind = Step::Kind::kByteLevel;
  step.add_prefix_space = add_prefix_space;
  if (use_regex) {
    JISU_ASSIGN_OR_RETURN(auto re, Regex::Compile(kGpt2Pattern));
    step.pattern.regex = std::move(re);
  }
  return step;
}

Result<PreTokenizer> PreTokenizer::ByteLevel(bool add_prefix_space, bool use_regex) {
  PreTokenizer p;
  JISU_ASSIGN_OR_RETURN(Step step, ByteLevelStep(add_prefix_space, use_regex));
  p.steps_.push_back(std::move(step));
  return p;
}

Result<PreTokenizer> PreTokenizer::SplitThenByteLevel(std::string_view regex,
                                                      bool add_prefix_space) {
  PreTokenizer p;
  Step split;
  split.kind = Step::Kind::kSplit;
  JISU_ASSIGN_OR_RETURN(auto re, Regex::Compile(regex));
  split.pattern.regex = std::move(re);
  split.behavior = SplitBehavior::kIsolated;
  p.steps_.push_back(std::move(split));
  JISU_ASSIGN_OR_RETURN(Step bl, ByteLevelStep(add_prefix_space, false));
  p.steps_.push_back(std::move(bl));
  return p;
}

Result<PreTokenizer> PreTokenizer::Metaspace(std::string replacement, PrependScheme scheme,
                                             bool split) {
  PreTokenizer p;
  Step step;
  step.kind = Step::Kind::kMetaspace;
  step.replacement = std::move(replacement);
  step.scheme = scheme;
  if (split) {
    JISU_ASSIGN_OR_RETURN(auto re, Regex::Compile(Regex::Quote(step.replacement)));
    step.pattern.regex = std::move(re);
  }
  p.steps_.push_back(std::move(step));
  return p;
}

Result<PreTokenizer> PreTokenizer::FromJson(const Json& j) {
  PreTokenizer p;
  if (j.is_null()) return p;
  JISU_RETURN_IF_ERROR(p.Add(j, 0).WithContext("pre_tokenizer"));
  return p;
}

Status PreTokenizer::Add(const Json& j, int depth) {
  if (depth > 16) return Status::InvalidArgument("nesting too deep");
  if (j.is_null()) return Status::Ok();
  if (!j.is_object()) return Status::InvalidArgument("not an object");
  std::string type;
  JISU_RETURN_IF_ERROR(json_util::GetString(j, "type", &type, true));
  if (type == "Sequence") {
    if (!j.contains("pretokenizers") || !j["pretokenizers"].is_array()) {
      return Status::InvalidArgument("Sequence without 'pretokenizers' array");
    }
    for (const Json& sub : j["pretokenizers"]) JISU_RETURN_IF_ERROR(Add(sub, depth + 1));
    return Status::Ok();
  }
  if (type == "ByteLevel") {
    bool add_prefix_space = true, use_regex = true;  // tokenizers' defaults
    JISU_RETURN_IF_ERROR(json_util::GetBool(j, "add_prefix_space", &add_prefix_space));
    JISU_RETURN_IF_ERROR(json_util::GetBool(j, "use_regex", &use_regex));
    JISU_ASSIGN_OR_RETURN(Step step, ByteLevelStep(add_prefix_space, use_regex));
    steps_.push_back(std::move(step));
    return Status::Ok();
  }
  if (type == "Split") {
    Step step;
    step.kind = Step::Kind::kSplit;
    if (!j.contains("pattern")) return Status::InvalidArgument("Split without 'pattern'");
    JISU_ASSIGN_OR_RETURN(step.pattern, ParsePattern(j["pattern"]));
    std::string behavior;
    JISU_RETURN_IF_ERROR(json_util::GetString(j, "behavior", &behavior, true));
    JISU_ASSIGN_OR_RETURN(step.behavior, ParseBehavior(behavior));
    JISU_RETURN_IF_ERROR(json_util::GetBool(j, "invert", &step.invert));
    steps_.push_back(std::move(step));
    return Status::Ok();
  }
  if (type == "Metaspace") {
    std::string replacement;
    JISU_RETURN_IF_ERROR(json_util::GetChar(j, "replacement", &replacement));
    PrependScheme scheme = PrependScheme::kAlways;
    if (json_util::Has(j, "prepend_scheme")) {
      std::string s;
      JISU_RETURN_IF_ERROR(json_util::GetString(j, "prepend_scheme", &s));
      JISU_ASSIGN_OR_RETURN(scheme, ParseScheme(s));
    } else {
      bool add_prefix_space = true;  // older files
      JISU_RETURN_IF_ERROR(json_util::GetBool(j, "add_prefix_space", &add_prefix_space));
      scheme = add_prefix_space ? PrependScheme::kAlways : PrependScheme::kNever;
    }
    bool split = true;
    JISU_RETURN_IF_ERROR(json_util::GetBool(j, "split", &split));
    JISU_ASSIGN_OR_RETURN(PreTokenizer m, Metaspace(replacement, scheme, split));
    steps_.push_back(std::move(m.steps_[0]));
    return Status::Ok();
  }
  if (type == "Punctuation") {
    // tokenizers' is_punc: ASCII punctuation (which takes in symbols such as $+<=>^`|~) or
    // a Unicode P category; each such character is one match, which `behavior` then folds.
    Step step;
    step.kind = Step::Kind::kSplit;
    std::string behavior = "Isolated";
    JISU_RETURN_IF_ERROR(json_util::GetString(j, "behavior", &behavior));
    JISU_ASSIGN_OR_RETURN(step.behavior, ParseBehavior(behavior));
    JISU_ASSIGN_OR_RETURN(auto re,
                          Regex::Compile("[\\x21-\\x2F\\x3A-\\x40\\x5B-\\x60\\x7B-\\x7E\\p{P}]"));
    step.pattern.regex = std::move(re);
    steps_.push_back(std::move(step));
    return Status::Ok();
  }
  if (type == "Digits" || type == "Whitespace" || type == "WhitespaceSplit") {
    Step step;
    step.kind = Step::Kind::kSplit;
    std::string regex;
    if (type == "Digits") {
      bool individual = false;
      JISU_RETURN_IF_ERROR(json_util::GetBool(j, "individual_digits", &individual));
      regex = individual ? "\\p{N}" : "\\p{N}+";
      step.behavior = SplitBehavior::kIsolated;
    } else if (type == "Whitespace") {
      regex = "\\w+|[^\\w\\s]+";
      step.behavior = SplitBehavior::kRemoved;
      step.invert = true;
    } else {
      regex = "\\s+";
      step.behavior = SplitBehavior::kRemoved;
    }
    JISU_ASSIGN_OR_RETURN(auto re, Regex::Compile(regex));
    step.pattern.regex = std::move(re);
    steps_.push_back(std::move(step));
    return Status::Ok();
  }
  return Status::Unsupported("pre_tokenizer type '" + type + "'");
}

void PreTokenizer::Apply(std::vector<Piece>* pieces) const {
  std::vector<Piece> next;
  for (const Step& step : steps_) {
    next.clear();
    next.reserve(pieces->size());
    switch (step.kind) {
      case Step::Kind::kByteLevel:
        for (Piece& p : *pieces) {
          if (step.add_prefix_space && (p.text.empty() || p.text[0] != ' ')) {
            p.text.insert(p.text.begin(), ' ');
          }
          if (step.pattern.regex) {
            SplitPiece(p, *step.pattern.regex, SplitBehavior::kIsolated, false, &next);
          } else {
            next.push_back(std::move(p));
          }
        }
        for (Piece& p : next) {
          std::string spelled;
          spelled.reserve(p.text.size() * 2);
          byte_level::SpellBytes(p.text, &spelled);
          p.text = std::move(spelled);
        }
        break;
      case Step::Kind::kSplit:
        for (const Piece& p : *pieces) {
          SplitPiece(p, *step.pattern.regex, step.behavior, step.invert, &next);
        }
        break;
      case Step::Kind::kMetaspace:
        for (Piece& p : *pieces) {
          std::string s;
          s.reserve(p.text.size() + 8);
          for (char c : p.text) {
            if (c == ' ') {
              s += step.replacement;
            } else {
              s += c;
            }
          }
          const bool starts = s.compare(0, step.replacement.size(), step.replacement) == 0;
          if (!starts && (step.scheme == PrependScheme::kAlways ||
                          (step.scheme == PrependScheme::kFirst && p.at_start))) {
            s.insert(0, step.replacement);
          }
          Piece q{std::move(s), p.at_start};
          if (step.pattern.regex) {
            SplitPiece(q, *step.pattern.regex, SplitBehavior::kMergedWithNext, false, &next);
          } else if (!q.text.empty()) {
            next.push_back(std::move(q));
          }
        }
        break;
    }
    pieces->swap(next);
  }
}

}  // namespace jisu
