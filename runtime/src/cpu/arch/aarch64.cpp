// AArch64 (ELFCLASS64, RELA): the relocation types a -shared -fPIC, -z now
// kernel library uses, and the architecture's descriptor.
#include <elf.h>

#include "cpu/arch/elf_arch.h"

static kiln_status_t kiln_elf_aarch64_apply_relocation(const kiln_elf_relocation_t* relocation) {
  switch (relocation->type) {
    case R_AARCH64_NONE:
    case 256:  // R_AARCH64_NONE's old number (R_AARCH64_NULL)
      return NULL;
    case R_AARCH64_RELATIVE:  // Delta(S) + A
      return kiln_elf_relocation_write(relocation, relocation->load_bias + (uint64_t)relocation->addend);
    case R_AARCH64_ABS64:      // S + A
    case R_AARCH64_GLOB_DAT:   // S + A
    case R_AARCH64_JUMP_SLOT:  // S + A
      if (!relocation->has_symbol) return kiln_elf_relocation_missing_symbol(relocation, NULL);
      return kiln_elf_relocation_write(relocation, relocation->symbol_value + (uint64_t)relocation->addend);
    default:
      return kiln_make_status(KILN_UNSUPPORTED,
                              "elf: relocation %u has unsupported aarch64 type %u",
                              relocation->index, relocation->type);
  }
}

const kiln_elf_arch_t kiln_elf_arch_aarch64 = {
    EM_AARCH64, ELFCLASS64, KILN_ELF_RELA, "aarch64", kiln_elf_aarch64_apply_relocation, NULL,
};
