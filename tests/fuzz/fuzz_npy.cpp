// Fuzz harness: the kiln tool's .npy reader (tools/kiln/npy.cpp, ParseNpy:
// what `kiln run --input name=file.npy` reads), on an exactly sized copy of
// the input.
//
// Must hold: no crash, leak or sanitizer report, no exception escaping;
// failure is false with a non-empty message naming the file; success gives a
// dtype the runtime knows, a shape of at most 32 non-negative dimensions and
// exactly product(shape) * element size data bytes, which are the input's
// last bytes; or, for strings, a valid string table of product(shape)
// strings (kiln.hpp).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.hpp"
#include "npy.h"

#define FUZZ_CHECK(cond)                                                     \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "fuzz_npy: check failed: %s (line %d)\n", #cond, __LINE__); \
      abort();                                                               \
    }                                                                        \
  } while (0)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  uint8_t* copy = (uint8_t*)malloc(size ? size : 1);
  if (size) memcpy(copy, data, size);
  kiln_tool::NpyArray array;
  std::string error;
  bool ok = kiln_tool::ParseNpy(copy, size, "input.npy", &array, &error);
  if (!ok) {
    FUZZ_CHECK(!error.empty() && error.find("input.npy") != std::string::npos);
  } else {
    FUZZ_CHECK(error.empty());
    FUZZ_CHECK(array.shape.size() <= 32);
    if (array.dtype == KILN_DTYPE_STRING) {
      uint64_t count = 1;
      for (int64_t d : array.shape) {
        FUZZ_CHECK(d >= 0);
        FUZZ_CHECK(!__builtin_mul_overflow(count, (uint64_t)d, &count));
      }
      std::vector<std::string> strings;
      FUZZ_CHECK(kiln::UnpackStrings(array.data.data(), array.data.size(), (size_t)count, &strings));
      FUZZ_CHECK(strcmp(kiln_tool::NpyDescr(array.dtype), "<U") == 0);
      free(copy);
      return 0;
    }
    uint64_t bytes = kiln_dtype_size(array.dtype);
    FUZZ_CHECK(bytes != 0);
    FUZZ_CHECK(array.shape.size() <= 32);
    for (int64_t d : array.shape) {
      FUZZ_CHECK(d >= 0);
      FUZZ_CHECK(!__builtin_mul_overflow(bytes, (uint64_t)d, &bytes));
    }
    FUZZ_CHECK(array.data.size() == bytes && bytes <= size);
    FUZZ_CHECK(bytes == 0 || memcmp(array.data.data(), copy + size - bytes, bytes) == 0);
    FUZZ_CHECK(strcmp(kiln_tool::NpyDescr(array.dtype), "?") != 0);
  }
  free(copy);
  return 0;
}
