// String tables (docs/bundle.md#string-tensors): how a string tensor of n
// elements is laid out, in the arena, in the data segment and in the
// caller's buffers:
//   uint32_t offsets[n + 1];  // little-endian; offsets[0] = 0, non-decreasing
//   uint8_t bytes[...];       // string i is bytes[offsets[i] .. offsets[i + 1])
// The one check of that structure: for a string input the caller passes
// (exec/session.cpp), a string output the kernels wrote (idem) and a string
// constant of the bundle (bundle/bundle_verify.cpp).
#ifndef KILN_BASE_STRING_TABLE_H_
#define KILN_BASE_STRING_TABLE_H_

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

// Checks the table of `count` strings at `table`, which has `size` bytes
// (any alignment): the size holds the count + 1 offsets, offsets[0] is 0,
// the offsets never decrease and each one stays inside the `size` bytes;
// with `exact`, the table also ends exactly at `size` (offsets[count] ==
// size - 4 * (count + 1)). Sets *out_used to the table's size, 4 * (count +
// 1) + offsets[count]. A failure has status code `code` and a message
// naming the offset, e.g. "offset 3 (70) is outside its table of 12 bytes",
// for the caller to annotate with what the table is.
kiln_status_t kiln_string_table_check(const void* table, size_t size, uint64_t count, bool exact,
                                      kiln_status_code_t code, size_t* out_used);

#endif  // KILN_BASE_STRING_TABLE_H_
