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
    case EM_ARM: return "arm";
    case EM_RISCV: return "riscv";
    case EM_PPC64: return "ppc64";
    case EM_S390: return "s390";
    case EM_MIPS: return "mips";
    case EM_NONE: return "none";
  }
  return "unknown";
}

size_t kiln_elf_relocation_entry_size(uint8_t elf_class, kiln_elf_relocation_format_t format,
                                      const char** out_type_name) {
  const int rela = format == KILN_ELF_RELA;
  if (elf_class == ELFCLASS64) {
    *out_type_name = rela ? "Elf64_Rela" : "Elf64_Rel";
    return rela ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
  }
  if (elf_class == ELFCLASS32) {
    *out_type_name = rela ? "Elf32_Rela" : "Elf32_Rel";
    return rela ? sizeof(Elf32_Rela) : sizeof(Elf32_Rel);
  }
  *out_type_name = "?";
  return 0;
}

void kiln_elf_relocation_decode(const uint8_t* entry, uint8_t elf_class,
                                kiln_elf_relocation_format_t format,
                                kiln_elf_relocation_entry_t* out_entry) {
  memset(out_entry, 0, sizeof(*out_entry));
  if (elf_class == ELFCLASS64) {
    Elf64_Rela rela;  // an Elf64_Rel is its first two fields
    memset(&rela, 0, sizeof(rela));
    memcpy(&rela, entry, format == KILN_ELF_RELA ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel));
    out_entry->offset = rela.r_offset;
    out_entry->type = (uint32_t)ELF64_R_TYPE(rela.r_info);
    out_entry->symbol = (uint32_t)ELF64_R_SYM(rela.r_info);
    out_entry->addend = rela.r_addend;
  } else {
    Elf32_Rela rela;  // an Elf32_Rel is its first two fields
    memset(&rela, 0, sizeof(rela));
    memcpy(&rela, entry, format == KILN_ELF_RELA ? sizeof(Elf32_Rela) : sizeof(Elf32_Rel));
    out_entry->offset = rela.r_offset;
    out_entry->type = ELF32_R_TYPE(rela.r_info);
    out_entry->symbol = ELF32_R_SYM(rela.r_info);
    out_entry->addend = rela.r_addend;
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
