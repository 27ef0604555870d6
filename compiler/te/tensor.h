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
using Shape = std::vector<int64_t>;

enum class ReduceKind { Sum, Max, Min, Prod };

struct TensorNode : tir::Producer {
  enum class Kind { Placeholder, Compute, Reduce };
  Kind kind = Kind::Placeholder;                       // what defines the values
  Shape shape;                                         // static shape
  std::function<Expr(const Indices&)> fcompute;        // Compute: value at an index
  Shape rshape;                                        // Reduce: the reduction domain
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
  const Shape& shape() const { return node_->shape; }
  size_t ndim() const { return node_->shape.size(); }
  tir::Type dtype() const { return node_->dtype; }
  const std::string& name() const { return node_->name; }
  // A read of this tensor (a ProducerLoad), for use inside formulas.
  Expr operator()(const Indices& idx) const;
  bool same_as(const Tensor& o) const { return node_ == o.node_; }

 private:
  std::shared_ptr<const TensorNode> node_;
};

Tensor placeholder(const std::string& name, const Shape& shape, tir::Type dtype);

// out[i] = f(i). The element type is f's result type.
Tensor compute(const std::string& name, const Shape& shape, const std::function<Expr(const Indices&)>& f);

// out[i] = kind-combine over r in rshape of f(i, r), starting from the kind's
// identity for `dtype` (or from `init` if given).
Tensor reduce(const std::string& name, const Shape& shape, const Shape& rshape, ReduceKind kind, tir::Type dtype,
              const std::function<Expr(const Indices&, const Indices&)>& f, Expr init = Expr());

// Row-major flat index of `idx` into `shape`.
Expr flat_index(const Shape& shape, const Indices& idx);

}  // namespace kiln::te
