// RegexFullMatch's pattern compiler (lower/regex_dfa.h): the DFA walked on
// the host against known answers (RE2's), against std::regex (ECMAScript,
// whose syntax agrees with RE2's on the random ASCII patterns drawn here), and
// the constructs it refuses.
#include <doctest/doctest.h>

#include <random>
#include <regex>
#include <string>
#include <vector>

#include "lower/regex_dfa.h"

namespace {

using kiln::lower::regex::compile_full_match;
using kiln::lower::regex::Dfa;

Dfa compiled(const std::string& pattern) {
  std::string error;
  Dfa d = compile_full_match(pattern, &error);
  INFO("pattern ", pattern);
  REQUIRE(error.empty());
  return d;
}

struct Case {
  const char* pattern;
  const char* text;
  bool matches;
};

TEST_CASE("regex dfa: full matches") {
  const Case cases[] = {
      // The ONNX conformance patterns.
      {"www\\.[\\w.-]+\\.\\bcom\\b", "www.google.com", true},
      {"www\\.[\\w.-]+\\.\\bcom\\b", "www.facebook.com", true},
      {"www\\.[\\w.-]+\\.\\bcom\\b", "www.bbc.co.uk", false},
      {"(\\W|^)[\\w.\\-]{0,25}@(yahoo|gmail)\\.com(\\W|$)", "account@gmail.com", true},
      {"(\\W|^)[\\w.\\-]{0,25}@(yahoo|gmail)\\.com(\\W|$)", "account@hotmail.com", false},
      {"(\\W|^)[\\w.\\-]{0,25}@(yahoo|gmail)\\.com(\\W|$)", "not email", false},
      {"(\\W|^)[\\w.\\-]{0,25}@(yahoo|gmail)\\.com(\\W|$)", "account2@yahoo.com", true},
      {"(\\W|^)[\\w.\\-]{0,25}@(yahoo|gmail)\\.com(\\W|$)", " a@gmail.com.", true},
      // Whole strings only.
      {"abc", "abc", true}, {"abc", "abcd", false}, {"abc", "xabc", false}, {"", "", true}, {"", "a", false},
      {"a|", "", true}, {"a|b|cd", "cd", true}, {"a|b|cd", "c", false}, {"()", "", true},
      // Quantifiers, lazy forms too.
      {"a{2,3}", "a", false}, {"a{2,3}", "aa", true}, {"a{2,3}", "aaa", true}, {"a{2,3}", "aaaa", false},
      {"a{2,}", "aaaaa", true}, {"a{2}", "aa", true}, {"a{0}", "", true}, {"a*?b+?c??", "aabb", true},
      {"x{,2}", "x{,2}", true}, {"x{", "x{", true}, {"(?:ab)+", "ababab", true}, {"(?:ab)+", "aba", false},
      {"(a|b)*c", "abbac", true}, {"(a*)*", "aaa", true}, {"(a|)+b", "b", true},
      // Escapes and classes.
      {"\\d+", "0123456789", true}, {"\\D", "5", false}, {"\\s\\S", "\tx", true}, {"\\s", "\v", false},
      {"\\x41\\x{42}\\103", "ABC", true}, {"\\Qa.b*\\E", "a.b*", true}, {"\\Qa.b\\E", "axb", false},
      {"\\.\\*\\_\\ ", ".*_ ", true}, {"[]a]+", "]a]", true}, {"[^]a]", "]", false}, {"[a-]", "-", true},
      {"[\\w.-]+", "a.b-c_9", true}, {"[^a-z]", "Q", true}, {"[^a-z]", "q", false},
      {"[[:digit:]x]+", "1x2", true}, {"[[:^alpha:]]", "1", true}, {"[[:^alpha:]]", "a", false},
      {"[\\d\\s]+", "1 2", true}, {"[a\\]]+", "a]", true}, {"\\n\\t", "\n\t", true},
      // . and classes take whole UTF-8 code points.
      {".", "\xC3\xA9", true}, {"..", "\xC3\xA9", false}, {"[^a]", "\xE2\x82\xAC", true},
      {"a.c", "a\xE2\x82\xAC" "c", true}, {".", "\xF0\x9F\x98\x80", true}, {"\\W", "\xC3\xA9", true},
      {"[\xC3\xA9-\xC3\xBC]", "\xC3\xB6", true}, {"[\xC3\xA9-\xC3\xBC]", "a", false}, {"\\x{e9}", "\xC3\xA9", true},
      {"\xC3\xA9+", "\xC3\xA9\xC3\xA9", true}, {".", "\xFF", false}, {".", "\xC3", false},
      {".", "\n", false}, {"(?s).", "\n", true}, {"(?s:.)", "\n", true}, {"(?s:a).", "a\n", false},
      // Assertions.
      {"^abc$", "abc", true}, {"a^b", "ab", false}, {"a$b", "ab", false}, {"\\Aab\\z", "ab", true},
      {"a\\bb", "ab", false}, {"a\\b b", "a b", true}, {"a\\Bb", "ab", true}, {"\\b", "", false},
      {"\\B", "", true}, {"\\ba\\b", "a", true}, {"\\b.\\b", "\xC3\xA9", false},
      {"a$\\n^b", "a\nb", false}, {"(?m)a$\\n^b", "a\nb", true}, {"(?m)^$", "", true}, {"(?U)a+", "aa", true},
      {"(?P<name>a)(?<other>b)", "ab", true},
  };
  for (const Case& c : cases) {
    CAPTURE(c.pattern);
    CAPTURE(c.text);
    CHECK(compiled(c.pattern).full_match(c.text) == c.matches);
  }
  CHECK(compiled("a\\0").full_match(std::string("a\0", 2)));  // \0: NUL, a byte like any other
}

TEST_CASE("regex dfa: the table") {
  Dfa d = compiled("a+");
  CHECK(d.start != Dfa::kDead);
  CHECK(d.accepts[Dfa::kDead] == 0);
  for (int32_t k = 0; k < d.classes; k++) CHECK(d.next[(size_t)k] == Dfa::kDead);  // the dead state stays dead
  CHECK(d.next.size() == (size_t)d.states() * (size_t)d.classes);
  CHECK(d.classes <= 3);  // below 'a', 'a', above
  // Large counts are fine, nested ones too large.
  CHECK(compiled("[ab]{1000}").full_match(std::string(1000, 'a')));
  std::string error;
  compile_full_match("(?:a{1000}){1000}", &error);
  CHECK(error.find("too large") != std::string::npos);
}

TEST_CASE("regex dfa: refused constructs") {
  const std::pair<const char*, const char*> cases[] = {
      {"(a)\\1", "backreference"},       {"(?P<x>a)(?P=x)", "backreference"},
      {"a(?=b)", "lookahead"},           {"a(?!b)", "lookahead"},
      {"(?<=a)b", "lookbehind"},         {"(?<!a)b", "lookbehind"},
      {"(?i)a", "case-insensitive"},     {"\\pL", "Unicode class"},
      {"\\p{Greek}", "Unicode class"},   {"(?>a)", "atomic"},
      {"a\\C", "any byte"},              {"a**", "repetition"},
      {"a*+", "repetition"},             {"*a", "missing argument"},
      {"{2}", "missing argument"},       {"(a", "missing )"},
      {"a)", "unmatched"},               {"[a", "missing ]"},
      {"[z-a]", "range"},                {"a{1001}", "repetition"},
      {"a{3,2}", "repetition"},          {"\\", "trailing"},
      {"\\xZ", "escape"},                {"\\q", "escape"},
      {"[[:foo:]]", "class"},            {"\xFF", "UTF-8"},
      {"\\Z", "\\z"},                    {"[\\b]", "character class"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.first);
    std::string error;
    Dfa d = compile_full_match(c.first, &error);
    CHECK(error.find(c.second) != std::string::npos);
    CHECK(d.states() == 0);
  }
}

// A random pattern over a small alphabet, in the syntax RE2 and ECMAScript share.
std::string random_pattern(std::mt19937& rng, int depth) {
  auto pick = [&](int n) { return (int)(rng() % (unsigned)n); };
  static const char* const atoms[] = {"a", "b", "-", " ", "1", "[ab]", "[^a]", "[a-b1]", "\\w", "\\W", "\\d", "\\s", "."};
  static const char* const quantifiers[] = {"*", "+", "?", "{0,2}", "{1,3}", "{2}", "{1,}", "*?"};
  static const char* const assertions[] = {"\\b", "\\B", "^", "$"};
  std::string out;
  const int items = 1 + pick(3);
  for (int i = 0; i < items; i++) {
    const int kind = depth > 0 ? pick(10) : pick(7);
    std::string atom;
    if (kind < 6) atom = atoms[pick(13)];
    else if (kind == 6) {
      out += assertions[pick(4)];
      continue;
    } else if (kind < 9) atom = "(?:" + random_pattern(rng, depth - 1) + ")";
    else atom = "(" + random_pattern(rng, depth - 1) + "|" + random_pattern(rng, depth - 1) + ")";
    if (pick(3) == 0) atom += quantifiers[pick(8)];
    out += atom;
  }
  return out;
}

TEST_CASE("regex dfa: against std::regex on random patterns") {
  std::mt19937 rng(20);
  const char alphabet[] = {'a', 'b', '-', ' ', '1'};
  int compared = 0;
  for (int p = 0; p < 300; p++) {
    const std::string pattern = random_pattern(rng, 2);
    CAPTURE(pattern);
    const Dfa d = compiled(pattern);
    const std::regex reference(pattern, std::regex::ECMAScript);
    for (int t = 0; t < 60; t++) {
      std::string text;
      for (int len = (int)(rng() % 7); len > 0; len--) text += alphabet[rng() % 5];
      CAPTURE(text);
      CHECK(d.full_match(text) == std::regex_match(text, reference));
      compared++;
    }
  }
  CHECK(compared == 300 * 60);
}

}  // namespace
