// String tables in hand-written kernels (docs/bundle.md#string-tensors).
//
// A string value's kernel buffer is its table's bytes (tir::UInt(8)): the
// n + 1 little-endian u32 offsets, composed here byte by byte, then the
// strings' bytes. These builders read and write tables and spell numbers
// (Cast to and from string, ops_text.cpp). Every load and store is clamped
// to the buffer, so a table whose offsets lie (the runtime checks inputs)
// can give wrong text but never touch memory outside its slot.
#pragma once

#include <functional>

#include "graph/graph.h"
#include "lower/serial_tir.h"

namespace kiln::lower::strings {

using tir::Expr;
using tir::Stmt;

// Offset i of table t, as an Index.
Expr offset(const tir::Buffer& t, const Expr& i);
// Stores v (an Index below 2^32) as offset i.
Stmt set_offset(const tir::Buffer& t, const Expr& i, const Expr& v);
// Where the bytes of a table of n strings start.
inline Expr bytes_start(const Expr& n) { return (n + Expr(1)) * Expr(4); }
// The byte at position pos of the buffer, as an Index (pos clamped into it).
Expr byte_at(const tir::Buffer& t, const Expr& pos);

// Appends bytes to a table's bytes area, starting at `start` (a buffer
// position); `at` counts those written so far (set it to 0 first).
struct Writer {
  tir::Buffer table;                            // the output table
  Expr start;                                   // where its bytes area starts
  serial::Local at{"str_at", tir::Index()};     // bytes written so far
  Stmt put(const Expr& c) const;                // one byte (an Index); dropped past the buffer
  Stmt put(char c) const { return put(Expr((int64_t)(unsigned char)c)); }
};

// Whether format_number spells `from` (parse_number reads into every number type).
bool formats(graph::DType from);

// What parse_number read from one string.
struct Parsed {
  serial::Local value{"pn_value", tir::Float(64)};        // the number as a float64 (NaN for other text)
  serial::Local magnitude{"pn_integer", tir::UInt(64)};   // the integer part's digits, saturated at 2^64 - 1
  serial::Local negative{"pn_negative", tir::Index()};    // 1 after a leading '-'
  serial::Local plain{"pn_plain", tir::Index()};          // 1: a decimal number without exponent
  std::vector<tir::Buffer> buffers() const { return {value.b, magnitude.b, negative.b, plain.b}; }
};

// Parses bytes [begin, end) of t (buffer positions) into `out` (whose
// buffers the caller allocates): optional blanks, sign, digits with an
// optional point, an optional exponent, blanks; or "NaN", "INF", "+INF",
// "-INF", "Infinity" in any case. Any other text gives NaN and plain 0.
// Decimal mantissas of up to 17 significant digits and exponents within 22
// of them are exact before the float64 rounding; a plain number's integer
// part is exact in `magnitude` (integer targets read that: "100.5" is 100).
Stmt parse_number(const tir::Buffer& t, const Expr& begin, const Expr& end, const Parsed& out);

// Appends the text of v, at most graph::kNumberTextBytes bytes (as loaded from a `from` buffer; formats(from)):
// integers in decimal; floats as numpy's str of their type: the fewest
// significant digits that read back to the same value, positional from
// 1e-4 to 1e16 ("0.5", "100.0"), scientific outside ("1e-05",
// "3.4028235e+38"); "NaN", "INF", "-INF".
Stmt format_number(const Expr& v, graph::DType from, const Writer& w);

// Sets `same` (an Index local) to 1 when the string of `length` bytes whose
// p-th byte is a_byte(p) equals bytes [b_begin, b_begin + b_length) of b,
// else 0.
Stmt equal(const std::function<Expr(const Expr&)>& a_byte, const Expr& length, const tir::Buffer& b, const Expr& b_begin,
           const Expr& b_length, const serial::Local& same);

// ASCII and Latin-1 (two-byte UTF-8, lead byte 0xC3) case mapping of one
// byte given the byte before it: letters change within their length.
Expr to_lower(const Expr& c, const Expr& prev);
Expr to_upper(const Expr& c, const Expr& prev);

}  // namespace kiln::lower::strings
