// Loads tests/aarch64/reloc_kernels.c's library (built for aarch64) with the
// runtime's ELF loader and runs its kernels: checks R_AARCH64_RELATIVE,
// ABS64 (with and without an addend), GLOB_DAT and JUMP_SLOT on a real (or
// emulated) AArch64 CPU. Built with the cross compiler against the cross
// build's libkiln_runtime.a by aarch64_qemu.py; run under qemu-aarch64.
//
//   elf_reloc_check LIBRARY.so       prints one line per check, exits 0 when all pass
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "cpu/kernel_library.h"

static int failures = 0;

static void check(bool ok, const char* what) {
  printf("%s: %s\n", what, ok ? "PASS" : "FAIL");
  if (!ok) ++failures;
}

static int32_t run_kernel(const kiln_kernel_library_handle_t* library, uint32_t ordinal,
                          const char* name, void* out, uint32_t push_constant,
                          uint32_t workgroup_x) {
  kiln_kernel_fn_t kernel = NULL;
  kiln_status_t status = kiln_kernel_library_find(library, ordinal, name, &kernel);
  if (status) {
    printf("find %s: %s\n", name, kiln_status_message(status));
    kiln_status_free(status);
    return -1;
  }
  void* bindings[1] = {out};
  uint32_t push_constants[1] = {push_constant};
  kiln_kernel_dispatch_state_t dispatch;
  memset(&dispatch, 0, sizeof(dispatch));
  dispatch.workgroup_count[0] = workgroup_x + 1;
  dispatch.workgroup_count[1] = dispatch.workgroup_count[2] = 1;
  dispatch.binding_count = 1;
  dispatch.bindings = bindings;
  dispatch.push_constant_count = 1;
  dispatch.push_constants = push_constants;
  kiln_kernel_workgroup_state_t workgroup;
  memset(&workgroup, 0, sizeof(workgroup));
  workgroup.workgroup_id[0] = workgroup_x;
  return kernel(&dispatch, &workgroup);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: elf_reloc_check LIBRARY.so\n");
    return 2;
  }
  FILE* f = fopen(argv[1], "rb");
  if (!f) {
    perror(argv[1]);
    return 2;
  }
  static uint8_t blob[1 << 20];
  size_t size = fread(blob, 1, sizeof(blob), f);
  fclose(f);

  kiln_kernel_library_handle_t library;
  memset(&library, 0, sizeof(library));
  kiln_status_t status = kiln_kernel_library_load(blob, size, &library);
  if (status) {
    printf("load %s: FAIL: %s\n", argv[1], kiln_status_message(status));
    kiln_status_free(status);
    return 1;
  }
  check(library.module.arch && library.module.arch->machine == 183 /* EM_AARCH64 */, "library is EM_AARCH64");
  check(library.table->kernel_count == 4, "kernel table (R_AARCH64_RELATIVE): 4 kernels");

  int32_t i = 0;
  float x = 0.0f;
  check(run_kernel(&library, 0, "k_glob_dat", &i, 0, 0) == 0 && i == 5,
        "R_AARCH64_GLOB_DAT: variable read through the GOT = 5");
  i = 0;
  check(run_kernel(&library, 1, "k_jump_slot", &i, 7, 0) == 0 && i == 22,
        "R_AARCH64_JUMP_SLOT: PLT call reloc_helper(7) = 22");
  check(run_kernel(&library, 2, "k_abs64_data", &x, 0, 0) == 0 && x == 4.5f,
        "R_AARCH64_ABS64 + addend: &reloc_table[3] reads 4.5");
  i = 0;
  check(run_kernel(&library, 3, "k_abs64_function", &i, 0, 2) == 0 && i == 1002,
        "R_AARCH64_ABS64: table entry of a preemptible function");

  // No page of the library is writable and executable at once.
  bool wx = false;
  for (uint32_t s = 0; s < library.module.segment_count; ++s) {
    int prot = library.module.segments[s].prot;
    if ((prot & PROT_WRITE) && (prot & PROT_EXEC)) wx = true;
  }
  check(!wx, "no W+X segment");

  kiln_kernel_library_unload(&library);
  printf("%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
