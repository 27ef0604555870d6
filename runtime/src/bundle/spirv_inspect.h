// SPIR-V modules read without a device: framing, the GLCompute entry point
// and its workgroup size. The bundle verifier checks every module of a
// bundle with it at load (so `kiln inspect` and CPU-only loads reject a
// malformed module too), and pipeline creation again before Vulkan sees it.
#ifndef KILN_BUNDLE_SPIRV_INSPECT_H_
#define KILN_BUNDLE_SPIRV_INSPECT_H_

#include <stddef.h>
#include <stdint.h>

#include "base/status.h"

#define KILN_SPIRV_MAGIC 0x07230203u  // first word of every SPIR-V module

// What kiln_spirv_inspect found in a module.
typedef struct kiln_spirv_info_t {
  uint32_t word_count;         // words in the module
  uint32_t workgroup_size[3];  // the entry point's workgroup size
} kiln_spirv_info_t;

// Checks the module's framing and finds the GLCompute entry point named
// `entry_point` (NULL: "main") and its workgroup size: the WorkgroupSize
// built-in's constants when the module decorates one (it overrides
// LocalSize; specialization constants count with their defaults), else
// OpExecutionMode LocalSize. KILN_INVALID_BUNDLE with a message for a NULL
// or misaligned pointer, a size that is not a multiple of 4 or shorter than
// the header, a wrong magic number, an instruction running past the end, a
// missing entry point, or no workgroup size.
kiln_status_t kiln_spirv_inspect(const void* code, size_t size, const char* entry_point,
                                 kiln_spirv_info_t* out_info);

#endif  // KILN_BUNDLE_SPIRV_INSPECT_H_
