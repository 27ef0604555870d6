// Host evaluation of a graph through the real compilation path (evaluate.h).
#include "graph/evaluate.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>

#include "codegen/codegen_llvm.h"
#include "codegen/link_elf.h"
#include "codegen/target.h"
#include "graph/passes.h"
#include "kiln_kernel_abi.h"
#include "lower/lower_graph.h"
#include "plan/memory_plan.h"
#include "support/diagnostics.h"
#include "tir/simplify.h"
#include "tir/verify.h"

namespace kiln::graph {

namespace {

// A dlopen'ed kernel library, closed on destruction.
struct LoadedLibrary {
  void* handle = nullptr;
  const kiln_kernel_library_t* table = nullptr;
  explicit LoadedLibrary(const std::string& so) {
    const char* tmp = getenv("TMPDIR");
    std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/kilnc-fold-XXXXXX";
    std::vector<char> buf(path.begin(), path.end());
    buf.push_back('\0');
    int fd = mkstemp(buf.data());
    user_assert(fd >= 0) << "constant folding: cannot create a temporary file in " << path;
    bool ok = write(fd, so.data(), so.size()) == (ssize_t)so.size();
    close(fd);
    if (ok) handle = dlopen(buf.data(), RTLD_NOW | RTLD_LOCAL);
    unlink(buf.data());
    internal_assert(ok && handle) << "constant folding: cannot load the kernels: " << (ok ? dlerror() : "write failed");
    auto query = (kiln_kernel_library_query_fn_t)dlsym(handle, KILN_KERNEL_LIBRARY_QUERY_SYMBOL);
    internal_assert(query) << "constant folding: no kernel table";
    table = query(KILN_KERNEL_ABI_VERSION);
    internal_assert(table) << "constant folding: kernel ABI mismatch";
  }
  ~LoadedLibrary() {
    if (handle) dlclose(handle);
  }
};

}  // namespace

std::vector<std::vector<uint8_t>> evaluate_graph(const Graph& graph_in, const std::vector<std::vector<uint8_t>>& inputs) {
  Graph g = graph_in;
  recompute_producers(g);
  internal_assert(inputs.size() == g.inputs.size()) << "evaluate_graph: " << inputs.size() << " inputs for "
                                                    << g.inputs.size();
  LoweredProgram program = lower_graph(g);
  for (auto& k : program.kernels) {
    k.body = tir::simplify(k.body);
    tir::verify_kernel(k.name, k.body, k.params);
    k.workgroup_count = workgroup_count_of(k.body);
  }
  const uint64_t align = 64;
  MemoryPlan plan = plan_memory(g, program, align);
  std::unique_ptr<uint8_t, decltype(&free)> arena(
      (uint8_t*)aligned_alloc(align, (plan.arena_bytes + align) / align * align), &free);
  internal_assert(arena) << "evaluate_graph: out of memory (" << plan.arena_bytes << " bytes)";
  memset(arena.get(), 0, plan.arena_bytes);

  auto address = [&](int v) -> uint8_t* {
    int root = program.storage_root[v];
    if (g.values[root].is_constant()) return g.values[root].data->data();
    internal_assert(plan.offset[v] >= 0) << "evaluate_graph: value " << g.values[v].name << " has no storage";
    return arena.get() + plan.offset[v];
  };
  for (size_t i = 0; i < g.inputs.size(); i++) {
    int v = g.inputs[i];
    internal_assert(inputs[i].size() == g.values[v].byte_size()) << "evaluate_graph: input " << i << " size";
    if (g.values[v].is_constant()) continue;
    memcpy(address(v), inputs[i].data(), inputs[i].size());
  }

  if (!program.kernels.empty()) {
    TargetSpec host = TargetSpec::host();
    std::string so = link_shared_object(compile_kernels(program.kernels, host), host);
    LoadedLibrary lib(so);
    std::map<std::string, kiln_kernel_fn_t> fns;
    for (uint32_t i = 0; i < lib.table->kernel_count; i++) fns[lib.table->kernel_names[i]] = lib.table->kernels[i];
    for (const KernelDef& k : program.kernels) {
      auto f = fns.find(k.name);
      internal_assert(f != fns.end()) << "evaluate_graph: kernel " << k.name << " missing";
      std::vector<void*> bindings;
      for (int v : k.param_values) bindings.push_back(address(v));
      kiln_kernel_dispatch_state_t d = {};
      for (int a = 0; a < 3; a++) d.workgroup_count[a] = k.workgroup_count[a];
      d.binding_count = (uint32_t)bindings.size();
      d.bindings = bindings.data();
      for (uint32_t z = 0; z < k.workgroup_count[2]; z++)
        for (uint32_t y = 0; y < k.workgroup_count[1]; y++)
          for (uint32_t x = 0; x < k.workgroup_count[0]; x++) {
            kiln_kernel_workgroup_state_t w = {{x, y, z}, 0};
            int32_t rc = f->second(&d, &w);
            internal_assert(rc == 0) << "evaluate_graph: kernel " << k.name << " returned " << rc;
          }
    }
  }

  std::vector<std::vector<uint8_t>> outputs;
  for (int o : g.outputs) {
    const uint8_t* p = address(o);
    outputs.emplace_back(p, p + g.values[o].byte_size());
  }
  return outputs;
}

}  // namespace kiln::graph
