#include "tokenizer/added_tokens.h"

#include <algorithm>

#include "core/utf8.h"

namespace jisu {

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens,
                                     std::vector<std::string> contents)
    : by_first_byte_(256) {
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (contents[i].empty() || !utf8::IsValid(contents[i])) continue;
    tokens_.push_back(tokens[i]);
    contents_.push_back(std::move(contents[i]));
  }
  for (size_t i = 0; i < contents_.size(); ++i) {
    by_first_byte_[static_cast<unsigned char>(contents_[i][0])].push_back(static_cast<int32_t>(i));
  }
  for (auto& list : by_first_byte_) {
    std::stable_sort(list.begin(), list.end(), [&](int32_t a, int32_t b) {
      return contents_[a].size() > contents_[b].size();
    });
  }
  // A constant, valid pattern: compilation cannot fail.
  word_char_ = std::move(Regex::Compile("^\\w\\z").value());
}

namespace {

// Unicode White_Space (what Rust's regex \s matches).
bool IsSpace(char32_t c) {
  return (c >= 0x9 && c <= 0xD) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

// Start of the code point that ends at `end` (> 0) in valid UTF-8.
size_t PrevStart(const std::string& s, size_t end) {
  size_t b = end - 1;
  while (b > 0 && (static_cast<unsigned char>(s[b]) & 0xC0) == 0x80) --b;
  return b;
}

char32_t CodePointAt(const std::string& s, size_t pos, size_t* len) {
  char32_t cp = 0xFFFD;
  if (utf8::Next(s, pos, &cp, len) != utf8::Step::kValid) cp = 0xFFFD;
  return cp;
}

}  // namespace

bool AddedTokenMatcher::IsWordChar(const std::string& s, size_t pos) const {
  const size_t len = utf8::SequenceLength(static_cast<unsigned char>(s[pos]));
  Regex::Span m;
  return word_char_->Find(std::string_view(s).substr(pos, std::min(len, s.size() - pos)), 0, &m);
}

void AddedTokenMatcher::Split(const std::string& text, bool at_start,
                              std::vector<Segment>* out) const {
  auto emit = [&](size_t b, size_t e, int32_t id) {
    if (e <= b) return;
    out->push_back(Segment{text.substr(b, e - b), id, at_start && b == 0});
  };
  size_t start_offset = 0;  // end of the last accepted match
  size_t pos = 0;           // where the (leftmost-longest, non-overlapping) scan resumes
  while (pos < text.size()) {
    const auto& candidates = by_first_byte_[static_cast<unsigned char>(text[pos])];
    int32_t hit = -1;
    for (int32_t c : candidates) {
      const std::string& s = contents_[c];
      if (text.compare(pos, s.size(), s) == 0) {
        hit = c;
        break;
      }
    }
    if (hit < 0) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + contents_[hit].size();
    pos = stop;  // a rejected match is consumed all the same, as aho-corasick's iterator does
    // Matches must fall on character boundaries (contents are valid UTF-8, so they do unless
    // the match starts inside a character, which a valid content cannot).
    const AddedToken& tok = tokens_[hit];
    if (tok.single_word) {
      const bool start_space = start == 0 || !IsWordChar(text, PrevStart(text, start));
      const bool stop_space = stop == text.size() || !IsWordChar(text, stop);
      if (!start_space || !stop_space) continue;
    }
    if (tok.lstrip) {
      size_t newstart = start;
      while (newstart > 0) {
        const size_t b = PrevStart(text, newstart);
        size_t len;
        if (!IsSpace(CodePointAt(text, b, &len))) break;
        newstart = b;
      }
      start = std::max(newstart, start_offset);
    }
    if (tok.rstrip) {
      while (stop < text.size()) {
        size_t len;
        if (!IsSpace(CodePointAt(text, stop, &len))) break;
        stop += len;
      }
      pos = std::max(pos, stop);
    }
    emit(start_offset, start, -1);
    emit(start, stop, tok.id);
    start_offset = stop;
  }
  emit(start_offset, text.size(), -1);
}

}  // namespace jisu
