// Bundle verification: turns untrusted bytes into a bundle every later layer
// may index without further checks.
//
// Two passes:
//   1. structure: size prefix, identifier, the FlatBuffers verifier (with
//      explicit depth/table limits and alignment checks), so every table,
//      vector and string read afterwards lies inside the buffer;
//   2. integrity: Bundle.content_hash (XXH64) over the file, which catches
//      corruption no structural check can see (kernel code, sizes);
//   3. meaning: versions, the data segment, and every index and (offset, size)
//      range (overflow-checked), so the executor can bind pointers blindly.
// What is NOT checked here: the kernel code itself (see cpu/elf_module.h).
#ifndef KILN_BUNDLE_BUNDLE_VERIFY_H_
#define KILN_BUNDLE_BUNDLE_VERIFY_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/status.h"
#include "bundle_generated.h"

// Limits handed to the FlatBuffers verifier.
#define KILN_BUNDLE_MAX_DEPTH 32            // nesting of tables and vectors
#define KILN_BUNDLE_MAX_TABLES (1u << 22)   // tables in one bundle
#define KILN_BUNDLE_MAX_PUSH_CONSTANTS 64   // per dispatch
// Upper bound on x*y*z workgroups of one dispatch (keeps a run finite).
#define KILN_BUNDLE_MAX_WORKGROUPS 0xFFFFFFFFull

// A verified bundle. Points into the bytes passed to kiln_bundle_verify.
typedef struct kiln_bundle_view_t {
  const kiln::fb::Bundle* bundle;   // root table; all indices/ranges checked
  const uint8_t* flatbuffer;        // the u32 size prefix, then the FlatBuffer
  size_t flatbuffer_size;           // 4 + size prefix
  const uint8_t* data_segment;      // constants and kernel blobs (64-aligned)
  size_t data_segment_size;         // bytes in the data segment
  uint64_t arena_bytes;             // memory.arena_bytes (0 if no memory plan)
  int spirv;                        // nonzero: a kernel library is SpirV (Vulkan; ELF ones run on the host)
  int dynamic;                      // nonzero: shape symbols (run-time dimensions, bundle_verify_shapes.h)
  int sized_per_run;                // nonzero: a tensor has Dynamic storage (its size and counts are per run)
} kiln_bundle_view_t;

// Whether the kernels of a library of `format` run on the CPU: an ELF
// library in the bundle, or static kernels linked into the application.
static inline bool kiln_library_format_is_cpu(kiln::fb::LibraryFormat format) {
  return format == kiln::fb::LibraryFormat::ElfSharedObject ||
         format == kiln::fb::LibraryFormat::StaticLinked;
}

// Dimension d of a tensor's shape. FlatBuffers aligns vectors of 8-byte
// scalars only to 4 bytes, so they are copied out, never loaded in place.
static inline int64_t kiln_bundle_dim(const flatbuffers::Vector<int64_t>* shape, uint32_t d) {
  int64_t dim;
  memcpy(&dim, shape->Data() + (size_t)d * sizeof(dim), sizeof(dim));
  return dim;
}

// Verifies `size` bytes at `data` (which must be 64-byte aligned).
kiln_status_t kiln_bundle_verify(const uint8_t* data, size_t size,
                                 kiln_bundle_view_t* out_view);

#endif  // KILN_BUNDLE_BUNDLE_VERIFY_H_
