// ELF32/ELF64 record decoding; see elf_class.h.
#include "cpu/elf_class.h"

#include <string.h>

static const kiln_elf_class_layout_t kiln_elf_class32 = {
    ELFCLASS32, 4, sizeof(Elf32_Ehdr), sizeof(Elf32_Phdr), sizeof(Elf32_Dyn), sizeof(Elf32_Sym),
    "ELFCLASS32",
};
static const kiln_elf_class_layout_t kiln_elf_class64 = {
    ELFCLASS64, 8, sizeof(Elf64_Ehdr), sizeof(Elf64_Phdr), sizeof(Elf64_Dyn), sizeof(Elf64_Sym),
    "ELFCLASS64",
};

const kiln_elf_class_layout_t* kiln_elf_class_layout(uint8_t elf_class) {
  if (elf_class == ELFCLASS32) return &kiln_elf_class32;
  if (elf_class == ELFCLASS64) return &kiln_elf_class64;
  return NULL;
}

const char* kiln_elf_class_name(uint8_t elf_class) {
  const kiln_elf_class_layout_t* layout = kiln_elf_class_layout(elf_class);
  return layout ? layout->name : "ELFCLASS?";
}

void kiln_elf_decode_header(const kiln_elf_class_layout_t* layout, const uint8_t* bytes,
                            Elf64_Ehdr* out_header) {
  if (layout->elf_class == ELFCLASS64) {
    memcpy(out_header, bytes, sizeof(*out_header));
    return;
  }
  Elf32_Ehdr h;
  memcpy(&h, bytes, sizeof(h));
  memcpy(out_header->e_ident, h.e_ident, EI_NIDENT);
  out_header->e_type = h.e_type;
  out_header->e_machine = h.e_machine;
  out_header->e_version = h.e_version;
  out_header->e_entry = h.e_entry;
  out_header->e_phoff = h.e_phoff;
  out_header->e_shoff = h.e_shoff;
  out_header->e_flags = h.e_flags;
  out_header->e_ehsize = h.e_ehsize;
  out_header->e_phentsize = h.e_phentsize;
  out_header->e_phnum = h.e_phnum;
  out_header->e_shentsize = h.e_shentsize;
  out_header->e_shnum = h.e_shnum;
  out_header->e_shstrndx = h.e_shstrndx;
}

void kiln_elf_decode_program_header(const kiln_elf_class_layout_t* layout, const uint8_t* bytes,
                                    Elf64_Phdr* out_phdr) {
  if (layout->elf_class == ELFCLASS64) {
    memcpy(out_phdr, bytes, sizeof(*out_phdr));
    return;
  }
  Elf32_Phdr p;  // p_flags sits after p_memsz here, after p_type in Elf64_Phdr
  memcpy(&p, bytes, sizeof(p));
  out_phdr->p_type = p.p_type;
  out_phdr->p_flags = p.p_flags;
  out_phdr->p_offset = p.p_offset;
  out_phdr->p_vaddr = p.p_vaddr;
  out_phdr->p_paddr = p.p_paddr;
  out_phdr->p_filesz = p.p_filesz;
  out_phdr->p_memsz = p.p_memsz;
  out_phdr->p_align = p.p_align;
}

void kiln_elf_decode_dynamic(const kiln_elf_class_layout_t* layout, const uint8_t* bytes,
                             Elf64_Dyn* out_entry) {
  if (layout->elf_class == ELFCLASS64) {
    memcpy(out_entry, bytes, sizeof(*out_entry));
    return;
  }
  Elf32_Dyn d;
  memcpy(&d, bytes, sizeof(d));
  out_entry->d_tag = d.d_tag;  // Elf32_Sword: sign-extended
  out_entry->d_un.d_val = d.d_un.d_val;
}

void kiln_elf_decode_symbol(const kiln_elf_class_layout_t* layout, const uint8_t* bytes,
                            Elf64_Sym* out_symbol) {
  if (layout->elf_class == ELFCLASS64) {
    memcpy(out_symbol, bytes, sizeof(*out_symbol));
    return;
  }
  Elf32_Sym s;  // st_value and st_size come before st_info here, last in Elf64_Sym
  memcpy(&s, bytes, sizeof(s));
  out_symbol->st_name = s.st_name;
  out_symbol->st_info = s.st_info;
  out_symbol->st_other = s.st_other;
  out_symbol->st_shndx = s.st_shndx;
  out_symbol->st_value = s.st_value;
  out_symbol->st_size = s.st_size;
}
