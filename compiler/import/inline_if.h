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
//
// An If whose condition stays unknown is inlined with BOTH branches by
// inline_run_time_ifs: an Identity of the condition (which the importer
// turns into a kiln.Condition node: a data symbol, 0 or 1), each branch's
// nodes guarded by that flag (true or false), and one Where per output
// choosing between the branches' results. The kernels of a guarded node are
// predicated: they run 0 workgroups when their branch is not taken
// (docs/dynamic-shapes.md, "Control flow"). Nested Ifs inherit the guards.
#pragma once

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

namespace kiln {

// What inline_run_time_ifs did, by node name (every node it made is named).
struct RunTimeIfs {
  std::map<std::string, std::vector<std::pair<std::string, bool>>> guards;  // node -> (flag value, taken when true)
  std::set<std::string> conditions;           // Identity nodes that become kiln.Condition
  std::map<std::string, std::string> merges;  // Where node -> "If node 'X' output K" (its branches must agree)
};

// Inlines every If left in the main graph (conditions known only at run
// time), one level: an If nested in a branch reaches the main graph, for
// the caller to fold shapes (its condition may become a constant) and call
// again. Adds to `out`; returns the number inlined.
int inline_run_time_ifs(onnx::ModelProto& model, RunTimeIfs* out);

struct RunTimeIfs;

// The domain of the Where that merges a run-time If's sequence outputs
// (static_sequences.h dissolves it into one Where per element).
inline const char* const kSequenceWhereDomain = "kiln.sequence";

// Inlines every If of the main graph whose condition is a bool constant (an
// initializer that is not a graph input, or a Constant node's output).
// Returns the number of If nodes replaced. With `run_time_ifs`, the nodes
// of an If that lay in a run-time If's branch inherit its guards.
int inline_constant_ifs(onnx::ModelProto& model, RunTimeIfs* run_time_ifs = nullptr);

}  // namespace kiln
