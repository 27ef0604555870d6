// The LLVM TargetMachine for a target description (target/target.h): what
// the LLVM code generator and the linker compile with.
#pragma once

#include <memory>

#include "target/target.h"

namespace llvm {
class TargetMachine;
}

namespace kiln {

// Creates an LLVM TargetMachine for position-independent code (user error if
// LLVM does not know the target).
std::unique_ptr<llvm::TargetMachine> create_target_machine(const TargetSpec& spec);

}  // namespace kiln
