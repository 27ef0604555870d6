#include "lower/lower_graph.h"

#include <algorithm>
#include <set>

#include "lower/fuse.h"
#include "lower/op_registry.h"
#include "lower/schedules_gpu.h"
#include "te/lower.h"
#include "tir/simplify.h"
#include "support/diagnostics.h"

namespace kiln {
namespace {

KernelDef copy_kernel(graph::Graph& g, int from, int to, int kernel_id, bool gpu) {
  KernelDef k;
  k.name = "k" + std::to_string(kernel_id) + "_copy_output";
  const graph::Value& v = g.values[to];
  // A string table is copied whole, bytes area included.
  auto src = tir::make_buffer(g.values[from].name, graph::dtype_to_tir(v.dtype), v.storage_elements(), 0);
  auto dst = tir::make_buffer(v.name, graph::dtype_to_tir(v.dtype), v.storage_elements(), 1);
  k.params = {src, dst};
  k.param_values = {from, to};
  k.access = {Access::Read, Access::Write};
  // Run-time dimensions: the run's element count (a tensor sized per run has no useful largest).
  tir::Expr count = tir::Expr(v.storage_elements());
  if (v.is_dynamic() && v.dtype != graph::DType::String) {
    count = tir::Expr(1);
    for (const tir::Expr& d : v.dims) count = count * d;
    count = tir::simplify(count);
  }
  te::Tensor in = te::placeholder(src->name, {count}, src->dtype);
  te::Stage stage(te::compute("copy", {count}, [in](const te::Indices& i) { return in(i); }));
  if (gpu) lower::default_gpu_schedule(stage);
  else te::default_cpu_schedule(stage);
  k.body = te::lower_stage(stage, dst, [&](const te::TensorNode* n) { return n == in.get() ? src : nullptr; });
  if (g.values[to].producer >= 0) k.source_nodes = {g.values[to].producer};
  return k;
}

}  // namespace

// When a node of a run-time If's branch runs: the product over its guards of
// the flag's data symbol (the kiln.Condition's count, 0 or 1), or 1 minus it;
// undefined for a node that always runs.
static tir::Expr guard_predicate(const graph::Graph& g, const graph::Node& n) {
  tir::Expr p;
  for (auto& [flag, taken] : n.guards) {
    int cond = g.values[(size_t)flag].producer;
    internal_assert(cond >= 0 && g.nodes[(size_t)cond].is(graph::Op::KilnCondition)) << n.describe() << ": a guard is no condition";
    int source = g.nodes[(size_t)cond].outputs.back();
    tir::Expr c;
    for (auto& s : g.symbols)
      if (s.source_value == source) c = s.var;
    internal_assert(c.defined()) << n.describe() << ": its condition has no symbol";
    tir::Expr term = taken ? c : tir::Expr(1) - c;
    p = p.defined() ? p * term : term;
  }
  return p;
}

LoweredProgram lower_graph(graph::Graph& g, const VectorInfo& vector, bool gpu, bool gpu_shared_memory,
                           const ProgressFn& progress, tune::Tuning* tuning) {
  LoweredProgram p;
  p.storage_root.resize(g.values.size());
  for (size_t i = 0; i < g.values.size(); i++) p.storage_root[i] = (int)i;
  lower::LoweringState state;
  state.fused = choose_fused_values(g);
  state.vector = vector;
  state.gpu = gpu;
  state.gpu_shared_memory = gpu_shared_memory;
  state.tuning = tuning;  // the schedules' knobs (CPU and GPU)

  std::vector<size_t> first_kernel(g.nodes.size() + 1);  // node ni's kernels: [first_kernel[ni], first_kernel[ni + 1])
  for (size_t ni = 0; ni < g.nodes.size(); ni++) {
    first_kernel[ni] = p.kernels.size();
    report_progress(progress, "lowering", ni, g.nodes.size(), "nodes");
    const graph::Node& n = g.nodes[ni];
    if (n.traits().shape_only() && !n.inputs.empty() && n.inputs[0] >= 0 && g.values[n.inputs[0]].is_constant()) {
      g.values[n.outputs.at(0)].data = g.values[n.inputs[0]].data;  // a constant reshaped is a constant
      continue;
    }
    lower::OpLowering lowering = lower::op_lowering(n.traits().op);
    if (!lowering) {
      user_error << n.describe() << ": operator '" << n.op << "' (opset " << g.opset
                 << ") is not supported by kilnc yet";
    }
    if (!n.traits().stored_bits() && !n.traits().shape_only()) {
      for (int v : n.inputs) {
        internal_assert(v < 0 || (g.values[v].dtype != graph::DType::BF16 && !graph::is_narrow_float(g.values[v].dtype)))
            << n.describe() << ": a " << graph::dtype_name(g.values[v].dtype)
            << " operand reached lowering (graph pass 'bfloat16' widens them)";
      }
    }
    lower::OpContext ctx(g, (int)ni, (int)p.kernels.size(), &state);
    try {
      lowering(ctx);
    } catch (const DynamicShapeError& e) {
      bool input_ranges = false;
      for (auto& s : g.symbols) input_ranges |= s.source_value < 0;
      user_error << n.describe() << ": " << e.what() << ", and kilnc cannot compile " << n.op
                 << " for run-time dimensions yet; "
                 << (input_ranges ? "give the model's inputs static shapes (--input-shape NAME=D0,D1,... with no LO..HI "
                                    "range)"
                                  : "make the inputs that decide the sizes computed at run time constants "
                                    "(--freeze-input NAME=FILE.pb)");
    }
    for (size_t i = p.storage_root.size(); i < g.values.size(); i++) p.storage_root.push_back((int)i);  // new constants
    for (auto& [out, in] : ctx.aliases) p.storage_root[out] = p.storage_root[in];
    tir::Expr predicate = guard_predicate(g, n);
    for (auto& k : ctx.kernels) {
      k.predicate = predicate;
      p.kernels.push_back(std::move(k));
    }
  }

  first_kernel[g.nodes.size()] = p.kernels.size();

  // Model outputs need storage of their own (see the header). An output that
  // nodes also read is copied right after its producer's kernels, before its
  // readers (they read its own storage); the others' copies run last.
  std::set<int> graph_inputs(g.inputs.begin(), g.inputs.end());
  std::vector<std::pair<size_t, KernelDef>> copies;  // (position among the nodes' kernels, copy)
  std::set<int> claimed;
  for (int o : g.outputs) {
    int root = p.storage_root[o];
    bool own = root == o && !g.values[o].is_constant() && !graph_inputs.count(o) && !claimed.count(o);
    bool shareable = root != o && !g.values[root].is_constant() && !graph_inputs.count(root) && !claimed.count(root);
    if (std::count(g.outputs.begin(), g.outputs.end(), root) > 0 && root != o) shareable = false;
    if (own || shareable) {
      claimed.insert(root);
      continue;
    }
    if (g.values[o].is_constant()) {  // a constant output: copy from a constant twin
      graph::Value twin = g.values[o];
      twin.name = g.unique_name(twin.name + ".const");
      twin.producer = -1;
      root = g.add_value(std::move(twin));
      p.storage_root.push_back(root);
      g.values[o].data = nullptr;
    }
    size_t at = first_kernel[g.nodes.size()];
    int producer = g.values[o].producer;
    bool read = std::any_of(g.nodes.begin(), g.nodes.end(), [&](const graph::Node& n) {
      return std::count(n.inputs.begin(), n.inputs.end(), o) > 0;
    });
    if (read && producer >= 0) at = first_kernel[(size_t)producer + 1];
    copies.emplace_back(at, copy_kernel(g, root, o, (int)(p.kernels.size() + copies.size()), gpu));
    p.storage_root[o] = o;
    claimed.insert(o);
  }
  if (!copies.empty()) {
    std::stable_sort(copies.begin(), copies.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    std::vector<KernelDef> kernels;
    kernels.reserve(p.kernels.size() + copies.size());
    size_t c = 0;
    for (size_t i = 0; i <= p.kernels.size(); i++) {
      for (; c < copies.size() && copies[c].first == i; c++) kernels.push_back(std::move(copies[c].second));
      if (i < p.kernels.size()) kernels.push_back(std::move(p.kernels[i]));
    }
    p.kernels = std::move(kernels);
  }
  p.shared_memory_dependent_nodes = state.shared_memory_dependent.size();

  return p;
}

}  // namespace kiln
