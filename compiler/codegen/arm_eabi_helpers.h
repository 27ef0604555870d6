// The Arm run-time ABI helpers a 32-bit Arm kernel library needs. LLVM lowers
// 64-bit integer division and int64 -> float conversion on AArch32 to calls
// of __aeabi_uldivmod, __aeabi_l2f, ... (normally from libgcc or
// compiler-rt); kernel libraries link nothing, so the module defines them
// itself (hidden: resolved inside the library, never exported).
#pragma once

#include <llvm/IR/Module.h>

namespace kiln {

// Defines __aeabi_uldivmod, __aeabi_ldivmod, __aeabi_ul2f and __aeabi_l2f in
// `m` (base-AAPCS calling convention, as the run-time ABI specifies), kept
// until the backend has lowered the operations that call them.
void emit_arm_eabi_helpers(llvm::Module& m);

}  // namespace kiln
