// x86_64 relocations: the types a -shared -fPIC, -z now kernel library uses.
#include <elf.h>
#include <string.h>

#include "cpu/arch/elf_arch.h"

static kiln_status_t kiln_elf_x86_64_needs_symbol(const kiln_elf_relocation_t* relocation,
                                                  const char* type_name) {
  return kiln_make_status(KILN_INVALID_BUNDLE,
                          "elf: relocation %u (%s) has no symbol", relocation->index,
                          type_name);
}

kiln_status_t kiln_elf_x86_64_apply_relocation(const kiln_elf_relocation_t* relocation) {
  uint64_t value;
  switch (relocation->type) {
    case R_X86_64_NONE:
      return NULL;
    case R_X86_64_RELATIVE:  // B + A
      value = relocation->load_bias + (uint64_t)relocation->addend;
      break;
    case R_X86_64_64:  // S + A
      if (!relocation->has_symbol) return kiln_elf_x86_64_needs_symbol(relocation, "R_X86_64_64");
      value = relocation->symbol_value + (uint64_t)relocation->addend;
      break;
    case R_X86_64_GLOB_DAT:   // S
    case R_X86_64_JUMP_SLOT:  // S
      if (!relocation->has_symbol) {
        return kiln_elf_x86_64_needs_symbol(relocation, "R_X86_64_GLOB_DAT/JUMP_SLOT");
      }
      value = relocation->symbol_value;
      break;
    default:
      return kiln_make_status(KILN_UNSUPPORTED,
                              "elf: relocation %u has unsupported x86_64 type %u",
                              relocation->index, relocation->type);
  }
  memcpy(relocation->target, &value, sizeof(value));  // target may be unaligned
  return NULL;
}
