// Loads tests/cross_target/reloc_kernels.c's library, built for the target,
// with the runtime's ELF loader and runs its kernels: checks the RELATIVE,
// absolute-word (R_AARCH64_ABS64 / R_ARM_ABS32, with and without an addend),
// GLOB_DAT and JUMP_SLOT relocations of the target's architecture on a real
// (or emulated) CPU. Built with the cross compiler against the cross build's
// libkiln_runtime.a by cross_target.py and run under qemu.
//
//   elf_reloc_check LIBRARY.so [--abi2 LIBRARY_ABI2.so]
//
// LIBRARY_ABI2.so is the same source built to speak kernel ABI version 2:
// loading it must fail, naming both versions. Prints one line per check and
// exits 0 when all pass.
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

// Reads a whole file (at most 1 MiB) into `blob`; returns its size, 0 on error.
static size_t read_library(const char* path, uint8_t* blob, size_t capacity) {
  FILE* f = fopen(path, "rb");
  if (!f) {
    perror(path);
    return 0;
  }
  size_t size = fread(blob, 1, capacity, f);
  fclose(f);
  return size;
}

static uint8_t blob[1 << 20];

// The library speaking kernel ABI version 2 must be refused, naming both.
static void check_abi2(const char* path) {
  size_t size = read_library(path, blob, sizeof(blob));
  kiln_kernel_library_handle_t library;
  memset(&library, 0, sizeof(library));
  kiln_status_t status = size ? kiln_kernel_library_load(blob, size, &library) : NULL;
  const char* message = status ? kiln_status_message(status) : "(loaded)";
  printf("load %s: %s\n", path, message);
  check(status && strstr(message, "speaks kernel ABI version 2 but this runtime speaks version 1"),
        "a library speaking kernel ABI version 2 is refused, naming both versions");
  if (status) {
    kiln_status_free(status);
  } else if (size) {
    kiln_kernel_library_unload(&library);
  }
}

int main(int argc, char** argv) {
  if (argc != 2 && !(argc == 4 && strcmp(argv[2], "--abi2") == 0)) {
    fprintf(stderr, "usage: elf_reloc_check LIBRARY.so [--abi2 LIBRARY_ABI2.so]\n");
    return 2;
  }
  size_t size = read_library(argv[1], blob, sizeof(blob));
  if (!size) return 2;

  kiln_kernel_library_handle_t library;
  memset(&library, 0, sizeof(library));
  kiln_status_t status = kiln_kernel_library_load(blob, size, &library);
  if (status) {
    printf("load %s: FAIL: %s\n", argv[1], kiln_status_message(status));
    kiln_status_free(status);
    return 1;
  }
  const kiln_elf_arch_t* host = kiln_elf_arch_host();
  printf("runtime architecture: %s (e_machine %u)\n", host ? host->name : "none", host ? host->machine : 0);
  check(library.module.arch == host, "library is for the runtime's architecture");
  check(library.table->kernel_count == 4, "kernel table (RELATIVE): 4 kernels");

  int32_t i = 0;
  float x = 0.0f;
  check(run_kernel(&library, 0, "k_glob_dat", &i, 0, 0) == 0 && i == 5,
        "GLOB_DAT: variable read through the GOT = 5");
  i = 0;
  check(run_kernel(&library, 1, "k_jump_slot", &i, 7, 0) == 0 && i == 22,
        "JUMP_SLOT: PLT call reloc_helper(7) = 22");
  check(run_kernel(&library, 2, "k_abs_data", &x, 0, 0) == 0 && x == 4.5f,
        "ABS64/ABS32 + addend: &reloc_table[3] reads 4.5");
  i = 0;
  check(run_kernel(&library, 3, "k_abs_function", &i, 0, 2) == 0 && i == 1002,
        "ABS64/ABS32: table entry of a preemptible function");

  // No page of the library is writable and executable at once.
  bool wx = false;
  for (uint32_t s = 0; s < library.module.segment_count; ++s) {
    int prot = library.module.segments[s].prot;
    if ((prot & PROT_WRITE) && (prot & PROT_EXEC)) wx = true;
  }
  check(!wx, "no W+X segment");
  kiln_kernel_library_unload(&library);

  if (argc == 4) check_abi2(argv[3]);
  printf("%d check(s) failed\n", failures);
  return failures ? 1 : 0;
}
