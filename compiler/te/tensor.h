// Tensor expressions (TE): operators as index formulas, apart from schedules.
//
// A Tensor is a placeholder (an input buffer), a compute (out[i] = f(i)) or a
// reduction (out[i] = combine over r of f(i, r)). Formulas read other tensors
// with t(indices), which builds a tir::ProducerLoad; lowering (te/lower.h)
// later decides, per tensor, whether a read becomes the producer's formula
// (compute_inline: the default for computes), an accumulator loop at the point
// of use (the default for reductions), or a Load from the buffer the producer
// was materialized into (placeholders, and tensors marked by the kernel
// builder). Loop structure is the schedule's business (te/schedule.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "tir/ir.h"

namespace kiln::te {

using tir::Expr;
using Indices = std::vector<Expr>;
// Static extents, or the largest values of run-time ones.
using Shape = std::vector<int64_t>;

// Extents as Index expressions: constants, or expressions over shape
// symbols (tir::Var::make_symbol) for dimensions known only at run time
// (docs/dynamic-shapes.md). Converts implicitly from a static Shape.
struct Dims : std::vector<Expr> {
  using std::vector<Expr>::vector;
  Dims() = default;
  Dims(const Shape& s);  // NOLINT: implicit on purpose (static extents)
  Dims(std::initializer_list<Expr> l) : std::vector<Expr>(l) {}
  // Whether every extent is a constant.
  bool is_static() const;
  // The constant extents (InternalError unless is_static()).
  Shape static_shape() const;
  // The largest value of each extent over the symbols' ranges.
  Shape bounds() const;
};

enum class ReduceKind { Sum, Max, Min, Prod };

struct TensorNode : tir::Producer {
  enum class Kind { Placeholder, Compute, Reduce };
  Kind kind = Kind::Placeholder;                       // what defines the values
  Dims dims;                                           // extents (constants, or over shape symbols)
  Shape shape;                                         // the largest value of each extent (dims' bounds)
  std::function<Expr(const Indices&)> fcompute;        // Compute: value at an index
  Dims rdims;                                          // Reduce: extents of the reduction domain
  Shape rshape;                                        // Reduce: their largest values
  // Reduce (optional): a cheaper formula equal to fbody wherever every output
  // axis a lies in [interior[a].first, interior[a].second) (an undefined
  // bound: any): a convolution's taps away from the padding, read without
  // bounds checks. Lowering runs it on the tiles that lie inside (te/specialize_guards.h).
  std::function<Expr(const Indices&, const Indices&)> fbody_interior;
  std::vector<std::pair<Expr, Expr>> interior;         // per output axis: [lo, hi)
  ReduceKind reduce_kind = ReduceKind::Sum;            // Reduce: how values combine
  Expr init;                                           // Reduce: the identity (or a custom start)
  std::function<Expr(const Indices&, const Indices&)> fbody;  // Reduce: value at (index, reduce index)
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<const TensorNode> n) : node_(std::move(n)) {}
  bool defined() const { return node_ != nullptr; }
  const TensorNode* get() const { return node_.get(); }
  const TensorNode* operator->() const { return node_.get(); }
  const std::shared_ptr<const TensorNode>& node() const { return node_; }
  // The static shape. A tensor with run-time extents has none: a
  // DynamicShapeError (a user error), which lower_graph reports naming the
  // node whose kernel cannot take run-time extents yet.
  const Shape& shape() const;
  // The extents, constant or symbolic: what kernels that take run-time
  // extents read.
  const Dims& dims() const { return node_->dims; }
  // The largest value of each extent (for heuristics and scratch sizes).
  const Shape& bounds() const { return node_->shape; }
  bool is_static() const { return node_->dims.is_static(); }
  size_t ndim() const { return node_->dims.size(); }
  tir::Type dtype() const { return node_->dtype; }
  const std::string& name() const { return node_->name; }
  // A read of this tensor (a ProducerLoad), for use inside formulas.
  Expr operator()(const Indices& idx) const;
  bool same_as(const Tensor& o) const { return node_ == o.node_; }

 private:
  std::shared_ptr<const TensorNode> node_;
};

Tensor placeholder(const std::string& name, const Dims& dims, tir::Type dtype);

// n fresh index variables named PREFIX0, PREFIX1, ... (for probing formulas).
Indices fresh_indices(const char* prefix, size_t n);

// out[i] = f(i). The element type is f's result type.
Tensor compute(const std::string& name, const Dims& dims, const std::function<Expr(const Indices&)>& f);

// out[i] = kind-combine over r in rdims of f(i, r), starting from the kind's
// identity for `dtype` (or from `init` if given).
Tensor reduce(const std::string& name, const Dims& dims, const Dims& rdims, ReduceKind kind, tir::Type dtype,
              const std::function<Expr(const Indices&, const Indices&)>& f, Expr init = Expr());

// `r` (a reduction) with an interior formula (see TensorNode::fbody_interior).
Tensor with_interior(const Tensor& r, const std::function<Expr(const Indices&, const Indices&)>& fbody,
                     const std::vector<std::pair<Expr, Expr>>& bounds);

// Row-major flat index of `idx` into a tensor of extents `dims`.
Expr flat_index(const Dims& dims, const Indices& idx);

// The number of elements of `dims` (an expression when some are symbolic).
Expr num_elements(const Dims& dims);

}  // namespace kiln::te
