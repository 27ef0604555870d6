// Copying a nested graph (an If branch, a Loop, Scan or SequenceMap body)
// into the graph around it.
//
// The import dissolves control flow whose structure is a compile-time fact:
// an If whose condition folds (inline_if.h), a Loop with a constant trip
// count, a Scan over a static axis, a SequenceMap over a sequence of known
// length (unroll_loops.h, static_sequences.h). Each copies the body once per
// use: its values renamed to fresh names (a body's values are local to it),
// its inputs bound to the values the caller names, its reads of the
// enclosing graph (outer-scope references) kept.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

namespace kiln {

class SubgraphInliner {
 public:
  // `g`: the graph that receives the copies (and the bodies' initializers).
  explicit SubgraphInliner(onnx::GraphProto& g);

  // A name used nowhere in the model (subgraphs included): `base`, or `base_K`.
  std::string fresh(const std::string& base);
  // Whether `name` is used anywhere in the model (or was given out by fresh).
  bool taken(const std::string& name) const { return taken_.count(name) != 0; }
  // Marks `name` used.
  void take(const std::string& name) { taken_.insert(name); }

  // Appends `body`'s nodes to `out`, its values renamed under `prefix` and
  // each node given a fresh name; body input k reads `bound[k]` (inputs past
  // `bound`'s end keep fresh names: the caller defines them). Returns the
  // names of the body's outputs in the copy.
  std::vector<std::string> inline_graph(const onnx::GraphProto& body, const std::vector<std::string>& bound,
                                        const std::string& prefix, std::vector<onnx::NodeProto>& out);

 private:
  onnx::GraphProto& g_;
  std::set<std::string> taken_;       // names in use in the model, subgraphs included
  std::map<std::string, int> next_;  // base -> the next suffix to try (fresh stays linear)
};

// The nodes of `g` and of every graph nested in it.
int64_t count_nodes(const onnx::GraphProto& g);

// At most this many nodes are copied per loop, and a graph that unrolling
// would grow past kMaxGraphNodes is left alone (kilnc names the node).
constexpr int64_t kMaxUnrolledNodes = 1 << 16;
constexpr int64_t kMaxGraphNodes = 1 << 18;

// Whether `copies` copies of `body` may join graph `g` (holding `pending`
// nodes not in it yet): overflow-safe, both limits above.
bool may_unroll(const onnx::GraphProto& g, size_t pending, int64_t copies, const onnx::GraphProto& body);

// The constants of `g` by name: its initializers and its Constant nodes'
// `value`s. With `inputs_override`, an initializer that is also a graph
// input is not one (the input may override it; ONNX's IR 3 rule).
std::map<std::string, const onnx::TensorProto*> graph_constants(const onnx::GraphProto& g, bool inputs_override);

// A node `op` named `name` reading `inputs`, writing `outputs`.
onnx::NodeProto make_node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs);

// An integer tensor `name` of `type` (INT64, INT32 or BOOL) holding
// `values`: a scalar when `scalar` (one value), else 1-D.
onnx::TensorProto int_tensor(const std::string& name, int type, const std::vector<int64_t>& values, bool scalar);

// Adds an INT attribute `name` = v to `n`.
void set_int_attribute(onnx::NodeProto& n, const char* name, int64_t v);

// The names node `n` reads: its inputs, and, with `subgraphs`, every input
// of every node of the graphs nested in it (their own values too: a
// superset of what it reads from outside), appended to *out.
void node_reads(const onnx::NodeProto& n, bool subgraphs, std::vector<std::string>* out);

// The first graph attribute of `n` named `name`; null when it has none.
const onnx::GraphProto* graph_attribute(const onnx::NodeProto& n, const char* name);

// Whether `domain` is ONNX's default one ("" or "ai.onnx").
inline bool is_default_domain(const std::string& domain) { return domain.empty() || domain == "ai.onnx"; }

// How a user error names node `n`: "OP node 'NAME'".
inline std::string describe_node(const onnx::NodeProto& n) { return n.op_type() + " node '" + n.name() + "'"; }

// The version of `domain` (the default one for "" or "ai.onnx") that
// `model` imports; 0 when it imports none.
int64_t imported_opset(const onnx::ModelProto& model, const std::string& domain = "");

}  // namespace kiln
