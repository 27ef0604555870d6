// Fuzz harness: the ELF kernel-library loader (runtime/src/cpu/elf_module.cpp,
// elf_class.cpp and the relocation tables of cpu/arch/).
//
// Feeds: byte 0 picks the architecture descriptor (x86_64, aarch64, arm: the
// loader maps and relocates a foreign library without running it), the rest
// is the library. Loads it with kiln_elf_module_load_arch, looks up the
// kernel query symbol and a few other names, queries the module's ranges and
// unloads it. Never calls anything in the mapping.
//
// Must hold: no crash, leak or sanitizer report; a failed load returns a
// status with a message and leaves nothing mapped; a found function lies in
// an executable segment of the module; the segments lie inside the mapping;
// writes by relocations stay inside the mapping (ASan and the loader's own
// checks).
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu/elf_module.h"
#include "kiln_kernel_abi.h"

#define FUZZ_CHECK(cond)                                                     \
  do {                                                                       \
    if (!(cond)) {                                                           \
      fprintf(stderr, "fuzz_elf: check failed: %s (line %d)\n", #cond, __LINE__); \
      abort();                                                               \
    }                                                                        \
  } while (0)

namespace {

// The descriptors a mode byte picks.
const kiln_elf_arch_t* const kArchs[] = {&kiln_elf_arch_x86_64, &kiln_elf_arch_aarch64, &kiln_elf_arch_arm};

// Names looked up in every loaded module: the query function kilnc's
// libraries export, names the runtime's test kernels use, and oddities.
const char* const kNames[] = {KILN_KERNEL_LIBRARY_QUERY_SYMBOL, "vector_add", "", "_start", "kiln_kernel_library_quer"};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const kiln_elf_arch_t* arch = kArchs[data[0] % 3];
  ++data;
  --size;
  // An exact-size copy so ASan sees reads past the blob.
  uint8_t* blob = (uint8_t*)malloc(size ? size : 1);
  if (size) memcpy(blob, data, size);
  kiln_elf_module_t module;
  memset(&module, 0xa5, sizeof(module));  // the loader must not read what it did not write
  kiln_status_t status = kiln_elf_module_load_arch(blob, size, arch, &module);
  free(blob);  // the loader copied what it needs
  if (status) {
    const char* message = kiln_status_message(status);
    FUZZ_CHECK(message != NULL && message[0] != '\0');
    kiln_status_free(status);
    return 0;
  }
  FUZZ_CHECK(module.base != NULL && module.size > 0 && module.arch == arch);
  FUZZ_CHECK(module.segment_count >= 1 && module.segment_count <= KILN_ELF_MAX_SEGMENTS);
  for (uint32_t i = 0; i < module.segment_count; ++i) {
    const kiln_elf_segment_t& s = module.segments[i];
    FUZZ_CHECK(s.start >= module.base && s.size <= module.size &&
               (size_t)(s.start - module.base) <= module.size - s.size);
    if (s.size && (s.prot & PROT_READ)) {
      FUZZ_CHECK(kiln_elf_module_contains(&module, s.start, s.size, PROT_READ));
    }
  }
  FUZZ_CHECK(!kiln_elf_module_contains(&module, module.base + module.size, 1, PROT_READ));
  FUZZ_CHECK(!kiln_elf_module_contains(&module, module.base, module.size + 1, 0));
  for (const char* name : kNames) {
    void* address = NULL;
    status = kiln_elf_module_lookup_function(&module, name, &address);
    if (status) {
      FUZZ_CHECK(kiln_status_message(status) != NULL);
      kiln_status_free(status);
    } else {
      FUZZ_CHECK(kiln_elf_module_contains(&module, address, 1, PROT_EXEC));
    }
  }
  // Strings the module's symbol table names (what kernel-table checks use).
  if (module.strings && module.string_size) {
    FUZZ_CHECK(kiln_elf_module_contains(&module, module.strings, module.string_size, PROT_READ));
    (void)kiln_elf_module_contains_string(&module, module.strings, PROT_READ);
    (void)kiln_elf_module_contains_string(&module, module.strings + module.string_size - 1, PROT_READ);
  }
  kiln_elf_module_unload(&module);
  return 0;
}
