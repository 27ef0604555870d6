// UTF-8 <-> Unicode code points, for string tensors in .npy files (npy.cpp):
// numpy's fixed-width unicode arrays ('<U{k}') hold UTF-32 code units, string
// tables (kiln.hpp) hold UTF-8.
#ifndef KILN_TOOLS_KILN_UTF_H_
#define KILN_TOOLS_KILN_UTF_H_

#include <stddef.h>
#include <stdint.h>

#include <string>
#include <vector>

namespace kiln_tool {

// A Unicode scalar value: at most U+10FFFF, not a surrogate (U+D800..U+DFFF).
bool IsScalarValue(uint32_t code_point);

// Appends the UTF-8 form of `code_point` (a scalar value) to *out.
void AppendUtf8(uint32_t code_point, std::string* out);

// Decodes the `size` bytes at `data` as UTF-8 into code points appended to
// *out. Each maximal ill-formed subsequence (a stray continuation byte, a
// truncated sequence, an overlong form, a surrogate, a value past U+10FFFF)
// becomes one U+FFFD, as Python's bytes.decode('utf-8', 'replace') does.
void DecodeUtf8(const uint8_t* data, size_t size, std::vector<uint32_t>* out);

}  // namespace kiln_tool

#endif  // KILN_TOOLS_KILN_UTF_H_
