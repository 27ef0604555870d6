// TIR → LLVM IR → object code, for CPU targets.
//
// Each kernel becomes an internal function with the kernel ABI's signature
// (schema/kiln_kernel_abi.h); the module also defines the kernel table and
// the one exported symbol, kiln_kernel_library_query. Math intrinsics are
// expanded inline, and LLVM is told no library function exists, so the
// object references no external symbol (no libm, no memset).
#pragma once

#include <string>
#include <vector>

#include "target/target.h"
#include "lower/kernel.h"

namespace kiln {

struct CodegenOptions {
  std::string* llvm_ir_out = nullptr;  // if set, receives the optimized LLVM IR
};

// Returns the bytes of a relocatable object file; kernel i is table entry i.
std::string compile_kernels(const std::vector<KernelDef>& kernels, const TargetSpec& target,
                            const CodegenOptions& options = {});

}  // namespace kiln
