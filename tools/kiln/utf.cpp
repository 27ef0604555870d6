// UTF-8 <-> code points; see utf.h.
#include "utf.h"

namespace kiln_tool {

bool IsScalarValue(uint32_t code_point) {
  return code_point <= 0x10FFFF && (code_point < 0xD800 || code_point > 0xDFFF);
}

void AppendUtf8(uint32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back((char)c);
  } else if (c < 0x800) {
    out->push_back((char)(0xC0 | (c >> 6)));
    out->push_back((char)(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out->push_back((char)(0xE0 | (c >> 12)));
    out->push_back((char)(0x80 | ((c >> 6) & 0x3F)));
    out->push_back((char)(0x80 | (c & 0x3F)));
  } else {
    out->push_back((char)(0xF0 | (c >> 18)));
    out->push_back((char)(0x80 | ((c >> 12) & 0x3F)));
    out->push_back((char)(0x80 | ((c >> 6) & 0x3F)));
    out->push_back((char)(0x80 | (c & 0x3F)));
  }
}

void DecodeUtf8(const uint8_t* data, size_t size, std::vector<uint32_t>* out) {
  const uint32_t kReplacement = 0xFFFD;
  size_t i = 0;
  while (i < size) {
    uint8_t lead = data[i];
    if (lead < 0x80) {
      out->push_back(lead);
      ++i;
      continue;
    }
    // The sequence's length and its second byte's range (Unicode table 3-7:
    // it excludes overlong forms, surrogates and values past U+10FFFF).
    size_t length = 0;
    uint8_t low = 0x80, high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      length = 2;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      length = 3;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      length = 4;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    }
    if (length == 0) {  // a continuation byte, or a lead no well-formed sequence has
      out->push_back(kReplacement);
      ++i;
      continue;
    }
    uint32_t code_point = lead & (0xFF >> (length + 1));
    size_t taken = 1;
    for (; taken < length && i + taken < size; ++taken) {
      uint8_t byte = data[i + taken];
      if (taken == 1 ? (byte < low || byte > high) : (byte < 0x80 || byte > 0xBF)) break;
      code_point = (code_point << 6) | (byte & 0x3F);
    }
    out->push_back(taken == length ? code_point : kReplacement);  // else the maximal subpart read so far
    i += taken;
  }
}

}  // namespace kiln_tool
