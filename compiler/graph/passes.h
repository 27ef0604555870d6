// The graph optimizer: an ordered list of graph-to-graph passes that run
// between import and lowering (issue 4). See docs/graph-passes.md.
//
// Each pass lives in its own file (graph/pass_*.cpp), rewrites the graph in
// place and returns whether it changed anything. run_graph_passes() runs the
// list in order, prints the graph after a pass that changed it when asked
// (--dump-graph-after=PASS or all) and records per-pass statistics for
// --report.
#pragma once

#include <iosfwd>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace kiln::graph {

// What a pass may read besides the graph, and where it reports details.
struct PassContext {
  int64_t folded_values = 0;   // constant-fold: values turned into constants
  int64_t folded_bytes = 0;    // constant-fold: bytes of those constants
  std::string detail;          // optional one-line note for --report (set by the pass)
  int64_t vector_lanes = 0;    // layout: the target's float32 vector lanes (0: keep NCHW)
  int vector_registers = 16;   // layout: the target's vector registers (matmul panel widths)
};

struct GraphPass {
  const char* name;                        // as accepted by --dump-graph-after
  bool (*run)(Graph&, PassContext&);       // returns true when the graph changed
};

// The passes, in the order they run.
const std::vector<GraphPass>& graph_passes();

// The passes (one per file).
bool pass_identity(Graph& g, PassContext& ctx);        // pass_identity.cpp
bool pass_constant_fold(Graph& g, PassContext& ctx);   // pass_constant_fold.cpp
bool pass_reshape_chain(Graph& g, PassContext& ctx);   // pass_reshape_chain.cpp
bool pass_fold_batchnorm(Graph& g, PassContext& ctx);  // pass_fold_batchnorm.cpp
bool pass_fold_affine(Graph& g, PassContext& ctx);     // pass_fold_affine.cpp
bool pass_layout(Graph& g, PassContext& ctx);          // pass_layout.cpp
bool pass_winograd(Graph& g, PassContext& ctx);        // pass_winograd.cpp
bool pass_cse(Graph& g, PassContext& ctx);             // pass_cse.cpp
bool pass_dead_code(Graph& g, PassContext& ctx);       // pass_dead_code.cpp

struct PassOptions {
  std::set<std::string> dump_after;   // pass names, or "all"
  std::ostream* dump_stream = nullptr; // where dumps go (stderr if null)
  std::set<std::string> disabled;     // passes to skip (tests, debugging)
  int64_t vector_lanes = 0;           // the target's float32 vector lanes (layout; 0: keep NCHW)
  int vector_registers = 16;          // the target's vector registers (layout)
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
// Every node input reading `from` reads `to` instead.
void replace_uses(Graph& g, int from, int to);
// Removes the nodes whose flag is set and recomputes every value's producer.
void remove_nodes(Graph& g, const std::vector<bool>& remove);
// Recomputes Value::producer from the node list.
void recompute_producers(Graph& g);
// A constant's elements as doubles (int and float dtypes).
std::vector<double> constant_as_doubles(const Value& v);
// Bytes of a float32 or float64 tensor holding `x`.
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

}  // namespace kiln::graph
