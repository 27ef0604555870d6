// The recursive-descent parser of json_reader.h.
#include "json_reader.h"

#include <stdlib.h>
#include <string.h>

namespace kiln_cli {

namespace {

constexpr int kMaxDepth = 512;

class Reader {
 public:
  explicit Reader(const std::string& text) : text_(text) {}

  bool Document(JsonValue* out, std::string* error) {
    bool ok = Value(out, 0) && (SkipSpace(), pos_ == text_.size() || Error("text after the value"));
    if (!ok) *error = "at byte " + std::to_string(pos_) + ": " + error_;
    return ok;
  }

 private:
  bool Error(const char* what) {
    if (error_.empty()) error_ = what;
    return false;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && strchr(" \t\r\n", text_[pos_]) && text_[pos_]) ++pos_;
  }
  bool Literal(const char* word) {
    size_t n = strlen(word);
    if (text_.compare(pos_, n, word) != 0) return Error("unexpected character");
    pos_ += n;
    return true;
  }

  bool Value(JsonValue* out, int depth) {
    if (depth > kMaxDepth) return Error("nested too deeply");
    SkipSpace();
    if (pos_ >= text_.size()) return Error("unexpected end");
    char c = text_[pos_];
    if (c == '{') return Object(out, depth);
    if (c == '[') return Array(out, depth);
    if (c == '"') return out->kind = JsonValue::kString, String(&out->string);
    if (c == 't' || c == 'f') {
      out->kind = JsonValue::kBool;
      out->boolean = c == 't';
      return Literal(c == 't' ? "true" : "false");
    }
    if (c == 'n') return out->kind = JsonValue::kNull, Literal("null");
    return Number(out);
  }

  bool Number(JsonValue* out) {
    static const char kNumberChars[] = "0123456789+-.eE";
    size_t end = pos_;
    while (end < text_.size() && text_[end] && strchr(kNumberChars, text_[end])) ++end;
    std::string token = text_.substr(pos_, end - pos_);
    char* parsed_end = nullptr;
    out->number = strtod(token.c_str(), &parsed_end);
    if (token.empty() || parsed_end != token.c_str() + token.size()) return Error("bad number");
    out->kind = JsonValue::kNumber;
    pos_ = end;
    return true;
  }

  bool Hex4(unsigned* out) {
    if (pos_ + 4 > text_.size()) return Error("bad \\u escape");
    *out = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (digit < 0) return Error("bad \\u escape");
      *out = *out * 16 + (unsigned)digit;
    }
    return true;
  }

  static void AppendUtf8(unsigned code, std::string* out) {
    if (code < 0x80) {
      *out += (char)code;
    } else if (code < 0x800) {
      *out += (char)(0xC0 | (code >> 6));
      *out += (char)(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      *out += (char)(0xE0 | (code >> 12));
      *out += (char)(0x80 | ((code >> 6) & 0x3F));
      *out += (char)(0x80 | (code & 0x3F));
    } else {
      *out += (char)(0xF0 | (code >> 18));
      *out += (char)(0x80 | ((code >> 12) & 0x3F));
      *out += (char)(0x80 | ((code >> 6) & 0x3F));
      *out += (char)(0x80 | (code & 0x3F));
    }
  }

  bool String(std::string* out) {
    ++pos_;  // the opening quote
    for (;;) {
      if (pos_ >= text_.size()) return Error("unterminated string");
      char c = text_[pos_++];
      if (c == '"') return true;
      if ((unsigned char)c < 0x20) return Error("control character in a string");
      if (c != '\\') {
        *out += c;
        continue;
      }
      if (pos_ >= text_.size()) return Error("unterminated string");
      char e = text_[pos_++];
      const char* simple = strchr("\"\\/bfnrt", e);
      if (e && simple) {
        *out += "\"\\/\b\f\n\r\t"[simple - "\"\\/bfnrt"];
        continue;
      }
      unsigned code = 0, low = 0;
      if (e != 'u' || !Hex4(&code)) return Error("bad escape");
      if (code >= 0xD800 && code < 0xDC00 && text_.compare(pos_, 2, "\\u") == 0) {
        pos_ += 2;
        if (!Hex4(&low) || low < 0xDC00 || low >= 0xE000) return Error("bad surrogate pair");
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
      }
      AppendUtf8(code, out);
    }
  }

  bool Array(JsonValue* out, int depth) {
    out->kind = JsonValue::kArray;
    ++pos_;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == ']') return ++pos_, true;
    for (;;) {
      out->items.emplace_back();
      if (!Value(&out->items.back(), depth + 1)) return false;
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < text_.size() && text_[pos_] == ']') return ++pos_, true;
      return Error("expected ',' or ']'");
    }
  }

  bool Object(JsonValue* out, int depth) {
    out->kind = JsonValue::kObject;
    ++pos_;
    SkipSpace();
    if (pos_ < text_.size() && text_[pos_] == '}') return ++pos_, true;
    for (;;) {
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"') return Error("expected a member name");
      out->members.emplace_back();
      if (!String(&out->members.back().first)) return false;
      SkipSpace();
      if (pos_ >= text_.size() || text_[pos_] != ':') return Error("expected ':'");
      ++pos_;
      if (!Value(&out->members.back().second, depth + 1)) return false;
      SkipSpace();
      if (pos_ < text_.size() && text_[pos_] == ',') { ++pos_; continue; }
      if (pos_ < text_.size() && text_[pos_] == '}') return ++pos_, true;
      return Error("expected ',' or '}'");
    }
  }

  const std::string& text_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

const JsonValue* JsonValue::Find(const char* key) const {
  for (const auto& member : members) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

bool ParseJson(const std::string& text, JsonValue* out, std::string* error) {
  *out = JsonValue();
  return Reader(text).Document(out, error);
}

}  // namespace kiln_cli
