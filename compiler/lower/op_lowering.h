// The operator library's entry points: one lowering function per ONNX
// operator. A lowering reads its inputs as tensor expressions (te::Tensor
// placeholders bound to graph values), describes each output as a formula
// (te::compute / te::reduce, TOPI-style), and hands it over with
// set_output(); OpContext turns every output (and every intermediate the
// lowering chose to materialize) into one scheduled kernel. Operators that
// only reinterpret a shape alias their input instead.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "target/target.h"
#include "graph/graph.h"
#include "lower/kernel.h"
#include "te/schedule.h"
#include "te/tensor.h"
#include "tune/space.h"

namespace kiln::lower {

using te::Expr;
using te::Indices;
using ScheduleFn = std::function<void(te::Stage&)>;

// A node output that is not materialized: fused into its consumer, which
// reads the formula instead of a buffer (see lower/fuse.h).
struct PendingTensor {
  te::Tensor tensor;          // the producer's formula
  std::vector<int> sources;   // graph nodes whose work it carries
};

// What lowering shares across nodes: fusion decisions, fused formulas and
// the placeholders standing for graph values (a fused formula may read the
// producer's inputs, so bindings outlive the node that made them).
struct LoweringState {
  std::set<int> fused;                               // values fused into their consumer
  std::map<int, PendingTensor> pending;              // their formulas, once lowered
  std::map<const te::TensorNode*, int> bound;        // placeholder -> graph value
  std::map<int, te::Tensor> placeholders;            // graph value -> placeholder
  std::map<const te::TensorNode*, ScheduleFn> reduction_schedules;  // per anchor reduction (CPU targets)
  std::map<const te::TensorNode*, ScheduleFn> gpu_reduction_schedules;  // per anchor reduction (GPU targets)
  VectorInfo vector;                                 // the target's SIMD unit (schedules size tiles by it)
  bool gpu = false;                                  // GPU target: default_gpu_schedule unless a GPU reduction schedule applies
  bool gpu_shared_memory = false;                    // GPU schedules may use workgroup shared memory
  std::set<int> shared_memory_dependent;             // GPU: nodes whose lowering read gpu_shared_memory
  tune::Tuning* tuning = nullptr;                    // schedules' knobs: spaces recorded, points applied (null: hand-written)
};

class OpContext {
 public:
  OpContext(graph::Graph& g, int node_index, int first_kernel_id, LoweringState* state = nullptr)
      : graph(g), node_index(node_index), next_kernel_id_(first_kernel_id), state_(state ? state : &own_state_) {}

  graph::Graph& graph;                       // may gain constants and intermediates
  int node_index;                            // the node being lowered
  std::vector<KernelDef> kernels;            // produced kernels, in dispatch order
  std::vector<std::pair<int, int>> aliases;  // (output value, input value) sharing storage

  const graph::Node& node() const { return graph.nodes[node_index]; }
  // The node's operator (several operators may share one lowering function).
  graph::Op op() const { return node().traits().op; }
  const graph::Value& value(int v) const { return graph.values[v]; }
  // Input i's value index; a missing required input is a user error.
  int input(size_t i) const;
  bool has_input(size_t i) const;
  int output(size_t i) const;
  // Copies: graph.values may grow (constants, intermediates) while a lowering runs.
  // The static shape of input / output i: a DynamicShapeError (reported
  // naming the node) when it has run-time dimensions; lowerings that take
  // run-time extents read in_dims / out_dims instead.
  graph::Shape in_shape(size_t i) const { return static_shape(input(i)); }
  graph::Shape out_shape(size_t i) const { return static_shape(output(i)); }
  // The dimensions as expressions: constants, or over shape symbols.
  te::Dims in_dims(size_t i) const { return dims_of(input(i)); }
  te::Dims out_dims(size_t i) const { return dims_of(output(i)); }
  graph::DType in_dtype(size_t i) const { return value(input(i)).dtype; }

  // Input i as a tensor expression (a placeholder bound to its value).
  te::Tensor in(size_t i);
  te::Tensor tensor_of(int value_index);
  // Output i is `t`: emits its kernel with `schedule` (default: default_cpu_schedule;
  // on GPU targets always default_gpu_schedule, see lower/schedules_gpu.h).
  void set_output(size_t i, const te::Tensor& t, const ScheduleFn& schedule = nullptr);
  // Computes `t` in a kernel of its own into a new intermediate tensor and
  // returns a placeholder reading it (for values read many times).
  te::Tensor materialize(const te::Tensor& t, const ScheduleFn& schedule = nullptr);
  // The schedule of reduction `r` wherever it anchors a kernel: as the output
  // itself, or under an elementwise epilogue (bias, activation, a fused
  // consumer), which then runs at write-back inside this schedule.
  void schedule_reduction(const te::Tensor& r, const ScheduleFn& schedule);
  // The same on GPU targets (lower/schedules_gpu.h); other GPU kernels get
  // default_gpu_schedule.
  void schedule_reduction_gpu(const te::Tensor& r, const ScheduleFn& schedule);

  // Scans (recurrences): a state is a [steps, ...] intermediate tensor; one
  // kernel runs `steps` serial iterations, and in iteration t computes, for
  // each state in order, the slice state[t] = step(t) (a formula over the
  // per-step shape that may read any state at t - 1, or an earlier state of
  // the same iteration at t). The steps and the state's extents may be
  // run-time extents (expressions over shape symbols): the trip count is
  // then read at run time.
  struct ScanState {
    te::Tensor tensor;                           // from scan_state(): reads of the whole buffer
    std::function<te::Tensor(const Expr& t)> step;  // the slice computed in iteration t
  };
  te::Tensor scan_state(const std::string& name, const te::Dims& dims, tir::Type dtype);
  void emit_scan(const Expr& steps, const std::vector<ScanState>& states);

  // A hand-written kernel (TIR built by the lowering, as NonZero's): `body`
  // gets a function binding graph values as the kernel's buffers (each
  // value once, as the next parameter).
  using BindFn = std::function<tir::Buffer(int value, Access access)>;
  void emit_tir(const std::string& what, const std::function<tir::Stmt(const BindFn&)>& body);

  // The target's SIMD unit (register tiles are sized to fit).
  const VectorInfo& vector() const { return state_->vector; }
  // Whether GPU schedules may tile through workgroup shared memory. Asking
  // records that this node's kernels depend on the answer (kilnc --report
  // counts them: the nodes --vulkan-shared-memory changes).
  bool gpu_shared_memory() const {
    if (state_->gpu) state_->shared_memory_dependent.insert(node_index);
    return state_->gpu_shared_memory;
  }
  // Whether the kernels are for a GPU (hand-written kernels pick their form).
  bool gpu() const { return state_->gpu; }
  // The compilation's tuning context for the schedules' knobs, CPU or GPU (null: hand-written choices).
  tune::Tuning* tuning() const { return state_->tuning; }

  // Requires all float32 inputs/outputs (the only type some ops support so far).
  void require_float32() const;
  void require_float() const;  // float32 or float64

 private:
  graph::Shape static_shape(int v) const;
  te::Dims dims_of(int v) const;
  int next_kernel_id_;
  LoweringState own_state_;                     // used when lowering a node on its own
  LoweringState* state_;                        // shared across the nodes of a graph
  std::vector<int> fused_sources_;              // nodes whose pending outputs this node read
  void emit_kernel(const te::Tensor& t, int out_value, const ScheduleFn& schedule);
  std::string kernel_name(const std::string& what);
};

// The lowering functions, one per name in the Lowering column of the
// operator table (graph/op_table.def), each defined in the file of its
// family (lower/ops_<family>.cpp); lower/op_registry.h maps operators to them.
#define KILN_OP(id, name, family, lowering, ...) void lowering(OpContext& ctx);
#include "graph/op_table.def"
#undef KILN_OP

// Helpers shared by the families.
// Begin and end pads of every spatial axis (2 * k entries): constants, or
// expressions of run-time extents for auto_pad SAME_* on them.
std::vector<Expr> spatial_pads(const OpContext& ctx, const te::Dims& in, const te::Dims& out,
                               const std::vector<int64_t>& kernel, const std::vector<int64_t>& strides,
                               const std::vector<int64_t>& dilations);
// The pads as constants (a DynamicShapeError where one is known only at run time).
std::vector<int64_t> static_pads(const std::vector<Expr>& pads);
int64_t normalize_axis(const OpContext& ctx, int64_t axis, int64_t rank);
// Which input dimensions a reduction reduces (ops_reduce.cpp, ops_softmax.cpp).
struct ReduceAxes {
  std::vector<bool> reduced;  // per input dim
  te::Dims rshape;            // extents of the reduced dims, in order
  bool keepdims;              // the output keeps reduced dims as extent 1
  // Axes known only at run time: every dimension d is "reduced" over
  // rshape[d] = x_d + 1 - o_d (o_d the keepdims output's: 1 or x_d), and the
  // input index is o + r (keepdims output indices).
  bool run_time = false;
};
// The input index for output index o and reduce index r.
Indices input_index(const ReduceAxes& ax, const Indices& o, const Indices& r);
// Index into an input of extents `in_dims` broadcast (numpy rules) to an
// output indexed by `out_idx`: a constant extent of 1 is broadcast; a run-time
// extent never is (the shape inference made it equal to the output's).
Indices broadcast_index(const te::Dims& in_dims, const Indices& out_idx);
// All of idx[i] inside [lo[i], hi[i]).
Expr in_range(const Indices& idx, const te::Dims& lo, const te::Dims& hi);
// A run-time index into a dimension of `extent`: negative values count from
// the end (ONNX's convention), and the result is clamped into range so a bad
// index read from data never reads outside the tensor.
Expr wrap_index(Expr i, Expr extent);
// t at idx, or `pad` where idx is outside t (indices clamped, so always safe to evaluate).
Expr padded_read(const te::Tensor& t, const Indices& idx, Expr pad);
// The integer elements of input `input`, which decide a shape and so must be
// a compile-time constant: otherwise a user error naming `what` and saying
// how to make it one.
std::vector<int64_t> const_ints(OpContext& ctx, size_t input, const char* what);
// The elements of integer input `input` as expressions: a constant's, or
// those dimension inference knows symbolically (graph::Value::sym: a shape
// computed from run-time dimensions, an --input-value input's symbols).
std::vector<Expr> int_exprs(OpContext& ctx, size_t input, const char* what);
graph::DType dtype_from_tir(tir::Type t);
// Whether two extents certainly differ: both constants and unequal, or
// expressions the simplifier tells apart (run-time extents the shape
// inference made equal never differ here).
bool dims_differ(const Expr& a, const Expr& b);
// The constant value of extent `e` (a DynamicShapeError, naming `what`,
// when it is known only at run time).
int64_t static_extent(const Expr& e, const std::string& what);
// Integer division rounding toward zero (ONNX's integer Div).
Expr trunc_divide(const Expr& a, const Expr& b);
// The TIR type an operator computes a value of `dt` in (bool as Bool; its
// storage type, graph::dtype_to_tir, is one byte).
tir::Type compute_type(graph::DType dt);
// Input `i`, a one-element tensor, as an expression of type `as`: its
// constant value, or a load of it at run time.
Expr scalar_input(OpContext& ctx, size_t i, tir::Type as);

// Round half to even (ONNX's Round) of a float expression.
Expr round_half_even(const Expr& v);
// saturate(round_half_even(v) + zp) in `range`, converted to `t` (v and zp
// float32; a NaN v saturates to the range's low end): ONNX's QuantizeLinear.
Expr quantize(const Expr& v, const Expr& zp, tir::Type t, std::pair<double, double> range);

// Dropout whose training_mode is true or known only at run time (ops_random.cpp;
// lower_alias hands it over).
void lower_dropout_training(OpContext& ctx);
// A symbolic constant (graph::Value::sym, no producer, no data) as a tensor
// of `dims` whose elements, row-major, are v's formulas over the symbols.
te::Tensor symbolic_tensor(const graph::Value& v, const std::string& name, const te::Dims& dims);

// Cast and CastLike to or from string tensors (ops_text.cpp; lower_cast
// and lower_cast_like hand them over).
void lower_cast_string(OpContext& ctx);
// String tokens (ops_text.cpp: TfIdfVectorizer; ops_ml.cpp: LabelEncoder):
// each element of the node's input 0, a static-shaped string tensor, as its
// first position in `vocabulary` (-1 when it is none of them), into a new
// int64 intermediate of its shape, computed by a host kernel; returns it.
int token_ids(OpContext& ctx, const std::vector<std::string>& vocabulary);
// Equal on string tensors (ops_text.cpp; lower_compare hands it over).
void lower_equal_string(OpContext& ctx);

// BatchNormalization with training_mode=1 (ops_norm.cpp; lower_batchnorm hands it over).
void lower_batchnorm_training(OpContext& ctx);

}  // namespace kiln::lower
