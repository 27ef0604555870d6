// The run-time dimensions of a bundle (docs/dynamic-shapes.md): every
// integer expression over the shape symbols the runtime evaluates (tensor
// dimensions, workgroup counts, constraints), encoded for its stack machine
// (schema/bundle.fbs, ShapeExpr) and deduplicated, so that tensors sharing
// a dimension share one expression.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tir/ir.h"

namespace kiln {

// One step of a shape expression: kiln.fb.ShapeOp and its operand.
struct ShapeStep {
  uint8_t op;       // kiln.fb.ShapeOp
  int64_t operand;  // Const: the value; Symbol: its index; else 0
};

class ShapeProgram {
 public:
  // The index of expression `e` (Index or Bool, over shape symbols and
  // constants only), adding it if new. Expressions beyond the runtime's
  // limits (256 steps, a stack of 32) are an internal error.
  uint32_t add(const tir::Expr& e);
  // Every expression, by index.
  const std::vector<std::vector<ShapeStep>>& exprs() const { return exprs_; }

 private:
  std::map<std::string, uint32_t> index_;      // printed form -> index
  std::vector<std::vector<ShapeStep>> exprs_;  // by index
};

}  // namespace kiln
