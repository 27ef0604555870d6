// AArch64 relocations: the types a -shared -fPIC, -z now kernel library uses.
#include <elf.h>
#include <string.h>

#include "cpu/arch/elf_arch.h"

kiln_status_t kiln_elf_aarch64_apply_relocation(const kiln_elf_relocation_t* relocation) {
  uint64_t value;
  switch (relocation->type) {
    case R_AARCH64_NONE:
    case 256:  // R_AARCH64_NONE's old number (R_AARCH64_NULL)
      return NULL;
    case R_AARCH64_RELATIVE:  // Delta(S) + A
      value = relocation->load_bias + (uint64_t)relocation->addend;
      break;
    case R_AARCH64_ABS64:      // S + A
    case R_AARCH64_GLOB_DAT:   // S + A
    case R_AARCH64_JUMP_SLOT:  // S + A
      if (!relocation->has_symbol) {
        return kiln_make_status(KILN_INVALID_BUNDLE,
                                "elf: relocation %u (type %u) has no symbol",
                                relocation->index, relocation->type);
      }
      value = relocation->symbol_value + (uint64_t)relocation->addend;
      break;
    default:
      return kiln_make_status(KILN_UNSUPPORTED,
                              "elf: relocation %u has unsupported aarch64 type %u",
                              relocation->index, relocation->type);
  }
  memcpy(relocation->target, &value, sizeof(value));  // target may be unaligned
  return NULL;
}
