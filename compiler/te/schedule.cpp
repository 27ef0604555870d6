#include "te/schedule.h"

#include <algorithm>
#include <limits>

#include "support/diagnostics.h"
#include "support/int_math.h"
#include "te/lower.h"
#include "tir/ir_printer.h"
#include "tir/ir_visitor.h"
#include "tir/simplify.h"

namespace kiln::te {

IterVar make_iter_var(const std::string& name, int64_t extent, bool reduce) {
  auto iv = std::make_shared<IterVarNode>();
  iv->name = name;
  iv->extent = extent;
  iv->reduce = reduce;
  iv->var = tir::Var::make(tir::Index(), name);
  return iv;
}

IterVar make_iter_var(const std::string& name, const Expr& extent, bool reduce) {
  Expr e = tir::simplify(extent);
  if (auto c = tir::as_const_int(e)) return make_iter_var(name, *c, reduce);
  // Over a dimension sized per run an extent may have no bound (and the
  // interval arithmetic of large symbols' products may overflow below 0):
  // the loop is scheduled for at most 2^62, its run's extent is e's value.
  tir::Interval r = tir::bounds_of(e);
  internal_assert(tir::uses_unbounded_symbol(e) || (r.min >= 0 && r.max != std::numeric_limits<int64_t>::max()))
      << "loop " << name << ": extent " << tir::to_string(e) << " has no finite bound";
  IterVar iv = make_iter_var(name, std::clamp<int64_t>(r.max, 0, int64_t(1) << 62), reduce);
  iv->dynamic = e;
  return iv;
}

Stage::Stage(const Tensor& t) : tensor(t) {
  internal_assert(t.defined() && t->kind != TensorNode::Kind::Placeholder) << "a placeholder has no schedule";
  for (size_t i = 0; i < t.ndim(); i++) axes.push_back(make_iter_var("i" + std::to_string(i), t.dims()[i], false));
  if (t->kind == TensorNode::Kind::Reduce)
    for (size_t i = 0; i < t->rdims.size(); i++)
      reduce_axes.push_back(make_iter_var("r" + std::to_string(i), t->rdims[i], true));
  leaves = axes;
  leaves.insert(leaves.end(), reduce_axes.begin(), reduce_axes.end());
}

size_t Stage::leaf_index(const IterVar& iv) const {
  for (size_t i = 0; i < leaves.size(); i++)
    if (leaves[i] == iv) return i;
  internal_error << "loop " << (iv ? iv->name : "<null>") << " is not a current loop of stage " << tensor.name();
}

int64_t lanes_for(int64_t extent) { return extent % 16 == 0 ? 16 : extent % 8 == 0 ? 8 : 0; }

namespace {

// Binds the first non-trivial axis to workgroup x; the rest stay serial loops.
void bind_first(Stage& s) {
  for (auto& iv : s.axes)
    if (iv->extent > 1) {
      s.bind(iv, tir::ForKind::WorkgroupX);
      return;
    }
}

// Whether every tensor the stage reads is read at the output's own index
// (a purely elementwise kernel: flattening keeps every access contiguous).
bool flat_is_contiguous(const Stage& s) {
  Indices axes;
  for (auto& a : s.axes) axes.push_back(a->var);
  struct Reads : tir::IRVisitor {
    const Indices* axes;
    bool same = true;
    using tir::IRVisitor::visit;
    void visit(const tir::ProducerLoad* op) override {
      auto* t = static_cast<const TensorNode*>(op->producer.get());
      if (t->kind == TensorNode::Kind::Compute) {
        same = false;  // inlined producers could index anywhere: be conservative
        return;
      }
      if (op->indices.size() != axes->size()) {
        same = false;
        return;
      }
      for (size_t i = 0; i < op->indices.size(); i++) same &= op->indices[i].same_as((*axes)[i]);
      tir::IRVisitor::visit(op);
    }
  } reads;
  reads.axes = &axes;
  reads.visit_expr(s.tensor->fcompute(axes));
  return reads.same;
}

// Whether the stage reads a one-dimensional 8-bit tensor of 256 elements at
// a computed index: a byte table lookup (kiln.LookupTable), which code
// generation turns into permutes when the loop is vectorized (LLVM's own
// loop vectorizer leaves such loads scalar).
bool looks_up_bytes(const Stage& s) {
  Indices axes;
  for (auto& a : s.axes) axes.push_back(a->var);
  struct Reads : tir::IRVisitor {
    bool found = false;
    using tir::IRVisitor::visit;
    void visit(const tir::ProducerLoad* op) override {
      auto* t = static_cast<const TensorNode*>(op->producer.get());
      found |= t->kind == TensorNode::Kind::Placeholder && t->dtype.bits == 8 && t->shape.size() == 1 &&
               t->shape[0] == 256;
      tir::IRVisitor::visit(op);
    }
  } reads;
  reads.visit_expr(s.tensor->fcompute(axes));
  return reads.found;
}

// Elementwise and injective float kernels, and 8-bit ones that look bytes
// up in a table (other 8-bit kernels, copies mostly, are left to LLVM's loop
// vectorizer, which picks wider vectors for bytes): vectors along the innermost
// axis when its extent allows (then every other index is the same for all
// lanes, so reads are vector loads or broadcasts), else, for purely
// elementwise kernels, along the flattened tensor; chunks of the outer
// iterations are workgroups. Returns false (nothing changed) otherwise.
constexpr int64_t kRowsWork = 2048;

bool vectorize_elementwise(Stage& s) {
  tir::Type t = s.tensor->dtype;
  if (s.tensor->kind != TensorNode::Kind::Compute || s.axes.empty() ||
      !(t.is_float() || ((t.is_int() || t.is_uint()) && t.bits == 8 && looks_up_bytes(s))))
    return false;
  int64_t n = 1;
  for (auto& iv : s.axes) n = extent_product(n, iv->extent);
  std::vector<IterVar> outer(s.axes.begin(), s.axes.end() - 1);
  IterVar last = s.axes.back();
  bool any_dynamic = false;
  for (auto& iv : s.axes) any_dynamic |= iv->is_dynamic();
  if (any_dynamic) {
    // Run-time extents: vectors along the innermost axis (the ragged last one
    // guarded, where that extent is a run-time one: the lowering specializes
    // the guard away for the full vectors). No fusing across run-time
    // extents (each element would divide by them): the static outer axes
    // fused on workgroup x, the first run-time one on y.
    IterVar vec;
    if (last->is_dynamic()) {
      if (last->extent < 8) return false;
      auto [lo, li] = s.split(last, last->extent >= 64 ? 16 : 8);
      s.vectorize(li);
      vec = lo;
    } else {
      int64_t l = lanes_for(last->extent);
      if (!l) return false;
      auto [lo, li] = s.split(last, l);
      s.vectorize(li);
      vec = lo;
    }
    IterVar x, y;
    size_t i = 0;
    for (; i < outer.size() && !outer[i]->is_dynamic(); i++) x = x ? s.fuse(x, outer[i]) : outer[i];
    if (i < outer.size()) {
      y = outer[i];
      // A workgroup of a few rows, not one: a row of a feature map is a few
      // hundred elements, and a workgroup per row spends as long being
      // handed out as computing (by the bounds: about kRowsWork elements).
      int64_t inner = 1;
      for (size_t k = i + 1; k < s.axes.size(); k++) inner = extent_product(inner, s.axes[k]->extent);
      int64_t rows = 1;
      while (rows < 8 && inner <= kRowsWork && rows * 2 * inner <= kRowsWork && rows * 2 <= y->extent) rows *= 2;
      if (rows > 1) y = s.split(y, rows).first;
    } else if (vec->is_dynamic() || vec->extent > 1) {
      y = vec;
    }
    if (x && x->extent > 1) s.bind(x, tir::ForKind::WorkgroupX);
    if (y && (!x || x->extent <= 1 || s.leaf_index(y) == s.leaf_index(x) + 1))
      s.bind(y, x && x->extent > 1 ? tir::ForKind::WorkgroupY : tir::ForKind::WorkgroupX);
    return true;
  }
  int64_t lanes = lanes_for(last->extent);
  if (!lanes && lanes_for(n) && flat_is_contiguous(s)) {
    for (size_t i = outer.size(); i-- > 0;) last = s.fuse(outer[i], last);
    outer.clear();
    lanes = lanes_for(n);
  } else if (!lanes) {
    // Long rows no vector width divides (a 6625-class softmax): vectors of
    // 16 along each row, the last one's lanes past the row masked (the
    // uneven split's guard, split off by loop partitioning).
    if (last->extent < 64) return false;
    lanes = 16;
  }
  std::pair<IterVar, IterVar> split = s.split(last, lanes);
  IterVar f = split.first;
  for (size_t i = outer.size(); i-- > 0;) f = s.fuse(outer[i], f);
  IterVar chunk = s.split(f, largest_divisor(f->extent, 64)).first;
  s.bind(chunk, tir::ForKind::WorkgroupX);
  s.vectorize(split.second);
  return true;
}

}  // namespace

// A float sum whose last reduction axis walks contiguous memory (the last
// index of every tensor it reads): that loop is marked vectorized, which the
// code generator turns into per-lane partial sums (see codegen_llvm.cpp).
void vectorize_sum(Stage& s) {
  if (s.tensor->kind != TensorNode::Kind::Reduce || s.tensor->reduce_kind != ReduceKind::Sum ||
      !s.tensor->dtype.is_float() || s.reduce_axes.empty() || s.reduce_axes.back()->extent < 16)
    return;
  Indices axes, raxes;
  for (auto& a : s.axes) axes.push_back(a->var);
  for (auto& a : s.reduce_axes) raxes.push_back(a->var);
  struct Reads : tir::IRVisitor {
    Expr last;
    bool contiguous = true, any = false;
    using tir::IRVisitor::visit;
    void visit(const tir::ProducerLoad* op) override {
      bool uses = false;  // reads that do not move with the loop are fine
      for (auto& i : op->indices) uses |= tir::uses_var(i, last);
      if (uses) {
        any = true;
        contiguous &= op->indices.back().same_as(last);
      }
      tir::IRVisitor::visit(op);
    }
  } reads;
  reads.last = raxes.back();
  reads.visit_expr(s.tensor->fbody(axes, raxes));
  if (reads.any && reads.contiguous) s.vectorize(s.reduce_axes.back());
}

void default_cpu_schedule(Stage& s) {
  // A compute over contiguous row reductions (a mean, a softmax's max or
  // sum): the lanes go to each reduction, not across rows (which would
  // gather a row apart per lane).
  bool lanes = inline_reductions_vectorize(s.tensor);
  if (!lanes && vectorize_elementwise(s)) return;
  bind_first(s);
  vectorize_sum(s);
  s.inline_reduction_lanes = lanes;
}

}  // namespace kiln::te
