// A minimal ELF loader for kernel libraries: maps a position-independent
// ELF shared object from memory (no dlopen, no temporary files).
//
// Accepted input: little-endian, ET_DYN, for the host's architecture (its
// descriptor in cpu/arch/elf_arch.h, found by e_machine and class: x86_64 and
// aarch64 are ELFCLASS64, arm ELFCLASS32, whose records cpu/elf_class.h
// decodes), e_flags the descriptor accepts (arm: EABI 5, the host's float
// ABI), self-contained (no DT_NEEDED, every referenced symbol defined
// inside), relocations in the formats and of the types the descriptor
// handles (RELA on x86_64 and aarch64, REL or RELA on arm). Rejected: W+X
// segments and segments of different protections sharing a page.
//
// Load sequence: check the header and program headers; reserve the whole
// span with one anonymous read-write mapping; copy segments (bss stays zero);
// parse PT_DYNAMIC; count symbols (DT_HASH or DT_GNU_HASH); apply
// relocations; mprotect every segment to its p_flags (gaps PROT_NONE,
// PT_GNU_RELRO read-only); clear the instruction cache where needed.
//
// Init functions (DT_INIT, DT_INIT_ARRAY) are never run: kernels must not
// need them (the compiler emits none).
//
// Trust: every header, table and address in the blob is checked so a
// malformed blob cannot make the loader read or write outside the blob or
// the mapping. The machine code itself cannot be checked: once loaded, the
// kernels run with the process's rights, like any shared library.
#ifndef KILN_CPU_ELF_MODULE_H_
#define KILN_CPU_ELF_MODULE_H_

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "cpu/arch/elf_arch.h"

// The record sizes of an ELF class (cpu/elf_class.h, which needs <elf.h>:
// only the loader itself includes it, so builds without it, such as Apple's,
// compile this header).
typedef struct kiln_elf_class_layout_t kiln_elf_class_layout_t;

#define KILN_ELF_MAX_SEGMENTS 16              // PT_LOAD entries accepted
#define KILN_ELF_MAX_PROGRAM_HEADERS 64       // program headers accepted
#define KILN_ELF_MAX_SPAN (1ull << 30)        // bytes of address space (1 GiB)
#define KILN_ELF_MAX_SYMBOLS (1u << 20)       // dynamic symbols accepted (and DT_GNU_HASH buckets)
#define KILN_ELF_MAX_RELOCATIONS (1u << 22)   // relocations accepted, all tables together

// One PT_LOAD segment as mapped.
typedef struct kiln_elf_segment_t {
  uint8_t* start;  // first byte of the segment (p_vaddr translated)
  size_t size;     // p_memsz
  int prot;        // PROT_READ/WRITE/EXEC from p_flags
} kiln_elf_segment_t;

// A loaded library.
typedef struct kiln_elf_module_t {
  uint8_t* base;                                      // page-aligned start of the mapping
  size_t size;                                        // bytes mapped
  uint64_t min_vaddr;                                 // link-time address of `base`
  kiln_elf_segment_t segments[KILN_ELF_MAX_SEGMENTS]; // the PT_LOAD segments, by address
  uint32_t segment_count;                             // entries used in `segments`
  const uint8_t* symbols;                             // .dynsym (ElfNN_Sym array of `elf_class`) in the mapping
  uint32_t symbol_count;                              // entries in `symbols`
  const char* strings;                                // .dynstr in the mapping
  size_t string_size;                                 // bytes in `strings`
  const kiln_elf_arch_t* arch;                        // the architecture (the host's)
  const kiln_elf_class_layout_t* elf_class;           // record sizes of the arch's ELF class
} kiln_elf_module_t;

// Loads `size` bytes at `blob` (which may be freed afterwards) for the host's
// architecture (kiln_elf_arch_host).
kiln_status_t kiln_elf_module_load(const uint8_t* blob, size_t size,
                                   kiln_elf_module_t* out_module);
// The same for the architecture `arch`. Only tests pass another than the
// host's: they map and relocate (32-bit words wrap on a 64-bit host) and
// inspect a foreign library but never call into it.
kiln_status_t kiln_elf_module_load_arch(const uint8_t* blob, size_t size, const kiln_elf_arch_t* arch,
                                        kiln_elf_module_t* out_module);
// Unmaps the module; safe on a zeroed struct.
void kiln_elf_module_unload(kiln_elf_module_t* module);

// Finds the defined function symbol `name` in .dynsym; its address must lie
// inside an executable segment.
kiln_status_t kiln_elf_module_lookup_function(const kiln_elf_module_t* module,
                                              const char* name, void** out_address);

// True when [address, address + size) lies inside one segment whose
// protection includes all of `required_prot`.
bool kiln_elf_module_contains(const kiln_elf_module_t* module, const void* address,
                              size_t size, int required_prot);

// Like kiln_elf_module_contains for a NUL-terminated string: the string and
// its terminator lie inside one segment with `required_prot`.
bool kiln_elf_module_contains_string(const kiln_elf_module_t* module, const char* string,
                                     int required_prot);

#endif  // KILN_CPU_ELF_MODULE_H_
