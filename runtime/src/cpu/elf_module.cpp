// ELF loader for kernel libraries; see elf_module.h. Functions appear in the
// order a load runs them.
#include "cpu/elf_module.h"

#include <elf.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/checked_math.h"
#include "cpu/arch/elf_arch.h"
#include "cpu/elf_class.h"

#define KILN_ELF_DT_RELR 36  // not in every <elf.h> yet

// The program headers the loader acts on.
typedef struct kiln_elf_layout_t {
  Elf64_Phdr loads[KILN_ELF_MAX_SEGMENTS];  // non-empty PT_LOADs, ascending p_vaddr
  uint32_t load_count;                      // entries used in `loads`
  Elf64_Phdr dynamic;                       // PT_DYNAMIC (valid if has_dynamic)
  int has_dynamic;                          // 1 when PT_DYNAMIC was seen
  Elf64_Phdr relro;                         // PT_GNU_RELRO (valid if has_relro)
  int has_relro;                            // 1 when PT_GNU_RELRO was seen
  uint64_t min_vaddr;                       // page-aligned lowest address
  uint64_t max_vaddr;                       // page-aligned end of the highest segment
} kiln_elf_layout_t;

// The PT_DYNAMIC entries the loader acts on (addresses are link-time vaddrs).
typedef struct kiln_elf_dynamic_t {
  uint64_t rela;              // DT_RELA
  uint64_t rela_size;         // DT_RELASZ (0 = none)
  uint64_t rela_entry_size;   // DT_RELAENT (0 = not given)
  uint64_t rel;               // DT_REL
  uint64_t rel_size;          // DT_RELSZ (0 = none)
  uint64_t rel_entry_size;    // DT_RELENT (0 = not given)
  uint64_t jmprel;            // DT_JMPREL
  uint64_t pltrel_size;       // DT_PLTRELSZ (0 = none)
  uint64_t pltrel_type;       // DT_PLTREL: DT_RELA or DT_REL, a format the architecture uses
  uint64_t symtab;            // DT_SYMTAB
  uint64_t symbol_entry_size; // DT_SYMENT (0 = not given)
  uint64_t strtab;            // DT_STRTAB
  uint64_t strtab_size;       // DT_STRSZ
  uint64_t hash;              // DT_HASH
  uint64_t gnu_hash;          // DT_GNU_HASH
  uint64_t needed;            // string offset of the first DT_NEEDED
  unsigned seen;              // bit set of KILN_ELF_SEEN_* below
} kiln_elf_dynamic_t;

enum {
  KILN_ELF_SEEN_SYMTAB = 1u << 0,
  KILN_ELF_SEEN_STRTAB = 1u << 1,
  KILN_ELF_SEEN_STRSZ = 1u << 2,
  KILN_ELF_SEEN_HASH = 1u << 3,
  KILN_ELF_SEEN_GNU_HASH = 1u << 4,
  KILN_ELF_SEEN_NEEDED = 1u << 5,
  KILN_ELF_SEEN_RELA = 1u << 6,
  KILN_ELF_SEEN_JMPREL = 1u << 7,
  KILN_ELF_SEEN_REL = 1u << 8,
};

static kiln_status_t kiln_elf_invalid(const char* message) {
  return kiln_make_status(KILN_INVALID_BUNDLE, "elf: %s", message);
}

static int kiln_elf_prot_from_flags(uint32_t flags) {
  return ((flags & PF_R) ? PROT_READ : 0) | ((flags & PF_W) ? PROT_WRITE : 0) |
         ((flags & PF_X) ? PROT_EXEC : 0);
}

//===----------------------------------------------------------------------===//
// Header and program headers (read from the blob)
//===----------------------------------------------------------------------===//

// Checks the header against `arch` (the host's, see kiln_elf_module_load)
// and decodes it; `out_layout` is its class's record layout.
static kiln_status_t kiln_elf_check_header(const uint8_t* blob, size_t size, const kiln_elf_arch_t* arch,
                                           Elf64_Ehdr* out_header,
                                           const kiln_elf_class_layout_t** out_layout) {
  if (size < EI_NIDENT) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "elf: blob is %zu bytes, smaller than an ELF header", size);
  }
  if (memcmp(blob, ELFMAG, SELFMAG) != 0) {
    return kiln_elf_invalid("bad magic: not an ELF file");
  }
  const kiln_elf_class_layout_t* layout = kiln_elf_class_layout(blob[EI_CLASS]);
  if (!layout) {
    return kiln_make_status(KILN_UNSUPPORTED, "elf: unknown class %u (neither ELFCLASS32 nor ELFCLASS64)",
                            blob[EI_CLASS]);
  }
  if (size < layout->header_size) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "elf: blob is %zu bytes, smaller than an ELF header (%s: %u)", size,
                            layout->name, layout->header_size);
  }
  Elf64_Ehdr header;
  kiln_elf_decode_header(layout, blob, &header);
  if (header.e_ident[EI_DATA] != ELFDATA2LSB) {
    return kiln_make_status(KILN_UNSUPPORTED, "elf: not little-endian (EI_DATA %u)",
                            header.e_ident[EI_DATA]);
  }
  if (header.e_ident[EI_VERSION] != EV_CURRENT || header.e_version != EV_CURRENT) {
    return kiln_elf_invalid("unknown ELF version");
  }
  // The descriptor for (e_machine, class) must be the expected one.
  if (!arch || kiln_elf_arch_find(header.e_machine, layout->elf_class) != arch) {
    return kiln_make_status(KILN_UNSUPPORTED,
                            "elf: kernel library is %s (e_machine %u, %s) but this runtime runs %s "
                            "(%s)",
                            kiln_elf_machine_name(header.e_machine), header.e_machine, layout->name,
                            arch ? arch->name : "an architecture without kernel libraries",
                            arch ? kiln_elf_class_name(arch->elf_class) : "none");
  }
  if (arch->check_flags) KILN_RETURN_IF_ERROR(arch->check_flags(header.e_flags));
  if (header.e_type != ET_DYN) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "elf: e_type %u is not ET_DYN (a shared object)", header.e_type);
  }
  if (header.e_phentsize != layout->program_header_size) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "elf: e_phentsize %u (expected %u for %s)",
                            header.e_phentsize, layout->program_header_size, layout->name);
  }
  if (header.e_phnum == 0 || header.e_phnum > KILN_ELF_MAX_PROGRAM_HEADERS) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "elf: %u program headers (1 to %d allowed)",
                            header.e_phnum, KILN_ELF_MAX_PROGRAM_HEADERS);
  }
  if (!kiln_range_within(header.e_phoff, (uint64_t)header.e_phnum * layout->program_header_size,
                         size)) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "elf: program headers [%llu, +%u x %u) lie outside the %zu-byte "
                            "blob",
                            (unsigned long long)header.e_phoff, header.e_phnum,
                            layout->program_header_size, size);
  }
  *out_header = header;
  *out_layout = layout;
  return NULL;
}

// Checks one PT_LOAD and appends it to the layout.
static kiln_status_t kiln_elf_add_load(const Elf64_Phdr* phdr, uint32_t index, size_t size,
                                       uint8_t elf_class, kiln_elf_layout_t* layout) {
  if (phdr->p_filesz > phdr->p_memsz) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "elf: segment %u: p_filesz %llu > p_memsz %llu", index,
                            (unsigned long long)phdr->p_filesz,
                            (unsigned long long)phdr->p_memsz);
  }
  if (!kiln_range_within(phdr->p_offset, phdr->p_filesz, size)) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "elf: segment %u: file range [%llu, +%llu) lies beyond the "
                            "%zu-byte blob",
                            index, (unsigned long long)phdr->p_offset,
                            (unsigned long long)phdr->p_filesz, size);
  }
  // Addresses beyond the class's word (ELFCLASS32: 4 GiB) cannot be linked.
  const uint64_t address_limit = elf_class == ELFCLASS32 ? (1ull << 32) : (1ull << 48);
  uint64_t end;
  if (!kiln_add_u64(phdr->p_vaddr, phdr->p_memsz, &end) || end > address_limit) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "elf: segment %u: address range overflows",
                            index);
  }
  if ((phdr->p_flags & PF_W) && (phdr->p_flags & PF_X)) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "elf: segment %u is both writable and executable (W+X)", index);
  }
  if (phdr->p_memsz == 0) return NULL;  // occupies nothing
  if (layout->load_count == KILN_ELF_MAX_SEGMENTS) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "elf: more than %d PT_LOAD segments",
                            KILN_ELF_MAX_SEGMENTS);
  }
  if (layout->load_count > 0) {
    const Elf64_Phdr* previous = &layout->loads[layout->load_count - 1];
    if (phdr->p_vaddr < previous->p_vaddr + previous->p_memsz) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "elf: segment %u overlaps or precedes the previous PT_LOAD",
                              index);
    }
  }
  layout->loads[layout->load_count++] = *phdr;
  return NULL;
}

static kiln_status_t kiln_elf_read_program_headers(const uint8_t* blob, size_t size,
                                                   const Elf64_Ehdr* header,
                                                   const kiln_elf_class_layout_t* elf_class,
                                                   size_t page_size, kiln_elf_layout_t* layout) {
  // Inside the blob (kiln_elf_check_header), so the offsets fit a size_t.
  const uint8_t* table = blob + (size_t)header->e_phoff;
  for (uint32_t i = 0; i < header->e_phnum; ++i) {
    Elf64_Phdr phdr;
    kiln_elf_decode_program_header(elf_class, table + (size_t)i * elf_class->program_header_size, &phdr);
    switch (phdr.p_type) {
      case PT_LOAD:
        KILN_RETURN_IF_ERROR(kiln_elf_add_load(&phdr, i, size, elf_class->elf_class, layout));
        break;
      case PT_DYNAMIC:
        if (layout->has_dynamic) return kiln_elf_invalid("more than one PT_DYNAMIC");
        layout->dynamic = phdr;
        layout->has_dynamic = 1;
        break;
      case PT_GNU_RELRO:
        layout->relro = phdr;
        layout->has_relro = 1;
        break;
      case PT_INTERP:
        return kiln_elf_invalid("has PT_INTERP: an executable, not a kernel library");
      case PT_TLS:
        return kiln_make_status(KILN_UNSUPPORTED,
                                "elf: thread-local storage (PT_TLS) is not supported");
      default:
        // PT_NOTE, PT_PHDR, PT_GNU_STACK, PT_GNU_EH_FRAME, PT_ARM_EXIDX (ARM
        // unwind tables, inside a PT_LOAD), ...: nothing to do.
        break;
    }
  }
  if (layout->load_count == 0) return kiln_elf_invalid("no PT_LOAD segment");
  if (!layout->has_dynamic) return kiln_elf_invalid("no PT_DYNAMIC segment");

  const Elf64_Phdr* last = &layout->loads[layout->load_count - 1];
  layout->min_vaddr = kiln_align_down(layout->loads[0].p_vaddr, page_size);
  if (!kiln_align_up(last->p_vaddr + last->p_memsz, page_size, &layout->max_vaddr) ||
      layout->max_vaddr - layout->min_vaddr > KILN_ELF_MAX_SPAN) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "elf: segments span more than %llu bytes",
                            (unsigned long long)KILN_ELF_MAX_SPAN);
  }
  // Protections are per page: neighbours sharing a page must agree.
  for (uint32_t i = 1; i < layout->load_count; ++i) {
    const Elf64_Phdr* a = &layout->loads[i - 1];
    const Elf64_Phdr* b = &layout->loads[i];
    uint64_t a_end_page = 0;
    kiln_align_up(a->p_vaddr + a->p_memsz, page_size, &a_end_page);  // bounded above
    if (kiln_align_down(b->p_vaddr, page_size) < a_end_page &&
        kiln_elf_prot_from_flags(a->p_flags) != kiln_elf_prot_from_flags(b->p_flags)) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "elf: PT_LOAD segments %u and %u share a page but have "
                              "different protections",
                              i - 1, i);
    }
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// Mapping
//===----------------------------------------------------------------------===//

// Translates a link-time address range to the mapping; false if outside it.
static bool kiln_elf_translate(const kiln_elf_module_t* module, uint64_t vaddr,
                               uint64_t size, uint8_t** out_address) {
  if (vaddr < module->min_vaddr) return false;
  uint64_t relative = vaddr - module->min_vaddr;
  if (!kiln_range_within(relative, size, module->size)) return false;
  *out_address = module->base + (size_t)relative;  // < module->size
  return true;
}

// Translates a link-time range that must lie inside one segment whose
// protection includes `required_prot`; false otherwise.
static bool kiln_elf_translate_within(const kiln_elf_module_t* module, uint64_t vaddr,
                                      uint64_t size, int required_prot, uint8_t** out_address) {
  // A translated range lies inside the mapping, so `size` fits a size_t.
  return kiln_elf_translate(module, vaddr, size, out_address) &&
         kiln_elf_module_contains(module, *out_address, (size_t)size, required_prot);
}

// Reserves the span read-write and copies every segment into it.
static kiln_status_t kiln_elf_map_segments(const uint8_t* blob, const kiln_elf_layout_t* layout,
                                           kiln_elf_module_t* module) {
  size_t span = (size_t)(layout->max_vaddr - layout->min_vaddr);  // <= KILN_ELF_MAX_SPAN
  void* base = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) {
    return kiln_make_status(KILN_OUT_OF_MEMORY, "elf: cannot reserve %zu bytes", span);
  }
  module->base = (uint8_t*)base;
  module->size = span;
  module->min_vaddr = layout->min_vaddr;
  for (uint32_t i = 0; i < layout->load_count; ++i) {
    const Elf64_Phdr* phdr = &layout->loads[i];
    // Inside the span (<= KILN_ELF_MAX_SPAN) and the blob: all fit a size_t.
    uint8_t* start = module->base + (size_t)(phdr->p_vaddr - layout->min_vaddr);
    memcpy(start, blob + (size_t)phdr->p_offset, (size_t)phdr->p_filesz);  // bss is already zero
    module->segments[i].start = start;
    module->segments[i].size = (size_t)phdr->p_memsz;
    module->segments[i].prot = kiln_elf_prot_from_flags(phdr->p_flags);
  }
  module->segment_count = layout->load_count;
  return NULL;
}

//===----------------------------------------------------------------------===//
// Dynamic section and symbols (read from the mapping)
//===----------------------------------------------------------------------===//

static kiln_status_t kiln_elf_read_dynamic(const kiln_elf_module_t* module,
                                           const kiln_elf_layout_t* layout,
                                           kiln_elf_dynamic_t* dynamic) {
  uint8_t* entries = NULL;
  if (!kiln_elf_translate_within(module, layout->dynamic.p_vaddr, layout->dynamic.p_memsz,
                                 PROT_READ, &entries)) {
    return kiln_elf_invalid("PT_DYNAMIC lies outside the loaded segments");
  }
  const size_t entry_size = module->elf_class->dynamic_size;
  const size_t count = (size_t)layout->dynamic.p_memsz / entry_size;  // translated: fits
  for (size_t i = 0; i < count; ++i) {
    Elf64_Dyn entry;
    kiln_elf_decode_dynamic(module->elf_class, entries + i * entry_size, &entry);
    uint64_t value = entry.d_un.d_val;
    switch (entry.d_tag) {
      case DT_NULL: return NULL;
      case DT_NEEDED:
        if (!(dynamic->seen & KILN_ELF_SEEN_NEEDED)) dynamic->needed = value;
        dynamic->seen |= KILN_ELF_SEEN_NEEDED;
        break;
      case DT_RELA: dynamic->rela = value; dynamic->seen |= KILN_ELF_SEEN_RELA; break;
      case DT_RELASZ: dynamic->rela_size = value; break;
      case DT_RELAENT: dynamic->rela_entry_size = value; break;
      case DT_JMPREL: dynamic->jmprel = value; dynamic->seen |= KILN_ELF_SEEN_JMPREL; break;
      case DT_PLTRELSZ: dynamic->pltrel_size = value; break;
      case DT_PLTREL: dynamic->pltrel_type = value; break;
      case DT_SYMTAB: dynamic->symtab = value; dynamic->seen |= KILN_ELF_SEEN_SYMTAB; break;
      case DT_SYMENT: dynamic->symbol_entry_size = value; break;
      case DT_STRTAB: dynamic->strtab = value; dynamic->seen |= KILN_ELF_SEEN_STRTAB; break;
      case DT_STRSZ: dynamic->strtab_size = value; dynamic->seen |= KILN_ELF_SEEN_STRSZ; break;
      case DT_HASH: dynamic->hash = value; dynamic->seen |= KILN_ELF_SEEN_HASH; break;
      case DT_GNU_HASH: dynamic->gnu_hash = value; dynamic->seen |= KILN_ELF_SEEN_GNU_HASH; break;
      case DT_REL:
      case DT_RELSZ:
      case DT_RELENT:
        if (!(module->arch->relocation_formats & KILN_ELF_REL)) {
          return kiln_make_status(KILN_UNSUPPORTED, "elf: REL relocations are not supported on %s",
                                  module->arch->name);
        }
        if (entry.d_tag == DT_REL) {
          dynamic->rel = value;
          dynamic->seen |= KILN_ELF_SEEN_REL;
        } else if (entry.d_tag == DT_RELSZ) {
          dynamic->rel_size = value;
        } else {
          dynamic->rel_entry_size = value;
        }
        break;
      case KILN_ELF_DT_RELR:
        return kiln_make_status(KILN_UNSUPPORTED, "elf: RELR relocations are not supported");
      default:
        break;  // DT_INIT*, DT_FINI*, DT_FLAGS, DT_SONAME, ...: ignored (no init is run)
    }
  }
  return kiln_elf_invalid("PT_DYNAMIC has no DT_NULL terminator");
}

// Reads a u32 at a link-time address (bounds-checked against readable memory).
static bool kiln_elf_read_u32(const kiln_elf_module_t* module, uint64_t vaddr,
                              uint32_t* out_value) {
  uint8_t* address = NULL;
  if (!kiln_elf_translate_within(module, vaddr, 4, PROT_READ, &address)) return false;
  memcpy(out_value, address, 4);
  return true;
}

// Symbol count from DT_HASH (nchain) or, failing that, by walking DT_GNU_HASH.
static kiln_status_t kiln_elf_count_symbols(const kiln_elf_module_t* module,
                                           const kiln_elf_dynamic_t* dynamic,
                                           uint32_t* out_count) {
  if (dynamic->seen & KILN_ELF_SEEN_HASH) {
    if (!kiln_elf_read_u32(module, dynamic->hash + 4, out_count)) {
      return kiln_elf_invalid("DT_HASH lies outside the loaded segments");
    }
    return NULL;
  }
  if (!(dynamic->seen & KILN_ELF_SEEN_GNU_HASH)) {
    return kiln_elf_invalid("no DT_HASH or DT_GNU_HASH: cannot size .dynsym");
  }
  // Header: nbuckets, symoffset, bloom_size, bloom_shift; then the bloom
  // filter (words of the class: u32 for ELFCLASS32, u64 for ELFCLASS64), the
  // buckets (u32) and the chains (u32).
  uint32_t bucket_count, symbol_offset, bloom_size;
  if (!kiln_elf_read_u32(module, dynamic->gnu_hash, &bucket_count) ||
      !kiln_elf_read_u32(module, dynamic->gnu_hash + 4, &symbol_offset) ||
      !kiln_elf_read_u32(module, dynamic->gnu_hash + 8, &bloom_size)) {
    return kiln_elf_invalid("DT_GNU_HASH lies outside the loaded segments");
  }
  // Bounded so that a table in a huge zero-filled segment is not walked for
  // seconds (1 GiB of buckets: the likely cause of a fuzz_elf timeout).
  if (bucket_count > KILN_ELF_MAX_SYMBOLS) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "elf: DT_GNU_HASH has %u buckets (at most %u)",
                            bucket_count, KILN_ELF_MAX_SYMBOLS);
  }
  uint64_t buckets = dynamic->gnu_hash + 16 + (uint64_t)bloom_size * module->elf_class->word;
  uint64_t chains = buckets + (uint64_t)bucket_count * 4;
  uint32_t last = 0;
  for (uint32_t b = 0; b < bucket_count; ++b) {
    uint32_t first;
    if (!kiln_elf_read_u32(module, buckets + (uint64_t)b * 4, &first)) {
      return kiln_elf_invalid("DT_GNU_HASH buckets lie outside the loaded segments");
    }
    if (first > last) last = first;
  }
  if (last == 0) {  // no hashed symbols
    *out_count = symbol_offset;
    return NULL;
  }
  if (last < symbol_offset) return kiln_elf_invalid("DT_GNU_HASH bucket below symoffset");
  for (;;) {  // each step moves up one symbol, so this ends within the mapping
    uint32_t hash;
    if (last >= KILN_ELF_MAX_SYMBOLS ||
        !kiln_elf_read_u32(module, chains + (uint64_t)(last - symbol_offset) * 4, &hash)) {
      return kiln_elf_invalid("DT_GNU_HASH chain runs outside the loaded segments");
    }
    if (hash & 1) break;
    ++last;
  }
  *out_count = last + 1;
  return NULL;
}

// Name of a symbol, or NULL when st_name is not a string inside .dynstr.
static const char* kiln_elf_string(const kiln_elf_module_t* module, uint32_t offset) {
  if (offset >= module->string_size) return NULL;
  const char* string = module->strings + offset;
  return memchr(string, '\0', module->string_size - offset) ? string : NULL;
}

static void kiln_elf_read_symbol(const kiln_elf_module_t* module, uint32_t index,
                                 Elf64_Sym* out_symbol) {
  kiln_elf_decode_symbol(module->elf_class,
                         module->symbols + (size_t)index * module->elf_class->symbol_size, out_symbol);
}

static kiln_status_t kiln_elf_load_symbols(kiln_elf_module_t* module,
                                          const kiln_elf_dynamic_t* dynamic) {
  const unsigned required = KILN_ELF_SEEN_SYMTAB | KILN_ELF_SEEN_STRTAB | KILN_ELF_SEEN_STRSZ;
  if ((dynamic->seen & required) != required) {
    return kiln_elf_invalid("PT_DYNAMIC lacks DT_SYMTAB, DT_STRTAB or DT_STRSZ");
  }
  if (dynamic->symbol_entry_size != 0 &&
      dynamic->symbol_entry_size != module->elf_class->symbol_size) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "elf: DT_SYMENT is not sizeof(Elf%s_Sym)",
                            module->elf_class->elf_class == ELFCLASS32 ? "32" : "64");
  }
  uint8_t* strings = NULL;
  if (dynamic->strtab_size == 0 ||
      !kiln_elf_translate_within(module, dynamic->strtab, dynamic->strtab_size, PROT_READ, &strings)) {
    return kiln_elf_invalid("DT_STRTAB/DT_STRSZ lie outside the loaded segments");
  }
  module->strings = (const char*)strings;
  module->string_size = (size_t)dynamic->strtab_size;  // translated: fits
  uint32_t count = 0;
  KILN_RETURN_IF_ERROR(kiln_elf_count_symbols(module, dynamic, &count));
  if (count > KILN_ELF_MAX_SYMBOLS) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "elf: %u dynamic symbols (at most %u)",
                            count, KILN_ELF_MAX_SYMBOLS);
  }
  uint8_t* symbols = NULL;
  uint64_t bytes = (uint64_t)count * module->elf_class->symbol_size;
  if (!kiln_elf_translate_within(module, dynamic->symtab, bytes, PROT_READ, &symbols)) {
    return kiln_elf_invalid("DT_SYMTAB lies outside the loaded segments");
  }
  module->symbols = symbols;
  module->symbol_count = count;
  if (dynamic->seen & KILN_ELF_SEEN_NEEDED) {
    const char* name = kiln_elf_string(module, (uint32_t)dynamic->needed);
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "elf: library depends on '%.64s' (DT_NEEDED): kernel libraries "
                            "must be self-contained",
                            name && dynamic->needed <= UINT32_MAX ? name : "?");
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// Relocations
//===----------------------------------------------------------------------===//

// Resolves the symbol a relocation names; it must be defined in the library.
static kiln_status_t kiln_elf_resolve_symbol(const kiln_elf_module_t* module,
                                             uint32_t symbol_index, uint32_t reloc_index,
                                             kiln_elf_relocation_t* relocation) {
  if (symbol_index >= module->symbol_count) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "elf: relocation %u: symbol index %u out of range (%u symbols)",
                            reloc_index, symbol_index, module->symbol_count);
  }
  Elf64_Sym symbol;
  kiln_elf_read_symbol(module, symbol_index, &symbol);
  const char* name = kiln_elf_string(module, symbol.st_name);
  relocation->symbol_name = name ? name : "<bad name>";
  if (symbol.st_shndx == SHN_UNDEF) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "elf: relocation %u refers to undefined symbol '%.64s': kernel "
                            "libraries must be self-contained",
                            reloc_index, relocation->symbol_name);
  }
  if (ELF64_ST_TYPE(symbol.st_info) == STT_TLS) {
    return kiln_make_status(KILN_UNSUPPORTED, "elf: thread-local symbol '%.64s'",
                            relocation->symbol_name);
  }
  if (symbol.st_shndx == SHN_ABS) {
    relocation->symbol_value = symbol.st_value;
  } else {
    uint8_t* address = NULL;
    if (!kiln_elf_translate(module, symbol.st_value, 0, &address)) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "elf: symbol '%.64s' lies outside the library",
                              relocation->symbol_name);
    }
    relocation->symbol_value = (uint64_t)(uintptr_t)address;
  }
  relocation->has_symbol = 1;
  return NULL;
}

// Applies one relocation table (`format` entries of the module's class) of
// `table_size` bytes at link-time address `table`. REL entries take their
// addend from the target word.
static kiln_status_t kiln_elf_apply_table(kiln_elf_module_t* module, uint64_t table,
                                          uint64_t table_size, kiln_elf_relocation_format_t format,
                                          uint32_t* reloc_index) {
  if (table_size == 0) return NULL;
  const char* entry_type = NULL;
  size_t entry_size = kiln_elf_relocation_entry_size(module->arch->elf_class, format, &entry_type);
  if (table_size % entry_size != 0) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "elf: relocation table size is not a multiple of sizeof(%s)",
                            entry_type);
  }
  uint8_t* entries = NULL;
  if (!kiln_elf_translate_within(module, table, table_size, PROT_READ, &entries)) {
    return kiln_elf_invalid("relocation table lies outside the loaded segments");
  }
  uint64_t load_bias = (uint64_t)(uintptr_t)module->base - module->min_vaddr;
  const uint32_t word = module->elf_class->word;  // bytes a target holds
  const size_t count = (size_t)table_size / entry_size;  // translated: fits
  // Bounded like the symbols: a table over a huge zero-filled segment would
  // otherwise take seconds of R_*_NONE entries.
  if (count > KILN_ELF_MAX_RELOCATIONS - *reloc_index) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "elf: more than %u relocations",
                            KILN_ELF_MAX_RELOCATIONS);
  }
  for (size_t i = 0; i < count; ++i, ++*reloc_index) {
    kiln_elf_relocation_entry_t entry;
    kiln_elf_relocation_decode(entries + i * entry_size, module->arch->elf_class, format, &entry);
    kiln_elf_relocation_t relocation;
    memset(&relocation, 0, sizeof(relocation));
    relocation.type = entry.type;
    relocation.index = *reloc_index;
    relocation.target_size = word;
    relocation.load_bias = load_bias;
    relocation.addend = entry.addend;
    relocation.symbol_name = "";
    if (!kiln_elf_translate_within(module, entry.offset, word, 0, &relocation.target)) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "elf: relocation %u: target 0x%llx lies outside the loaded "
                              "segments",
                              *reloc_index, (unsigned long long)entry.offset);
    }
    if (format == KILN_ELF_REL) {  // the implicit addend: the word already at the target
      if (word == 8) {
        memcpy(&relocation.addend, relocation.target, 8);
      } else {
        int32_t addend;
        memcpy(&addend, relocation.target, 4);
        relocation.addend = addend;
      }
      relocation.addend_implicit = 1;
    }
    if (entry.symbol != 0) {
      KILN_RETURN_IF_ERROR(kiln_elf_resolve_symbol(module, entry.symbol, *reloc_index,
                                                   &relocation));
    }
    KILN_RETURN_IF_ERROR(module->arch->apply_relocation(&relocation));
  }
  return NULL;
}

// The DT_REL* / DT_RELA* tables, then the PLT's (DT_JMPREL).
static kiln_status_t kiln_elf_relocate(kiln_elf_module_t* module,
                                       const kiln_elf_dynamic_t* dynamic) {
  const char* rela_type = NULL;
  const char* rel_type = NULL;
  uint64_t rela_size = kiln_elf_relocation_entry_size(module->arch->elf_class, KILN_ELF_RELA, &rela_type);
  uint64_t rel_size = kiln_elf_relocation_entry_size(module->arch->elf_class, KILN_ELF_REL, &rel_type);
  if (dynamic->rela_entry_size != 0 && dynamic->rela_entry_size != rela_size) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "elf: DT_RELAENT is not sizeof(%s)", rela_type);
  }
  if (dynamic->rel_entry_size != 0 && dynamic->rel_entry_size != rel_size) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "elf: DT_RELENT is not sizeof(%s)", rel_type);
  }
  kiln_elf_relocation_format_t plt_format = dynamic->pltrel_type == DT_REL ? KILN_ELF_REL : KILN_ELF_RELA;
  if ((dynamic->seen & KILN_ELF_SEEN_JMPREL) &&
      ((dynamic->pltrel_type != DT_RELA && dynamic->pltrel_type != DT_REL) ||
       !(module->arch->relocation_formats & plt_format))) {
    return kiln_make_status(KILN_UNSUPPORTED, "elf: DT_PLTREL %llu is not a format %s libraries use",
                            (unsigned long long)dynamic->pltrel_type, module->arch->name);
  }
  uint32_t reloc_index = 0;
  if (dynamic->seen & KILN_ELF_SEEN_REL) {
    KILN_RETURN_IF_ERROR(kiln_elf_apply_table(module, dynamic->rel, dynamic->rel_size,
                                              KILN_ELF_REL, &reloc_index));
  }
  if (dynamic->seen & KILN_ELF_SEEN_RELA) {
    KILN_RETURN_IF_ERROR(kiln_elf_apply_table(module, dynamic->rela, dynamic->rela_size,
                                              KILN_ELF_RELA, &reloc_index));
  }
  if (dynamic->seen & KILN_ELF_SEEN_JMPREL) {
    KILN_RETURN_IF_ERROR(kiln_elf_apply_table(module, dynamic->jmprel, dynamic->pltrel_size,
                                              plt_format, &reloc_index));
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// Protection
//===----------------------------------------------------------------------===//

static kiln_status_t kiln_elf_mprotect(uint8_t* start, uint8_t* end, int prot) {
  if (end <= start) return NULL;
  if (mprotect(start, (size_t)(end - start), prot) != 0) {
    return kiln_make_status(KILN_INTERNAL, "elf: mprotect failed");
  }
  return NULL;
}

static kiln_status_t kiln_elf_protect(kiln_elf_module_t* module, const kiln_elf_layout_t* layout,
                                      size_t page_size) {
  // Gaps between segments stay inaccessible.
  KILN_RETURN_IF_ERROR(kiln_elf_mprotect(module->base, module->base + module->size, PROT_NONE));
  for (uint32_t i = 0; i < module->segment_count; ++i) {
    const kiln_elf_segment_t* segment = &module->segments[i];
    // Page-rounded bounds of a segment inside the (page-aligned) mapping.
    uintptr_t start = (uintptr_t)kiln_align_down((uintptr_t)segment->start, page_size);
    uint64_t end = 0;
    kiln_align_up((uintptr_t)segment->start + segment->size, page_size, &end);
    if (segment->prot & PROT_EXEC) {  // no-op on x86_64; required on aarch64 and arm
      __builtin___clear_cache((char*)segment->start, (char*)segment->start + segment->size);
    }
    KILN_RETURN_IF_ERROR(
        kiln_elf_mprotect((uint8_t*)start, (uint8_t*)(uintptr_t)end, segment->prot));
  }
  if (layout->has_relro && layout->relro.p_memsz != 0) {
    // Like glibc: whole pages from the start, the partial last page stays RW.
    // The range must start in a writable segment and end within its last page.
    uint8_t* relro = NULL;
    const kiln_elf_segment_t* owner = NULL;
    size_t relro_size = 0;  // p_memsz, once translated (so it fits)
    if (kiln_elf_translate(module, layout->relro.p_vaddr, layout->relro.p_memsz, &relro)) {
      relro_size = (size_t)layout->relro.p_memsz;
      for (uint32_t i = 0; i < module->segment_count; ++i) {
        const kiln_elf_segment_t* segment = &module->segments[i];
        if (relro >= segment->start && relro < segment->start + segment->size &&
            (segment->prot & PROT_WRITE)) {
          owner = segment;
        }
      }
    }
    uint64_t owner_end = 0;
    if (owner) kiln_align_up((uintptr_t)owner->start + owner->size, page_size, &owner_end);
    if (!owner || (uintptr_t)relro + relro_size > owner_end) {
      return kiln_elf_invalid("PT_GNU_RELRO lies outside the writable segments");
    }
    uintptr_t start = (uintptr_t)kiln_align_down((uintptr_t)relro, page_size);
    uintptr_t end = (uintptr_t)kiln_align_down((uintptr_t)relro + relro_size, page_size);
    // `segments` keeps PROT_WRITE for this range; the loader writes no more.
    KILN_RETURN_IF_ERROR(kiln_elf_mprotect((uint8_t*)start, (uint8_t*)end, PROT_READ));
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// Public entry points
//===----------------------------------------------------------------------===//

kiln_status_t kiln_elf_module_load(const uint8_t* blob, size_t size,
                                   kiln_elf_module_t* out_module) {
  return kiln_elf_module_load_arch(blob, size, kiln_elf_arch_host(), out_module);
}

kiln_status_t kiln_elf_module_load_arch(const uint8_t* blob, size_t size, const kiln_elf_arch_t* arch,
                                        kiln_elf_module_t* out_module) {
  if (!blob || !out_module) return kiln_make_status(KILN_INVALID_ARGUMENT, "elf: NULL blob");
  long page_size_long = sysconf(_SC_PAGESIZE);
  size_t page_size = page_size_long > 0 ? (size_t)page_size_long : 4096;

  Elf64_Ehdr header;
  memset(&header, 0, sizeof(header));
  const kiln_elf_class_layout_t* elf_class = NULL;
  KILN_RETURN_IF_ERROR(kiln_elf_check_header(blob, size, arch, &header, &elf_class));
  kiln_elf_layout_t layout;
  memset(&layout, 0, sizeof(layout));
  KILN_RETURN_IF_ERROR(
      kiln_elf_read_program_headers(blob, size, &header, elf_class, page_size, &layout));

  kiln_elf_module_t module;
  memset(&module, 0, sizeof(module));
  module.arch = arch;            // checked by kiln_elf_check_header
  module.elf_class = elf_class;  // the arch's class
  kiln_status_t status = kiln_elf_map_segments(blob, &layout, &module);
  kiln_elf_dynamic_t dynamic;
  memset(&dynamic, 0, sizeof(dynamic));
  if (!status) status = kiln_elf_read_dynamic(&module, &layout, &dynamic);
  if (!status) status = kiln_elf_load_symbols(&module, &dynamic);
  if (!status) status = kiln_elf_relocate(&module, &dynamic);
  if (!status) status = kiln_elf_protect(&module, &layout, page_size);
  if (status) {
    kiln_elf_module_unload(&module);
    return status;
  }
  *out_module = module;
  return NULL;
}

void kiln_elf_module_unload(kiln_elf_module_t* module) {
  if (module && module->base) munmap(module->base, module->size);
  if (module) memset(module, 0, sizeof(*module));
}

bool kiln_elf_module_contains(const kiln_elf_module_t* module, const void* address,
                              size_t size, int required_prot) {
  uintptr_t a = (uintptr_t)address;
  for (uint32_t i = 0; i < module->segment_count; ++i) {
    const kiln_elf_segment_t* segment = &module->segments[i];
    uintptr_t start = (uintptr_t)segment->start;
    if (a >= start && size <= segment->size && a - start <= segment->size - size &&
        (segment->prot & required_prot) == required_prot) {
      return true;
    }
  }
  return false;
}

bool kiln_elf_module_contains_string(const kiln_elf_module_t* module, const char* string,
                                     int required_prot) {
  uintptr_t a = (uintptr_t)string;
  for (uint32_t i = 0; i < module->segment_count; ++i) {
    const kiln_elf_segment_t* segment = &module->segments[i];
    uintptr_t start = (uintptr_t)segment->start;
    if (a >= start && a - start < segment->size &&
        (segment->prot & required_prot) == required_prot) {
      return memchr(string, '\0', segment->size - (a - start)) != NULL;
    }
  }
  return false;
}

kiln_status_t kiln_elf_module_lookup_function(const kiln_elf_module_t* module,
                                              const char* name, void** out_address) {
  for (uint32_t i = 1; i < module->symbol_count; ++i) {
    Elf64_Sym symbol;
    kiln_elf_read_symbol(module, i, &symbol);
    if (symbol.st_shndx == SHN_UNDEF) continue;
    const char* symbol_name = kiln_elf_string(module, symbol.st_name);
    if (!symbol_name || strcmp(symbol_name, name) != 0) continue;
    uint8_t* address = NULL;
    if (!kiln_elf_translate(module, symbol.st_value, 1, &address) ||
        !kiln_elf_module_contains(module, address, 1, PROT_EXEC)) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "elf: symbol '%.64s' is not inside an executable segment", name);
    }
    *out_address = address;
    return NULL;
  }
  return kiln_make_status(KILN_NOT_FOUND, "elf: library does not export '%.64s'", name);
}
