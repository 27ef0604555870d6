// Kernel library query and table validation; see kernel_library.h.
#include "cpu/kernel_library.h"

#include <string.h>
#include <sys/mman.h>

#include "cpu/static_library.h"

// Kernel ABI versions asked for when a library does not speak the runtime's,
// to name the one it speaks: 1 .. KILN_KERNEL_ABI_VERSION + this.
#define KILN_KERNEL_ABI_PROBE_AHEAD 16u

// The error for a query that returned NULL for KILN_KERNEL_ABI_VERSION,
// naming the version the library speaks when a nearby one answers.
static kiln_status_t kiln_kernel_library_abi_mismatch(kiln_kernel_library_query_fn_t query) {
  for (uint32_t version = 1; version <= KILN_KERNEL_ABI_VERSION + KILN_KERNEL_ABI_PROBE_AHEAD; ++version) {
    if (version != KILN_KERNEL_ABI_VERSION && query(version) != NULL) {
      return kiln_make_status(KILN_UNSUPPORTED,
                              "kernel library speaks kernel ABI version %u but this runtime speaks "
                              "version %u (recompile the model with a matching kilnc)",
                              version, KILN_KERNEL_ABI_VERSION);
    }
  }
  return kiln_make_status(KILN_UNSUPPORTED,
                          "kernel library speaks none of kernel ABI versions 1 to %u; this "
                          "runtime speaks version %u",
                          KILN_KERNEL_ABI_VERSION + KILN_KERNEL_ABI_PROBE_AHEAD, KILN_KERNEL_ABI_VERSION);
}

static kiln_status_t kiln_kernel_library_check_table(const kiln_elf_module_t* module,
                                                     const kiln_kernel_library_t* table) {
  if (((uintptr_t)table % alignof(kiln_kernel_library_t)) != 0 ||
      !kiln_elf_module_contains(module, table, sizeof(*table), PROT_READ)) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "kernel library: query returned a table outside the library");
  }
  if (table->abi_version != KILN_KERNEL_ABI_VERSION) {
    return kiln_make_status(KILN_UNSUPPORTED,
                            "kernel library: table has ABI version %u, runtime speaks %u",
                            table->abi_version, KILN_KERNEL_ABI_VERSION);
  }
  uint32_t count = table->kernel_count;
  if (count > KILN_KERNEL_LIBRARY_MAX_KERNELS) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "kernel library: kernel_count %u exceeds %u", count,
                            KILN_KERNEL_LIBRARY_MAX_KERNELS);
  }
  if (count == 0) return NULL;
  const size_t bytes = (size_t)count * sizeof(void*);
  if (((uintptr_t)table->kernel_names % alignof(const char*)) != 0 ||
      !kiln_elf_module_contains(module, table->kernel_names, bytes, PROT_READ) ||
      ((uintptr_t)table->kernels % alignof(kiln_kernel_fn_t)) != 0 ||
      !kiln_elf_module_contains(module, (const void*)table->kernels, bytes, PROT_READ)) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "kernel library: kernel_names/kernels arrays lie outside the "
                            "library");
  }
  for (uint32_t i = 0; i < count; ++i) {
    if (!kiln_elf_module_contains_string(module, table->kernel_names[i], PROT_READ)) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "kernel library: name of kernel %u is not a string inside the "
                              "library",
                              i);
    }
    void* entry;
    memcpy(&entry, &table->kernels[i], sizeof(entry));
    if (!kiln_elf_module_contains(module, entry, 1, PROT_EXEC)) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "kernel library: kernel %u ('%.64s') does not point into an "
                              "executable segment",
                              i, table->kernel_names[i]);
    }
  }
  return NULL;
}

kiln_status_t kiln_kernel_library_load(const uint8_t* blob, size_t size,
                                       kiln_kernel_library_handle_t* out_library) {
  kiln_kernel_library_handle_t library;
  memset(&library, 0, sizeof(library));
  KILN_RETURN_IF_ERROR(kiln_elf_module_load(blob, size, &library.module));
  void* address = NULL;
  kiln_status_t status = kiln_elf_module_lookup_function(
      &library.module, KILN_KERNEL_LIBRARY_QUERY_SYMBOL, &address);
  if (!status) {
    kiln_kernel_library_query_fn_t query;
    memcpy(&query, &address, sizeof(query));  // object pointer -> function pointer
    library.table = query(KILN_KERNEL_ABI_VERSION);
    status = library.table ? kiln_kernel_library_check_table(&library.module, library.table)
                           : kiln_kernel_library_abi_mismatch(query);
  }
  if (status) {
    kiln_elf_module_unload(&library.module);
    return status;
  }
  *out_library = library;
  return NULL;
}

kiln_status_t kiln_kernel_library_load_static(uint64_t kernel_hash, const char* symbol,
                                              kiln_kernel_library_handle_t* out_library) {
  const kiln_static_library_t* library = kiln_static_library_find(kernel_hash);
  if (!library) {
    const size_t prefix = strlen(KILN_STATIC_LIBRARY_SYMBOL_PREFIX);
    const char* name =
        strncmp(symbol, KILN_STATIC_LIBRARY_SYMBOL_PREFIX, prefix) == 0 ? symbol + prefix : symbol;
    const kiln_static_library_t* other = kiln_static_library_find_name(name);
    if (other) {
      return kiln_make_status(KILN_NOT_FOUND,
                              "static kernels: the registered '%.64s' has kernel hash %016llx, the "
                              "bundle needs %016llx: the bundle and the .kernels.o come from "
                              "different compilations (link the object kilnc wrote with this bundle)",
                              name, (unsigned long long)other->kernel_hash,
                              (unsigned long long)kernel_hash);
    }
    return kiln_make_status(KILN_NOT_FOUND,
                            "static kernels: the bundle's kernels are linked into the application "
                            "(kilnc --kernels=static) but none with kernel hash %016llx is "
                            "registered: link the .kernels.o kilnc wrote with this bundle and call "
                            "kiln_static_library_register(%.96s()) before loading",
                            (unsigned long long)kernel_hash, symbol);
  }
  const kiln_kernel_library_t* table = library->query(KILN_KERNEL_ABI_VERSION);
  if (!table || table->abi_version != KILN_KERNEL_ABI_VERSION) {
    return kiln_make_status(KILN_UNSUPPORTED,
                            "static kernels '%.64s': no kernel table for kernel ABI version %u",
                            library->name, KILN_KERNEL_ABI_VERSION);
  }
  if (table->kernel_count > KILN_KERNEL_LIBRARY_MAX_KERNELS ||
      (table->kernel_count && (!table->kernel_names || !table->kernels))) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "static kernels '%.64s': malformed kernel table",
                            library->name);
  }
  for (uint32_t i = 0; i < table->kernel_count; ++i) {
    if (!table->kernel_names[i] || !table->kernels[i]) {
      return kiln_make_status(KILN_INVALID_ARGUMENT,
                              "static kernels '%.64s': kernel %u has no name or entry point",
                              library->name, i);
    }
  }
  memset(out_library, 0, sizeof(*out_library));
  out_library->table = table;
  return NULL;
}

void kiln_kernel_library_unload(kiln_kernel_library_handle_t* library) {
  if (!library) return;
  kiln_elf_module_unload(&library->module);
  library->table = NULL;
}

kiln_status_t kiln_kernel_library_find(const kiln_kernel_library_handle_t* library,
                                       uint32_t ordinal, const char* expected_name,
                                       kiln_kernel_fn_t* out_kernel) {
  const kiln_kernel_library_t* table = library->table;
  if (ordinal >= table->kernel_count) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "ordinal %u out of range (library has %u kernels)", ordinal,
                            table->kernel_count);
  }
  if (strcmp(table->kernel_names[ordinal], expected_name) != 0) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "name mismatch: bundle says '%.64s', library ordinal %u is "
                            "'%.64s'",
                            expected_name, ordinal, table->kernel_names[ordinal]);
  }
  *out_kernel = table->kernels[ordinal];
  return NULL;
}

int32_t kiln_kernel_run_serial(kiln_kernel_fn_t kernel, const kiln_kernel_dispatch_state_t* state,
                               uint32_t out_failed_id[3]) {
  const uint32_t* count = state->workgroup_count;
  kiln_kernel_workgroup_state_t workgroup;
  workgroup.worker_index = 0;
  for (uint32_t z = 0; z < count[2]; ++z) {
    for (uint32_t y = 0; y < count[1]; ++y) {
      for (uint32_t x = 0; x < count[0]; ++x) {
        workgroup.workgroup_id[0] = x;
        workgroup.workgroup_id[1] = y;
        workgroup.workgroup_id[2] = z;
        int32_t result = kernel(state, &workgroup);
        if (result != 0) {
          for (int d = 0; d < 3; ++d) out_failed_id[d] = workgroup.workgroup_id[d];
          return result;
        }
      }
    }
  }
  return 0;
}
