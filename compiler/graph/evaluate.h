// Runs a graph on this machine with the real compiler: lower_graph, the TIR
// simplifier, plan_memory, LLVM code generation for the host, the ELF
// linker, dlopen (from a temporary file) and a local arena. The constant
// folder evaluates constant subgraphs with it; tests use it to compare a
// graph before and after a rewrite.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

// Evaluates `g` (copied; not modified) with inputs[i] the bytes of
// g.inputs[i]; returns the bytes of each g.outputs[i]. Throws UserError /
// InternalError like compilation does.
std::vector<std::vector<uint8_t>> evaluate_graph(const Graph& g, const std::vector<std::vector<uint8_t>>& inputs);

}  // namespace kiln::graph
