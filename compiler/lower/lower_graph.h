// Graph → kernels: lowers every node through the operator library.
//
// The result is the list of kernels in execution order (one dispatch each)
// and, for every value, the root value whose storage it uses: operators that
// only reinterpret a shape alias their input; on a constant input their
// output is that constant (the constant-fold graph pass normally did this
// already). Model outputs always get storage of their
// own: a copy kernel is added where an output would alias a constant, a model
// input or another output.
#pragma once

#include <vector>

#include "support/progress.h"
#include "target/target.h"
#include "graph/graph.h"
#include "lower/kernel.h"
#include "tune/space.h"

namespace kiln {

struct LoweredProgram {
  std::vector<KernelDef> kernels;  // in dispatch order
  std::vector<int> storage_root;   // per value index: the value whose storage it shares
  // GPU: graph nodes whose kernels depend on whether shared memory is used
  // (0: the bundle is the same with and without it).
  size_t shared_memory_dependent_nodes = 0;
};

// `vector` sizes the CPU schedules' register tiles (default: a 16-register
// machine); `gpu` gives the kernels GPU schedules instead, which may use
// workgroup shared memory when `gpu_shared_memory`. `progress` hears of
// each node ("lowering", i, n, "nodes"). `tuning` (CPU only): the CPU
// schedules record their workloads' spaces in it and compile its points
// (tune/space.h); null: their hand-written choices.
LoweredProgram lower_graph(graph::Graph& g, const VectorInfo& vector = {}, bool gpu = false, bool gpu_shared_memory = false,
                           const ProgressFn& progress = {}, tune::Tuning* tuning = nullptr);

}  // namespace kiln
