// x86_64 (ELFCLASS64, RELA): the relocation types a -shared -fPIC, -z now
// kernel library uses, and the architecture's descriptor.
#include <elf.h>

#include "cpu/arch/elf_arch.h"

static kiln_status_t kiln_elf_x86_64_apply_relocation(const kiln_elf_relocation_t* relocation) {
  switch (relocation->type) {
    case R_X86_64_NONE:
      return NULL;
    case R_X86_64_RELATIVE:  // B + A
      return kiln_elf_relocation_write(relocation, relocation->load_bias + (uint64_t)relocation->addend);
    case R_X86_64_64:  // S + A
      if (!relocation->has_symbol) return kiln_elf_relocation_missing_symbol(relocation, "R_X86_64_64");
      return kiln_elf_relocation_write(relocation, relocation->symbol_value + (uint64_t)relocation->addend);
    case R_X86_64_GLOB_DAT:   // S
    case R_X86_64_JUMP_SLOT:  // S
      if (!relocation->has_symbol) {
        return kiln_elf_relocation_missing_symbol(relocation, "R_X86_64_GLOB_DAT/JUMP_SLOT");
      }
      return kiln_elf_relocation_write(relocation, relocation->symbol_value);
    default:
      return kiln_make_status(KILN_UNSUPPORTED,
                              "elf: relocation %u has unsupported x86_64 type %u",
                              relocation->index, relocation->type);
  }
}

const kiln_elf_arch_t kiln_elf_arch_x86_64 = {
    EM_X86_64, ELFCLASS64, KILN_ELF_RELA, "x86_64", kiln_elf_x86_64_apply_relocation, NULL,
};
