// ELF loader: real libraries built by the system toolchain load and run;
// no page is writable and executable; hostile variants fail cleanly.
#include <doctest/doctest.h>
#include <elf.h>
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "cpu/elf_module.h"
#include "cpu/kernel_library.h"
#include "runtime_bundle_builder.h"
#include "runtime_elf_util.h"
#include "runtime_test_config.h"

namespace {

using kiln_test::Contains;
using kiln_test::DynamicEntry;
using kiln_test::FileOffset;
using kiln_test::FindPhdr;
using kiln_test::Header;
using kiln_test::Patch;
using kiln_test::Phdr;
using kiln_test::PhdrOffset;

std::vector<uint8_t> Library(const char* path) {
  std::vector<uint8_t> bytes = kiln_test::ReadFile(path);
  REQUIRE_MESSAGE(!bytes.empty(), "cannot read " << path);
  return bytes;
}

// "" on success (the library is unloaded again), else the error message.
std::string ElfLoadError(const std::vector<uint8_t>& blob, size_t size = SIZE_MAX) {
  kiln_kernel_library_handle_t library;
  kiln_status_t status =
      kiln_kernel_library_load(blob.data(), size == SIZE_MAX ? blob.size() : size, &library);
  if (!status) {
    kiln_kernel_library_unload(&library);
    return "";
  }
  std::string message = kiln_status_message(status);
  kiln_status_free(status);
  return message;
}

// True when some mapping of this process is both writable and executable.
bool AnyWritableExecutableMapping(std::string* which) {
  FILE* maps = fopen("/proc/self/maps", "r");
  REQUIRE(maps != NULL);
  char line[1024];
  bool found = false;
  while (fgets(line, sizeof(line), maps)) {
    char perms[8] = {0};
    if (sscanf(line, "%*s %7s", perms) == 1 && perms[1] == 'w' && perms[2] == 'x') {
      found = true;
      *which = line;
    }
  }
  fclose(maps);
  return found;
}

}  // namespace

TEST_CASE("elf: a compiled kernel library loads and runs, and no page is W+X") {
  for (const char* path : {RUNTIME_TEST_KERNELS_SO, RUNTIME_TEST_KERNELS_GNUHASH_SO}) {
    CAPTURE(path);
    std::vector<uint8_t> blob = Library(path);
    kiln_kernel_library_handle_t library;
    kiln_status_t status = kiln_kernel_library_load(blob.data(), blob.size(), &library);
    REQUIRE_MESSAGE(status == NULL, kiln_status_message(status));
    blob.assign(blob.size(), 0);  // the loader copied what it needs
    CHECK(library.table->kernel_count == 9);  // data/runtime_kernels.c
    CHECK(std::string(library.table->kernel_names[1]) == "scale");

    kiln_kernel_fn_t add = NULL;
    REQUIRE(kiln_kernel_library_find(&library, 0, "vector_add", &add) == NULL);
    float a[8] = {1, 2, 3, 4, 5, 6, 7, 8}, b[8] = {10, 20, 30, 40, 50, 60, 70, 80}, out[8] = {0};
    void* bindings[3] = {a, b, out};
    uint32_t push[1] = {4};
    kiln_kernel_dispatch_state_t dispatch = {{2, 1, 1}, 3, bindings, 1, push};
    for (uint32_t x = 0; x < 2; ++x) {
      kiln_kernel_workgroup_state_t workgroup = {{x, 0, 0}, 0};
      CHECK(add(&dispatch, &workgroup) == 0);
    }
    for (int i = 0; i < 8; ++i) CHECK(out[i] == a[i] + b[i]);

    kiln_kernel_fn_t wrong = NULL;
    kiln_status_t mismatch = kiln_kernel_library_find(&library, 1, "vector_add", &wrong);
    CHECK(Contains(kiln_status_message(mismatch), "name mismatch"));
    kiln_status_free(mismatch);
    kiln_status_t range = kiln_kernel_library_find(&library, 9, "x", &wrong);
    CHECK(Contains(kiln_status_message(range), "ordinal 9 out of range"));
    kiln_status_free(range);

    std::string which;
    CHECK_MESSAGE(!AnyWritableExecutableMapping(&which), which);
    kiln_kernel_library_unload(&library);
  }
}

TEST_CASE("elf: truncated blobs") {
  std::vector<uint8_t> blob = Library(RUNTIME_TEST_KERNELS_SO);
  Elf64_Ehdr header = Header(blob);
  size_t loaded_end = 0;  // end of the last PT_LOAD's file bytes
  for (size_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr p = Phdr(blob, i);
    if (p.p_type == PT_LOAD && p.p_offset + p.p_filesz > loaded_end) loaded_end = p.p_offset + p.p_filesz;
  }
  for (size_t length = 0; length < blob.size(); length += (length < 256 ? 1 : 61)) {
    std::string error = ElfLoadError(blob, length);
    if (length < loaded_end) CHECK_MESSAGE(error != "", "length " << length);
  }
  CHECK(Contains(ElfLoadError(blob, 10), "smaller than an ELF header"));
}

TEST_CASE("elf: bad headers") {
  const std::vector<uint8_t> good = Library(RUNTIME_TEST_KERNELS_SO);
  std::vector<uint8_t> blob = good;
  blob[1] = 'X';
  CHECK(Contains(ElfLoadError(blob), "bad magic"));

  const std::string host = std::string(kiln_elf_arch_host()->name) + " (ELFCLASS64)";
  blob = good;  // the host's machine, the other class: no descriptor
  blob[EI_CLASS] = ELFCLASS32;
  std::string error = ElfLoadError(blob);
  CHECK(Contains(error, ("kernel library is " + std::string(kiln_elf_arch_host()->name) + " (e_machine").c_str()));
  CHECK(Contains(error, ("ELFCLASS32) but this runtime runs " + host).c_str()));

  blob = good;
  blob[EI_CLASS] = 9;
  CHECK(Contains(ElfLoadError(blob), "unknown class 9"));

  blob = good;
  Patch<uint16_t>(&blob, offsetof(Elf64_Ehdr, e_machine), Header(good).e_machine == EM_AARCH64 ? EM_X86_64 : EM_AARCH64);
  error = ElfLoadError(blob);
  CHECK((Contains(error, "kernel library is aarch64 (e_machine 183, ELFCLASS64)") ||
         Contains(error, "kernel library is x86_64 (e_machine 62, ELFCLASS64)")));
  CHECK(Contains(error, ("but this runtime runs " + host).c_str()));

  blob = good;
  Patch<uint16_t>(&blob, offsetof(Elf64_Ehdr, e_machine), 0xBEEF);
  CHECK(Contains(ElfLoadError(blob), "kernel library is unknown (e_machine 48879, ELFCLASS64)"));

  blob = good;
  Patch<uint16_t>(&blob, offsetof(Elf64_Ehdr, e_type), ET_EXEC);
  CHECK(Contains(ElfLoadError(blob), "not ET_DYN"));

  blob = good;
  Patch<uint64_t>(&blob, offsetof(Elf64_Ehdr, e_phoff), blob.size() - 8);
  CHECK(Contains(ElfLoadError(blob), "program headers"));

  blob = good;
  Patch<uint64_t>(&blob, offsetof(Elf64_Ehdr, e_phoff), ~0ull - 16);
  CHECK(Contains(ElfLoadError(blob), "program headers"));
}

TEST_CASE("elf: bad segments") {
  const std::vector<uint8_t> good = Library(RUNTIME_TEST_KERNELS_SO);
  size_t text = FindPhdr(good, PT_LOAD, PF_X);

  std::vector<uint8_t> blob = good;
  Patch<uint64_t>(&blob, PhdrOffset(blob, text) + offsetof(Elf64_Phdr, p_offset), blob.size());
  CHECK(Contains(ElfLoadError(blob), "lies beyond the"));

  blob = good;
  Patch<uint32_t>(&blob, PhdrOffset(blob, text) + offsetof(Elf64_Phdr, p_flags), PF_R | PF_W | PF_X);
  CHECK(Contains(ElfLoadError(blob), "writable and executable"));

  blob = good;
  Patch<uint64_t>(&blob, PhdrOffset(blob, text) + offsetof(Elf64_Phdr, p_filesz),
                  Phdr(good, text).p_memsz + 1);
  CHECK(Contains(ElfLoadError(blob), "p_filesz"));

  blob = good;  // a huge bss
  Patch<uint64_t>(&blob, PhdrOffset(blob, text) + offsetof(Elf64_Phdr, p_memsz), 1ull << 40);
  CHECK(ElfLoadError(blob) != "");

  blob = good;  // text segment moved onto the read-only segment's page
  Patch<uint64_t>(&blob, PhdrOffset(blob, text) + offsetof(Elf64_Phdr, p_vaddr),
                  Phdr(good, text - 1).p_vaddr + Phdr(good, text - 1).p_memsz);
  CHECK(Contains(ElfLoadError(blob), "share a page"));
}

TEST_CASE("elf: dynamic section problems") {
  const std::vector<uint8_t> good = Library(RUNTIME_TEST_KERNELS_SO);

  std::vector<uint8_t> blob = good;  // turn DT_GNU_HASH (DT_HASH remains) into DT_NEEDED
  Patch<int64_t>(&blob, DynamicEntry(blob, DT_GNU_HASH), DT_NEEDED);
  CHECK(Contains(ElfLoadError(blob), "DT_NEEDED"));

  blob = good;
  Elf64_Dyn rela_entry;
  memcpy(&rela_entry, good.data() + DynamicEntry(good, DT_RELA), sizeof(rela_entry));
  size_t first_rela = FileOffset(good, rela_entry.d_un.d_ptr);
  Patch<uint64_t>(&blob, first_rela + offsetof(Elf64_Rela, r_offset), 0x7fff0000ull);
  CHECK(Contains(ElfLoadError(blob), "relocation 0: target 0x7fff0000 lies outside"));

  blob = good;
  Patch<uint64_t>(&blob, first_rela + offsetof(Elf64_Rela, r_info), ELF64_R_INFO(0, 0x99));
  CHECK(Contains(ElfLoadError(blob), "unsupported"));

  blob = good;
  Patch<uint64_t>(&blob, first_rela + offsetof(Elf64_Rela, r_info), ELF64_R_INFO(5000, R_X86_64_64));
  CHECK(ElfLoadError(blob) != "");

  blob = good;
  Patch<uint64_t>(&blob, DynamicEntry(blob, DT_STRSZ) + 8, 1ull << 40);
  CHECK(Contains(ElfLoadError(blob), "DT_STRTAB"));

  blob = good;
  Patch<uint64_t>(&blob, DynamicEntry(blob, DT_SYMTAB) + 8, 0x7fffff00ull);
  CHECK(Contains(ElfLoadError(blob), "DT_SYMTAB"));

  blob = good;  // rename the query symbol in .dynstr
  std::string text(blob.begin(), blob.end());
  size_t at = text.find("kiln_kernel_library_query");
  REQUIRE(at != std::string::npos);
  blob[at] = 'K';
  CHECK(Contains(ElfLoadError(blob), "does not export 'kiln_kernel_library_query'"));
}

// Tables the loader walks, placed in a huge zero-filled segment: refused by
// count before the walk (such a 1 GiB walk likely caused a fuzz_elf timeout).
TEST_CASE("elf: tables over a huge bss are refused by count, not walked") {
  const std::vector<uint8_t> good = Library(RUNTIME_TEST_KERNELS_SO);
  size_t data = FindPhdr(good, PT_LOAD, PF_W);
  Elf64_Phdr phdr = Phdr(good, data);
  uint64_t bss = (phdr.p_vaddr + phdr.p_filesz + 7) & ~7ull;  // zero-filled from here on
  uint64_t grown = (bss - phdr.p_vaddr) + (256ull << 20);

  std::vector<uint8_t> blob = good;  // DT_RELA: 4M + 1 R_X86_64_NONE entries in the bss
  Patch<uint64_t>(&blob, PhdrOffset(blob, data) + offsetof(Elf64_Phdr, p_memsz), grown);
  Patch<uint64_t>(&blob, DynamicEntry(blob, DT_RELA) + 8, bss);
  Patch<uint64_t>(&blob, DynamicEntry(blob, DT_RELASZ) + 8,
                  (uint64_t)(KILN_ELF_MAX_RELOCATIONS + 1) * sizeof(Elf64_Rela));
  CHECK(Contains(ElfLoadError(blob), "more than 4194304 relocations"));

  // DT_GNU_HASH (DT_HASH hidden): a header in the data segment's last 16
  // file bytes announcing 192M buckets, which lie in the bss.
  blob = good;
  Patch<uint64_t>(&blob, PhdrOffset(blob, data) + offsetof(Elf64_Phdr, p_memsz),
                  phdr.p_filesz + (768ull << 20));
  Patch<int64_t>(&blob, DynamicEntry(blob, DT_HASH), DT_DEBUG);
  Patch<uint64_t>(&blob, DynamicEntry(blob, DT_GNU_HASH) + 8, phdr.p_vaddr + phdr.p_filesz - 16);
  size_t header = phdr.p_offset + phdr.p_filesz - 16;
  Patch<uint32_t>(&blob, header, 192u << 20);  // nbuckets
  Patch<uint32_t>(&blob, header + 4, 1);       // symoffset
  Patch<uint32_t>(&blob, header + 8, 0);       // bloom_size
  CHECK(Contains(ElfLoadError(blob), "DT_GNU_HASH has 201326592 buckets (at most 1048576)"));
}

TEST_CASE("elf: undefined symbols are named") {
  std::vector<uint8_t> blob = Library(RUNTIME_TEST_UNDEFINED_SO);
  std::string error = ElfLoadError(blob);
  CHECK(Contains(error, "undefined symbol 'external_helper'"));
  CHECK(Contains(error, "self-contained"));
}

TEST_CASE("elf: a library speaking another kernel ABI version is refused, naming both") {
  std::vector<uint8_t> blob = Library(RUNTIME_TEST_KERNELS_ABI2_SO);
  std::string error = ElfLoadError(blob);
  CHECK(Contains(error, "kernel library speaks kernel ABI version 2 but this runtime speaks version 1"));
}

TEST_CASE("elf arch: descriptors are found by machine and class; the host's is one of them") {
  const kiln_elf_arch_t* x86 = kiln_elf_arch_find(EM_X86_64, ELFCLASS64);
  const kiln_elf_arch_t* arm64 = kiln_elf_arch_find(EM_AARCH64, ELFCLASS64);
  REQUIRE(x86 == &kiln_elf_arch_x86_64);
  REQUIRE(arm64 == &kiln_elf_arch_aarch64);
  CHECK(std::string(x86->name) == "x86_64");
  CHECK(std::string(arm64->name) == "aarch64");
  CHECK(x86->relocation_formats == KILN_ELF_RELA);
  CHECK(kiln_elf_arch_find(EM_X86_64, ELFCLASS32) == NULL);  // the class is part of the key
  CHECK(kiln_elf_arch_find(EM_ARM, ELFCLASS32) == &kiln_elf_arch_arm);
  CHECK(kiln_elf_arch_find(EM_ARM, ELFCLASS64) == NULL);
  CHECK(kiln_elf_arch_arm.relocation_formats == (KILN_ELF_REL | KILN_ELF_RELA));
  CHECK(std::string(kiln_elf_machine_name(EM_ARM)) == "arm");
  CHECK(std::string(kiln_elf_machine_name(EM_AARCH64)) == "aarch64");
  // The host's descriptor is the one the test libraries (built for the host) match.
  const std::vector<uint8_t> library = Library(RUNTIME_TEST_KERNELS_SO);
  CHECK(kiln_elf_arch_host() == kiln_elf_arch_find(Header(library).e_machine, ELFCLASS64));
}

TEST_CASE("elf arch: relocation entries of both classes and formats decode") {
  const char* name = NULL;
  CHECK(kiln_elf_relocation_entry_size(ELFCLASS64, KILN_ELF_RELA, &name) == sizeof(Elf64_Rela));
  CHECK(std::string(name) == "Elf64_Rela");
  CHECK(kiln_elf_relocation_entry_size(ELFCLASS32, KILN_ELF_REL, &name) == sizeof(Elf32_Rel));
  CHECK(std::string(name) == "Elf32_Rel");
  CHECK(kiln_elf_relocation_entry_size(7, KILN_ELF_REL, &name) == 0);

  Elf64_Rela rela64 = {0x1234, ELF64_R_INFO(77, R_X86_64_64), -16};
  kiln_elf_relocation_entry_t entry;
  kiln_elf_relocation_decode((const uint8_t*)&rela64, ELFCLASS64, KILN_ELF_RELA, &entry);
  CHECK(entry.offset == 0x1234);
  CHECK(entry.symbol == 77);
  CHECK(entry.type == R_X86_64_64);
  CHECK(entry.addend == -16);
  Elf32_Rel rel32 = {0x800, ELF32_R_INFO(5, R_ARM_ABS32)};
  kiln_elf_relocation_decode((const uint8_t*)&rel32, ELFCLASS32, KILN_ELF_REL, &entry);
  CHECK(entry.offset == 0x800);
  CHECK(entry.symbol == 5);
  CHECK(entry.type == R_ARM_ABS32);
  CHECK(entry.addend == 0);  // REL: the loader reads it from the target
  Elf32_Rela rela32 = {0x900, ELF32_R_INFO(3, R_ARM_RELATIVE), 40};
  kiln_elf_relocation_decode((const uint8_t*)&rela32, ELFCLASS32, KILN_ELF_RELA, &entry);
  CHECK(entry.offset == 0x900);
  CHECK(entry.symbol == 3);
  CHECK(entry.addend == 40);
}

TEST_CASE("elf arch: the x86_64 and aarch64 functions compute and write their words") {
  uint8_t target[12];
  memset(target, 0xAA, sizeof(target));
  kiln_elf_relocation_t relocation = kiln_test::TestRelocation(target + 1, 8, 0x10000, 0x20);  // unaligned
  relocation.type = R_X86_64_RELATIVE;
  REQUIRE(kiln_elf_arch_x86_64.apply_relocation(&relocation) == NULL);
  uint64_t value = 0;
  memcpy(&value, target + 1, 8);
  CHECK(value == 0x10020);
  CHECK(target[0] == 0xAA);
  CHECK(target[9] == 0xAA);

  relocation.type = R_AARCH64_ABS64;  // needs a symbol
  kiln_status_t status = kiln_elf_arch_aarch64.apply_relocation(&relocation);
  CHECK(Contains(kiln_status_message(status), "(type 257) has no symbol"));
  kiln_status_free(status);
  relocation.has_symbol = 1;
  relocation.symbol_value = 0x5000;
  REQUIRE(kiln_elf_arch_aarch64.apply_relocation(&relocation) == NULL);
  memcpy(&value, target + 1, 8);
  CHECK(value == 0x5020);

  // A 32-bit target (ELFCLASS32) gets its low four bytes only.
  memset(target, 0xAA, sizeof(target));
  relocation.target_size = 4;
  REQUIRE(kiln_elf_relocation_write(&relocation, 0x1122334455667788ull) == NULL);
  uint32_t word = 0;
  memcpy(&word, target + 1, 4);
  CHECK(word == 0x55667788u);
  CHECK(target[5] == 0xAA);
}
