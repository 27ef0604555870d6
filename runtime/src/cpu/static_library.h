// Kernels linked into the application (kilnc --kernels=static): the
// process-wide registry kiln_static_library_register fills (kiln.h), looked
// up by a bundle's StaticLinked library when a model loads.
#ifndef KILN_CPU_STATIC_LIBRARY_H_
#define KILN_CPU_STATIC_LIBRARY_H_

#include <stdint.h>

#include "base/status.h"
#include "kiln_kernel_abi.h"

// The registered library whose kernel_hash is `kernel_hash`, or NULL.
const kiln_static_library_t* kiln_static_library_find(uint64_t kernel_hash);
// A registered library named `name` (to explain a hash mismatch), or NULL.
const kiln_static_library_t* kiln_static_library_find_name(const char* name);

#endif  // KILN_CPU_STATIC_LIBRARY_H_
