// Kernels → SPIR-V for Vulkan, in process: each kernel's GLSL compute shader
// (codegen_glsl.h) is compiled by the glslang library for Vulkan 1.0 /
// SPIR-V 1.0, optimized by SPIRV-Tools' performance passes and validated
// by its validator. A shader glslang rejects or a module the validator
// rejects is an internal compiler error (the generator's bug), reported
// with the shader text. The runtime never compiles shaders.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lower/kernel.h"

namespace kiln {

struct SpirvKernel {
  std::vector<uint32_t> words;                      // the module
  std::string entry_point = "main";                 // its GLCompute entry point
  std::array<uint32_t, 3> workgroup_size{1, 1, 1};  // its LocalSize
  uint32_t binding_count = 0;                       // storage buffers, set 0
  uint32_t push_constant_size = 0;                  // bytes
};

struct SpirvLibrary {
  std::vector<SpirvKernel> kernels;  // one per kernel, in order
  uint32_t features = 0;             // GlslFeature bits any kernel needs
};

struct SpirvOptions {
  std::string* glsl_out = nullptr;  // if set, receives every kernel's shader (--dump-after=spirv)
};

// Whether this kilnc was built with glslang and SPIRV-Tools.
bool spirv_codegen_available();

SpirvLibrary compile_kernels_spirv(const std::vector<KernelDef>& kernels, const SpirvOptions& options);

}  // namespace kiln
