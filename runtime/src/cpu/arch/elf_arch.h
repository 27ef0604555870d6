// Per-architecture relocation processing for the ELF loader. The generic
// loader (cpu/elf_module.cpp) validates each relocation's target and resolves
// its symbol; the architecture file only knows what each type computes.
#ifndef KILN_CPU_ARCH_ELF_ARCH_H_
#define KILN_CPU_ARCH_ELF_ARCH_H_

#include <stdint.h>

#include "base/status.h"

// One relocation, already bounds-checked by the generic loader.
typedef struct kiln_elf_relocation_t {
  uint32_t type;            // ELF64_R_TYPE(r_info)
  uint32_t index;           // position in the relocation tables (for messages)
  uint8_t* target;          // where to write: 8 writable bytes inside the mapping
  uint64_t load_bias;       // run-time address minus link-time address
  int64_t addend;           // r_addend
  int has_symbol;           // 1 when the relocation names a symbol (r_sym != 0)
  uint64_t symbol_value;    // run-time address of that (defined) symbol
  const char* symbol_name;  // its name, for messages ("" without a symbol)
} kiln_elf_relocation_t;

// Applies one relocation; UNSUPPORTED for a type the loader does not handle.
kiln_status_t kiln_elf_x86_64_apply_relocation(const kiln_elf_relocation_t* relocation);
kiln_status_t kiln_elf_aarch64_apply_relocation(const kiln_elf_relocation_t* relocation);

#endif  // KILN_CPU_ARCH_ELF_ARCH_H_
