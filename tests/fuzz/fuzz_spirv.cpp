// Fuzz harness: the runtime's SPIR-V inspector (runtime/src/bundle/spirv_inspect.cpp),
// which bundle_verify_spirv.cpp runs on every module of a Vulkan bundle at
// load (the bundle-level SPIR-V checks themselves are reached by
// fuzz_bundle from the Vulkan bundles of its corpus).
//
// Feeds: byte 0 picks the entry point asked for (NULL, i.e. "main"; "main";
// or a name of up to 15 bytes taken from the input after byte 1, whose low
// nibble is its length); the rest is the module, copied to an exactly sized,
// 4-byte aligned buffer (the inspector refuses misaligned code, as the
// verifier guarantees alignment).
//
// Must hold: no crash, hang or sanitizer report; failure is a status with a
// message; success reports word_count == size / 4 and the same answer twice.
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bundle/spirv_inspect.h"

#define FUZZ_CHECK(cond)                                                       \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "fuzz_spirv: check failed: %s (line %d)\n", #cond, __LINE__); \
      abort();                                                                 \
    }                                                                          \
  } while (0)

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int mode = data[0] % 3;
  ++data;
  --size;
  char name[16] = "main";
  const char* entry_point = mode == 0 ? NULL : name;
  if (mode == 2) {
    if (size < 1) return 0;
    size_t length = data[0] & 15;
    if (size < 1 + length) return 0;
    memcpy(name, data + 1, length);
    name[length] = '\0';
    data += 1 + length;
    size -= 1 + length;
  }
  void* code = malloc(size ? size : 1);  // malloc's alignment covers 4 bytes
  if (size) memcpy(code, data, size);
  kiln_spirv_info_t info;
  memset(&info, 0xa5, sizeof(info));
  kiln_status_t status = kiln_spirv_inspect(code, size, entry_point, &info);
  if (status) {
    const char* message = kiln_status_message(status);
    FUZZ_CHECK(message != NULL && message[0] != '\0');
    kiln_status_free(status);
  } else {
    FUZZ_CHECK(size % 4 == 0 && info.word_count == size / 4);
    kiln_spirv_info_t again;
    memset(&again, 0, sizeof(again));
    FUZZ_CHECK(kiln_spirv_inspect(code, size, entry_point, &again) == NULL);
    FUZZ_CHECK(memcmp(&info, &again, sizeof(info)) == 0);
  }
  free(code);
  return 0;
}
