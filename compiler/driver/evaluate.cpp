// Host evaluation of a graph through the real compilation steps (evaluate.h).
#include "driver/evaluate.h"

#include <cstdlib>
#include <cstring>
#include <memory>

#include "codegen/host_library.h"
#include "driver/pipeline.h"
#include "graph/passes.h"
#include "support/diagnostics.h"

namespace kiln {

std::vector<std::vector<uint8_t>> evaluate_graph(const graph::Graph& graph_in,
                                                 const std::vector<std::vector<uint8_t>>& inputs) {
  graph::Graph g = graph_in;
  graph::recompute_producers(g);
  internal_assert(inputs.size() == g.inputs.size()) << "evaluate_graph: " << inputs.size() << " inputs for "
                                                    << g.inputs.size();
  CompileOptions options;  // the host, no dumps, no report
  options.target = TargetSpec::host();
  CompiledGraph c = compile_graph(g, options);
  const LoweredProgram& program = c.program;
  const uint64_t align = c.plan.alignment;
  std::unique_ptr<uint8_t, decltype(&free)> arena(
      (uint8_t*)aligned_alloc(align, (c.plan.arena_bytes + align) / align * align), &free);
  internal_assert(arena) << "evaluate_graph: out of memory (" << c.plan.arena_bytes << " bytes)";
  memset(arena.get(), 0, c.plan.arena_bytes);

  auto address = [&](int v) -> uint8_t* {
    int root = program.storage_root[v];
    if (g.values[root].is_constant()) return g.values[root].data->data();
    internal_assert(c.plan.offset[v] >= 0) << "evaluate_graph: value " << g.values[v].name << " has no storage";
    return arena.get() + c.plan.offset[v];
  };
  for (size_t i = 0; i < g.inputs.size(); i++) {
    int v = g.inputs[i];
    internal_assert(inputs[i].size() == g.values[v].byte_size()) << "evaluate_graph: input " << i << " size";
    if (g.values[v].is_constant()) continue;
    memcpy(address(v), inputs[i].data(), inputs[i].size());
  }

  if (!program.kernels.empty()) {
    HostLibrary lib(c.library);
    for (const KernelDef& k : program.kernels) {
      std::vector<void*> bindings;
      for (int v : k.param_values) bindings.push_back(address(v));
      int32_t rc = HostLibrary::run(lib.kernel(k.name), k.workgroup_count, bindings);
      internal_assert(rc == 0) << "evaluate_graph: kernel " << k.name << " returned " << rc;
    }
  }

  std::vector<std::vector<uint8_t>> outputs;
  for (int o : g.outputs) {
    const uint8_t* p = address(o);
    outputs.emplace_back(p, p + g.values[o].byte_size());
  }
  return outputs;
}

}  // namespace kiln
