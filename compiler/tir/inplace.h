// Which inputs of a kernel its output may overwrite (in-place reuse).
//
// A kernel may write output O over input X when every read of X happens in
// the value stored to O, at exactly the index stored to (structurally the
// same expression): each element of X is read once, by the iteration that
// then overwrites that same element, and nothing else reads X. Elementwise
// kernels (activations, arithmetic, unfused epilogues) qualify; anything
// that reads neighbours, reduces or transposes does not. The memory planner
// then may give X and O the same bytes when X's life ends in this kernel.
#pragma once

#include <utility>
#include <vector>

#include "tir/ir.h"

namespace kiln::tir {

// Pairs (input binding, output binding) that may share storage.
std::vector<std::pair<int, int>> inplace_pairs(const Stmt& body, const std::vector<Buffer>& params);

// Structural equality of expressions (Vars by identity).
bool equal(const Expr& a, const Expr& b);

}  // namespace kiln::tir
