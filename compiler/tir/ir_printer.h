// Prints TIR as readable pseudo-code (for --dump-after and tests).
#pragma once

#include <string>

#include "tir/ir.h"

namespace kiln::tir {

std::string to_string(const Expr& e);
std::string to_string(const Stmt& s);

}  // namespace kiln::tir
