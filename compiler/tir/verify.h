// Checks the invariants every kernel body must satisfy before code generation:
// every Var is bound by an enclosing For/Let/LetStmt, every buffer is either a
// kernel parameter or Allocate'd in scope, workgroup loops are outermost with
// constant extents and each axis is bound at most once. A failure is a
// compiler bug (InternalError) naming the kernel.
#pragma once

#include <string>
#include <vector>

#include "tir/ir.h"

namespace kiln::tir {

void verify_kernel(const std::string& kernel_name, const Stmt& body, const std::vector<Buffer>& params);

}  // namespace kiln::tir
