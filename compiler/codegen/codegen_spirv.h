// Kernels → SPIR-V for Vulkan, in process: each kernel's GLSL compute shader
// (codegen_glsl.h) is compiled by the glslang library for Vulkan 1.0 /
// SPIR-V 1.0, optimized by SPIRV-Tools' performance passes and validated
// by its validator. A kernel that needs a device feature the target lacks
// (SpirvOptions::device_features), or whose shader the generator, glslang
// or the validator rejects, is not compiled: it gets a `cpu_reason` and the
// pipeline compiles it for the host CPU instead (heterogeneous bundles,
// docs/vulkan.md). The runtime never compiles shaders.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "lower/kernel.h"
#include "support/progress.h"

namespace kiln {

struct SpirvKernel {
  std::vector<uint32_t> words;                      // the module
  std::string entry_point = "main";                 // its GLCompute entry point
  std::array<uint32_t, 3> workgroup_size{1, 1, 1};  // its LocalSize
  uint32_t binding_count = 0;                       // storage buffers, set 0
  uint32_t push_constant_size = 0;                  // bytes
  uint32_t features = 0;                            // GlslFeature bits it needs
  std::string cpu_reason;  // non-empty: no module; the kernel runs on the CPU, for this reason
};

struct SpirvLibrary {
  std::vector<SpirvKernel> kernels;  // one per kernel, in order
  uint32_t features = 0;             // GlslFeature bits any compiled kernel needs
  size_t cpu_kernel_count() const;   // kernels with a cpu_reason
};

struct SpirvOptions {
  std::string* glsl_out = nullptr;  // if set, receives every kernel's shader (--dump-after=spirv)
  uint32_t device_features = 3;     // GlslFeature bits the device has (kilnc --vulkan-features; all by default)
  ProgressFn progress;              // hears of each kernel compiled
};

// Whether this kilnc was built with glslang and SPIRV-Tools.
bool spirv_codegen_available();

SpirvLibrary compile_kernels_spirv(const std::vector<KernelDef>& kernels, const SpirvOptions& options);

}  // namespace kiln
