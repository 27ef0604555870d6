// Element types as they arrive from untrusted bytes: a raw code is only
// turned into kiln_dtype_t after it is known to be one (making an enum of an
// out-of-range value is undefined behaviour).
#ifndef KILN_BASE_DTYPE_H_
#define KILN_BASE_DTYPE_H_

#include <stddef.h>
#include <stdint.h>

// Whether `code` (kiln.fb.DType / kiln_dtype_t value) names a dtype this
// runtime knows.
bool kiln_dtype_code_known(uint32_t code);

// Bytes per element of the dtype whose code is `code`; 0 for a code that
// names no dtype, and for strings, which have no fixed element size (a
// string tensor is a string table: docs/bundle.md#string-tensors).
size_t kiln_dtype_code_size(uint32_t code);

// The bytes a tensor of dtype `code` and `elements` elements occupies:
// elements * element size, or for a string table 4 * (elements + 1) +
// string_bytes (the capacity of its bytes area). False when that
// overflows 64 bits or `code` is unknown.
bool kiln_dtype_tensor_bytes(uint32_t code, uint64_t elements, uint64_t string_bytes, uint64_t* out_bytes);

// The least bundle minor version (and so min_runtime_minor) that may hold
// a tensor of dtype `code`: 10 for the narrow types of 0.10 (float8,
// float4, int4, int2, ...), 0 for the others. Only for known codes.
unsigned kiln_dtype_code_min_minor(uint32_t code);

#endif  // KILN_BASE_DTYPE_H_
