// RE2 patterns to a DFA over byte classes (regex_dfa.h): parse into a small
// syntax tree, build a Thompson NFA over UTF-8 bytes whose zero-width
// assertions are conditional epsilon edges, then determinize. An assertion
// depends on the bytes either side of a position, so a DFA state is a set of
// NFA states taken before their epsilon closure together with what it knows
// of the byte before (none yet, a word byte, a newline); the closure is
// taken on each transition, when the next byte (or the end) is known.
#include "lower/regex_dfa.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <utility>

namespace kiln::lower::regex {
namespace {

constexpr uint32_t kMaxRune = 0x10FFFF;
constexpr int kMaxRepeat = 1000;       // RE2's limit on {m,n}
constexpr size_t kMaxNfaStates = 200000;
constexpr size_t kMaxDfaStates = 10000;

struct Fail {
  std::string what;
};

// Code point ranges [lo, hi].
using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

Ranges normalized(Ranges r) {
  std::sort(r.begin(), r.end());
  Ranges out;
  for (const auto& x : r) {
    if (!out.empty() && x.first <= out.back().second + 1) out.back().second = std::max(out.back().second, x.second);
    else out.push_back(x);
  }
  return out;
}

Ranges negated(const Ranges& r) {
  Ranges n = normalized(r), out;
  uint32_t next = 0;
  for (const auto& x : n) {
    if (x.first > next) out.push_back({next, x.first - 1});
    next = x.second + 1;
  }
  if (next <= kMaxRune) out.push_back({next, kMaxRune});
  return out;
}

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{'\t', '\n'}, {'\f', '\r'}, {' ', ' '}};  // RE2's \s: [\t\n\f\r ]

bool is_word_byte(int b) { return (b >= '0' && b <= '9') || (b >= 'A' && b <= 'Z') || b == '_' || (b >= 'a' && b <= 'z'); }

// The ASCII classes of [[:name:]].
bool posix_class(const std::string& name, Ranges* r) {
  static const std::map<std::string, Ranges> classes = {
      {"alnum", {{'0', '9'}, {'A', 'Z'}, {'a', 'z'}}},
      {"alpha", {{'A', 'Z'}, {'a', 'z'}}},
      {"ascii", {{0, 0x7F}}},
      {"blank", {{'\t', '\t'}, {' ', ' '}}},
      {"cntrl", {{0, 0x1F}, {0x7F, 0x7F}}},
      {"digit", {{'0', '9'}}},
      {"graph", {{'!', '~'}}},
      {"lower", {{'a', 'z'}}},
      {"print", {{' ', '~'}}},
      {"punct", {{'!', '/'}, {':', '@'}, {'[', '`'}, {'{', '~'}}},
      {"space", {{'\t', '\r'}, {' ', ' '}}},
      {"upper", {{'A', 'Z'}}},
      {"word", {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}},
      {"xdigit", {{'0', '9'}, {'A', 'F'}, {'a', 'f'}}},
  };
  auto it = classes.find(name);
  if (it == classes.end()) return false;
  *r = it->second;
  return true;
}

enum class Assert : uint8_t { BeginText, EndText, BeginLine, EndLine, WordBoundary, NotWordBoundary };

// The syntax tree.
struct Node {
  enum Kind { Empty, Chars, Cat, Alt, Repeat, Assertion } kind = Empty;
  Ranges chars;            // Chars: the code points one character may be
  std::vector<int> kids;   // Cat, Alt; Repeat: its one operand
  int min = 0, max = 0;    // Repeat: max -1 is unbounded
  Assert assertion = Assert::BeginText;
};

struct Flags {
  bool multi_line = false;  // (?m): ^ and $ also at line breaks
  bool dot_nl = false;      // (?s): . matches \n
};

// Decodes UTF-8; false on an invalid sequence.
bool decode_utf8(const std::string& s, std::vector<uint32_t>* out) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = (unsigned char)s[i];
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (!n || i + n > s.size()) return false;
    uint32_t r = n == 1 ? c : c & (0x7F >> n);
    for (int k = 1; k < n; k++) {
      const unsigned char d = (unsigned char)s[i + k];
      if ((d & 0xC0) != 0x80) return false;
      r = (r << 6) | (d & 0x3F);
    }
    static const uint32_t least[] = {0, 0, 0x80, 0x800, 0x10000};
    if (r < least[n] || r > kMaxRune || (r >= 0xD800 && r <= 0xDFFF)) return false;
    out->push_back(r);
    i += (size_t)n;
  }
  return true;
}

std::string rune_text(uint32_t r) {
  if (r >= 0x20 && r < 0x7F) return std::string(1, (char)r);
  char buf[16];
  snprintf(buf, sizeof buf, "\\x{%X}", (unsigned)r);
  return buf;
}

class Parser {
 public:
  explicit Parser(const std::vector<uint32_t>& runes) : r_(runes) {}
  std::vector<Node> nodes;

  int parse() {
    Flags f;
    int root = alternation(f);
    if (i_ < r_.size()) fail("unmatched ')'");
    return root;
  }

 private:
  const std::vector<uint32_t>& r_;
  size_t i_ = 0;

  [[noreturn]] void fail(const std::string& what) { throw Fail{what}; }
  [[noreturn]] void unsupported(const std::string& what) {
    throw Fail{what + " is not supported (kilnc compiles RegexFullMatch patterns into a DFA: literals, classes, ., "
               "|, groups, quantifiers and ^ $ \\A \\z \\b \\B)"};
  }
  bool eof() const { return i_ >= r_.size(); }
  uint32_t peek(size_t k = 0) const { return i_ + k < r_.size() ? r_[i_ + k] : 0xFFFFFFFFu; }
  bool at(uint32_t c, size_t k = 0) const { return peek(k) == c; }

  int add(Node n) {
    nodes.push_back(std::move(n));
    return (int)nodes.size() - 1;
  }
  int chars(Ranges r) {
    Node n;
    n.kind = Node::Chars;
    n.chars = normalized(std::move(r));
    return add(std::move(n));
  }
  int assertion(Assert a) {
    Node n;
    n.kind = Node::Assertion;
    n.assertion = a;
    return add(std::move(n));
  }

  int alternation(Flags& f) {
    std::vector<int> branches = {concatenation(f)};
    while (at('|')) {
      i_++;
      branches.push_back(concatenation(f));
    }
    if (branches.size() == 1) return branches[0];
    Node n;
    n.kind = Node::Alt;
    n.kids = std::move(branches);
    return add(std::move(n));
  }

  int concatenation(Flags& f) {
    std::vector<int> items;
    while (!eof() && !at('|') && !at(')')) {
      int a = atom(f);
      if (a < 0) continue;  // a flags group: no text of its own
      int m = 0, x = 0;
      if (quantifier(&m, &x)) {
        if (at('?')) i_++;  // lazy: the same strings match as a whole
        int m2, x2;
        size_t back = i_;
        if (quantifier(&m2, &x2)) {
          i_ = back;
          fail("bad repetition operator: a quantifier after a quantifier (RE2 has no possessive or stacked quantifiers)");
        }
        Node n;
        n.kind = Node::Repeat;
        n.kids = {a};
        n.min = m;
        n.max = x;
        a = add(std::move(n));
      }
      items.push_back(a);
    }
    if (items.size() == 1) return items[0];
    Node n;
    n.kind = items.empty() ? Node::Empty : Node::Cat;
    n.kids = std::move(items);
    return add(std::move(n));
  }

  // Reads a quantifier at the position, if there is one: * + ? {m} {m,} {m,n}.
  bool quantifier(int* m, int* x) {
    if (at('*')) { i_++; *m = 0; *x = -1; return true; }
    if (at('+')) { i_++; *m = 1; *x = -1; return true; }
    if (at('?')) { i_++; *m = 0; *x = 1; return true; }
    if (!at('{')) return false;
    size_t j = i_ + 1;
    auto number = [&](int* v) {
      size_t s = j;
      long long n = 0;
      while (j < r_.size() && r_[j] >= '0' && r_[j] <= '9') {
        n = std::min<long long>(n * 10 + (r_[j] - '0'), 1000000);
        j++;
      }
      *v = (int)n;
      return j > s;
    };
    int lo = 0, hi = 0;
    if (!number(&lo)) return false;  // not a repetition: '{' is a literal
    if (j < r_.size() && r_[j] == '}') {
      hi = lo;
    } else if (j < r_.size() && r_[j] == ',') {
      j++;
      if (j < r_.size() && r_[j] == '}') hi = -1;
      else if (!number(&hi)) return false;
    } else {
      return false;
    }
    if (j >= r_.size() || r_[j] != '}') return false;
    i_ = j + 1;
    if (lo > kMaxRepeat || hi > kMaxRepeat || (hi >= 0 && hi < lo))
      fail("bad repetition operator {" + std::to_string(lo) + "," + (hi < 0 ? "" : std::to_string(hi)) +
           "}: counts go up to 1000, the least first");
    *m = lo;
    *x = hi;
    return true;
  }

  // One atom; -1 for a group that only sets flags.
  int atom(Flags& f) {
    const uint32_t c = peek();
    if (c == '(') return group(f);
    if (c == '[') return char_class();
    if (c == '.') {
      i_++;
      return chars(f.dot_nl ? Ranges{{0, kMaxRune}} : Ranges{{0, '\n' - 1}, {'\n' + 1, kMaxRune}});
    }
    if (c == '^') {
      i_++;
      return assertion(f.multi_line ? Assert::BeginLine : Assert::BeginText);
    }
    if (c == '$') {
      i_++;
      return assertion(f.multi_line ? Assert::EndLine : Assert::EndText);
    }
    if (c == '*' || c == '+' || c == '?') fail(std::string("missing argument to repetition operator ") + (char)c);
    if (c == '{') {
      int m, x;
      size_t back = i_;
      if (quantifier(&m, &x)) {
        i_ = back;
        fail("missing argument to repetition operator {");
      }
      i_++;
      return chars({{'{', '{'}});
    }
    if (c == '\\') {
      if (at('Q', 1)) return quoted();
      i_++;
      Ranges r;
      Assert a;
      if (escape(false, &r, &a)) return chars(std::move(r));
      return assertion(a);
    }
    i_++;
    return chars({{c, c}});
  }

  // \Q...\E: literal text.
  int quoted() {
    i_ += 2;
    std::vector<int> items;
    while (!eof() && !(at('\\') && at('E', 1))) {
      items.push_back(chars({{peek(), peek()}}));
      i_++;
    }
    if (!eof()) i_ += 2;
    Node n;
    n.kind = items.empty() ? Node::Empty : Node::Cat;
    n.kids = std::move(items);
    return add(std::move(n));
  }

  int group(Flags& f) {
    i_++;  // '('
    Flags inner = f;
    if (at('?')) {
      const uint32_t k = peek(1);
      if (k == '=' || k == '!') unsupported("lookahead (?" + std::string(1, (char)k));
      if (k == '<' && (at('=', 2) || at('!', 2))) unsupported("lookbehind (?<" + std::string(1, (char)peek(2)));
      if (k == 'P' && at('=', 2)) unsupported("the backreference (?P=name)");
      if (k == '>') unsupported("the atomic group (?>");
      if (k == 'P' || k == '<') {  // a named capturing group: a group
        i_ += k == 'P' ? 2 : 1;
        if (!at('<')) fail("invalid named capture group");
        i_++;
        size_t s = i_;
        while (!eof() && !at('>')) {
          const uint32_t d = peek();
          if (!(d < 0x80 && is_word_byte((int)d))) fail("invalid named capture group name");
          i_++;
        }
        if (eof() || i_ == s) fail("invalid named capture group");
        i_++;
      } else {  // flags: (?flags) or (?flags:re)
        i_++;
        bool negate = false, any = false;
        for (;;) {
          if (eof()) fail("missing ) after (?");
          const uint32_t d = peek();
          if (d == ':' || d == ')') break;
          i_++;
          if (d == '-' && !negate) {
            negate = true;
            continue;
          }
          if (d == 'i') unsupported("case-insensitive matching (?i)");
          if (d == 'm') inner.multi_line = !negate;
          else if (d == 's') inner.dot_nl = !negate;
          else if (d == 'U') {  // ungreedy: the same strings match as a whole
          } else {
            unsupported("the group or flag (?" + rune_text(d));
          }
          any = true;
        }
        if (!any && !at(':')) fail("missing flags in (?)");
        if (at(')')) {
          i_++;
          f = inner;  // the flags hold to the end of the enclosing group
          return -1;
        }
        i_++;  // ':'
      }
    }
    int r = alternation(inner);
    if (!at(')')) fail("missing )");
    i_++;
    return r;
  }

  // After a backslash: a class (true, into *r) or an assertion (false, *a).
  bool escape(bool in_class, Ranges* r, Assert* a) {
    if (eof()) fail("trailing \\");
    const uint32_t c = peek();
    i_++;
    auto one = [&](uint32_t v) {
      *r = {{v, v}};
      return true;
    };
    switch (c) {
      case 'd': *r = kDigit; return true;
      case 'D': *r = negated(kDigit); return true;
      case 'w': *r = kWord; return true;
      case 'W': *r = negated(kWord); return true;
      case 's': *r = kSpace; return true;
      case 'S': *r = negated(kSpace); return true;
      case 'n': return one('\n');
      case 't': return one('\t');
      case 'r': return one('\r');
      case 'f': return one('\f');
      case 'v': return one('\v');
      case 'a': return one(7);
      case 'b': case 'B': case 'A': case 'z':
        if (in_class) fail(std::string("\\") + (char)c + " in a character class");
        *a = c == 'b' ? Assert::WordBoundary : c == 'B' ? Assert::NotWordBoundary : c == 'A' ? Assert::BeginText : Assert::EndText;
        return false;
      case 'x': {
        auto hex = [](uint32_t d) -> int {
          return d >= '0' && d <= '9' ? (int)(d - '0') : d >= 'a' && d <= 'f' ? (int)(d - 'a' + 10)
                 : d >= 'A' && d <= 'F' ? (int)(d - 'A' + 10) : -1;
        };
        uint32_t v = 0;
        if (at('{')) {
          i_++;
          int digits = 0;
          while (!eof() && hex(peek()) >= 0) {
            v = std::min<uint32_t>(v * 16 + (uint32_t)hex(peek()), kMaxRune + 1);
            i_++;
            digits++;
          }
          if (!digits || !at('}') || v > kMaxRune) fail("invalid escape sequence \\x{...}");
          i_++;
        } else {
          if (hex(peek()) < 0 || hex(peek(1)) < 0) fail("invalid escape sequence \\x");
          v = (uint32_t)(hex(peek()) * 16 + hex(peek(1)));
          i_ += 2;
        }
        return one(v);
      }
      case 'p': case 'P': unsupported(std::string("the Unicode class \\") + (char)c);
      case 'C': unsupported("\\C (any byte)");
      case 'Q': unsupported("\\Q in a character class");
      case 'k': case 'g': unsupported(std::string("the backreference \\") + (char)c);
      case 'Z': unsupported("\\Z (use \\z)");
      default: break;
    }
    if (c >= '0' && c <= '7') {
      // Octal: \0 with up to two more digits, or \1-\7 followed by a digit
      // (RE2: a lone \1-\9 would be a backreference).
      if (c != '0' && !(peek() >= '0' && peek() <= '7')) unsupported("the backreference \\" + std::string(1, (char)c));
      uint32_t v = c - '0';
      for (int k = 0; k < 2 && peek() >= '0' && peek() <= '7'; k++, i_++) v = v * 8 + (peek() - '0');
      return one(v);
    }
    if (c == '8' || c == '9') unsupported("the backreference \\" + std::string(1, (char)c));
    if (c < 0x80 && !std::isalnum((int)c)) return one(c);  // escaped punctuation (and space, _)
    fail("invalid escape sequence \\" + rune_text(c));
  }

  int char_class() {
    i_++;  // '['
    bool negate = false;
    if (at('^')) {
      negate = true;
      i_++;
    }
    Ranges acc;
    bool first = true;
    // One class member: a code point (true, *v) or a set (false, into acc).
    auto member = [&](uint32_t* v) {
      if (at('[') && at(':', 1)) {
        size_t j = i_ + 2;
        bool neg = j < r_.size() && r_[j] == '^';
        if (neg) j++;
        std::string name;
        while (j < r_.size() && r_[j] < 0x80 && r_[j] >= 'a' && r_[j] <= 'z') name += (char)r_[j++];
        if (j + 1 < r_.size() && r_[j] == ':' && r_[j + 1] == ']') {
          Ranges p;
          if (!posix_class(name, &p)) fail("invalid character class range [:" + name + ":]");
          i_ = j + 2;
          if (neg) p = negated(p);
          acc.insert(acc.end(), p.begin(), p.end());
          return false;
        }
      }
      if (at('\\')) {
        i_++;
        Ranges r;
        Assert a;
        escape(true, &r, &a);
        if (r.size() == 1 && r[0].first == r[0].second) {  // a single code point: may start a range
          *v = r[0].first;
          return true;
        }
        acc.insert(acc.end(), r.begin(), r.end());
        return false;
      }
      *v = peek();
      i_++;
      return true;
    };
    for (;;) {
      if (eof()) fail("missing ]");
      if (at(']') && !first) break;
      first = false;
      uint32_t lo = 0;
      if (!member(&lo)) continue;  // a set ([\w-.]: the '-' is then a literal, as in RE2)
      uint32_t hi = lo;
      if (at('-') && !at(']', 1) && i_ + 1 < r_.size()) {
        i_++;
        if (!member(&hi)) fail("bad character class range: a class as a range's end");
        if (hi < lo) fail("bad character class range " + rune_text(lo) + "-" + rune_text(hi));
      }
      acc.push_back({lo, hi});
    }
    i_++;  // ']'
    return chars(negate ? negated(acc) : acc);
  }
};

// ---- the NFA ----------------------------------------------------------------

struct NfaState {
  std::vector<int> eps;                          // unconditional epsilon edges
  std::vector<std::pair<Assert, int>> asserts;   // epsilon edges taken where the assertion holds
  std::vector<std::array<int, 3>> bytes;         // [lo, hi, target]: on a byte in [lo, hi]
};

// The UTF-8 byte-range sequences of the code points [lo, hi] (after Russ
// Cox's utf8-ranges): each sequence is the byte ranges of one encoded length.
void utf8_sequences(uint32_t lo, uint32_t hi, std::vector<std::vector<std::pair<int, int>>>* out) {
  if (lo > hi) return;
  if (lo <= 0xDFFF && hi >= 0xD800) {  // surrogates are not UTF-8
    if (lo < 0xD800) utf8_sequences(lo, 0xD7FF, out);
    if (hi > 0xDFFF) utf8_sequences(0xE000, hi, out);
    return;
  }
  static const uint32_t length_ends[] = {0x7F, 0x7FF, 0xFFFF};
  for (uint32_t e : length_ends)
    if (lo <= e && hi > e) {
      utf8_sequences(lo, e, out);
      utf8_sequences(e + 1, hi, out);
      return;
    }
  if (hi <= 0x7F) {
    out->push_back({{(int)lo, (int)hi}});
    return;
  }
  const int n = lo <= 0x7FF ? 2 : lo <= 0xFFFF ? 3 : 4;
  for (int i = 1; i < n; i++) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        utf8_sequences(lo, lo | m, out);
        utf8_sequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        utf8_sequences(lo, (hi & ~m) - 1, out);
        utf8_sequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  auto encode = [n](uint32_t r, int* b) {
    for (int k = n - 1; k > 0; k--, r >>= 6) b[k] = 0x80 | (int)(r & 0x3F);
    b[0] = (int)r | (n == 2 ? 0xC0 : n == 3 ? 0xE0 : 0xF0);
  };
  int a[4], b[4];
  encode(lo, a);
  encode(hi, b);
  std::vector<std::pair<int, int>> seq;
  for (int k = 0; k < n; k++) seq.push_back({a[k], b[k]});
  out->push_back(std::move(seq));
}

class NfaBuilder {
 public:
  explicit NfaBuilder(const std::vector<Node>& nodes) : nodes_(nodes) {}
  std::vector<NfaState> states;

  // Fresh states for node `x`: [entry, exit], the exit without edges yet.
  std::pair<int, int> build(int x) {
    const Node& n = nodes_[(size_t)x];
    switch (n.kind) {
      case Node::Empty: {
        int s = add();
        return {s, s};
      }
      case Node::Chars: {
        int in = add(), out = add();
        std::vector<std::vector<std::pair<int, int>>> seqs;
        for (const auto& r : n.chars) utf8_sequences(r.first, r.second, &seqs);
        for (const auto& seq : seqs) {
          int at = in;
          for (size_t k = 0; k < seq.size(); k++) {
            int to = k + 1 == seq.size() ? out : add();
            states[(size_t)at].bytes.push_back({seq[k].first, seq[k].second, to});
            at = to;
          }
        }
        return {in, out};
      }
      case Node::Cat: {
        std::pair<int, int> f = build(n.kids[0]);
        for (size_t k = 1; k < n.kids.size(); k++) {
          std::pair<int, int> g = build(n.kids[k]);
          states[(size_t)f.second].eps.push_back(g.first);
          f.second = g.second;
        }
        return f;
      }
      case Node::Alt: {
        int in = add(), out = add();
        for (int k : n.kids) {
          std::pair<int, int> g = build(k);
          states[(size_t)in].eps.push_back(g.first);
          states[(size_t)g.second].eps.push_back(out);
        }
        return {in, out};
      }
      case Node::Repeat: {
        int in = add(), at = in;
        for (int k = 0; k < n.min; k++) {
          std::pair<int, int> g = build(n.kids[0]);
          states[(size_t)at].eps.push_back(g.first);
          at = g.second;
        }
        if (n.max < 0) {  // a loop
          int loop = add();
          states[(size_t)at].eps.push_back(loop);
          std::pair<int, int> g = build(n.kids[0]);
          states[(size_t)loop].eps.push_back(g.first);
          states[(size_t)g.second].eps.push_back(loop);
          return {in, loop};
        }
        int out = add();
        for (int k = n.min; k < n.max; k++) {  // optional copies
          states[(size_t)at].eps.push_back(out);
          std::pair<int, int> g = build(n.kids[0]);
          states[(size_t)at].eps.push_back(g.first);
          at = g.second;
        }
        states[(size_t)at].eps.push_back(out);
        return {in, out};
      }
      case Node::Assertion: {
        int in = add(), out = add();
        states[(size_t)in].asserts.push_back({n.assertion, out});
        return {in, out};
      }
    }
    throw Fail{"internal error: unknown syntax node"};
  }

 private:
  const std::vector<Node>& nodes_;
  int add() {
    if (states.size() >= kMaxNfaStates) throw Fail{"the pattern is too large (its automaton has over 200000 states)"};
    states.emplace_back();
    return (int)states.size() - 1;
  }
};

// ---- the DFA ----------------------------------------------------------------

// What a position knows of its neighbours.
struct Context {
  bool begin = false, end = false;          // at the text's start / end
  bool prev_word = false, next_word = false;
  bool prev_nl = false, next_nl = false;
};

bool holds(Assert a, const Context& c) {
  switch (a) {
    case Assert::BeginText: return c.begin;
    case Assert::EndText: return c.end;
    case Assert::BeginLine: return c.begin || c.prev_nl;
    case Assert::EndLine: return c.end || c.next_nl;
    case Assert::WordBoundary: return c.prev_word != c.next_word;
    case Assert::NotWordBoundary: return c.prev_word == c.next_word;
  }
  return false;
}

// The states reachable from `core` by epsilon edges whose assertions hold in `c`.
std::vector<int> closure(const std::vector<NfaState>& nfa, const std::vector<int>& core, const Context& c,
                         std::vector<char>& seen) {
  std::vector<int> out, stack(core.rbegin(), core.rend());
  while (!stack.empty()) {
    int s = stack.back();
    stack.pop_back();
    if (seen[(size_t)s]) continue;
    seen[(size_t)s] = 1;
    out.push_back(s);
    const NfaState& st = nfa[(size_t)s];
    for (int t : st.eps) stack.push_back(t);
    for (const auto& a : st.asserts)
      if (holds(a.first, c)) stack.push_back(a.second);
  }
  for (int s : out) seen[(size_t)s] = 0;
  return out;
}

// Bits of a DFA state's knowledge of the byte before.
constexpr int kAtBegin = 1, kAfterWord = 2, kAfterNewline = 4;

}  // namespace

bool Dfa::full_match(const std::string& text) const {
  if (accepts.empty()) return false;
  int32_t s = start;
  for (unsigned char b : text) s = next[(size_t)s * (size_t)classes + (size_t)byte_class[b]];
  return accepts[(size_t)s] != 0;
}

Dfa compile_full_match(const std::string& pattern, std::string* error) {
  error->clear();
  try {
    std::vector<uint32_t> runes;
    if (!decode_utf8(pattern, &runes)) throw Fail{"the pattern is not valid UTF-8"};
    Parser parser(runes);
    const int root = parser.parse();
    NfaBuilder builder(parser.nodes);
    const std::pair<int, int> whole = builder.build(root);
    const std::vector<NfaState>& nfa = builder.states;
    const int match = whole.second;

    // Which neighbour facts the assertions read; states keep only those.
    int relevant = 0;
    std::set<int> cuts = {0, 256};  // byte class boundaries
    for (const NfaState& s : nfa) {
      for (const auto& b : s.bytes) {
        cuts.insert(b[0]);
        cuts.insert(b[1] + 1);
      }
      for (const auto& a : s.asserts) {
        if (a.first == Assert::BeginText || a.first == Assert::BeginLine) relevant |= kAtBegin;
        if (a.first == Assert::BeginLine) relevant |= kAfterNewline;
        if (a.first == Assert::WordBoundary || a.first == Assert::NotWordBoundary) relevant |= kAfterWord;
        if (a.first == Assert::EndLine || a.first == Assert::BeginLine) cuts.insert({'\n', '\n' + 1});
        if (a.first == Assert::WordBoundary || a.first == Assert::NotWordBoundary)
          for (const auto& w : kWord) cuts.insert({(int)w.first, (int)w.second + 1});
      }
    }
    Dfa dfa;
    std::vector<int> representative;  // a byte of each class
    for (auto it = cuts.begin(); std::next(it) != cuts.end(); ++it) {
      for (int b = *it; b < *std::next(it); b++) dfa.byte_class[(size_t)b] = (int32_t)representative.size();
      representative.push_back(*it);
    }
    dfa.classes = (int32_t)representative.size();

    // Subset construction: a state is (flags, core NFA states before closure).
    using Key = std::pair<int, std::vector<int>>;
    std::map<Key, int32_t> ids;
    std::vector<Key> keys;
    std::vector<char> seen(nfa.size(), 0);
    auto id_of = [&](int flags, std::vector<int> core) -> int32_t {
      if (core.empty()) return Dfa::kDead;
      std::sort(core.begin(), core.end());
      core.erase(std::unique(core.begin(), core.end()), core.end());
      Key k{flags & relevant, std::move(core)};
      auto it = ids.find(k);
      if (it != ids.end()) return it->second;
      if (keys.size() >= kMaxDfaStates) throw Fail{"the pattern needs over 10000 DFA states; simplify it"};
      const int32_t id = (int32_t)keys.size();
      ids.emplace(k, id);
      keys.push_back(std::move(k));
      return id;
    };
    keys.push_back({0, {}});  // kDead
    dfa.start = id_of(kAtBegin, {whole.first});
    for (size_t s = 0; s < keys.size(); s++) {
      const int flags = keys[s].first;
      const std::vector<int> core = keys[s].second;  // (keys grows)
      Context c;
      c.begin = flags & kAtBegin;
      c.prev_word = flags & kAfterWord;
      c.prev_nl = flags & kAfterNewline;
      Context at_end = c;
      at_end.end = true;
      bool accepts = false;
      for (int t : closure(nfa, core, at_end, seen)) accepts |= t == match;
      dfa.accepts.push_back(accepts ? 1 : 0);
      for (int32_t k = 0; k < dfa.classes; k++) {
        const int b = representative[(size_t)k];
        Context on = c;
        on.next_word = is_word_byte(b);
        on.next_nl = b == '\n';
        std::vector<int> targets;
        if (!core.empty())
          for (int t : closure(nfa, core, on, seen))
            for (const auto& e : nfa[(size_t)t].bytes)
              if (b >= e[0] && b <= e[1]) targets.push_back(e[2]);
        const int after = (is_word_byte(b) ? kAfterWord : 0) | (b == '\n' ? kAfterNewline : 0);
        dfa.next.push_back(id_of(after, std::move(targets)));
      }
    }
    return dfa;
  } catch (const Fail& f) {
    *error = f.what;
    return Dfa();
  }
}

}  // namespace kiln::lower::regex
