#include "te/tensor.h"

#include <cmath>
#include <algorithm>
#include <limits>

#include "support/diagnostics.h"
#include "tir/ir_printer.h"
#include "tir/ir_visitor.h"
#include "tir/simplify.h"

namespace kiln::te {

Dims::Dims(const Shape& s) {
  reserve(s.size());
  for (int64_t d : s) push_back(Expr(d));
}

bool Dims::is_static() const {
  for (auto& d : *this)
    if (!tir::as_const_int(d)) return false;
  return true;
}

Shape Dims::static_shape() const {
  Shape s;
  for (auto& d : *this) {
    auto c = tir::as_const_int(d);
    internal_assert(c) << "extent " << tir::to_string(d) << " is not a constant";
    s.push_back(*c);
  }
  return s;
}

Shape Dims::bounds() const {
  Shape s;
  for (auto& d : *this) {
    if (auto c = tir::as_const_int(d)) {
      s.push_back(*c);
      continue;
    }
    // Over a dimension sized per run (graph::Symbol::unbounded) an extent may
    // have no bound: at most 2^62 then (what schedules tile for; the
    // run's extent is the expression's value).
    // (Its least value may look negative where the product of large symbols
    // overflows the interval arithmetic: the import made every dimension a
    // size, checked at run time where it was not provably one.)
    tir::Interval r = tir::bounds_of(d);
    internal_assert(tir::uses_unbounded_symbol(d) || (r.max != std::numeric_limits<int64_t>::max() && r.min >= 0))
        << "extent " << tir::to_string(d) << " has no finite bound";
    s.push_back(std::clamp<int64_t>(r.max, 0, int64_t(1) << 62));
  }
  return s;
}

const Shape& Tensor::shape() const {
  if (!node_->dims.is_static()) {
    std::string dims;
    for (auto& d : node_->dims) dims += (dims.empty() ? "" : ", ") + tir::to_string(d);
    throw DynamicShapeError("tensor '" + node_->name + "' has run-time extents [" + dims + "]");
  }
  return node_->shape;
}

Expr Tensor::operator()(const Indices& idx) const {
  internal_assert(node_) << "read of an undefined tensor";
  internal_assert(idx.size() == node_->dims.size())
      << "tensor " << node_->name << " has rank " << node_->dims.size() << ", read with " << idx.size() << " indices";
  return tir::ProducerLoad::make(node_, idx);
}

Tensor placeholder(const std::string& name, const Dims& dims, tir::Type dtype) {
  auto n = std::make_shared<TensorNode>();
  n->name = name;
  n->dtype = dtype;
  n->kind = TensorNode::Kind::Placeholder;
  n->dims = dims;
  n->shape = dims.bounds();
  return Tensor(n);
}

Indices fresh_indices(const char* prefix, size_t n) {
  Indices idx;
  for (size_t i = 0; i < n; i++) idx.push_back(tir::Var::make(tir::Index(), prefix + std::to_string(i)));
  return idx;
}

Tensor compute(const std::string& name, const Dims& dims, const std::function<Expr(const Indices&)>& f) {
  auto n = std::make_shared<TensorNode>();
  n->name = name;
  n->kind = TensorNode::Kind::Compute;
  n->dims = dims;
  n->shape = dims.bounds();
  n->fcompute = f;
  n->dtype = f(fresh_indices("i", dims.size())).type();  // formulas are cheap to build once
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

Tensor reduce(const std::string& name, const Dims& dims, const Dims& rdims, ReduceKind kind, tir::Type dtype,
              const std::function<Expr(const Indices&, const Indices&)>& f, Expr init) {
  auto n = std::make_shared<TensorNode>();
  n->name = name;
  n->dtype = dtype;
  n->kind = TensorNode::Kind::Reduce;
  n->dims = dims;
  n->shape = dims.bounds();
  n->rdims = rdims;
  n->rshape = rdims.bounds();
  n->reduce_kind = kind;
  n->init = init.defined() ? init : reduce_identity(kind, dtype);
  n->fbody = f;
  Expr probe = f(fresh_indices("i", dims.size()), fresh_indices("r", rdims.size()));
  internal_assert(probe.type() == dtype) << "reduction " << name << " of " << dtype.str() << " over values of "
                                         << probe.type().str();
  return Tensor(n);
}

Tensor with_interior(const Tensor& r, const std::function<Expr(const Indices&, const Indices&)>& fbody,
                     const std::vector<std::pair<Expr, Expr>>& bounds) {
  internal_assert(r->kind == TensorNode::Kind::Reduce && bounds.size() == r.ndim()) << "with_interior on " << r.name();
  auto n = std::make_shared<TensorNode>(*r.get());
  n->fbody_interior = fbody;
  n->interior = bounds;
  return Tensor(n);
}

Expr flat_index(const Dims& dims, const Indices& idx) {
  internal_assert(dims.size() == idx.size()) << "flat_index rank mismatch";
  Expr flat = Expr(0);
  for (size_t i = 0; i < dims.size(); i++) flat = flat * dims[i] + idx[i];
  return flat;
}

Expr num_elements(const Dims& dims) {
  Expr n = Expr(1);
  int64_t c = 1;
  bool all_const = true;
  for (auto& d : dims) {
    if (auto k = tir::as_const_int(d)) c *= *k;
    else all_const = false;
    n = n * d;
  }
  return all_const ? Expr(c) : tir::simplify(n);
}

}  // namespace kiln::te
