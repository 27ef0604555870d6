// Kiln kernel ABI: how the runtime calls compiler-generated kernels.
//
// This header is part of the compiler–runtime contract (with bundle.fbs) and
// is shared by both: the compiler's code generator builds the same struct
// layouts with the target's data layout, and a unit test checks they agree.
// Bump KILN_KERNEL_ABI_VERSION on any change; see docs/kernel-abi.md.
//
// A CPU kernel library is an ELF shared object exporting one symbol,
// `kiln_kernel_library_query`. The runtime's ELF loader maps it, looks that
// symbol up, and calls it once with the ABI version it speaks; the library
// returns its kernel table, or NULL if it does not speak that version.
// Kernels may call nothing outside the library: no libc, no libm.
#ifndef KILN_KERNEL_ABI_H_
#define KILN_KERNEL_ABI_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KILN_KERNEL_ABI_VERSION 1u
#define KILN_KERNEL_LIBRARY_QUERY_SYMBOL "kiln_kernel_library_query"

// State shared by every workgroup of one dispatch. Built once at load.
typedef struct kiln_kernel_dispatch_state_t {
  uint32_t workgroup_count[3];     // number of workgroups along x, y, z
  uint32_t binding_count;          // number of entries in `bindings`
  void* const* bindings;           // base pointer of each bound buffer
  uint32_t push_constant_count;    // number of entries in `push_constants`
  const uint32_t* push_constants;  // small per-dispatch constants
} kiln_kernel_dispatch_state_t;

// State of the one workgroup being run.
typedef struct kiln_kernel_workgroup_state_t {
  uint32_t workgroup_id[3];        // this workgroup's id along x, y, z
  uint32_t worker_index;           // index of the thread running it (for scratch)
} kiln_kernel_workgroup_state_t;

// A kernel runs one workgroup. Returns 0 on success.
typedef int32_t (*kiln_kernel_fn_t)(const kiln_kernel_dispatch_state_t* dispatch,
                                    const kiln_kernel_workgroup_state_t* workgroup);

// The table a library returns from its query function.
typedef struct kiln_kernel_library_t {
  uint32_t abi_version;            // KILN_KERNEL_ABI_VERSION the library was built for
  uint32_t kernel_count;           // entries in `kernel_names` and `kernels`
  const char* const* kernel_names; // NUL-terminated name of each kernel
  const kiln_kernel_fn_t* kernels; // entry point of each kernel
} kiln_kernel_library_t;

typedef const kiln_kernel_library_t* (*kiln_kernel_library_query_fn_t)(uint32_t abi_version);

// Kernels linked into the application instead of loaded from the bundle
// (kilnc --kernels=static: iOS, and any platform that forbids mapping code
// at run time). kilnc writes MODEL.kernels.o defining one function,
// `const kiln_static_library_t* kiln_static_library_MODEL(void)`, and the
// bundle names it (KernelLibrary.static_symbol) and its kernel_hash. The
// application passes the library to kiln_static_library_register (kiln.h)
// before loading the bundle.
#define KILN_STATIC_LIBRARY_SYMBOL_PREFIX "kiln_static_library_"
typedef struct kiln_static_library_t {
  uint32_t abi_version;                  // KILN_KERNEL_ABI_VERSION the kernels were compiled for
  uint32_t reserved;                     // 0
  uint64_t kernel_hash;                  // equals the bundle's KernelLibrary.kernel_hash
  const char* name;                      // MODEL: the symbol's suffix, for messages
  kiln_kernel_library_query_fn_t query;  // returns the kernel table, as an ELF library's query function
} kiln_static_library_t;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // KILN_KERNEL_ABI_H_
