// RE2 patterns compiled to a DFA over byte classes (RegexFullMatch,
// lower/ops_regex.cpp).
//
// Why: the runtime holds no operator math and has no regex engine, so kilnc
// turns the pattern into a transition table at compile time and the kernel
// only walks it, one lookup per byte of each string.
//
// What: a parser for a subset of the RE2 syntax into a Thompson NFA over
// UTF-8 bytes, then the subset construction over byte classes (the bytes no
// transition tells apart share a column). The subset: literals (UTF-8);
// escapes \d \D \w \W \s \S (ASCII, as RE2's), \n \t \r \f \v \a, \xHH,
// \x{H..}, octal \0.., \Q..\E and escaped punctuation; classes [a-z], [^..]
// with those escapes and [:alpha:]-style ASCII classes; . (any code point
// but \n); | and groups ( ), (?:..), (?P<name>..), (?<name>..); quantifiers
// * + ? {m} {m,n} {m,} (lazy forms match the same strings), counts up to
// 1000 as RE2; assertions ^ $ \A \z \b \B; flags (?s) (?m) (?U), also
// scoped (?s:..). `.` and classes match whole code points (valid UTF-8: a
// stray byte matches nothing), as RE2 does; \b is ASCII words, as RE2's.
// Anything else, such as backreferences, lookarounds, \p{..} classes and
// (?i), is refused with a message naming the construct.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace kiln::lower::regex {

struct Dfa {
  static constexpr int32_t kDead = 0;  // the state that never accepts (every row of it leads back to it)
  std::array<int32_t, 256> byte_class{};  // byte -> its column
  int32_t classes = 0;                    // columns
  int32_t start = 1;                      // the state before the first byte
  std::vector<int32_t> next;              // [state * classes + column]: the state after a byte
  std::vector<uint8_t> accepts;           // per state: 1 when a text ending there matches as a whole
  int32_t states() const { return (int32_t)accepts.size(); }
  // Whether `text` (bytes) matches the whole pattern: the table walked on the host.
  bool full_match(const std::string& text) const;
};

// The DFA that accepts exactly the byte strings `pattern` (RE2 syntax, UTF-8)
// matches as a whole. On a pattern outside the subset, or invalid, or one
// whose automaton would be too large, sets *error (else leaves it empty) and
// returns an empty Dfa.
Dfa compile_full_match(const std::string& pattern, std::string* error);

}  // namespace kiln::lower::regex
