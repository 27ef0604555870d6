// Element types as they arrive from untrusted bytes: a raw code is only
// turned into kiln_dtype_t after it is known to be one (making an enum of an
// out-of-range value is undefined behaviour).
#ifndef KILN_BASE_DTYPE_H_
#define KILN_BASE_DTYPE_H_

#include <stddef.h>
#include <stdint.h>

// Bytes per element of the dtype whose code (kiln.fb.DType / kiln_dtype_t
// value) is `code`; 0 for a code that names no dtype.
size_t kiln_dtype_code_size(uint32_t code);

#endif  // KILN_BASE_DTYPE_H_
