#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "sampling/sampler.h"

namespace jisu {
namespace {

// Pushes each delta and returns the outputs, marking stops with "|STOP".
std::vector<std::string> PushAll(StopMatcher& m, const std::vector<std::string>& deltas) {
  std::vector<std::string> out;
  for (const std::string& d : deltas) {
    StopMatcher::Output o = m.Push(d);
    out.push_back(o.text + (o.stopped ? "|STOP" : ""));
  }
  return out;
}

using Strings = std::vector<std::string>;

TEST(StopMatcherTest, StopInsideOneDelta) {
  StopMatcher m({"</s>"});
  EXPECT_EQ(PushAll(m, {"Hello</s>world"}), Strings({"Hello|STOP"}));
  EXPECT_EQ(PushAll(m, {"more"}), Strings({"|STOP"}));
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcherTest, StopSpanningDeltas) {
  StopMatcher m({"</s>"});
  EXPECT_EQ(PushAll(m, {"Hel", "lo<", "/", "s>", "x"}),
            Strings({"Hel", "lo", "", "|STOP", "|STOP"}));
}

TEST(StopMatcherTest, HeldPrefixIsReleasedWhenItStopsMatching) {
  StopMatcher m({"</s>"});
  EXPECT_EQ(PushAll(m, {"a<", "/", "b", "<"}), Strings({"a", "", "</b", ""}));
  EXPECT_EQ(m.Flush(), "<");
  EXPECT_EQ(m.Flush(), "");
}

TEST(StopMatcherTest, EarliestOccurrenceWins) {
  {
    StopMatcher m({"b", "abc"});  // "abc" starts before "b"
    EXPECT_EQ(PushAll(m, {"xabcd"}), Strings({"x|STOP"}));
  }
  {
    StopMatcher m({"abc", "b"});  // order of stop strings does not matter
    EXPECT_EQ(PushAll(m, {"xa", "bcd"}), Strings({"x", "|STOP"}));
  }
  {
    // A complete stop is not held for a longer one that could still start earlier: "c" is
    // complete after "abc", so generation stops there even though "abcd" might follow.
    StopMatcher m({"abcd", "c"});
    EXPECT_EQ(PushAll(m, {"abc", "d"}), Strings({"ab|STOP", "|STOP"}));
  }
}

TEST(StopMatcherTest, OverlappingPrefixes) {
  StopMatcher m({"aab"});
  EXPECT_EQ(PushAll(m, {"a", "a", "a", "a", "b"}), Strings({"", "", "a", "a", "|STOP"}));
  StopMatcher m2({"abac"});
  EXPECT_EQ(PushAll(m2, {"aba", "ba", "c"}), Strings({"", "ab", "|STOP"}));
}

TEST(StopMatcherTest, NoStopsPassesThrough) {
  StopMatcher m({});
  EXPECT_EQ(PushAll(m, {"abc", "", "def"}), Strings({"abc", "", "def"}));
  EXPECT_EQ(m.Flush(), "");
  StopMatcher empty_only({"", ""});  // empty stop strings are ignored
  EXPECT_EQ(PushAll(empty_only, {"abc"}), Strings({"abc"}));
}

TEST(StopMatcherTest, NeverReleasesHalfAUtf8Character) {
  StopMatcher m({});
  // U+00E9 (2 bytes), U+20AC (3 bytes), U+1F600 (4 bytes) split across deltas.
  EXPECT_EQ(PushAll(m, {"caf\xC3", "\xA9 ", "\xE2", "\x82", "\xAC", "\xF0\x9F", "\x98\x80!"}),
            Strings({"caf", "\xC3\xA9 ", "", "", "\xE2\x82\xAC", "", "\xF0\x9F\x98\x80!"}));
  // Flush releases an incomplete tail as is (generation ended).
  EXPECT_EQ(PushAll(m, {"x\xE2\x82"}), Strings({"x"}));
  EXPECT_EQ(m.Flush(), "\xE2\x82");
}

TEST(StopMatcherTest, InvalidUtf8IsNotHeldForever) {
  StopMatcher m({});
  EXPECT_EQ(PushAll(m, {"\xFF", "\x80", "a\xC0", "\xE2\x82", "x"}),
            Strings({"\xFF", "\x80", "a\xC0", "", "\xE2\x82x"}));
}

TEST(StopMatcherTest, MultiByteStopStrings) {
  StopMatcher m({"\xC3\xA9!"});  // "é!"
  EXPECT_EQ(PushAll(m, {"caf", "\xC3", "\xA9", "?\xC3\xA9", "!"}),
            Strings({"caf", "", "", "\xC3\xA9?", "|STOP"}));
}

TEST(StopMatcherTest, LongStopsAndLongStreamsStayLinear) {
  // 16 stops of 1024 bytes that are all-but-one 'a': a stream of 'a's keeps every automaton one
  // byte short of a match. Each byte costs O(1) per stop, so this runs in milliseconds.
  std::vector<std::string> stops;
  for (int i = 0; i < 16; ++i) stops.push_back(std::string(1023, 'a') + static_cast<char>('b' + i));
  StopMatcher m(stops);
  std::string released;
  for (int i = 0; i < 200000; ++i) released += m.Push("a").text;
  EXPECT_EQ(released.size(), 200000u - 1023u);
  StopMatcher::Output o = m.Push("q");
  EXPECT_TRUE(o.stopped);
  EXPECT_EQ(o.text, "");  // the held 'a's are the start of the stop "a...aq"
}

// ---------------------------------------------------------------------------------------------
// Randomized equivalence with a naive reference: after every push, concatenate everything
// pushed so far; if some stop occurs, everything before its earliest occurrence has been
// emitted and the matcher has stopped; otherwise everything has been emitted except the
// longest suffix that is a proper prefix of a stop, moved back to a character boundary.

size_t NaiveHold(const std::string& text, const std::vector<std::string>& stops) {
  size_t hold = 0;
  for (const std::string& s : stops) {
    for (size_t k = 1; k < s.size() && k <= text.size(); ++k) {
      if (text.compare(text.size() - k, k, s, 0, k) == 0) hold = std::max(hold, k);
    }
  }
  return hold;
}

TEST(StopMatcherTest, RandomizedMatchesNaiveReference) {
  // Characters of 1 to 4 bytes; stops are made of the same characters so they do occur.
  const std::vector<std::string> alphabet = {
      "a", "b", "c", "\xC3\xA9", "\xE2\x82\xAC", "\xF0\x9F\x98\x80"};
  std::mt19937 rng(4242);
  auto pick = [&](size_t n) { return static_cast<size_t>(rng() % n); };
  int stopped_cases = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    std::vector<std::string> stops(pick(4));
    for (std::string& s : stops) {
      const size_t len = 1 + pick(4);
      for (size_t i = 0; i < len; ++i) s += alphabet[pick(alphabet.size() / (1 + pick(2)))];
    }
    std::string text;
    std::vector<bool> boundary = {true};  // boundary[i]: a character starts (or text ends) at i
    const size_t chars = pick(40);
    for (size_t i = 0; i < chars; ++i) {
      const std::string& ch = alphabet[pick(alphabet.size() / (1 + pick(2)))];
      text += ch;
      boundary.resize(text.size(), false);
      boundary.push_back(true);
    }
    SCOPED_TRACE(testing::Message()
                 << "trial " << trial << " text " << testing::PrintToString(text));

    StopMatcher m(stops);
    std::string emitted, pushed;
    bool stopped = false;
    size_t pos = 0;
    while (pos < text.size() && !stopped) {
      const size_t len = std::min(text.size() - pos, pick(7));
      pushed += text.substr(pos, len);
      pos += len;
      StopMatcher::Output o = m.Push(text.substr(pos - len, len));
      emitted += o.text;

      size_t earliest = std::string::npos;
      for (const std::string& s : stops) earliest = std::min(earliest, pushed.find(s));
      if (earliest != std::string::npos) {
        ASSERT_TRUE(o.stopped);
        ASSERT_EQ(emitted, pushed.substr(0, earliest));
        stopped = true;
        ++stopped_cases;
      } else {
        ASSERT_FALSE(o.stopped);
        size_t release = pushed.size() - NaiveHold(pushed, stops);
        while (!boundary[release]) --release;
        ASSERT_EQ(emitted, pushed.substr(0, release));
      }
    }
    if (!stopped) {
      emitted += m.Flush();
      ASSERT_EQ(emitted, text);
    } else {
      EXPECT_EQ(m.Flush(), "");
    }
  }
  EXPECT_GT(stopped_cases, 500);
}

}  // namespace
}  // namespace jisu
