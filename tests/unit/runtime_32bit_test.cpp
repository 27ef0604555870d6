// 32-bit targets, tested on any host: the ELF32/ARM side of the ELF loader
// (crafted headers; the arm relocation function and e_flags check; ARM
// libraries built by the armhf cross compiler, mapped and relocated through
// the arm descriptor but never run: tests/cross_target runs them under qemu)
// and the size_t conversions of bundle sizes with a simulated 32-bit address
// space.
#include <doctest/doctest.h>
#include <elf.h>
#include <string.h>
#include <sys/mman.h>

#include <string>
#include <vector>

#include "base/address_space.h"
#include "cpu/elf_class.h"
#include "cpu/elf_module.h"
#include "kiln/kiln.h"
#include "runtime_bundle_builder.h"
#include "runtime_elf_util.h"
#include "runtime_test_config.h"

namespace {

const kiln_model_load_options_t verify_only_32 = kiln_test::LoadOptions(KILN_MODEL_LOAD_VERIFY_ONLY);

using kiln_test::Contains;
using kiln_test::Elf32;
using kiln_test::Patch;

constexpr uint32_t kArmHardFloat = 0x05000400u;  // EABI version 5, EF_ARM_ABI_FLOAT_HARD
constexpr uint32_t kArmSoftFloat = 0x05000200u;  // EABI version 5, EF_ARM_ABI_FLOAT_SOFT

// "" when `blob` loads as a library of `arch` (then unloaded), else the error.
std::string ModuleError(const std::vector<uint8_t>& blob, const kiln_elf_arch_t* arch,
                        size_t size = SIZE_MAX) {
  kiln_elf_module_t module;
  kiln_status_t status =
      kiln_elf_module_load_arch(blob.data(), size == SIZE_MAX ? blob.size() : size, arch, &module);
  if (!status) {
    kiln_elf_module_unload(&module);
    return "";
  }
  return kiln_test::Message(status);
}

// An ELF32 ARM header and one PT_LOAD covering it: enough to reach every
// header check (the loader stops there or at the missing PT_DYNAMIC).
std::vector<uint8_t> ArmHeader(uint32_t flags) {
  std::vector<uint8_t> blob(sizeof(Elf32_Ehdr) + sizeof(Elf32_Phdr), 0);
  Elf32_Ehdr h;
  memset(&h, 0, sizeof(h));
  memcpy(h.e_ident, ELFMAG, SELFMAG);
  h.e_ident[EI_CLASS] = ELFCLASS32;
  h.e_ident[EI_DATA] = ELFDATA2LSB;
  h.e_ident[EI_VERSION] = EV_CURRENT;
  h.e_type = ET_DYN;
  h.e_machine = EM_ARM;
  h.e_version = EV_CURRENT;
  h.e_phoff = sizeof(Elf32_Ehdr);
  h.e_flags = flags;
  h.e_ehsize = sizeof(Elf32_Ehdr);
  h.e_phentsize = sizeof(Elf32_Phdr);
  h.e_phnum = 1;
  Elf32_Phdr p;
  memset(&p, 0, sizeof(p));
  p.p_type = PT_LOAD;
  p.p_flags = PF_R;
  p.p_filesz = p.p_memsz = (uint32_t)blob.size();
  memcpy(blob.data(), &h, sizeof(h));
  memcpy(blob.data() + sizeof(h), &p, sizeof(p));
  return blob;
}

// The cross-compiled ARM library at `path`, or empty (with a message) when
// the armhf cross compiler was not found at configure time.
std::vector<uint8_t> ArmLibrary(const char* path) {
  if (!path[0]) {
    MESSAGE("SKIP: no arm-linux-gnueabihf-gcc at configure time (tools/setup.sh installs it)");
    return {};
  }
  std::vector<uint8_t> bytes = kiln_test::ReadFile(path);
  REQUIRE_MESSAGE(!bytes.empty(), "cannot read " << path);
  return bytes;
}

// A symbol of the file's .dynsym by name (st_value 0 when absent).
Elf32_Sym FileSymbol(const std::vector<uint8_t>& blob, const char* name) {
  size_t symbols = kiln_test::FileOffset<Elf32>(blob, kiln_test::DynamicValue<Elf32>(blob, DT_SYMTAB));
  size_t strings = kiln_test::FileOffset<Elf32>(blob, kiln_test::DynamicValue<Elf32>(blob, DT_STRTAB));
  for (size_t at = symbols; at + sizeof(Elf32_Sym) <= strings; at += sizeof(Elf32_Sym)) {
    Elf32_Sym symbol;
    memcpy(&symbol, blob.data() + at, sizeof(symbol));
    if (strcmp((const char*)blob.data() + strings + symbol.st_name, name) == 0) return symbol;
  }
  Elf32_Sym none;
  memset(&none, 0, sizeof(none));
  return none;
}

// File offset of the first Elf32_Rel of the DT_REL table.
size_t FirstRel(const std::vector<uint8_t>& blob) {
  return kiln_test::FileOffset<Elf32>(blob, kiln_test::DynamicValue<Elf32>(blob, DT_REL));
}

// Checks every REL entry of `blob` (DT_REL, then DT_JMPREL) against the
// loaded `module`, each value computed here from the ARM ELF ABI: RELATIVE
// B + A, ABS32 S + A, GLOB_DAT/JUMP_SLOT S (A: the word in the file),
// wrapped to 32 bits. Returns how many were checked.
int CheckArmRelocations(const std::vector<uint8_t>& blob, const kiln_elf_module_t& module) {
  const uint64_t bias = (uint64_t)(uintptr_t)module.base - module.min_vaddr;
  size_t symbols = kiln_test::FileOffset<Elf32>(blob, kiln_test::DynamicValue<Elf32>(blob, DT_SYMTAB));
  int checked = 0;
  for (int64_t table : {DT_REL, DT_JMPREL}) {
    int64_t size_tag = table == DT_REL ? DT_RELSZ : DT_PLTRELSZ;
    size_t first = kiln_test::FileOffset<Elf32>(blob, kiln_test::DynamicValue<Elf32>(blob, table));
    size_t count = kiln_test::DynamicValue<Elf32>(blob, size_tag) / sizeof(Elf32_Rel);
    for (size_t i = 0; i < count; ++i) {
      Elf32_Rel rel;
      memcpy(&rel, blob.data() + first + i * sizeof(rel), sizeof(rel));
      uint32_t in_file = 0, mapped = 0;
      memcpy(&in_file, blob.data() + kiln_test::FileOffset<Elf32>(blob, rel.r_offset), 4);
      memcpy(&mapped, module.base + (rel.r_offset - module.min_vaddr), 4);
      Elf32_Sym symbol;
      memcpy(&symbol, blob.data() + symbols + ELF32_R_SYM(rel.r_info) * sizeof(symbol), sizeof(symbol));
      uint32_t s = (uint32_t)(bias + symbol.st_value);
      uint32_t expected = 0;
      switch (ELF32_R_TYPE(rel.r_info)) {
        case R_ARM_RELATIVE: expected = (uint32_t)(bias + in_file); break;
        case R_ARM_ABS32: expected = s + in_file; break;
        case R_ARM_GLOB_DAT:
        case R_ARM_JUMP_SLOT: expected = s; break;
        default: FAIL("relocation type " << ELF32_R_TYPE(rel.r_info) << " in the test library");
      }
      CAPTURE(ELF32_R_TYPE(rel.r_info));
      CAPTURE(rel.r_offset);
      CHECK(mapped == expected);
      ++checked;
    }
  }
  return checked;
}

}  // namespace

TEST_CASE("elf32: an arm library is refused on another host, naming both sides") {
  const kiln_elf_arch_t* host = kiln_elf_arch_host();
  REQUIRE(host != NULL);
  if (host == &kiln_elf_arch_arm) return;  // an ARM host (this test built for armhf)
  std::vector<uint8_t> blob = ArmHeader(kArmHardFloat);
  kiln_elf_module_t module;
  kiln_status_t status = kiln_elf_module_load(blob.data(), blob.size(), &module);
  REQUIRE(status != NULL);
  CHECK(kiln_status_code(status) == KILN_UNSUPPORTED);
  std::string expected = std::string("kernel library is arm (e_machine 40, ELFCLASS32) but this runtime runs ") +
                         host->name + " (" + kiln_elf_class_name(host->elf_class) + ")";
  CHECK(Contains(kiln_test::Message(status), expected.c_str()));

  Elf64_Ehdr wide;  // EM_ARM in an ELFCLASS64 file: no descriptor for that pair
  memset(&wide, 0, sizeof(wide));
  memcpy(wide.e_ident, blob.data(), EI_NIDENT);
  wide.e_ident[EI_CLASS] = ELFCLASS64;
  wide.e_machine = EM_ARM;
  wide.e_version = EV_CURRENT;
  std::vector<uint8_t> blob64((const uint8_t*)&wide, (const uint8_t*)&wide + sizeof(wide));
  CHECK(Contains(ModuleError(blob64, host), "kernel library is arm (e_machine 40, ELFCLASS64)"));
  CHECK(Contains(ModuleError(blob64, &kiln_elf_arch_arm), "but this runtime runs arm (ELFCLASS32)"));
}

TEST_CASE("elf32: header checks of the ELF32 layout") {
  const kiln_elf_arch_t* arm = &kiln_elf_arch_arm;
  std::vector<uint8_t> good = ArmHeader(kArmHardFloat);
  CHECK(Contains(ModuleError(good, arm), "no PT_DYNAMIC"));  // every header check passed
  CHECK(Contains(ModuleError(good, arm, 40), "smaller than an ELF header (ELFCLASS32: 52)"));
  CHECK(Contains(ModuleError(ArmHeader(kArmSoftFloat), arm),
                 "kernel library is for the arm soft-float ABI (armel, e_flags 0x05000200) but this "
                 "runtime runs the arm hard-float ABI (armhf)"));
  CHECK(Contains(ModuleError(ArmHeader(0x04000000u), arm), "arm EABI version 4"));

  std::vector<uint8_t> blob = good;
  Patch<uint16_t>(&blob, offsetof(Elf32_Ehdr, e_phentsize), sizeof(Elf64_Phdr));
  CHECK(Contains(ModuleError(blob, arm), "e_phentsize 56 (expected 32 for ELFCLASS32)"));
  blob = good;
  Patch<uint32_t>(&blob, offsetof(Elf32_Ehdr, e_phoff), 0xFFFFFFF0u);
  CHECK(Contains(ModuleError(blob, arm), "program headers"));
  blob = good;  // a segment reaching past 4 GiB cannot be linked for ELFCLASS32
  Patch<uint32_t>(&blob, sizeof(Elf32_Ehdr) + offsetof(Elf32_Phdr, p_vaddr), 0xFFFFF000u);
  Patch<uint32_t>(&blob, sizeof(Elf32_Ehdr) + offsetof(Elf32_Phdr, p_memsz), 0x2000u);
  CHECK(Contains(ModuleError(blob, arm), "address range overflows"));
  blob = good;
  Patch<uint32_t>(&blob, sizeof(Elf32_Ehdr) + offsetof(Elf32_Phdr, p_flags), PF_R | PF_W | PF_X);
  CHECK(Contains(ModuleError(blob, arm), "writable and executable"));
}

TEST_CASE("elf32: the arm e_flags check, for both float ABIs") {
  CHECK(kiln_elf_arm_check_flags(kArmHardFloat, 1) == NULL);
  CHECK(kiln_elf_arm_check_flags(0x05000000u, 1) == NULL);  // no float ABI flag: accepted
  CHECK(kiln_elf_arm_check_flags(kArmSoftFloat, 0) == NULL);
  std::string error = kiln_test::Message(kiln_elf_arm_check_flags(kArmSoftFloat, 1));
  CHECK(Contains(error, "soft-float ABI (armel"));
  CHECK(Contains(error, "runtime runs the arm hard-float ABI (armhf)"));
  error = kiln_test::Message(kiln_elf_arm_check_flags(kArmHardFloat, 0));
  CHECK(Contains(error, "kernel library is for the arm hard-float ABI (armhf"));
  CHECK(Contains(error, "runtime runs the arm soft-float ABI (armel)"));
  CHECK(Contains(kiln_test::Message(kiln_elf_arm_check_flags(0x00000400u, 1)),
                 "arm EABI version 0 (e_flags 0x00000400) but this runtime runs arm EABI version 5"));
}

TEST_CASE("elf32: the arm relocation function writes 32-bit words") {
  uint8_t target[8];
  memset(target, 0xAA, sizeof(target));
  // Unaligned; a 64-bit host's bias wraps to its low word.
  kiln_elf_relocation_t relocation = kiln_test::TestRelocation(target + 1, 4, 0x7ff012340000ull, 0x20);
  relocation.addend_implicit = 1;
  auto word = [&] {
    uint32_t value = 0;
    memcpy(&value, target + 1, 4);
    return value;
  };
  relocation.type = R_ARM_RELATIVE;
  REQUIRE(kiln_elf_arch_arm.apply_relocation(&relocation) == NULL);
  CHECK(word() == 0x12340020u);
  CHECK(target[0] == 0xAA);
  CHECK(target[5] == 0xAA);

  relocation.type = R_ARM_ABS32;  // needs a symbol
  CHECK(Contains(kiln_test::Message(kiln_elf_arch_arm.apply_relocation(&relocation)),
                 "relocation 0 (R_ARM_ABS32) has no symbol"));
  relocation.has_symbol = 1;
  relocation.symbol_value = 0x5001;  // a Thumb function: bit 0 set
  REQUIRE(kiln_elf_arch_arm.apply_relocation(&relocation) == NULL);
  CHECK(word() == 0x5021u);
  relocation.type = R_ARM_GLOB_DAT;  // REL: what the place holds is no addend
  REQUIRE(kiln_elf_arch_arm.apply_relocation(&relocation) == NULL);
  CHECK(word() == 0x5001u);
  relocation.type = R_ARM_JUMP_SLOT;
  relocation.addend_implicit = 0;  // RELA: r_addend counts
  REQUIRE(kiln_elf_arch_arm.apply_relocation(&relocation) == NULL);
  CHECK(word() == 0x5021u);
  relocation.type = R_ARM_NONE;
  memset(target, 0xAA, sizeof(target));
  REQUIRE(kiln_elf_arch_arm.apply_relocation(&relocation) == NULL);
  CHECK(word() == 0xAAAAAAAAu);
  relocation.type = R_ARM_TLS_DTPMOD32;
  kiln_status_t status = kiln_elf_arch_arm.apply_relocation(&relocation);
  CHECK(kiln_status_code(status) == KILN_UNSUPPORTED);
  CHECK(Contains(kiln_test::Message(status), "unsupported arm type 17"));
}

TEST_CASE("elf32: a cross-compiled arm library maps and relocates (DT_HASH and DT_GNU_HASH)") {
  uint32_t symbol_counts[2] = {0, 0};
  int index = 0;
  for (const char* path : {RUNTIME_TEST_ARM_KERNELS_BOTH_SO, RUNTIME_TEST_ARM_KERNELS_GNU_SO}) {
    CAPTURE(path);
    std::vector<uint8_t> blob = ArmLibrary(path);
    if (blob.empty()) return;
    CHECK(kiln_test::Header<Elf32>(blob).e_flags == kArmHardFloat);
    kiln_elf_module_t module;
    kiln_status_t status = kiln_elf_module_load_arch(blob.data(), blob.size(), &kiln_elf_arch_arm, &module);
    REQUIRE_MESSAGE(status == NULL, kiln_test::Message(status));
    symbol_counts[index++] = module.symbol_count;
    CHECK(module.elf_class->elf_class == ELFCLASS32);
    CHECK(CheckArmRelocations(blob, module) >= 14);  // 9 RELATIVE, 2 ABS32, 2 GLOB_DAT, 1 JUMP_SLOT

    // The query is a Thumb function (Debian's armhf gcc defaults to Thumb-2):
    // its address keeps bit 0, and lies in an executable segment.
    void* query = NULL;
    REQUIRE(kiln_elf_module_lookup_function(&module, "kiln_kernel_library_query", &query) == NULL);
    Elf32_Sym symbol = FileSymbol(blob, "kiln_kernel_library_query");
    CHECK((uintptr_t)query == (uintptr_t)module.base + (symbol.st_value - module.min_vaddr));
    CHECK(((uintptr_t)query & 1) == (symbol.st_value & 1));
    // reloc_table_ptr = &reloc_table[3]: ABS32 with the addend (12) in the place.
    Elf32_Sym pointer = FileSymbol(blob, "reloc_table_ptr");
    Elf32_Sym table = FileSymbol(blob, "reloc_table");
    REQUIRE(pointer.st_value != 0);
    uint32_t value = 0;
    memcpy(&value, module.base + (pointer.st_value - module.min_vaddr), 4);
    CHECK(value == (uint32_t)((uintptr_t)module.base + (table.st_value - module.min_vaddr) + 12));
    for (uint32_t s = 0; s < module.segment_count; ++s) {
      CHECK(!((module.segments[s].prot & PROT_WRITE) && (module.segments[s].prot & PROT_EXEC)));
    }
    kiln_elf_module_unload(&module);
  }
  CHECK(symbol_counts[0] > 0);  // DT_HASH's nchain ...
  CHECK(symbol_counts[0] == symbol_counts[1]);  // ... and the DT_GNU_HASH walk (32-bit bloom words) agree
}

TEST_CASE("elf32: hostile variants of an arm library fail cleanly") {
  const std::vector<uint8_t> good = ArmLibrary(RUNTIME_TEST_ARM_KERNELS_BOTH_SO);
  if (good.empty()) return;
  const kiln_elf_arch_t* arm = &kiln_elf_arch_arm;
  size_t loaded_end = 0;  // end of the last PT_LOAD's file bytes
  for (size_t i = 0; i < kiln_test::Header<Elf32>(good).e_phnum; ++i) {
    Elf32_Phdr p = kiln_test::Phdr<Elf32>(good, i);
    if (p.p_type == PT_LOAD && p.p_offset + p.p_filesz > loaded_end) loaded_end = p.p_offset + p.p_filesz;
  }
  for (size_t length = 0; length < loaded_end; length += (length < 128 ? 1 : 37)) {
    CHECK_MESSAGE(ModuleError(good, arm, length) != "", "length " << length);
  }

  std::vector<uint8_t> blob = good;  // unwind tables (PT_ARM_EXIDX) are harmless
  size_t stack = kiln_test::FindPhdr<Elf32>(blob, PT_GNU_STACK);
  Patch<uint32_t>(&blob, kiln_test::PhdrOffset<Elf32>(blob, stack) + offsetof(Elf32_Phdr, p_type), PT_ARM_EXIDX);
  CHECK(ModuleError(blob, arm) == "");

  size_t text = kiln_test::PhdrOffset<Elf32>(good, kiln_test::FindPhdr<Elf32>(good, PT_LOAD, PF_X));
  blob = good;
  Patch<uint32_t>(&blob, text + offsetof(Elf32_Phdr, p_offset), (uint32_t)blob.size());
  CHECK(Contains(ModuleError(blob, arm), "lies beyond the"));
  blob = good;
  Patch<uint32_t>(&blob, text + offsetof(Elf32_Phdr, p_flags), PF_R | PF_W | PF_X);
  CHECK(Contains(ModuleError(blob, arm), "writable and executable"));
  blob = good;
  Patch<uint32_t>(&blob, text + offsetof(Elf32_Phdr, p_memsz), 0xFFFFFFF0u);
  CHECK(ModuleError(blob, arm) != "");

  blob = good;
  Patch<uint32_t>(&blob, kiln_test::DynamicEntry<Elf32>(blob, DT_SYMENT) + 4, sizeof(Elf64_Sym));
  CHECK(Contains(ModuleError(blob, arm), "DT_SYMENT is not sizeof(Elf32_Sym)"));
  blob = good;
  Patch<uint32_t>(&blob, kiln_test::DynamicEntry<Elf32>(blob, DT_RELENT) + 4, sizeof(Elf32_Rela));
  CHECK(Contains(ModuleError(blob, arm), "DT_RELENT is not sizeof(Elf32_Rel)"));
  blob = good;
  Patch<uint32_t>(&blob, kiln_test::DynamicEntry<Elf32>(blob, DT_STRSZ) + 4, 0xFFFFFF00u);
  CHECK(Contains(ModuleError(blob, arm), "DT_STRTAB"));

  size_t rel = FirstRel(good);
  blob = good;
  Patch<uint32_t>(&blob, rel + offsetof(Elf32_Rel, r_offset), 0x7fff0000u);
  CHECK(Contains(ModuleError(blob, arm), "relocation 0: target 0x7fff0000 lies outside"));
  blob = good;
  Patch<uint32_t>(&blob, rel + offsetof(Elf32_Rel, r_info), ELF32_R_INFO(0, 0x99));
  CHECK(Contains(ModuleError(blob, arm), "relocation 0 has unsupported arm type 153"));
  blob = good;
  Patch<uint32_t>(&blob, rel + offsetof(Elf32_Rel, r_info), ELF32_R_INFO(0, R_ARM_ABS32));
  CHECK(Contains(ModuleError(blob, arm), "relocation 0 (R_ARM_ABS32) has no symbol"));
  blob = good;
  Patch<uint32_t>(&blob, rel + offsetof(Elf32_Rel, r_info), ELF32_R_INFO(5000, R_ARM_ABS32));
  CHECK(Contains(ModuleError(blob, arm), "symbol index 5000 out of range"));

  blob = good;  // the same library for the other float ABI
  Patch<uint32_t>(&blob, offsetof(Elf32_Ehdr, e_flags), kArmSoftFloat);
  CHECK(Contains(ModuleError(blob, arm), "soft-float ABI (armel"));
}

TEST_CASE("32-bit sizes: bundle byte counts beyond the address space are refused, not truncated") {
  const uint64_t limit32 = 0x7FFFFFFFu;  // PTRDIFF_MAX of a 32-bit target
  size_t size = 0;
  REQUIRE(kiln_size_from_u64_limit(limit32, limit32, 32, "x", &size) == NULL);
  CHECK(size == limit32);
  for (uint64_t value : {limit32 + 1, (uint64_t)0x100000005ull, ~(uint64_t)0}) {
    CAPTURE(value);
    size = 7;
    kiln_status_t status = kiln_size_from_u64_limit(value, limit32, 32, "bundle: the arena", &size);
    REQUIRE(status != NULL);
    CHECK(kiln_status_code(status) == KILN_UNSUPPORTED);
    std::string expected = "bundle: the arena is " + std::to_string(value) +
                           " bytes: more than this runtime's 32-bit address space can hold (at most 2147483647)";
    CHECK(Contains(kiln_test::Message(status), expected.c_str()));
    CHECK(size == 7);  // untouched
  }
  kiln_status_t tebibyte = kiln_size_from_u64(1ull << 40, "x", NULL);  // fits a 64-bit size_t only
  CHECK((tebibyte == NULL) == (sizeof(void*) == 8));
  kiln_test::Message(tebibyte);
}

TEST_CASE("32-bit sizes: a bundle whose arena or tensor exceeds this runtime's address space") {
  // With this host's limit (PTRDIFF_MAX): 2^63 bytes is beyond it on 64-bit
  // hosts, as 3 GiB is on 32-bit ones (tests/cross_target checks that one on armv7).
  const uint64_t beyond = KILN_MAX_OBJECT_BYTES + 1;
  const std::string bits = std::to_string(KILN_ADDRESS_BITS) + "-bit address space";
  kiln_test::TestBundle b = kiln_test::MinimalBundle();
  b.arena_bytes = beyond;
  std::vector<uint8_t> file = b.Build();
  kiln_model_t* model = NULL;
  kiln_status_t status = kiln_model_load_memory_ex(file.data(), file.size(), &verify_only_32, &model);
  REQUIRE(status != NULL);
  CHECK(kiln_status_code(status) == KILN_UNSUPPORTED);
  std::string error = kiln_test::Message(status);
  CHECK(Contains(error, ("bundle: the arena (memory.arena_bytes) is " + std::to_string(beyond) + " bytes").c_str()));
  CHECK(Contains(error, bits.c_str()));

  b = kiln_test::MinimalBundle();  // x: 2^61 floats, 2^63 bytes (more than any arena holds)
  b.tensors[0].shape = {1ll << 61};
  file = b.Build();
  status = kiln_model_load_memory_ex(file.data(), file.size(), &verify_only_32, &model);
  REQUIRE(status != NULL);
  error = kiln_test::Message(status);
  CHECK(Contains(error, "bundle: tensor 0 ('x'): byte_size is 9223372036854775808 bytes"));
  CHECK(Contains(error, bits.c_str()));
}
