// The architecture table of the ELF loader, the host's descriptor, and the
// helpers every architecture file shares (decoding relocation entries,
// writing a relocated word). See elf_arch.h.
#include "cpu/arch/elf_arch.h"

#include <elf.h>
#include <string.h>

// Every architecture the loader knows, host or not.
static const kiln_elf_arch_t* const kiln_elf_arches[] = {
    &kiln_elf_arch_x86_64,
    &kiln_elf_arch_aarch64,
    &kiln_elf_arch_arm,
};

const kiln_elf_arch_t* kiln_elf_arch_find(uint16_t machine, uint8_t elf_class) {
  for (size_t i = 0; i < sizeof(kiln_elf_arches) / sizeof(kiln_elf_arches[0]); ++i) {
    if (kiln_elf_arches[i]->machine == machine && kiln_elf_arches[i]->elf_class == elf_class) {
      return kiln_elf_arches[i];
    }
  }
  return NULL;
}

// The one compile-time choice: which descriptor matches the code libkiln
// itself was compiled to (kernel libraries run in its process). Adding an
// architecture means a descriptor file, a row in the table above and a line
// here.
const kiln_elf_arch_t* kiln_elf_arch_host(void) {
#if defined(__x86_64__)
  return &kiln_elf_arch_x86_64;
#elif defined(__aarch64__)
  return &kiln_elf_arch_aarch64;
#elif defined(__arm__) && defined(__ARM_EABI__) && defined(__ARMEL__)
  return &kiln_elf_arch_arm;  // AArch32, little-endian EABI
#else
  return NULL;  // no kernel libraries can be loaded
#endif
}

const char* kiln_elf_machine_name(uint16_t machine) {
  for (size_t i = 0; i < sizeof(kiln_elf_arches) / sizeof(kiln_elf_arches[0]); ++i) {
    if (kiln_elf_arches[i]->machine == machine) return kiln_elf_arches[i]->name;
  }
  switch (machine) {  // architectures without a descriptor, for messages
    case EM_386: return "i386";
    case EM_RISCV: return "riscv";
    case EM_PPC64: return "ppc64";
    case EM_S390: return "s390";
    case EM_MIPS: return "mips";
    case EM_NONE: return "none";
  }
  return "unknown";
}

// Entry layouts: r_offset, r_info (and r_addend for RELA), each one word of
// the class (8 bytes for ELFCLASS64, 4 for ELFCLASS32).
size_t kiln_elf_relocation_entry_size(uint8_t elf_class, kiln_elf_relocation_format_t format,
                                      const char** out_type_name) {
  static const char names[2][2][11] = {{"Elf32_Rel", "Elf32_Rela"}, {"Elf64_Rel", "Elf64_Rela"}};
  const int rela = format == KILN_ELF_RELA;
  if (elf_class != ELFCLASS64 && elf_class != ELFCLASS32) {
    *out_type_name = "?";
    return 0;
  }
  *out_type_name = names[elf_class == ELFCLASS64][rela];
  return (size_t)(rela ? 3 : 2) * (elf_class == ELFCLASS64 ? 8 : 4);
}

// Word `index` of an entry, zero-extended (`word` bytes, little-endian).
static uint64_t kiln_elf_entry_word(const uint8_t* entry, uint32_t word, uint32_t index) {
  uint64_t value = 0;
  memcpy(&value, entry + index * word, word);
  return value;
}

void kiln_elf_relocation_decode(const uint8_t* entry, uint8_t elf_class,
                                kiln_elf_relocation_format_t format,
                                kiln_elf_relocation_entry_t* out_entry) {
  const int is64 = elf_class == ELFCLASS64;
  const uint32_t word = is64 ? 8 : 4;
  uint64_t info = kiln_elf_entry_word(entry, word, 1);
  out_entry->offset = kiln_elf_entry_word(entry, word, 0);
  out_entry->type = (uint32_t)(is64 ? ELF64_R_TYPE(info) : ELF32_R_TYPE(info));
  out_entry->symbol = (uint32_t)(is64 ? ELF64_R_SYM(info) : ELF32_R_SYM(info));
  out_entry->addend = 0;
  if (format == KILN_ELF_RELA) {
    uint64_t addend = kiln_elf_entry_word(entry, word, 2);
    out_entry->addend = is64 ? (int64_t)addend : (int64_t)(int32_t)(uint32_t)addend;
  }
}

kiln_status_t kiln_elf_relocation_write(const kiln_elf_relocation_t* relocation, uint64_t value) {
  if (relocation->target_size == 8) {
    memcpy(relocation->target, &value, 8);  // target may be unaligned
    return NULL;
  }
  if (relocation->target_size == 4) {
    uint32_t word = (uint32_t)value;  // 32-bit words wrap, as the ELF specifications define
    memcpy(relocation->target, &word, 4);
    return NULL;
  }
  return kiln_make_status(KILN_INTERNAL, "elf: relocation %u: %u-byte target", relocation->index,
                          relocation->target_size);
}

kiln_status_t kiln_elf_relocation_missing_symbol(const kiln_elf_relocation_t* relocation,
                                                 const char* type_name) {
  if (type_name) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "elf: relocation %u (%s) has no symbol",
                            relocation->index, type_name);
  }
  return kiln_make_status(KILN_INVALID_BUNDLE, "elf: relocation %u (type %u) has no symbol",
                          relocation->index, relocation->type);
}
