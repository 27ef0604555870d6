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

#include "support/progress.h"
#include "target/target.h"
#include "lower/kernel.h"

namespace kiln {

struct CodegenOptions {
  std::string* llvm_ir_out = nullptr;  // if set, receives the optimized LLVM IR
  // Static kernels (kilnc --kernels=static): when set, the object exports
  // only `static_symbol`, a function returning its kiln_static_library_t
  // (kiln_kernel_abi.h) with `kernel_hash` and `static_name`; the query
  // function becomes internal, so objects of several models link together.
  std::string static_symbol;
  std::string static_name;
  uint64_t kernel_hash = 0;
  ProgressFn progress;  // hears of each kernel emitted, then of LLVM's optimization and code generation
};

// Returns the bytes of a relocatable object file; kernel i is table entry i.
std::string compile_kernels(const std::vector<KernelDef>& kernels, const TargetSpec& target,
                            const CodegenOptions& options = {});

}  // namespace kiln
