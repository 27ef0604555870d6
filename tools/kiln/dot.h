// Graphviz pictures of a bundle's graph (kiln inspect --dot, --svg).
#ifndef KILN_TOOLS_KILN_DOT_H_
#define KILN_TOOLS_KILN_DOT_H_

#include <string>
#include <vector>

#include "contents.h"

namespace kiln_tool {

// The graph in the DOT language: one box per graph node, a cluster per
// dispatch that implements several nodes (a fused kernel), the model's
// inputs and outputs as ellipses, edges labelled with the tensors' dtype
// and shape (dashed "fused" edges for values that live only inside a
// kernel). With `dispatch_ms` (each dispatch's time; empty: none) nodes and
// clusters are coloured by their kernels' time and labelled with it, and the
// graph's label says where it was measured (`measured_on`).
std::string DotGraph(const ModelContents& c, const std::vector<double>& dispatch_ms,
                     const std::string& measured_on);

// Pipes `dot_text` through Graphviz's `dot -Tsvg` (found on PATH) to
// stdout. kExitOk, or Fail() when dot is not installed or fails.
int WriteSvg(const std::string& dot_text);

}  // namespace kiln_tool

#endif  // KILN_TOOLS_KILN_DOT_H_
