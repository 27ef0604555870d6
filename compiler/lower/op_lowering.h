// The operator library's entry points: one lowering function per ONNX
// operator, each turning one graph node into kernels (or into an alias of its
// input, for operators that only reinterpret a shape).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "lower/compute.h"
#include "lower/kernel.h"

namespace kiln::lower {

// What an operator lowering sees and produces.
class OpContext {
 public:
  OpContext(graph::Graph& g, int node_index, int first_kernel_id)
      : graph(g), node_index(node_index), next_kernel_id_(first_kernel_id) {}

  graph::Graph& graph;                       // may gain constants (e.g. folded BN scales)
  int node_index;                            // the node being lowered
  std::vector<KernelDef> kernels;            // produced kernels, in dispatch order
  std::vector<std::pair<int, int>> aliases;  // (output value, input value) sharing storage

  const graph::Node& node() const { return graph.nodes[node_index]; }
  const graph::Value& value(int v) const { return graph.values[v]; }
  // Input i's value index; a missing required input is a user error.
  int input(size_t i) const;
  bool has_input(size_t i) const;
  int output(size_t i) const;
  const graph::Shape& in_shape(size_t i) const { return value(input(i)).shape; }
  const graph::Shape& out_shape(size_t i) const { return value(output(i)).shape; }

  // Starts a kernel; params are added with param().
  KernelDef& new_kernel(const std::string& what);
  tir::Buffer param(KernelDef& k, int value, Access access);
  // Requires all float32 inputs/outputs (the only type some ops support so far).
  void require_float32() const;

 private:
  int next_kernel_id_;
};

using OpLowering = std::function<void(OpContext&)>;

// The registry of supported ONNX operators.
const std::map<std::string, OpLowering>& op_registry();

// Registration functions, one per operator family (lower/ops_*.cpp).
void register_conv_ops(std::map<std::string, OpLowering>& r);
void register_pool_ops(std::map<std::string, OpLowering>& r);
void register_elementwise_ops(std::map<std::string, OpLowering>& r);
void register_matmul_ops(std::map<std::string, OpLowering>& r);
void register_shape_ops(std::map<std::string, OpLowering>& r);
void register_softmax_ops(std::map<std::string, OpLowering>& r);

// Helpers shared by the families.
std::vector<int64_t> spatial_pads(const OpContext& ctx, const graph::Shape& in, const graph::Shape& out,
                                  const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                                  const std::vector<int64_t>& dilations);
int64_t normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank);

}  // namespace kiln::lower
