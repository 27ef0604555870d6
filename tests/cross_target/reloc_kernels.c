// A kernel library that needs every relocation type the runtime's ELF loader
// handles on AArch64 (runtime/src/cpu/arch/aarch64.cpp, RELA) and ARM
// (arm.cpp, REL). kilnc's own libraries use only RELATIVE (everything is
// internal); this one makes symbols preemptible (default visibility in a
// -shared link) so the linker has to leave symbolic relocations to the loader:
//
//   RELATIVE             the static kernel table (names, entry points)
//   ABS64 / ABS32        a pointer to a default-visibility function and one to
//                        an element of a default-visibility array (addend 12;
//                        with REL, ARM's, the addend is in the place)
//   GLOB_DAT             a default-visibility variable read through the GOT
//   JUMP_SLOT            a call of a default-visibility function (PLT)
//
// Built by cross_target.py with the cross compiler (and linked by GNU ld and
// by lld), loaded by elf_reloc_check.cpp under qemu; runtime_32bit_test.cpp
// maps the ARM build on the host. -DRELOC_ABI_VERSION=2 makes the library
// speak another kernel ABI version (it must then be refused).
#include "kiln_kernel_abi.h"

#ifndef RELOC_ABI_VERSION
#define RELOC_ABI_VERSION KILN_KERNEL_ABI_VERSION
#endif

#define EXPORT __attribute__((visibility("default")))

EXPORT int32_t reloc_bias = 5;                                    // GLOB_DAT
EXPORT float reloc_table[6] = {1.0f, 2.0f, 3.0f, 4.5f, 5.0f, 6.0f};
EXPORT const float* reloc_table_ptr = &reloc_table[3];            // ABS64/ABS32, addend 12

// Called through the PLT from k_jump_slot: JUMP_SLOT.
EXPORT __attribute__((noinline)) int32_t reloc_helper(int32_t x) { return 3 * x + 1; }

// out[0] = reloc_bias (read through the GOT).
static int32_t k_glob_dat(const kiln_kernel_dispatch_state_t* d,
                          const kiln_kernel_workgroup_state_t* w) {
  (void)w;
  if (d->binding_count != 1) return 1;
  ((int32_t*)d->bindings[0])[0] = reloc_bias;
  return 0;
}

// out[0] = reloc_helper(push_constants[0]) (a PLT call).
static int32_t k_jump_slot(const kiln_kernel_dispatch_state_t* d,
                           const kiln_kernel_workgroup_state_t* w) {
  (void)w;
  if (d->binding_count != 1 || d->push_constant_count != 1) return 1;
  ((int32_t*)d->bindings[0])[0] = reloc_helper((int32_t)d->push_constants[0]);
  return 0;
}

// out[0] = *reloc_table_ptr (a data pointer with an addend).
static int32_t k_abs_data(const kiln_kernel_dispatch_state_t* d,
                          const kiln_kernel_workgroup_state_t* w) {
  (void)w;
  if (d->binding_count != 1) return 1;
  ((float*)d->bindings[0])[0] = *reloc_table_ptr;
  return 0;
}

// Entered through the table by its preemptible symbol: an absolute word
// relocation with a symbol.
EXPORT int32_t k_abs_function(const kiln_kernel_dispatch_state_t* d,
                              const kiln_kernel_workgroup_state_t* w) {
  if (d->binding_count != 1) return 1;
  ((int32_t*)d->bindings[0])[0] = 1000 + (int32_t)w->workgroup_id[0];
  return 0;
}

static const char* const kernel_names[] = {"k_glob_dat", "k_jump_slot", "k_abs_data",
                                           "k_abs_function"};
static const kiln_kernel_fn_t kernels[] = {k_glob_dat, k_jump_slot, k_abs_data, k_abs_function};
static const kiln_kernel_library_t library = {RELOC_ABI_VERSION, 4, kernel_names, kernels};

EXPORT const kiln_kernel_library_t* kiln_kernel_library_query(uint32_t abi_version) {
  return abi_version == RELOC_ABI_VERSION ? &library : 0;
}
