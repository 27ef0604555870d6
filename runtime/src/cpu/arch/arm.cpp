// ARM, AArch32 (ELFCLASS32; REL tables, RELA accepted): the relocation types
// a -shared -fPIC, -z now kernel library uses, the e_flags check (EABI
// version 5, the host's float ABI) and the architecture's descriptor.
//
// kilnc's libraries (linked by lld) contain only R_ARM_RELATIVE: every
// symbol is internal. Libraries with preemptible symbols (GNU ld or lld)
// add ABS32, GLOB_DAT and JUMP_SLOT (tests/cross_target/reloc_kernels.c).
// Thumb functions' symbol values have bit 0 set, so S already carries the
// "| T" of the ARM ELF ABI's formulas.
#include <elf.h>

#include "cpu/arch/elf_arch.h"

// e_flags bits (spelled out: not every libc's <elf.h> has the EABI names).
#define KILN_EF_ARM_EABIMASK 0xFF000000u        // EF_ARM_EABIMASK: the EABI version, top byte
#define KILN_EF_ARM_ABI_FLOAT_SOFT 0x00000200u  // EF_ARM_ABI_FLOAT_SOFT: soft-float calls (armel)
#define KILN_EF_ARM_ABI_FLOAT_HARD 0x00000400u  // EF_ARM_ABI_FLOAT_HARD: VFP registers (armhf)

static kiln_status_t kiln_elf_arm_apply_relocation(const kiln_elf_relocation_t* relocation) {
  switch (relocation->type) {
    case R_ARM_NONE:
      return NULL;
    case R_ARM_RELATIVE:  // B(S) + A
      return kiln_elf_relocation_write(relocation, relocation->load_bias + (uint64_t)relocation->addend);
    case R_ARM_ABS32:  // (S + A) | T
      if (!relocation->has_symbol) return kiln_elf_relocation_missing_symbol(relocation, "R_ARM_ABS32");
      return kiln_elf_relocation_write(relocation, relocation->symbol_value + (uint64_t)relocation->addend);
    case R_ARM_GLOB_DAT:   // (S + A) | T
    case R_ARM_JUMP_SLOT:  // (S + A) | T
      if (!relocation->has_symbol) {
        return kiln_elf_relocation_missing_symbol(relocation, "R_ARM_GLOB_DAT/JUMP_SLOT");
      }
      // With REL the place holds no addend: the static linker leaves 0 in a
      // GOT entry and the PLT header's address (for lazy binding) in a PLT
      // entry; glibc and musl store S alone. RELA's r_addend is added.
      return kiln_elf_relocation_write(
          relocation, relocation->symbol_value + (relocation->addend_implicit ? 0 : (uint64_t)relocation->addend));
    default:
      return kiln_make_status(KILN_UNSUPPORTED, "elf: relocation %u has unsupported arm type %u",
                              relocation->index, relocation->type);
  }
}

kiln_status_t kiln_elf_arm_check_flags(uint32_t e_flags, int host_hard_float) {
  uint32_t eabi = (e_flags & KILN_EF_ARM_EABIMASK) >> 24;
  if (eabi != 5) {
    return kiln_make_status(KILN_UNSUPPORTED,
                            "elf: kernel library is arm EABI version %u (e_flags 0x%08x) but this "
                            "runtime runs arm EABI version 5",
                            eabi, e_flags);
  }
  const char* soft = "soft-float ABI (armel";
  const char* hard = "hard-float ABI (armhf";
  if ((host_hard_float && (e_flags & KILN_EF_ARM_ABI_FLOAT_SOFT)) ||
      (!host_hard_float && (e_flags & KILN_EF_ARM_ABI_FLOAT_HARD))) {
    return kiln_make_status(KILN_UNSUPPORTED,
                            "elf: kernel library is for the arm %s, e_flags 0x%08x) but this "
                            "runtime runs the arm %s)",
                            host_hard_float ? soft : hard, e_flags, host_hard_float ? hard : soft);
  }
  return NULL;
}

// The host's float ABI: __ARM_PCS_VFP on armhf. A host of another
// architecture never runs arm libraries; armhf is what kilnc targets.
static kiln_status_t kiln_elf_arm_check_host_flags(uint32_t e_flags) {
#if defined(__arm__) && !defined(__ARM_PCS_VFP)
  return kiln_elf_arm_check_flags(e_flags, 0);
#else
  return kiln_elf_arm_check_flags(e_flags, 1);
#endif
}

const kiln_elf_arch_t kiln_elf_arch_arm = {
    EM_ARM, ELFCLASS32, KILN_ELF_REL | KILN_ELF_RELA, "arm", kiln_elf_arm_apply_relocation,
    kiln_elf_arm_check_host_flags,
};
