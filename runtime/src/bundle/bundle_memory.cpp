// Bundle memory ownership; see bundle_memory.h.
#include "bundle/bundle_memory.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/address_space.h"
#include "base/allocator.h"
#include "kiln_bundle_version.h"

// The error for a bundle of `size` bytes over the `max_bytes` limit.
static kiln_status_t kiln_bundle_memory_too_large(uint64_t size, uint64_t max_bytes) {
  return kiln_make_status(KILN_OUT_OF_MEMORY,
                          "bundle: %llu bytes, more than the limit of %llu "
                          "(kiln_model_load_options_t.max_bundle_bytes)",
                          (unsigned long long)size, (unsigned long long)max_bytes);
}

kiln_status_t kiln_bundle_memory_map_file(const char* path, uint64_t max_bytes,
                                          kiln_bundle_memory_t* out_memory) {
  if (!path || !out_memory) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "load: NULL path or out_model");
  }
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    return kiln_make_status(error == ENOENT ? KILN_NOT_FOUND : KILN_IO_ERROR,
                            "cannot open '%s': %s", path, strerror(error));
  }
  struct stat info;
  if (fstat(fd, &info) != 0) {
    int error = errno;
    close(fd);
    return kiln_make_status(KILN_IO_ERROR, "cannot stat '%s': %s", path,
                            strerror(error));
  }
  if (!S_ISREG(info.st_mode)) {
    close(fd);
    return kiln_make_status(KILN_IO_ERROR, "'%s' is not a regular file", path);
  }
  if (info.st_size <= 0) {
    close(fd);
    return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: '%s' is empty", path);
  }
  if ((uint64_t)info.st_size > max_bytes) {
    close(fd);
    return kiln_status_annotate(kiln_bundle_memory_too_large((uint64_t)info.st_size, max_bytes), "'%s'", path);
  }
  size_t size = 0;  // st_size is 64-bit (_FILE_OFFSET_BITS=64) on 32-bit targets too
  kiln_status_t status = kiln_size_from_u64((uint64_t)info.st_size, "bundle: the file", &size);
  if (status) {
    close(fd);
    return kiln_status_annotate(status, "cannot map '%s'", path);
  }
  void* data = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
  int error = errno;
  close(fd);  // the mapping keeps the file alive
  if (data == MAP_FAILED) {
    return kiln_make_status(KILN_IO_ERROR, "cannot map '%s': %s", path,
                            strerror(error));
  }
  out_memory->data = (const uint8_t*)data;  // page aligned, so 64-byte aligned
  out_memory->size = size;
  out_memory->kind = KILN_BUNDLE_MEMORY_MAPPED;
  return NULL;
}

kiln_status_t kiln_bundle_memory_wrap(const void* data, size_t size, uint64_t max_bytes,
                                      kiln_bundle_memory_t* out_memory) {
  if (!data || size == 0 || !out_memory) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "load: NULL or empty bundle memory");
  }
  if ((uint64_t)size > max_bytes) return kiln_bundle_memory_too_large(size, max_bytes);
  if (((uintptr_t)data % KILN_BUNDLE_ALIGNMENT) == 0) {
    out_memory->data = (const uint8_t*)data;
    out_memory->size = size;
    out_memory->kind = KILN_BUNDLE_MEMORY_BORROWED;
    return NULL;
  }
  // Misaligned: constants and kernel blobs must be 64-byte aligned, so copy.
  void* copy = NULL;
  KILN_RETURN_IF_ERROR(kiln_aligned_alloc(size, KILN_BUNDLE_ALIGNMENT, &copy));
  memcpy(copy, data, size);
  out_memory->data = (const uint8_t*)copy;
  out_memory->size = size;
  out_memory->kind = KILN_BUNDLE_MEMORY_HEAP;
  return NULL;
}

void kiln_bundle_memory_release(kiln_bundle_memory_t* memory) {
  if (!memory || !memory->data) return;
  switch (memory->kind) {
    case KILN_BUNDLE_MEMORY_MAPPED:
      munmap((void*)memory->data, memory->size);
      break;
    case KILN_BUNDLE_MEMORY_HEAP:
      kiln_aligned_free((void*)memory->data);
      break;
    case KILN_BUNDLE_MEMORY_BORROWED:
      break;
  }
  memory->data = NULL;
  memory->size = 0;
}
