// A kernel library that needs every AArch64 relocation type the runtime's ELF
// loader handles (runtime/src/cpu/arch/aarch64.cpp). kilnc's own libraries use
// only R_AARCH64_RELATIVE (everything is internal); this one makes symbols
// preemptible (default visibility in a -shared link) so the linker has to
// leave symbolic relocations to the loader:
//
//   R_AARCH64_RELATIVE   the static kernel table (names, entry points)
//   R_AARCH64_ABS64      a pointer to a default-visibility function and one to
//                        an element of a default-visibility array (addend 12)
//   R_AARCH64_GLOB_DAT   a default-visibility variable read through the GOT
//   R_AARCH64_JUMP_SLOT  a call of a default-visibility function (PLT)
//
// Built by aarch64_qemu.py with the cross compiler:
//   aarch64-linux-gnu-gcc -shared -fPIC -nostdlib -O2 -fno-stack-protector
//       -Wl,-z,now -Wl,--hash-style=both -I schema
// and loaded by elf_reloc_check.cpp under qemu-aarch64.
#include "kiln_kernel_abi.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT int32_t reloc_bias = 5;                                    // GLOB_DAT
EXPORT float reloc_table[6] = {1.0f, 2.0f, 3.0f, 4.5f, 5.0f, 6.0f};
EXPORT const float* reloc_table_ptr = &reloc_table[3];            // ABS64, addend 12

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
static int32_t k_abs64_data(const kiln_kernel_dispatch_state_t* d,
                            const kiln_kernel_workgroup_state_t* w) {
  (void)w;
  if (d->binding_count != 1) return 1;
  ((float*)d->bindings[0])[0] = *reloc_table_ptr;
  return 0;
}

// Entered through the table by its preemptible symbol: ABS64 with a symbol.
EXPORT int32_t k_abs64_function(const kiln_kernel_dispatch_state_t* d,
                                const kiln_kernel_workgroup_state_t* w) {
  if (d->binding_count != 1) return 1;
  ((int32_t*)d->bindings[0])[0] = 1000 + (int32_t)w->workgroup_id[0];
  return 0;
}

static const char* const kernel_names[] = {"k_glob_dat", "k_jump_slot", "k_abs64_data",
                                           "k_abs64_function"};
static const kiln_kernel_fn_t kernels[] = {k_glob_dat, k_jump_slot, k_abs64_data,
                                           k_abs64_function};
static const kiln_kernel_library_t library = {KILN_KERNEL_ABI_VERSION, 4, kernel_names, kernels};

EXPORT const kiln_kernel_library_t* kiln_kernel_library_query(uint32_t abi_version) {
  return abi_version == KILN_KERNEL_ABI_VERSION ? &library : 0;
}
