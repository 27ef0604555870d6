// Writes the bundle: the size-prefixed FlatBuffer (schema/bundle.fbs) and
// the 64-byte aligned data segment holding constants and the kernel library.
// Constants are aligned like the memory plan's offsets (256 bytes for Vulkan).
#pragma once

#include <string>

#include "codegen/codegen_spirv.h"
#include "target/target.h"
#include "graph/graph.h"
#include "lower/lower_graph.h"
#include "plan/memory_plan.h"

namespace kiln {

// The CPU kernels of a bundle compiled with --kernels=static: linked into the
// application, found at run time by their hash (codegen/static_kernels.h).
struct StaticKernels {
  uint64_t kernel_hash = 0;  // KernelLibrary.kernel_hash
  std::string symbol;        // KernelLibrary.static_symbol
};

struct BundleStats {
  uint64_t constant_bytes = 0;  // bytes of constants in the data segment
  uint64_t kernel_bytes = 0;    // bytes of the kernel library
  uint64_t total_bytes = 0;     // file size
};

// `kernel_library` is the ELF shared object of a CPU target; for Vulkan
// `spirv` holds the kernels (a SpirV library: the modules one after another,
// each kernel's range and interface in Kernel.spirv) and `kernel_library`
// is empty, or, in a heterogeneous bundle, the host ELF of the kernels with
// a `cpu_reason` (in order), whose dispatches get the host copies
// (Dispatch.host_downloads / host_uploads, see host_transfers). With
// `static_kernels`, the CPU kernels (all of them, or a Vulkan bundle's host
// ones) are a StaticLinked library instead, and `kernel_library` is empty.
std::string write_bundle(const graph::Graph& g, const LoweredProgram& p, const MemoryPlan& plan,
                         const std::string& kernel_library, const TargetSpec& target, BundleStats* stats = nullptr,
                         const SpirvLibrary* spirv = nullptr, const StaticKernels* static_kernels = nullptr);

// The copies around host dispatches of a heterogeneous bundle. Ranges are
// (byte offset, size) in the arena; `on_host[i]` says where dispatch i runs,
// `ranges[i]` its bound arena ranges (negative offset: not in the arena)
// and `writes[i]` which of them it writes. A host dispatch downloads every
// bound range whose bytes the host copy does not hold (written by the
// device since, or never copied this run) and uploads what it writes.
// Returns per dispatch the indices (into ranges[i]) to download and upload.
struct HostTransfers {
  std::vector<std::vector<size_t>> downloads, uploads;
};
HostTransfers host_transfers(const std::vector<bool>& on_host,
                             const std::vector<std::vector<std::pair<int64_t, uint64_t>>>& ranges,
                             const std::vector<std::vector<bool>>& writes);

}  // namespace kiln
