// An If whose condition is known at compile time is replaced by the branch
// it takes (issue 15).
//
// Exporters write shape-dependent choices as If nodes (torch.jit's scripted
// code, `if x.shape[1] > 3`); once the shape folds (fold_shapes.h) or the
// condition comes from a frozen input (kilnc --freeze-input), only one
// branch can run. Its nodes and initializers move into the enclosing graph
// under fresh names (a branch's values are local to it), the values of the
// enclosing graph it reads keep theirs (outer-scope references), and each
// output of the If becomes an Identity of the branch's output. The other
// branch is dropped. An If whose condition stays unknown is left alone
// (kilnc refuses it later, naming the node).
#pragma once

#include <onnx/onnx_pb.h>

namespace kiln {

// Inlines every If of the main graph whose condition is a bool constant (an
// initializer that is not a graph input, or a Constant node's output).
// Returns the number of If nodes replaced.
int inline_constant_ifs(onnx::ModelProto& model);

}  // namespace kiln
