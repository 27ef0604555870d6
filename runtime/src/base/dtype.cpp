// Element types (kiln_dtype_t mirrors kiln.fb.DType value for value).
#include "base/dtype.h"

#include "base/checked_math.h"
#include "kiln/kiln.h"

const char* kiln_dtype_name(kiln_dtype_t dtype) {
  switch (dtype) {
    case KILN_DTYPE_FLOAT32: return "float32";
    case KILN_DTYPE_FLOAT16: return "float16";
    case KILN_DTYPE_FLOAT64: return "float64";
    case KILN_DTYPE_INT8: return "int8";
    case KILN_DTYPE_INT16: return "int16";
    case KILN_DTYPE_INT32: return "int32";
    case KILN_DTYPE_INT64: return "int64";
    case KILN_DTYPE_UINT8: return "uint8";
    case KILN_DTYPE_BOOL: return "bool";
    case KILN_DTYPE_UINT16: return "uint16";
    case KILN_DTYPE_UINT32: return "uint32";
    case KILN_DTYPE_UINT64: return "uint64";
    case KILN_DTYPE_BFLOAT16: return "bfloat16";
    case KILN_DTYPE_STRING: return "string";
    case KILN_DTYPE_FLOAT8E4M3FN: return "float8e4m3fn";
    case KILN_DTYPE_FLOAT8E4M3FNUZ: return "float8e4m3fnuz";
    case KILN_DTYPE_FLOAT8E5M2: return "float8e5m2";
    case KILN_DTYPE_FLOAT8E5M2FNUZ: return "float8e5m2fnuz";
    case KILN_DTYPE_UINT4: return "uint4";
    case KILN_DTYPE_INT4: return "int4";
    case KILN_DTYPE_FLOAT4E2M1: return "float4e2m1";
    case KILN_DTYPE_FLOAT8E8M0: return "float8e8m0";
    case KILN_DTYPE_UINT2: return "uint2";
    case KILN_DTYPE_INT2: return "int2";
  }
  return "unknown";
}

size_t kiln_dtype_size(kiln_dtype_t dtype) { return kiln_dtype_code_size((uint32_t)dtype); }

bool kiln_dtype_code_known(uint32_t code) {
  return code == KILN_DTYPE_STRING || kiln_dtype_code_size(code) != 0;
}

size_t kiln_dtype_code_size(uint32_t code) {
  switch (code) {
    case KILN_DTYPE_FLOAT32: return 4;
    case KILN_DTYPE_FLOAT16: return 2;
    case KILN_DTYPE_FLOAT64: return 8;
    case KILN_DTYPE_INT8: return 1;
    case KILN_DTYPE_INT16: return 2;
    case KILN_DTYPE_INT32: return 4;
    case KILN_DTYPE_INT64: return 8;
    case KILN_DTYPE_UINT8: return 1;
    case KILN_DTYPE_BOOL: return 1;
    case KILN_DTYPE_UINT16: return 2;
    case KILN_DTYPE_UINT32: return 4;
    case KILN_DTYPE_UINT64: return 8;
    case KILN_DTYPE_BFLOAT16: return 2;
    case KILN_DTYPE_STRING: return 0;  // a string table: no element size (kiln_dtype_tensor_bytes)
    // One element per byte (the 4- and 2-bit types too: never packed).
    case KILN_DTYPE_FLOAT8E4M3FN: case KILN_DTYPE_FLOAT8E4M3FNUZ: case KILN_DTYPE_FLOAT8E5M2:
    case KILN_DTYPE_FLOAT8E5M2FNUZ: case KILN_DTYPE_UINT4: case KILN_DTYPE_INT4: case KILN_DTYPE_FLOAT4E2M1:
    case KILN_DTYPE_FLOAT8E8M0: case KILN_DTYPE_UINT2: case KILN_DTYPE_INT2:
      return 1;
  }
  return 0;
}

unsigned kiln_dtype_code_min_minor(uint32_t code) { return code >= KILN_DTYPE_FLOAT8E4M3FN ? 10 : 0; }

bool kiln_dtype_tensor_bytes(uint32_t code, uint64_t elements, uint64_t string_bytes, uint64_t* out_bytes) {
  if (code == KILN_DTYPE_STRING) {
    uint64_t offsets;  // 4 * (elements + 1)
    return kiln_add_u64(elements, 1, &offsets) && kiln_mul_u64(offsets, 4, &offsets) &&
           kiln_add_u64(offsets, string_bytes, out_bytes);
  }
  size_t size = kiln_dtype_code_size(code);
  return size != 0 && kiln_mul_u64(elements, size, out_bytes);
}

const char* kiln_status_code_name(kiln_status_code_t code) {
  switch (code) {
    case KILN_OK: return "OK";
    case KILN_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case KILN_INVALID_BUNDLE: return "INVALID_BUNDLE";
    case KILN_UNSUPPORTED: return "UNSUPPORTED";
    case KILN_NOT_FOUND: return "NOT_FOUND";
    case KILN_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case KILN_IO_ERROR: return "IO_ERROR";
    case KILN_INTERNAL: return "INTERNAL";
  }
  return "UNKNOWN";
}
