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

  // Appends `body`'s nodes to `out`, its values renamed under `prefix` and
  // each node given a fresh name; body input k reads `bound[k]` (inputs past
  // `bound`'s end keep fresh names: the caller defines them). Returns the
  // names of the body's outputs in the copy.
  std::vector<std::string> inline_graph(const onnx::GraphProto& body, const std::vector<std::string>& bound,
                                        const std::string& prefix, std::vector<onnx::NodeProto>& out);

 private:
  onnx::GraphProto& g_;
  std::set<std::string> taken_;  // names in use in the model, subgraphs included
};

// The constants of `g` by name: its initializers and its Constant nodes'
// `value`s. With `inputs_override`, an initializer that is also a graph
// input is not one (the input may override it; ONNX's IR 3 rule).
std::map<std::string, const onnx::TensorProto*> graph_constants(const onnx::GraphProto& g, bool inputs_override);

// Adds an INT attribute `name` = v to `n`.
void set_int_attribute(onnx::NodeProto& n, const char* name, int64_t v);

// The first graph attribute of `n` named `name`; null when it has none.
const onnx::GraphProto* graph_attribute(const onnx::NodeProto& n, const char* name);

}  // namespace kiln
