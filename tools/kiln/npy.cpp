// .npy reader and writer; see npy.h. The header is a Python dict literal,
// parsed here with a small tokenizer that accepts only what NumPy writes.
#include "npy.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <new>

#include "kiln/kiln.hpp"
#include "utf.h"

namespace kiln_tool {

namespace {

const char kMagic[] = "\x93NUMPY";

struct DescrEntry {
  const char* descr;
  kiln_dtype_t dtype;
};

const DescrEntry kDescrs[] = {
    {"<f4", KILN_DTYPE_FLOAT32}, {"<f2", KILN_DTYPE_FLOAT16}, {"<f8", KILN_DTYPE_FLOAT64},
    {"|i1", KILN_DTYPE_INT8},    {"<i2", KILN_DTYPE_INT16},   {"<i4", KILN_DTYPE_INT32},
    {"<i8", KILN_DTYPE_INT64},   {"|u1", KILN_DTYPE_UINT8},   {"|b1", KILN_DTYPE_BOOL},
    {"<u2", KILN_DTYPE_UINT16},  {"<u4", KILN_DTYPE_UINT32},  {"<u8", KILN_DTYPE_UINT64},
    {"|V2", KILN_DTYPE_BFLOAT16},  // numpy has no bfloat16: two raw bytes (what ml_dtypes' arrays save as)
};

// Sets *raw for '|V1' (raw bytes: *out is then KILN_DTYPE_UINT8).
bool DescrToDtype(std::string descr, kiln_dtype_t* out, bool* raw, std::string* error) {
  *raw = false;
  if (descr.size() == 3 && descr[0] == '>' && descr[2] != '1') {
    *error = "big-endian dtype '" + descr + "' is not supported";
    return false;
  }
  if (descr.size() == 3 && (descr[0] == '=' || descr[0] == '<') && descr[2] == '1') descr[0] = '|';
  if (descr.size() == 3 && descr[0] == '>' && descr[2] == '1') descr[0] = '|';
  if (descr.size() == 3 && descr[0] == '=') descr[0] = '<';  // native: little-endian hosts
  if (descr == "<V2") descr = "|V2";  // raw bytes have no byte order: bfloat16's bits, little-endian
  if (descr == "|V1") {  // one byte an element (ml_dtypes' float8, int4, ...: numpy writes '<V1')
    *out = KILN_DTYPE_UINT8;
    *raw = true;
    return true;
  }
  for (const DescrEntry& entry : kDescrs) {
    if (descr == entry.descr) {
      *out = entry.dtype;
      return true;
    }
  }
  *error = "unsupported dtype '" + descr + "'";
  return false;
}

// Largest .npy of strings the tool writes (its fixed width makes one long
// string cost every element that much).
constexpr uint64_t kMaxStringNpyBytes = 1ull << 32;
// Most elements a string array of width 0 ('<U0': every string empty) may have.
constexpr uint64_t kMaxEmptyStrings = 1ull << 24;

// A numpy string dtype: fixed-width unicode ('<U{k}', '>U{k}', '=U{k}':
// k UTF-32 code units per element) or bytes ('|S{k}', also '<S', '>S',
// '=S': k bytes). False when `descr` is neither.
struct StringDescr {
  bool unicode = false;     // 'U' (else 'S')
  bool big_endian = false;  // '>U'
  uint64_t width = 0;       // k
  uint64_t unit = 1;        // bytes per code unit: 4 for 'U', 1 for 'S'
};

bool ParseStringDescr(const std::string& descr, StringDescr* out) {
  if (descr.size() < 3 || !strchr("<>=|", descr[0]) || (descr[1] != 'U' && descr[1] != 'S')) return false;
  out->unicode = descr[1] == 'U';
  out->big_endian = descr[0] == '>';
  out->unit = out->unicode ? 4 : 1;
  out->width = 0;
  for (size_t i = 2; i < descr.size(); ++i) {
    if (descr[i] < '0' || descr[i] > '9' || out->width > (UINT32_MAX - 9) / 10) return false;
    out->width = out->width * 10 + (uint64_t)(descr[i] - '0');
  }
  return !(out->unicode && descr[0] == '|');  // UTF-32 has a byte order
}

// The `count` fixed-width elements at `data` (`descr`) as a string table in
// *out: each element's trailing NULs stripped (numpy's padding), UTF-32
// encoded as UTF-8. False with a message for a code point that is no
// Unicode scalar value, or more than a table's 2^32 - 1 bytes of strings.
bool StringsToTable(const uint8_t* data, uint64_t count, const StringDescr& descr, std::vector<uint8_t>* out,
                    std::string* error) {
  // Elements of width 0 take no bytes of the file, but a string each here.
  if (descr.width == 0 && count > kMaxEmptyStrings) {
    *error = "holds " + std::to_string(count) + " strings of width 0, more than " +
             std::to_string(kMaxEmptyStrings);
    return false;
  }
  std::vector<std::string> strings;
  try {
    strings.resize((size_t)count);  // at most the file's bytes (or kMaxEmptyStrings)
  } catch (const std::bad_alloc&) {
    *error = "out of memory for its " + std::to_string(count) + " strings";
    return false;
  }
  const uint64_t element_bytes = descr.width * descr.unit;
  for (uint64_t i = 0; i < count; ++i) {
    const uint8_t* element = data + i * element_bytes;
    uint64_t length = descr.width;  // in code units, without the trailing NULs
    auto unit = [&](uint64_t j) -> uint32_t {
      const uint8_t* p = element + j * descr.unit;
      if (!descr.unicode) return p[0];
      return descr.big_endian ? (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]
                              : (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
    };
    while (length > 0 && unit(length - 1) == 0) --length;
    std::string& text = strings[(size_t)i];
    if (!descr.unicode) {
      text.assign((const char*)element, (size_t)length);  // bytes as they are (the runtime does not check UTF-8)
      continue;
    }
    for (uint64_t j = 0; j < length; ++j) {
      uint32_t code_point = unit(j);
      if (!IsScalarValue(code_point)) {
        char text_point[16];
        snprintf(text_point, sizeof(text_point), "0x%X", code_point);
        *error = "string element " + std::to_string(i) + " holds " + text_point +
                 ", which is no Unicode code point (a surrogate or past U+10FFFF)";
        return false;
      }
      AppendUtf8(code_point, &text);
    }
  }
  if (!kiln::PackStrings(strings, out)) {
    *error = "its strings hold more than the 4 GiB - 1 bytes of UTF-8 a string tensor can take";
    return false;
  }
  return true;
}

// Tokenizer over the header dict.
class HeaderParser {
 public:
  explicit HeaderParser(const std::string& text) : text_(text) {}

  bool Parse(std::string* descr, bool* fortran_order, std::vector<int64_t>* shape,
             std::string* error) {
    bool have_descr = false, have_order = false, have_shape = false;
    SkipSpace();
    if (!Eat('{')) return Error("header is not a dict", error);
    for (;;) {
      SkipSpace();
      if (Eat('}')) break;
      std::string key;
      if (!ParseString(&key)) return Error("bad key in header", error);
      SkipSpace();
      if (!Eat(':')) return Error("missing ':' in header", error);
      SkipSpace();
      if (key == "descr") {
        if (!ParseString(descr)) return Error("'descr' is not a simple string", error);
        have_descr = true;
      } else if (key == "fortran_order") {
        if (Match("True")) *fortran_order = true;
        else if (Match("False")) *fortran_order = false;
        else return Error("'fortran_order' is not True/False", error);
        have_order = true;
      } else if (key == "shape") {
        if (!ParseShape(shape)) return Error("'shape' is not a tuple of integers", error);
        have_shape = true;
      } else {
        return Error("unknown header key '" + key + "'", error);
      }
      SkipSpace();
      if (Eat(',')) continue;
      SkipSpace();
      if (Eat('}')) break;
      return Error("malformed header dict", error);
    }
    if (!have_descr || !have_order || !have_shape) {
      return Error("header lacks descr, fortran_order or shape", error);
    }
    return true;
  }

 private:
  bool Error(const std::string& message, std::string* error) {
    *error = message;
    return false;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' || text_[pos_] == '\t')) ++pos_;
  }
  bool Eat(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool Match(const char* word) {
    size_t n = strlen(word);
    if (text_.compare(pos_, n, word) == 0) {
      pos_ += n;
      return true;
    }
    return false;
  }
  bool ParseString(std::string* out) {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) return false;
    char quote = text_[pos_++];
    size_t end = text_.find(quote, pos_);
    if (end == std::string::npos || end - pos_ > 64) return false;
    *out = text_.substr(pos_, end - pos_);
    if (out->find('\\') != std::string::npos) return false;
    pos_ = end + 1;
    return true;
  }
  bool ParseShape(std::vector<int64_t>* shape) {
    shape->clear();
    if (!Eat('(')) return false;
    for (;;) {
      SkipSpace();
      if (Eat(')')) return true;
      if (pos_ >= text_.size() || text_[pos_] < '0' || text_[pos_] > '9') return false;
      int64_t value = 0;
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') {
        if (value > (INT64_MAX - 9) / 10) return false;
        value = value * 10 + (text_[pos_++] - '0');
      }
      if (pos_ < text_.size() && text_[pos_] == 'L') ++pos_;  // Python 2 longs
      shape->push_back(value);
      if (shape->size() > 32) return false;
      SkipSpace();
      if (Eat(',')) continue;
      SkipSpace();
      if (Eat(')')) return true;
      return false;
    }
  }

  const std::string& text_;
  size_t pos_ = 0;
};

// Reads a whole regular file. Its size must fit this process's address
// space (a 3 GiB file on a 32-bit target is refused with a message, not
// truncated or left to abort the tool in the allocator).
bool ReadAll(FILE* file, const std::string& path, std::vector<uint8_t>* out, std::string* error) {
  struct stat info;
  if (fstat(fileno(file), &info) != 0 || !S_ISREG(info.st_mode)) {
    *error = "'" + path + "' is not a regular file";
    return false;
  }
  if ((uint64_t)info.st_size > (uint64_t)PTRDIFF_MAX) {
    *error = "'" + path + "' is " + std::to_string((uint64_t)info.st_size) + " bytes: more than this " +
             std::to_string(sizeof(void*) * 8) + "-bit process can hold";
    return false;
  }
  try {
    out->resize((size_t)info.st_size);
  } catch (const std::bad_alloc&) {
    *error = "out of memory reading '" + path + "' (" + std::to_string((uint64_t)info.st_size) + " bytes)";
    return false;
  }
  if (!out->empty() && fread(out->data(), 1, out->size(), file) != out->size()) {
    *error = "cannot read '" + path + "'";
    return false;
  }
  return true;
}

}  // namespace

bool IsNarrowDtype(kiln_dtype_t dtype) {
  switch (dtype) {
    case KILN_DTYPE_FLOAT8E4M3FN: case KILN_DTYPE_FLOAT8E4M3FNUZ: case KILN_DTYPE_FLOAT8E5M2:
    case KILN_DTYPE_FLOAT8E5M2FNUZ: case KILN_DTYPE_UINT4: case KILN_DTYPE_INT4: case KILN_DTYPE_FLOAT4E2M1:
    case KILN_DTYPE_FLOAT8E8M0: case KILN_DTYPE_UINT2: case KILN_DTYPE_INT2:
      return true;
    default: return false;
  }
}

bool NpyFits(const NpyArray& array, kiln_dtype_t dtype) {
  if (array.raw_bytes) return IsNarrowDtype(dtype);
  if (array.dtype == dtype) return true;
  return IsNarrowDtype(dtype) && (array.dtype == KILN_DTYPE_UINT8 || array.dtype == KILN_DTYPE_INT8);
}

const char* NpyDescr(kiln_dtype_t dtype) {
  if (dtype == KILN_DTYPE_STRING) return "<U";  // and the width (WriteNpy)
  if (IsNarrowDtype(dtype)) return "|V1";       // the byte, as ml_dtypes' arrays hold it
  for (const DescrEntry& entry : kDescrs) {
    if (entry.dtype == dtype) return entry.descr;
  }
  return "?";
}

bool ReadFileBytes(const std::string& path, std::vector<uint8_t>* out, std::string* error) {
  FILE* file = fopen(path.c_str(), "rb");
  if (!file) {
    *error = "cannot open '" + path + "': " + strerror(errno);
    return false;
  }
  bool read_ok = ReadAll(file, path, out, error);
  fclose(file);
  return read_ok;
}

bool ReadNpy(const std::string& path, NpyArray* out, std::string* error) {
  std::vector<uint8_t> bytes;
  if (!ReadFileBytes(path, &bytes, error)) return false;
  return ParseNpy(bytes.data(), bytes.size(), path, out, error);
}

bool ParseNpy(const uint8_t* data, size_t size, const std::string& path, NpyArray* out,
              std::string* error) {
  std::string prefix = "'" + path + "': ";
  if (size < 10 || memcmp(data, kMagic, 6) != 0) {
    *error = prefix + "not a .npy file (bad magic)";
    return false;
  }
  uint8_t major = data[6];
  size_t header_length, header_start;
  if (major == 1) {
    header_length = (size_t)data[8] | ((size_t)data[9] << 8);
    header_start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12) {
      *error = prefix + "truncated header";
      return false;
    }
    header_length = (size_t)data[8] | ((size_t)data[9] << 8) | ((size_t)data[10] << 16) |
                    ((size_t)data[11] << 24);
    header_start = 12;
  } else {
    *error = prefix + "unsupported .npy version " + std::to_string(major);
    return false;
  }
  if (header_length > size - header_start) {
    *error = prefix + "truncated header";
    return false;
  }
  std::string header((const char*)data + header_start, header_length);
  std::string descr;
  bool fortran_order = false;
  NpyArray array;
  std::string parse_error;
  if (!HeaderParser(header).Parse(&descr, &fortran_order, &array.shape, &parse_error)) {
    *error = prefix + parse_error;
    return false;
  }
  if (fortran_order) {
    *error = prefix + "fortran_order arrays are not supported (save a C-contiguous array)";
    return false;
  }
  StringDescr strings;
  const bool string = ParseStringDescr(descr, &strings);
  if (string) {
    array.dtype = KILN_DTYPE_STRING;
  } else if (!DescrToDtype(descr, &array.dtype, &array.raw_bytes, &parse_error)) {
    *error = prefix + parse_error;
    return false;
  }
  uint64_t byte_size = 1, count = 1;  // bytes and elements
  bool fits = !__builtin_mul_overflow(string ? strings.width : 1, string ? strings.unit : kiln_dtype_size(array.dtype),
                                      &byte_size);
  for (int64_t d : array.shape) {
    fits = fits && !__builtin_mul_overflow(byte_size, (uint64_t)d, &byte_size) &&
           !__builtin_mul_overflow(count, (uint64_t)d, &count);
  }
  if (!fits) {
    *error = prefix + "shape too large";
    return false;
  }
  size_t data_start = header_start + header_length;
  if (size - data_start != byte_size) {
    *error = prefix + "has " + std::to_string(size - data_start) +
             " data bytes, its header describes " + std::to_string(byte_size);
    return false;
  }
  if (string) {  // count elements in byte_size <= size bytes (or all empty): no overflow
    if (!StringsToTable(data + data_start, count, strings, &array.data, &parse_error)) {
      *error = prefix + parse_error;
      return false;
    }
  } else {
    array.data.assign(data + data_start, data + size);
  }
  *out = std::move(array);
  return true;
}

namespace {

// Writes a version 1.0 .npy file of `descr` elements.
bool WriteNpyFile(const std::string& path, const std::string& descr, const int64_t* shape, uint32_t rank,
                  const void* data, size_t byte_size, std::string* error) {
  std::string header = "{'descr': '";
  header += descr;
  header += "', 'fortran_order': False, 'shape': (";
  for (uint32_t d = 0; d < rank; ++d) {
    header += std::to_string(shape[d]);
    if (rank == 1 || d + 1 < rank) header += ",";
    if (d + 1 < rank) header += " ";
  }
  header += "), }";
  // Pad with spaces so the data starts at a multiple of 64; end with '\n'.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  uint8_t preamble[10];
  memcpy(preamble, kMagic, 6);
  preamble[6] = 1;
  preamble[7] = 0;
  preamble[8] = (uint8_t)(header.size() & 0xff);
  preamble[9] = (uint8_t)(header.size() >> 8);
  FILE* file = fopen(path.c_str(), "wb");
  if (!file) {
    *error = "cannot create '" + path + "': " + strerror(errno);
    return false;
  }
  bool ok = fwrite(preamble, 1, 10, file) == 10 &&
            fwrite(header.data(), 1, header.size(), file) == header.size() &&
            (byte_size == 0 || fwrite(data, 1, byte_size, file) == byte_size);
  ok = (fclose(file) == 0) && ok;
  if (!ok) *error = "cannot write '" + path + "'";
  return ok;
}

// The string table of `byte_size` bytes at `data` (`count` strings) as
// numpy's '<U{k}' elements in *out, k the longest string's code points (at
// least 1); sets *descr.
bool TableToUnicode(const void* data, size_t byte_size, uint64_t count, std::string* descr,
                    std::vector<uint8_t>* out, std::string* error) {
  std::vector<std::string> strings;
  if (count > SIZE_MAX / 4 || !kiln::UnpackStrings(data, byte_size, (size_t)count, &strings)) {
    *error = "the runtime gave no table of " + std::to_string(count) + " strings";
    return false;
  }
  std::vector<std::vector<uint32_t>> code_points(strings.size());
  uint64_t width = 1;
  for (size_t i = 0; i < strings.size(); ++i) {
    DecodeUtf8((const uint8_t*)strings[i].data(), strings[i].size(), &code_points[i]);
    if (code_points[i].size() > width) width = code_points[i].size();
  }
  uint64_t total = 0;  // < 2^32 * 2^32 * 4: no overflow before the check
  if (__builtin_mul_overflow(count, width * 4, &total) || total > kMaxStringNpyBytes) {
    *error = std::to_string(count) + " strings of up to " + std::to_string(width) +
             " code points make a '<U' .npy of more than 4 GiB";
    return false;
  }
  out->assign((size_t)total, 0);
  for (size_t i = 0; i < code_points.size(); ++i) {
    uint8_t* element = out->data() + i * width * 4;
    for (size_t j = 0; j < code_points[i].size(); ++j) {
      uint32_t c = code_points[i][j];
      uint8_t bytes[4] = {(uint8_t)c, (uint8_t)(c >> 8), (uint8_t)(c >> 16), (uint8_t)(c >> 24)};
      memcpy(element + 4 * j, bytes, 4);
    }
  }
  *descr = "<U" + std::to_string(width);
  return true;
}

}  // namespace

bool WriteNpy(const std::string& path, kiln_dtype_t dtype, const int64_t* shape, uint32_t rank,
              const void* data, size_t byte_size, std::string* error) {
  if (dtype != KILN_DTYPE_STRING) return WriteNpyFile(path, NpyDescr(dtype), shape, rank, data, byte_size, error);
  uint64_t count = 1;
  for (uint32_t d = 0; d < rank; ++d) {
    if (shape[d] < 0 || __builtin_mul_overflow(count, (uint64_t)shape[d], &count)) count = UINT64_MAX;
  }
  std::string descr;
  std::vector<uint8_t> unicode;
  if (!TableToUnicode(data, byte_size, count, &descr, &unicode, error)) {
    *error = "'" + path + "': " + *error;
    return false;
  }
  return WriteNpyFile(path, descr, shape, rank, unicode.data(), unicode.size(), error);
}

}  // namespace kiln_tool
