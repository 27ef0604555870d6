// The registry of kernels linked into the application (static_library.h).
// Registration is rare (once per library at start-up) and lookups happen
// only while loading a model: one mutex guards a fixed array.
#include "cpu/static_library.h"

#include <pthread.h>
#include <string.h>

#include "kiln/kiln.h"

static pthread_mutex_t kiln_static_lock = PTHREAD_MUTEX_INITIALIZER;
static const kiln_static_library_t* kiln_static_libraries[KILN_STATIC_LIBRARY_MAX];  // registered, in order
static uint32_t kiln_static_count;  // entries in kiln_static_libraries

kiln_status_t kiln_static_library_register(const kiln_static_library_t* library) {
  if (!library) return kiln_make_status(KILN_INVALID_ARGUMENT, "static library: NULL library");
  const char* name = library->name ? library->name : "?";
  if (library->abi_version != KILN_KERNEL_ABI_VERSION) {
    return kiln_make_status(KILN_UNSUPPORTED,
                            "static library '%.64s': compiled for kernel ABI version %u, this "
                            "runtime speaks %u (recompile the model with a matching kilnc)",
                            name, library->abi_version, KILN_KERNEL_ABI_VERSION);
  }
  if (!library->query || !library->name || library->kernel_hash == 0) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "static library '%.64s': no query function, name or kernel hash", name);
  }
  kiln_status_t status = NULL;
  pthread_mutex_lock(&kiln_static_lock);
  bool known = false;
  for (uint32_t i = 0; i < kiln_static_count && !known; ++i) {
    known = kiln_static_libraries[i] == library || kiln_static_libraries[i]->kernel_hash == library->kernel_hash;
  }
  if (!known) {
    if (kiln_static_count == KILN_STATIC_LIBRARY_MAX) {
      status = kiln_make_status(KILN_OUT_OF_MEMORY,
                                "static library '%.64s': %u libraries are registered already", name,
                                KILN_STATIC_LIBRARY_MAX);
    } else {
      kiln_static_libraries[kiln_static_count++] = library;
    }
  }
  pthread_mutex_unlock(&kiln_static_lock);
  return status;
}

const kiln_static_library_t* kiln_static_library_find(uint64_t kernel_hash) {
  const kiln_static_library_t* found = NULL;
  pthread_mutex_lock(&kiln_static_lock);
  for (uint32_t i = 0; i < kiln_static_count && !found; ++i) {
    if (kiln_static_libraries[i]->kernel_hash == kernel_hash) found = kiln_static_libraries[i];
  }
  pthread_mutex_unlock(&kiln_static_lock);
  return found;
}

const kiln_static_library_t* kiln_static_library_find_name(const char* name) {
  const kiln_static_library_t* found = NULL;
  pthread_mutex_lock(&kiln_static_lock);
  for (uint32_t i = 0; i < kiln_static_count && !found; ++i) {
    if (strcmp(kiln_static_libraries[i]->name, name) == 0) found = kiln_static_libraries[i];
  }
  pthread_mutex_unlock(&kiln_static_lock);
  return found;
}
