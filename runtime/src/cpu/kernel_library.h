// A CPU kernel library: an ELF module plus the kernel table its
// kiln_kernel_library_query function returned (see schema/kiln_kernel_abi.h),
// or the table of kernels linked into the application (static kernels:
// no module).
#ifndef KILN_CPU_KERNEL_LIBRARY_H_
#define KILN_CPU_KERNEL_LIBRARY_H_

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"
#include "cpu/elf_module.h"
#include "kiln_kernel_abi.h"

#define KILN_KERNEL_LIBRARY_MAX_KERNELS 65536u  // entries accepted in a kernel table

typedef struct kiln_kernel_library_handle_t {
  kiln_elf_module_t module;            // the mapped library (all zero for static kernels)
  const kiln_kernel_library_t* table;  // validated kernel table (inside `module`, or the application's)
} kiln_kernel_library_handle_t;

// Loads the ELF blob, calls its query function with KILN_KERNEL_ABI_VERSION
// and validates the returned table: every pointer inside the library, names
// NUL-terminated inside it, entry points inside executable segments.
kiln_status_t kiln_kernel_library_load(const uint8_t* blob, size_t size,
                                       kiln_kernel_library_handle_t* out_library);
void kiln_kernel_library_unload(kiln_kernel_library_handle_t* library);

// The registered static library (cpu/static_library.h) whose kernel hash is
// `kernel_hash`, its table checked like an ELF library's (but its pointers
// are the application's own). `symbol` (from the bundle) names the function
// the application should have registered, for the message when none is.
kiln_status_t kiln_kernel_library_load_static(uint64_t kernel_hash, const char* symbol,
                                              kiln_kernel_library_handle_t* out_library);

// The kernel at `ordinal`, whose name must equal `expected_name`.
kiln_status_t kiln_kernel_library_find(const kiln_kernel_library_handle_t* library,
                                       uint32_t ordinal, const char* expected_name,
                                       kiln_kernel_fn_t* out_kernel);

// Runs every workgroup of one dispatch of `kernel` on the calling thread,
// serially in (z, y, x) order, as worker 0. Returns 0, or the first nonzero
// result of the kernel, with that workgroup's id in `out_failed_id`.
int32_t kiln_kernel_run_serial(kiln_kernel_fn_t kernel, const kiln_kernel_dispatch_state_t* state,
                               uint32_t out_failed_id[3]);

#endif  // KILN_CPU_KERNEL_LIBRARY_H_
