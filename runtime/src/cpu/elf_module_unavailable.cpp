// The ELF loader of a runtime built with -Dkernel_loader=none (the default
// on Apple systems, which have no <elf.h> and, on iOS, forbid mapping code at
// run time): loading a kernel library fails with KILN_UNSUPPORTED, so a model
// with ELF kernels cannot be run; its kernels must be linked in statically.
// elf_module.cpp and arch/* are left out of such a build.
#include "cpu/elf_module.h"

#include <string.h>

static kiln_status_t kiln_elf_unavailable(void) {
  return kiln_make_status(KILN_UNSUPPORTED,
                          "elf: this libkiln was built without the ELF kernel loader "
                          "(kernel_loader=none): compile the model with --kernels=static");
}

kiln_status_t kiln_elf_module_load(const uint8_t*, size_t, kiln_elf_module_t* out_module) {
  if (out_module) memset(out_module, 0, sizeof(*out_module));
  return kiln_elf_unavailable();
}

void kiln_elf_module_unload(kiln_elf_module_t* module) {
  if (module) memset(module, 0, sizeof(*module));
}

kiln_status_t kiln_elf_module_lookup_function(const kiln_elf_module_t*, const char*,
                                              void** out_address) {
  if (out_address) *out_address = NULL;
  return kiln_elf_unavailable();
}

bool kiln_elf_module_contains(const kiln_elf_module_t*, const void*, size_t, int) {
  return false;
}

bool kiln_elf_module_contains_string(const kiln_elf_module_t*, const char*, int) {
  return false;
}
