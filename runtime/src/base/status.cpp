// Status objects; see status.h.
#include "base/status.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct kiln_status_impl_t {
  kiln_status_code_t code;  // never KILN_OK
  int is_static;            // 1 for the out-of-memory fallback (never freed)
  char message[1];          // NUL-terminated; allocated to the message's length
};

// Returned when allocating a status itself fails.
static kiln_status_impl_t kiln_status_oom_fallback = {
    KILN_OUT_OF_MEMORY, 1, {'\0'}};

static const char kiln_status_oom_text[] =
    "out of memory (while reporting an error)";

// Allocates a status and formats `fmt` with `args` into it.
static kiln_status_t kiln_status_vmake(kiln_status_code_t code, const char* fmt,
                                       va_list args) {
  va_list args_copy;
  va_copy(args_copy, args);
  int length = vsnprintf(NULL, 0, fmt, args_copy);
  va_end(args_copy);
  if (length < 0) length = 0;
  size_t total = sizeof(kiln_status_impl_t) + (size_t)length + 1;
  kiln_status_impl_t* status = (kiln_status_impl_t*)malloc(total);
  if (!status) return &kiln_status_oom_fallback;
  status->code = code;
  status->is_static = 0;
  vsnprintf(status->message, (size_t)length + 1, fmt, args);
  return status;
}

kiln_status_t kiln_make_status(kiln_status_code_t code, const char* fmt, ...) {
  if (code == KILN_OK) return NULL;
  va_list args;
  va_start(args, fmt);
  kiln_status_t status = kiln_status_vmake(code, fmt, args);
  va_end(args);
  return status;
}

kiln_status_t kiln_status_annotate(kiln_status_t status, const char* fmt, ...) {
  if (!status || status->is_static) return status;
  // Format "<new>: " into a small buffer first, then build "<new>: <old>".
  char prefix[512];
  va_list args;
  va_start(args, fmt);
  int length = vsnprintf(prefix, sizeof(prefix) - 2, fmt, args);
  va_end(args);
  if (length < 0) length = 0;
  if ((size_t)length > sizeof(prefix) - 3) length = (int)(sizeof(prefix) - 3);
  prefix[length] = ':';
  prefix[length + 1] = ' ';
  prefix[length + 2] = '\0';
  kiln_status_t result = kiln_make_status(status->code, "%s%s", prefix, status->message);
  kiln_status_free(status);
  return result;
}

kiln_status_code_t kiln_status_code(kiln_status_t status) {
  return status ? status->code : KILN_OK;
}

const char* kiln_status_message(kiln_status_t status) {
  if (!status) return "OK";
  if (status->is_static) return kiln_status_oom_text;
  return status->message;
}

void kiln_status_free(kiln_status_t status) {
  if (status && !status->is_static) free(status);
}
