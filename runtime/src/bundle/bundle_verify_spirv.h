// Verification of what Vulkan bundles add (schema minor 2): SpirV kernel
// libraries, each kernel's module range and interface, dispatches against
// those interfaces, and 256-byte tensor offsets. Called by
// kiln_bundle_verify after the common checks; see docs/bundle.md.
#ifndef KILN_BUNDLE_BUNDLE_VERIFY_SPIRV_H_
#define KILN_BUNDLE_BUNDLE_VERIFY_SPIRV_H_

#include "bundle/bundle_verify.h"

// Smallest SPIR-V module: the 5-word header.
#define KILN_BUNDLE_SPIRV_MIN_SIZE 20
// Longest entry point name.
#define KILN_BUNDLE_SPIRV_MAX_ENTRY_POINT 255
// Most storage buffers one kernel binds.
#define KILN_BUNDLE_SPIRV_MAX_BINDINGS 4096

// Checks the SpirV parts of a bundle whose indices (libraries, kernels,
// tensors) were already checked. Sets view->spirv when the bundle has a
// SpirV library (ELF libraries beside it run on the host).
kiln_status_t kiln_bundle_verify_spirv(const kiln::fb::Bundle* bundle, kiln_bundle_view_t* view);

#endif  // KILN_BUNDLE_BUNDLE_VERIFY_SPIRV_H_
