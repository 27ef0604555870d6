// The lowering of each operator-table row (op_registry.h).
#include "lower/op_registry.h"

#include "support/diagnostics.h"

namespace kiln::lower {

// Rows of the import family (Constant) become constants in import/ and
// never reach lowering.
void lower_import_only(OpContext& ctx) {
  internal_error << ctx.node().describe() << ": reached lowering; the import should have consumed it";
}

// QOperator rows (QLinearConv, ...) are rewritten by the quantize graph pass.
void lower_rewritten(OpContext& ctx) {
  internal_error << ctx.node().describe() << ": reached lowering; the quantize graph pass should have rewritten it";
}

OpLowering op_lowering(graph::Op op) {
  static const OpLowering lowerings[] = {
#define KILN_OP(id, name, family, lowering, ...) lowering,
#include "graph/op_table.def"
#undef KILN_OP
  };
  size_t i = (size_t)op;
  return i < sizeof(lowerings) / sizeof(lowerings[0]) ? lowerings[i] : nullptr;
}

}  // namespace kiln::lower
