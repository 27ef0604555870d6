// The operator library's registry: the lowering function of each row of the
// operator table (graph/op_table.def). There is no other list: an operator
// is supported exactly when it has a row.
#pragma once

#include "graph/op_table.h"
#include "lower/op_lowering.h"

namespace kiln::lower {

using OpLowering = void (*)(OpContext&);

// The lowering of `op`; nullptr for graph::Op::Unknown.
OpLowering op_lowering(graph::Op op);

}  // namespace kiln::lower
