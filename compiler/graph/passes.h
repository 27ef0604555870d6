// The graph optimizer: an ordered list of graph-to-graph passes that run
// between import and lowering (issue 4). See docs/graph-passes.md.
//
// Each pass lives in its own file (graph/pass_*.cpp), rewrites the graph in
// place and returns whether it changed anything. run_graph_passes() runs the
// list in order, prints the graph after a pass that changed it when asked
// (--dump-graph-after=PASS or all) and records per-pass statistics for
// --report.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "support/progress.h"
#include "target/target.h"

namespace kiln::tune {
struct Tuning;
class Knobs;
}  // namespace kiln::tune

namespace kiln::graph {

// Runs a graph: inputs[i] holds the bytes of g.inputs[i]; returns the bytes
// of each g.outputs[i]. Throws UserError / InternalError like compilation.
using GraphEvaluator =
    std::function<std::vector<std::vector<uint8_t>>(const Graph& g, const std::vector<std::vector<uint8_t>>& inputs)>;

// What the passes may read besides the graph; the driver sets it up.
struct PassEnvironment {
  VectorInfo vector;            // layout: the target's vector unit (block widths, matmul panels)
  bool blocked_layout = false;  // layout: move convolutions to NCHWc (CPU targets; false keeps NCHW)
  // fuse-attention: kiln.Attention has a kernel worth running here (CPU
  // targets; Vulkan with --vulkan-shared-memory=on, as its kernel shares
  // workgroup memory); elsewhere attention stays the plain operators.
  bool attention_kernel = false;
  // constant-fold and lookup-table: compile and run subgraphs with the compiler's
  // own steps (driver/evaluate.h; the graph layer never generates code
  // itself). Unset: only Shape/Size and alias ops on constants fold.
  GraphEvaluator evaluate;
  // winograd: the compilation's tuning context (tune/space.h), where the
  // choice of algorithm is a knob of the conv's workload; null: hand-written.
  tune::Tuning* tuning = nullptr;
};

// One pass's environment, and where it reports details.
struct PassContext {
  PassEnvironment env;         // set by the runner (or a test)
  int64_t folded_values = 0;   // constant-fold: values turned into constants
  int64_t folded_bytes = 0;    // constant-fold: bytes of those constants
  std::string detail;          // optional one-line note for --report (set by the pass)
};

struct GraphPass {
  const char* name;                        // as accepted by --dump-graph-after
  bool (*run)(Graph&, PassContext&);       // returns true when the graph changed
};

// The passes, in the order they run.
const std::vector<GraphPass>& graph_passes();

// The passes (one per file).
bool pass_bfloat16(Graph& g, PassContext& ctx);        // pass_bfloat16.cpp
bool pass_identity(Graph& g, PassContext& ctx);        // pass_identity.cpp
bool pass_quantize(Graph& g, PassContext& ctx);        // pass_quantize.cpp
bool pass_constant_fold(Graph& g, PassContext& ctx);   // pass_constant_fold.cpp
bool pass_reshape_chain(Graph& g, PassContext& ctx);   // pass_reshape_chain.cpp
bool pass_fold_batchnorm(Graph& g, PassContext& ctx);  // pass_fold_batchnorm.cpp
bool pass_fold_affine(Graph& g, PassContext& ctx);     // pass_fold_affine.cpp
bool pass_fuse_layer_norm(Graph& g, PassContext& ctx); // pass_fuse_layer_norm.cpp
bool pass_fuse_attention(Graph& g, PassContext& ctx);  // pass_fuse_attention.cpp
bool pass_conv_transpose(Graph& g, PassContext& ctx);  // pass_conv_transpose.cpp
bool pass_layout(Graph& g, PassContext& ctx);          // pass_layout.cpp
bool pass_winograd(Graph& g, PassContext& ctx);        // pass_winograd.cpp
// A 3x3, stride 1, pad 1, ungrouped float32 conv in the blocked layout with
// static shapes, not yet converted: one the winograd pass may compute by
// Winograd (pass_winograd.cpp; lowering asks it too, for the knobs' space).
bool winograd_candidate(const Graph& g, const Node& n);
// The knobs of a candidate's workload: the key its direct kernel's schedule
// gives the conv (lower/schedules_cpu.cpp: "conv2d_blocked", stride and
// dilation 1), for output `out` [N, M/m, OH, OW, m] and input channels in
// `in_blocks` blocks of `in_lanes`. The pass and lowering both take it here.
tune::Knobs winograd_workload(tune::Tuning* tuning, const Shape& out, int64_t in_blocks, int64_t in_lanes);
// The register tile of a Winograd F(r x r, 3x3) kernel's GEMMs, for a conv
// whose output rows hold `row_tiles` r x r tiles and `channel_blocks` blocks
// of output channels: knobs "tiles_r<r>" and "blocks_r<r>" of the conv's
// workload, each mattering only when its "winograd" knob is r. The pass
// declares them for every r it offers, so that every compile sees one space;
// lowering (lower/ops_winograd.cpp) reads them.
struct WinogradRegisterTile {
  int64_t tiles = 1;   // tiles of a row accumulated at once
  int64_t blocks = 1;  // output channel blocks accumulated at once
};
WinogradRegisterTile winograd_register_tile(tune::Knobs& knobs, int64_t r, int64_t row_tiles, int64_t channel_blocks,
                                            int registers);
bool pass_lookup_table(Graph& g, PassContext& ctx);    // pass_lookup_table.cpp
bool pass_cse(Graph& g, PassContext& ctx);             // pass_cse.cpp
bool pass_dead_code(Graph& g, PassContext& ctx);       // pass_dead_code.cpp

struct PassOptions {
  std::set<std::string> dump_after;    // pass names, or "all"
  std::ostream* dump_stream = nullptr; // where dumps go (stderr if null)
  std::set<std::string> disabled;      // passes to skip (tests, debugging)
  PassEnvironment env;                 // handed to every pass
  ProgressFn progress;                 // told of each pass as it starts (kilnc's progress line)
};

struct PassStats {
  std::string name;
  size_t nodes_before = 0, nodes_after = 0;
  double ms = 0;
  bool changed = false;
  std::string detail;
};

// Runs every pass of graph_passes() in order; returns one entry per pass.
std::vector<PassStats> run_graph_passes(Graph& g, const PassOptions& options);

// Helpers shared by the passes (graph/pass_util.cpp).
// How many node inputs read each value (model outputs not counted).
std::vector<int> use_counts(const Graph& g);
bool is_model_output(const Graph& g, int v);
bool is_model_input(const Graph& g, int v);
// The single node reading value v (one use, not a model output), or -1.
int only_reader(const Graph& g, const std::vector<int>& uses, int v);
// Whether input `slot` of n is a constant scalar (one element); its value in *out.
bool scalar_input(const Graph& g, const Node& n, size_t slot, double* out);
// Every node input reading `from` reads `to` instead.
void replace_uses(Graph& g, int from, int to);
// Removes the nodes whose flag is set and recomputes every value's producer.
void remove_nodes(Graph& g, const std::vector<bool>& remove);
// Recomputes Value::producer from the node list.
void recompute_producers(Graph& g);
// A constant's elements as doubles (int and float dtypes).
std::vector<double> constant_as_doubles(const Value& v);
// Bytes of a float32, float64, int32, int8 or uint8 tensor holding `x`
// (integers: exact values in range, the caller's to check).
std::vector<uint8_t> doubles_to_bytes(const std::vector<double>& x, DType dtype);
// Rewrites Conv `conv` (constant float weights, optional constant bias) so
// that its output becomes out[c] * scale[c] + shift[c] per output channel:
// W' = W * scale[oc], b' = b * scale + shift, computed in double and stored
// as new constants (`suffix` names them). An empty `scale` means 1 (the
// weights are kept). Returns false, changing nothing, if the Conv does not fit.
bool fold_channel_affine_into_conv(Graph& g, Node& conv, const std::vector<double>& scale,
                                   const std::vector<double>& shift, const std::string& suffix);
// Node `producer` takes over node `consumer`'s (first) output, whose work it
// now does; `consumer` is flagged for removal.
void absorb_consumer(Graph& g, int producer, int consumer, std::vector<bool>& remove);

// The bookkeeping of a pass that rewrites node by node and removes the nodes
// it made redundant: which nodes go and how many rewrites were made.
struct NodeRemoval {
  explicit NodeRemoval(const Graph& g) : remove(g.nodes.size(), false) {}
  std::vector<bool> remove;  // per node: remove it at finish()
  int count = 0;             // rewrites made
  // Removes the flagged nodes and reports "<count> <what>" in ctx.detail;
  // returns whether the graph changed (count > 0).
  bool finish(Graph& g, PassContext& ctx, const char* what) const;
};

}  // namespace kiln::graph
