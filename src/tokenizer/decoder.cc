#include "tokenizer/decoder.h"

#include "core/utf8.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_util.h"
#include "tokenizer/normalizer.h"

namespace jisu {

using json_util::Json;

namespace {

// "<0xNN>" -> byte value, else -1.
int ByteToken(const std::string& t) {
  if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
  int v = 0;
  for (int i = 3; i < 5; ++i) {
    const char c = t[i];
    v <<= 4;
    if (c >= '0' && c <= '9') {
      v |= c - '0';
    } else if (c >= 'A' && c <= 'F') {
      v |= c - 'A' + 10;
    } else if (c >= 'a' && c <= 'f') {
      v |= c - 'a' + 10;
    } else {
      return -1;
    }
  }
  return v;
}

// Rust's String::from_utf8_lossy.
std::string Lossy(const std::string& bytes) { return utf8::Sanitize(bytes); }

// Strips up to `start` leading and `stop` trailing copies of `c` (one code point).
std::string StripChars(const std::string& token, const std::string& c, size_t start, size_t stop) {
  size_t b = 0, n_left = 0;
  while (n_left < start && token.compare(b, c.size(), c) == 0 && b + c.size() <= token.size()) {
    b += c.size();
    ++n_left;
  }
  size_t e = token.size(), n_right = 0;
  while (n_right < stop && e >= b + c.size() && token.compare(e - c.size(), c.size(), c) == 0) {
    e -= c.size();
    ++n_right;
  }
  return token.substr(b, e - b);
}

std::string ReplaceChar(const std::string& token, const std::string& from, const std::string& to) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t hit = token.find(from, pos);
    if (hit == std::string::npos) break;
    out.append(token, pos, hit - pos);
    out.append(to);
    pos = hit + from.size();
  }
  out.append(token, pos, std::string::npos);
  return out;
}

}  // namespace

Decoder Decoder::ByteLevel() {
  Decoder d;
  d.steps_.push_back(MakeStep(Step::Kind::kByteLevel));
  return d;
}

Result<Decoder> Decoder::SentencePiece(bool strip_space) {
  Decoder d;
  Step replace = MakeStep(Step::Kind::kReplace);
  JISU_ASSIGN_OR_RETURN(auto re, Regex::Compile(Regex::Quote("\xE2\x96\x81")));
  replace.pattern.regex = std::move(re);
  replace.text.assign(1, ' ');  // (assigning a literal trips GCC 12's -Wrestrict bug)
  d.steps_.push_back(std::move(replace));
  d.steps_.push_back(MakeStep(Step::Kind::kByteFallback));
  d.steps_.push_back(MakeStep(Step::Kind::kFuse));
  if (strip_space) {
    Step strip = MakeStep(Step::Kind::kStrip);
    strip.text.assign(1, ' ');
    strip.start = 1;
    d.steps_.push_back(std::move(strip));
  }
  return d;
}

Result<Decoder> Decoder::FromJson(const Json& j) {
  Decoder d;
  if (j.is_null()) return d;
  JISU_RETURN_IF_ERROR(d.Add(j, 0).WithContext("decoder"));
  return d;
}

Status Decoder::Add(const Json& j, int depth) {
  if (depth > 16) return Status::InvalidArgument("nesting too deep");
  if (j.is_null()) return Status::Ok();
  if (!j.is_object()) return Status::InvalidArgument("not an object");
  std::string type;
  JISU_RETURN_IF_ERROR(json_util::GetString(j, "type", &type, true));
  if (type == "Sequence") {
    if (!j.contains("decoders") || !j["decoders"].is_array()) {
      return Status::InvalidArgument("Sequence without 'decoders' array");
    }
    for (const Json& sub : j["decoders"]) JISU_RETURN_IF_ERROR(Add(sub, depth + 1));
    return Status::Ok();
  }
  Step step = MakeStep(Step::Kind::kFuse);
  if (type == "ByteLevel") {
    step.kind = Step::Kind::kByteLevel;
  } else if (type == "ByteFallback") {
    step.kind = Step::Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = Step::Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = Step::Kind::kStrip;
    JISU_RETURN_IF_ERROR(json_util::GetChar(j, "content", &step.text));
    int64_t start = 0, stop = 0;
    JISU_RETURN_IF_ERROR(json_util::GetInt(j, "start", &start));
    JISU_RETURN_IF_ERROR(json_util::GetInt(j, "stop", &stop));
    if (start < 0 || stop < 0 || start > 1'000'000 || stop > 1'000'000) {
      return Status::InvalidArgument("Strip start/stop out of range");
    }
    step.start = static_cast<size_t>(start);
    step.stop = static_cast<size_t>(stop);
  } else if (type == "Replace") {
    step.kind = Step::Kind::kReplace;
    if (!j.contains("pattern")) return Status::InvalidArgument("Replace without 'pattern'");
    JISU_ASSIGN_OR_RETURN(step.pattern, ParsePattern(j["pattern"]));
    JISU_RETURN_IF_ERROR(json_util::GetString(j, "content", &step.text, true));
  } else if (type == "Metaspace") {
    step.kind = Step::Kind::kMetaspace;
    JISU_RETURN_IF_ERROR(json_util::GetChar(j, "replacement", &step.text));
    if (json_util::Has(j, "prepend_scheme")) {
      std::string s;
      JISU_RETURN_IF_ERROR(json_util::GetString(j, "prepend_scheme", &s));
      if (s == "always") {
        step.scheme = PrependScheme::kAlways;
      } else if (s == "first") {
        step.scheme = PrependScheme::kFirst;
      } else if (s == "never") {
        step.scheme = PrependScheme::kNever;
      } else {
        return Status::InvalidArgument("unknown prepend_scheme '" + s + "'");
      }
    } else {
      bool add_prefix_space = true;
      JISU_RETURN_IF_ERROR(json_util::GetBool(j, "add_prefix_space", &add_prefix_space));
      step.scheme = add_prefix_space ? PrependScheme::kAlways : PrependScheme::kNever;
    }
  } else {
    return Status::Unsupported("decoder type '" + type + "'");
  }
  steps_.push_back(std::move(step));
  return Status::Ok();
}

std::string Decoder::Decode(std::vector<std::string> tokens) const {
  if (steps_.empty()) {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (i) out += ' ';
      out += tokens[i];
    }
    return out;
  }
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Step::Kind::kByteLevel: {
        std::string bytes;
        for (const std::string& t : tokens) {
          if (!byte_level::Unspell(t, &bytes)) bytes += t;
        }
        tokens.assign(1, Lossy(bytes));
        break;
      }
      case Step::Kind::kByteFallback: {
        std::vector<std::string> out;
        std::string run;
        auto flush = [&] {
          if (run.empty()) return;
          if (utf8::IsValid(run)) {
            out.push_back(run);
          } else {
            for (size_t i = 0; i < run.size(); ++i) out.emplace_back(utf8::kReplacement);
          }
          run.clear();
        };
        for (std::string& t : tokens) {
          const int b = ByteToken(t);
          if (b >= 0) {
            run.push_back(static_cast<char>(b));
          } else {
            flush();
            out.push_back(std::move(t));
          }
        }
        flush();
        tokens = std::move(out);
        break;
      }
      case Step::Kind::kFuse: {
        std::string all;
        for (const std::string& t : tokens) all += t;
        tokens.assign(1, std::move(all));
        break;
      }
      case Step::Kind::kStrip:
        for (std::string& t : tokens) t = StripChars(t, step.text, step.start, step.stop);
        break;
      case Step::Kind::kReplace:
        for (std::string& t : tokens) t = ReplaceAll(step.pattern, t, step.text);
        break;
      case Step::Kind::kMetaspace:
        for (size_t i = 0; i < tokens.size(); ++i) {
          const bool drop = i == 0 && step.scheme != PrependScheme::kNever;
          tokens[i] = ReplaceChar(tokens[i], step.text, drop ? "" : " ");
        }
        break;
    }
  }
  std::string out;
  for (const std::string& t : tokens) out += t;
  return out;
}

std::string Decoder::DecodePiece(const std::string& token, bool first) const {
  if (steps_.empty()) {
    std::string out = first ? "" : " ";
    out.append(token);
    return out;
  }
  std::string t = token;
  bool fused = false;  // after a Fuse, per-token steps see the whole output
  for (const Step& step : steps_) {
    switch (step.kind) {
      case Step::Kind::kByteLevel: {
        std::string bytes;
        if (!byte_level::Unspell(t, &bytes)) bytes = t;
        t = std::move(bytes);
        fused = true;
        break;
      }
      case Step::Kind::kByteFallback: {
        const int b = ByteToken(t);
        if (b >= 0) t = std::string(1, static_cast<char>(b));
        break;
      }
      case Step::Kind::kFuse:
        fused = true;
        break;
      case Step::Kind::kStrip:
        if (!fused) {
          t = StripChars(t, step.text, step.start, step.stop);
        } else if (first) {
          t = StripChars(t, step.text, step.start, 0);
        }
        break;
      case Step::Kind::kReplace:
        t = ReplaceAll(step.pattern, t, step.text);
        break;
      case Step::Kind::kMetaspace: {
        const bool drop = first && step.scheme != PrependScheme::kNever;
        t = ReplaceChar(t, step.text, drop ? "" : " ");
        break;
      }
    }
  }
  return t;
}

}  // namespace jisu
