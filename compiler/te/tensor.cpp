#include "te/tensor.h"

#include <cmath>
#include <limits>

#include "support/diagnostics.h"

namespace kiln::te {

Expr Tensor::operator()(const Indices& idx) const {
  internal_assert(node_) << "read of an undefined tensor";
  internal_assert(idx.size() == node_->shape.size())
      << "tensor " << node_->name << " has rank " << node_->shape.size() << ", read with " << idx.size() << " indices";
  return tir::ProducerLoad::make(node_, idx);
}

Tensor placeholder(const std::string& name, const Shape& shape, tir::Type dtype) {
  auto n = std::make_shared<TensorNode>();
  n->name = name;
  n->dtype = dtype;
  n->kind = TensorNode::Kind::Placeholder;
  n->shape = shape;
  return Tensor(n);
}

static Indices fresh_indices(const char* prefix, size_t n) {
  Indices idx;
  for (size_t i = 0; i < n; i++) idx.push_back(tir::Var::make(tir::Index(), prefix + std::to_string(i)));
  return idx;
}

Tensor compute(const std::string& name, const Shape& shape, const std::function<Expr(const Indices&)>& f) {
  auto n = std::make_shared<TensorNode>();
  n->name = name;
  n->kind = TensorNode::Kind::Compute;
  n->shape = shape;
  n->fcompute = f;
  n->dtype = f(fresh_indices("i", shape.size())).type();  // formulas are cheap to build once
  return Tensor(n);
}

static Expr reduce_identity(ReduceKind kind, tir::Type t) {
  double lowest = t.is_float() ? -std::numeric_limits<double>::infinity()
                  : t.is_uint() || t.is_bool() ? 0.0
                                                 : -std::ldexp(1.0, t.bits - 1);
  double highest = t.is_float() ? std::numeric_limits<double>::infinity()
                   : t.is_uint() || t.is_bool() ? std::ldexp(1.0, t.bits) - 1
                                                  : std::ldexp(1.0, t.bits - 1) - 1;
  switch (kind) {
    case ReduceKind::Sum: return tir::make_const(t, 0);
    case ReduceKind::Prod: return tir::make_const(t, 1);
    case ReduceKind::Max:
      return t.is_float() || t.bits < 64 ? tir::make_const(t, lowest) : tir::IntImm::make(t, std::numeric_limits<int64_t>::min());
    case ReduceKind::Min:
      return t.is_float() || t.bits < 64 ? tir::make_const(t, highest) : tir::IntImm::make(t, std::numeric_limits<int64_t>::max());
  }
  return Expr();
}

Tensor reduce(const std::string& name, const Shape& shape, const Shape& rshape, ReduceKind kind, tir::Type dtype,
              const std::function<Expr(const Indices&, const Indices&)>& f, Expr init) {
  auto n = std::make_shared<TensorNode>();
  n->name = name;
  n->dtype = dtype;
  n->kind = TensorNode::Kind::Reduce;
  n->shape = shape;
  n->rshape = rshape;
  n->reduce_kind = kind;
  n->init = init.defined() ? init : reduce_identity(kind, dtype);
  n->fbody = f;
  Expr probe = f(fresh_indices("i", shape.size()), fresh_indices("r", rshape.size()));
  internal_assert(probe.type() == dtype) << "reduction " << name << " of " << dtype.str() << " over values of "
                                         << probe.type().str();
  return Tensor(n);
}

Expr flat_index(const Shape& shape, const Indices& idx) {
  internal_assert(shape.size() == idx.size()) << "flat_index rank mismatch";
  Expr flat = Expr(0);
  for (size_t i = 0; i < shape.size(); i++) flat = flat * Expr(shape[i]) + idx[i];
  return flat;
}

}  // namespace kiln::te
