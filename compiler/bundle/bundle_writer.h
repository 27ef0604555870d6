// Writes the bundle: the size-prefixed FlatBuffer (schema/bundle.fbs) and
// the 64-byte aligned data segment holding constants and the kernel library.
// Constants are aligned like the memory plan's offsets (256 bytes for Vulkan).
#pragma once

#include <string>

#include "codegen/codegen_spirv.h"
#include "codegen/target.h"
#include "graph/graph.h"
#include "lower/lower_graph.h"
#include "plan/memory_plan.h"

namespace kiln {

struct BundleStats {
  uint64_t constant_bytes = 0;  // bytes of constants in the data segment
  uint64_t kernel_bytes = 0;    // bytes of the kernel library
  uint64_t total_bytes = 0;     // file size
};

// `kernel_library` is the ELF shared object of a CPU target; for Vulkan it
// is empty and `spirv` holds the kernels (a SpirV library: the modules one
// after another, each kernel's range and interface in Kernel.spirv).
std::string write_bundle(const graph::Graph& g, const LoweredProgram& p, const MemoryPlan& plan,
                         const std::string& kernel_library, const TargetSpec& target, BundleStats* stats = nullptr,
                         const SpirvLibrary* spirv = nullptr);

}  // namespace kiln
