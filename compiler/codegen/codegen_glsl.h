// Loop IR → GLSL 450 compute shaders for Vulkan (the first half of the
// SPIR-V code generator; codegen_spirv.h compiles the text).
//
// One shader per kernel. Parameter i of the kernel is the storage buffer at
// set 0, binding i (`readonly` when the kernel only reads it), so a
// dispatch's bindings are the CPU ABI's, in the same order. Workgroup loops
// read gl_WorkGroupID, local loops gl_LocalInvocationID (their extents are
// the workgroup size); every other loop is a serial `for`.
//
// Types: float32 and int32 tensors are `float[]` / `int[]`; float64 and
// int64 tensors `double[]` / `int64_t[]` (the device features
// shaderFloat64 / shaderInt64, reported in GlslKernel::features); 8- and
// 16-bit tensors (bool, int8, uint8, int16, float16) are packed into
// `uint[]` words, read by shifting and written with atomicAnd/atomicOr so
// that neighbouring elements written by other invocations are kept. Index
// arithmetic is 32-bit `int`: loop variables and what is computed from them
// and constants alone; only values that derive from int64 data are
// `int64_t` (the compiler rejects tensors of 2^31 bytes or more for this
// target). Integer `/` and `%` keep the IR's floor semantics, and float `/`
// is correctly rounded (helper functions). Innermost loops are
// unrolled in the text when an invocation would otherwise run more loop
// iterations than Mesa's lavapipe allows (see codegen_glsl.cpp).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "lower/kernel.h"

namespace kiln {

// Device features a shader needs (the values of kiln.fb.VulkanFeature).
enum GlslFeature : uint32_t {
  kGlslFeatureInt64 = 1,    // shaderInt64
  kGlslFeatureFloat64 = 2,  // shaderFloat64
};

struct GlslKernel {
  std::string source;                                // the compute shader
  std::array<uint32_t, 3> workgroup_size{1, 1, 1};   // its local_size
  uint32_t features = 0;                             // GlslFeature bits
};

// Emits the shader for one verified kernel (entry point `main`).
GlslKernel emit_glsl(const KernelDef& kernel);

}  // namespace kiln
