// The two ELF classes' record layouts. The loader (cpu/elf_module.cpp) works
// on the ELF64 structs only: ELFCLASS32 headers, program headers, dynamic
// entries and symbols are decoded into them here (addresses and sizes
// zero-extended, d_tag sign-extended as Elf32_Sword is signed), so every
// bounds and overflow check runs once, in 64-bit arithmetic, for both.
// Relocation entries are decoded by cpu/arch/elf_arch.h (with the addend).
#ifndef KILN_CPU_ELF_CLASS_H_
#define KILN_CPU_ELF_CLASS_H_

#include <elf.h>
#include <stddef.h>
#include <stdint.h>

// Byte sizes of one class's records (sizeof the ElfNN_* structs).
typedef struct kiln_elf_class_layout_t {
  uint8_t elf_class;             // ELFCLASS32 or ELFCLASS64
  uint8_t word;                  // bytes of an address: 4 or 8
  uint16_t header_size;          // Elf32_Ehdr: 52, Elf64_Ehdr: 64
  uint16_t program_header_size;  // Elf32_Phdr: 32, Elf64_Phdr: 56
  uint16_t dynamic_size;         // Elf32_Dyn: 8, Elf64_Dyn: 16
  uint16_t symbol_size;          // Elf32_Sym: 16, Elf64_Sym: 24
  const char* name;              // "ELFCLASS32" / "ELFCLASS64", for messages
} kiln_elf_class_layout_t;

// The layout of `elf_class` (EI_CLASS), or NULL for an unknown class.
const kiln_elf_class_layout_t* kiln_elf_class_layout(uint8_t elf_class);
// "ELFCLASS32", "ELFCLASS64" or "ELFCLASS?" (for messages).
const char* kiln_elf_class_name(uint8_t elf_class);

// Each decodes one record of `layout`'s class at `bytes` (any alignment;
// the caller has checked that the record's size lies inside the buffer).
void kiln_elf_decode_header(const kiln_elf_class_layout_t* layout, const uint8_t* bytes,
                            Elf64_Ehdr* out_header);
void kiln_elf_decode_program_header(const kiln_elf_class_layout_t* layout, const uint8_t* bytes,
                                    Elf64_Phdr* out_phdr);
void kiln_elf_decode_dynamic(const kiln_elf_class_layout_t* layout, const uint8_t* bytes,
                             Elf64_Dyn* out_entry);
void kiln_elf_decode_symbol(const kiln_elf_class_layout_t* layout, const uint8_t* bytes,
                            Elf64_Sym* out_symbol);

#endif  // KILN_CPU_ELF_CLASS_H_
