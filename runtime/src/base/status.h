// Status objects: the one way every fallible runtime call reports errors.
//
// A kiln_status_t is NULL for success, otherwise a heap-allocated
// kiln_status_impl_t holding a code and a formatted message. When memory
// runs out while making a status, a statically allocated fallback status is
// returned instead (kiln_status_free knows not to free it).
#ifndef KILN_BASE_STATUS_H_
#define KILN_BASE_STATUS_H_

#include "kiln/kiln.h"

#if defined(__GNUC__)
#define KILN_PRINTF_FORMAT(fmt_index, first_arg) \
  __attribute__((format(printf, fmt_index, first_arg)))
#define KILN_MUST_USE __attribute__((warn_unused_result))
#else
#define KILN_PRINTF_FORMAT(fmt_index, first_arg)
#define KILN_MUST_USE
#endif

// Makes a status with `code` and a printf-style message. Returns NULL for
// KILN_OK.
kiln_status_t kiln_make_status(kiln_status_code_t code, const char* fmt, ...)
    KILN_PRINTF_FORMAT(2, 3);

// Returns a new status with the same code as `status` and the message
// "<prefix>: <old message>", and frees `status`. NULL stays NULL.
kiln_status_t kiln_status_annotate(kiln_status_t status, const char* fmt, ...)
    KILN_PRINTF_FORMAT(2, 3);

// Returns early from the calling function when `expr` yields an error.
#define KILN_RETURN_IF_ERROR(expr)           \
  do {                                       \
    kiln_status_t kiln_status_tmp_ = (expr); \
    if (kiln_status_tmp_) return kiln_status_tmp_; \
  } while (0)

#endif  // KILN_BASE_STATUS_H_
