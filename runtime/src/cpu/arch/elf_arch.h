// The per-architecture parts of the ELF loader, as data. Each architecture
// file (x86_64.cpp, aarch64.cpp, arm.cpp) exports one descriptor: its
// e_machine, ELF class, name for messages, the relocation formats its
// libraries use, the function that applies one relocation and, where the
// architecture has ABI variants, the check of e_flags against the host's. elf_arch.cpp lists them in a
// table found by (e_machine, class), and names the host's descriptor: that is
// the only compile-time choice left (kiln_elf_arch_host).
//
// The generic loader (cpu/elf_module.cpp) decodes every REL or RELA entry
// into a kiln_elf_relocation_t, checks its target and resolves its symbol;
// the architecture's function only knows what each type computes. Records
// carry everything 32-bit targets (ARMv7: ELFCLASS32, REL tables with the
// addend in the target) need: the addend explicitly, whether it was read
// from the target, and the target's width.
#ifndef KILN_CPU_ARCH_ELF_ARCH_H_
#define KILN_CPU_ARCH_ELF_ARCH_H_

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

// Relocation-table formats (bits of kiln_elf_arch_t.relocation_formats).
typedef enum kiln_elf_relocation_format_e {
  KILN_ELF_RELA = 1u << 0,  // DT_RELA / Elf*_Rela: explicit r_addend
  KILN_ELF_REL = 1u << 1,   // DT_REL / Elf*_Rel: the addend is in the target
} kiln_elf_relocation_format_t;

// One relocation-table entry, decoded from any of the four layouts.
typedef struct kiln_elf_relocation_entry_t {
  uint64_t offset;  // r_offset: link-time address of the target
  uint32_t type;    // the type from r_info (ELF64_R_TYPE / ELF32_R_TYPE)
  uint32_t symbol;  // the symbol index from r_info (0: none)
  int64_t addend;   // r_addend for RELA; 0 for REL (read from the target later)
} kiln_elf_relocation_entry_t;

// One relocation, already bounds-checked by the generic loader.
typedef struct kiln_elf_relocation_t {
  uint32_t type;            // the relocation type
  uint32_t index;           // position in the relocation tables (for messages)
  uint8_t* target;          // where to write: `target_size` writable bytes inside the mapping
  uint32_t target_size;     // bytes checked at `target`: the class's word (8 for ELFCLASS64, 4 for ELFCLASS32)
  uint64_t load_bias;       // run-time address minus link-time address
  int64_t addend;           // RELA: r_addend; REL: the target's word as read (sign-extended)
  int addend_implicit;      // 1: `addend` was read from the target (REL); 0: r_addend (RELA)
  int has_symbol;           // 1 when the relocation names a symbol (r_sym != 0)
  uint64_t symbol_value;    // run-time address of that (defined) symbol
  const char* symbol_name;  // its name, for messages ("" without a symbol)
} kiln_elf_relocation_t;

// Applies one relocation; KILN_UNSUPPORTED for a type the loader does not handle.
typedef kiln_status_t (*kiln_elf_apply_relocation_fn_t)(const kiln_elf_relocation_t* relocation);
// Checks a library's e_flags against what the host runs (ARM: EABI version,
// float ABI); KILN_UNSUPPORTED naming both sides when they differ.
typedef kiln_status_t (*kiln_elf_check_flags_fn_t)(uint32_t e_flags);

// One architecture the loader knows.
typedef struct kiln_elf_arch_t {
  uint16_t machine;                               // e_machine (EM_X86_64, EM_AARCH64, ...)
  uint8_t elf_class;                              // EI_CLASS: ELFCLASS64 or ELFCLASS32
  uint8_t relocation_formats;                     // kiln_elf_relocation_format_t bits its libraries may use
  const char* name;                               // for messages: "x86_64", "aarch64", "arm"
  kiln_elf_apply_relocation_fn_t apply_relocation; // what each relocation type computes
  kiln_elf_check_flags_fn_t check_flags;          // e_flags against the host's; NULL: nothing to check
} kiln_elf_arch_t;

// The descriptors, one per architecture file.
extern const kiln_elf_arch_t kiln_elf_arch_x86_64;
extern const kiln_elf_arch_t kiln_elf_arch_aarch64;
extern const kiln_elf_arch_t kiln_elf_arch_arm;

// ARM's e_flags check with the host's float ABI explicit (1: hard-float,
// armhf; 0: soft-float, armel), so tests can run it on any host: the EABI
// version must be 5, and a library marked for the other float ABI is refused
// (one marked for neither is accepted, as glibc does).
kiln_status_t kiln_elf_arm_check_flags(uint32_t e_flags, int host_hard_float);

// The descriptor for (e_machine, EI_CLASS), or NULL when the loader has none.
const kiln_elf_arch_t* kiln_elf_arch_find(uint16_t machine, uint8_t elf_class);
// The host's descriptor (the one libraries must be built for), or NULL when
// libkiln runs on an architecture without one (nothing can be loaded).
const kiln_elf_arch_t* kiln_elf_arch_host(void);
// Human-readable name of an e_machine value ("x86_64", "aarch64", "arm", ...;
// "unknown" otherwise).
const char* kiln_elf_machine_name(uint16_t machine);

// Bytes of one relocation-table entry of `format` in an `elf_class` file
// (0 for an unknown class), and the C type's name for messages.
size_t kiln_elf_relocation_entry_size(uint8_t elf_class, kiln_elf_relocation_format_t format,
                                      const char** out_type_name);
// Decodes the entry at `entry` (kiln_elf_relocation_entry_size bytes, any alignment).
void kiln_elf_relocation_decode(const uint8_t* entry, uint8_t elf_class,
                                kiln_elf_relocation_format_t format,
                                kiln_elf_relocation_entry_t* out_entry);

// Shared by the architecture files: writes `value` to the relocation's
// target (its low target_size bytes; the target may be unaligned).
kiln_status_t kiln_elf_relocation_write(const kiln_elf_relocation_t* relocation, uint64_t value);
// The error for a relocation of type `type_name` that needs a symbol but has none.
kiln_status_t kiln_elf_relocation_missing_symbol(const kiln_elf_relocation_t* relocation,
                                                 const char* type_name);

#endif  // KILN_CPU_ARCH_ELF_ARCH_H_
