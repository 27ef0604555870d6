// Test helpers for the ELF loader's tests (runtime_elf_test.cpp: ELF64
// libraries of the host; runtime_32bit_test.cpp: ELF32 ARM libraries): read
// a library's headers and patch its bytes. The record types come from a
// class (Elf64 by default, or Elf32).
#ifndef KILN_TESTS_RUNTIME_ELF_UTIL_H_
#define KILN_TESTS_RUNTIME_ELF_UTIL_H_

#include <doctest/doctest.h>
#include <elf.h>
#include <string.h>

#include <vector>

#include "cpu/arch/elf_arch.h"

namespace kiln_test {

// The ELF64 and ELF32 record types.
struct Elf64 {
  using Ehdr = Elf64_Ehdr;  // file header
  using Phdr = Elf64_Phdr;  // program header
  using Dyn = Elf64_Dyn;    // dynamic entry
};
struct Elf32 {
  using Ehdr = Elf32_Ehdr;  // file header
  using Phdr = Elf32_Phdr;  // program header
  using Dyn = Elf32_Dyn;    // dynamic entry
};

template <typename C = Elf64>
typename C::Ehdr Header(const std::vector<uint8_t>& blob) {
  typename C::Ehdr header;
  memcpy(&header, blob.data(), sizeof(header));
  return header;
}

// File offset of program header `index`.
template <typename C = Elf64>
size_t PhdrOffset(const std::vector<uint8_t>& blob, size_t index) {
  return Header<C>(blob).e_phoff + index * sizeof(typename C::Phdr);
}

template <typename C = Elf64>
typename C::Phdr Phdr(const std::vector<uint8_t>& blob, size_t index) {
  typename C::Phdr phdr;
  memcpy(&phdr, blob.data() + PhdrOffset<C>(blob, index), sizeof(phdr));
  return phdr;
}

// Index of the first program header of `type` with flags containing `flags`.
template <typename C = Elf64>
size_t FindPhdr(const std::vector<uint8_t>& blob, uint32_t type, uint32_t flags = 0) {
  for (size_t i = 0; i < Header<C>(blob).e_phnum; ++i) {
    typename C::Phdr p = Phdr<C>(blob, i);
    if (p.p_type == type && (p.p_flags & flags) == flags) return i;
  }
  FAIL("program header not found");
  return 0;
}

// File offset of a link-time address (through the PT_LOADs).
template <typename C = Elf64>
size_t FileOffset(const std::vector<uint8_t>& blob, uint64_t vaddr) {
  for (size_t i = 0; i < Header<C>(blob).e_phnum; ++i) {
    typename C::Phdr p = Phdr<C>(blob, i);
    if (p.p_type == PT_LOAD && vaddr >= p.p_vaddr && vaddr < p.p_vaddr + p.p_filesz) {
      return p.p_offset + (vaddr - p.p_vaddr);
    }
  }
  FAIL("address not in a segment");
  return 0;
}

// File offset of the dynamic entry with `tag`.
template <typename C = Elf64>
size_t DynamicEntry(const std::vector<uint8_t>& blob, int64_t tag) {
  typename C::Phdr dynamic = Phdr<C>(blob, FindPhdr<C>(blob, PT_DYNAMIC));
  for (size_t off = dynamic.p_offset; off + sizeof(typename C::Dyn) <= dynamic.p_offset + dynamic.p_filesz;
       off += sizeof(typename C::Dyn)) {
    typename C::Dyn entry;
    memcpy(&entry, blob.data() + off, sizeof(entry));
    if (entry.d_tag == tag) return off;
    if (entry.d_tag == DT_NULL) break;
  }
  FAIL("dynamic tag not found");
  return 0;
}

// The value (d_un) of the dynamic entry with `tag`.
template <typename C = Elf64>
uint64_t DynamicValue(const std::vector<uint8_t>& blob, int64_t tag) {
  typename C::Dyn entry;
  memcpy(&entry, blob.data() + DynamicEntry<C>(blob, tag), sizeof(entry));
  return entry.d_un.d_val;
}

// A relocation without a symbol writing `target_size` bytes at `target`
// (for the architecture functions' tests).
inline kiln_elf_relocation_t TestRelocation(uint8_t* target, uint32_t target_size, uint64_t load_bias,
                                            int64_t addend) {
  kiln_elf_relocation_t relocation;
  memset(&relocation, 0, sizeof(relocation));
  relocation.target = target;
  relocation.target_size = target_size;
  relocation.load_bias = load_bias;
  relocation.addend = addend;
  relocation.symbol_name = "";
  return relocation;
}

template <typename T>
void Patch(std::vector<uint8_t>* blob, size_t offset, T value) {
  memcpy(blob->data() + offset, &value, sizeof(value));
}

}  // namespace kiln_test

#endif  // KILN_TESTS_RUNTIME_ELF_UTIL_H_
