#include "te/lower.h"

#include <map>
#include <set>

#include "support/diagnostics.h"
#include "tir/ir_printer.h"
#include "tir/ir_visitor.h"

namespace kiln::te {
namespace {

int64_t graph_elements(const Shape& s) {
  int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}

using tir::Stmt;

Expr combine(ReduceKind kind, const Expr& acc, const Expr& v) {
  switch (kind) {
    case ReduceKind::Sum: return acc + v;
    case ReduceKind::Prod: return acc * v;
    case ReduceKind::Max: return tir::max(acc, v);
    case ReduceKind::Min: return tir::min(acc, v);
  }
  return Expr();
}

// Resolves ProducerLoads in one statement's expressions. Reductions found on
// the way become accumulators computed before the statement.
class Resolver : public tir::IRMutator {
 public:
  explicit Resolver(const BufferOf& buffer_of) : buffer_of_(buffer_of) {}

  // Wraps `make(resolved values)`'s statement with the accumulators it needs.
  Stmt build(const std::vector<Expr>& values, const std::function<Stmt(const std::vector<Expr>&)>& make) {
    std::vector<Expr> resolved;
    for (auto& v : values) resolved.push_back(mutate(v));
    Stmt s = make(resolved);
    std::vector<Stmt> seq = prelude_;
    seq.push_back(s);
    s = tir::Block::make(seq);
    for (auto it = allocs_.rbegin(); it != allocs_.rend(); ++it) s = tir::Allocate::make(*it, s);
    return s;
  }

 protected:
  using tir::IRMutator::visit;
  Expr visit(const tir::ProducerLoad* op, const Expr& self) override {
    auto* t = static_cast<const TensorNode*>(op->producer.get());
    std::vector<Expr> idx;
    for (auto& i : op->indices) idx.push_back(mutate(i));
    if (tir::Buffer b = buffer_of(t)) return tir::Load::make(b, flat_index(t->shape, idx));
    internal_assert(t->kind != TensorNode::Kind::Placeholder) << "placeholder " << t->name << " has no buffer";
    if (t->kind == TensorNode::Kind::Compute) return mutate(t->fcompute(idx));
    // A reduction: one accumulator per distinct (tensor, index) in this statement.
    std::string key = t->name + "@" + std::to_string((uintptr_t)t);
    for (auto& i : idx) key += "," + tir::to_string(i);
    auto found = accumulators_.find(key);
    if (found != accumulators_.end()) return tir::Load::make(found->second, Expr(0));
    tir::Buffer acc = tir::make_buffer(t->name + "_acc", t->dtype, 1, -1);
    accumulators_[key] = acc;
    std::vector<Expr> r;
    for (size_t i = 0; i < t->rshape.size(); i++) r.push_back(tir::Var::make(tir::Index(), t->name + "_r" + std::to_string(i)));
    // The update may itself read reductions: resolve it in a nested scope so
    // their accumulators are computed inside this reduction's loops.
    Resolver inner(buffer_of_);
    Stmt update = inner.build({t->fbody(idx, r)}, [&](const std::vector<Expr>& v) {
      return tir::Store::make(acc, Expr(0), combine(t->reduce_kind, tir::Load::make(acc, Expr(0)), v[0]));
    });
    for (int i = (int)r.size() - 1; i >= 0; i--)
      update = tir::For::make(r[i], Expr(0), Expr(t->rshape[i]), tir::ForKind::Serial, update);
    allocs_.push_back(acc);
    prelude_.push_back(tir::Store::make(acc, Expr(0), t->init));
    prelude_.push_back(update);
    return tir::Load::make(acc, Expr(0));
  }

 private:
  tir::Buffer buffer_of(const TensorNode* t) const { return buffer_of_(t); }
  const BufferOf& buffer_of_;
  std::vector<tir::Buffer> allocs_;
  std::vector<Stmt> prelude_;
  std::map<std::string, tir::Buffer> accumulators_;
};

// The prefetches `stage` schedules, for the innermost reduction loop (leaf
// r_last) whose body is `update`: each distinct read of the input, with the
// prefetch loop advanced by its offset, in the first iteration of the
// spatial loops between that loop and r_last.
Stmt prefetch_stmt(const Stage& stage, const Stmt& update, size_t r_last, const BufferOf& buffer_of) {
  std::vector<Stmt> out;
  for (auto& spec : stage.prefetches) {
    tir::Buffer b = buffer_of(spec.input.get());
    if (!b) continue;  // the input is computed in place: nothing to fetch
    size_t pos = stage.leaf_index(spec.loop);
    internal_assert(pos < r_last) << "prefetch loop " << spec.loop->name << " must be outside the innermost reduction";
    struct Reads : tir::IRVisitor {
      const tir::BufferNode* buf;
      std::vector<Expr> indices;
      using tir::IRVisitor::visit;
      void visit(const tir::Load* op) override {
        if (op->buffer.get() == buf) indices.push_back(op->index);
        tir::IRVisitor::visit(op);
      }
    } reads;
    reads.buf = b.get();
    reads.visit_stmt(update);
    // A vectorized loop reads one vector: its first lane's line.
    std::vector<std::pair<Expr, Expr>> at;
    for (size_t i = r_last + 1; i < stage.leaves.size(); i++)
      if (stage.leaves[i]->kind == tir::ForKind::Vectorized) at.push_back({stage.leaves[i]->var, Expr(0)});
    at.push_back({spec.loop->var, spec.loop->var + Expr(spec.offset)});
    Expr first;
    for (size_t i = pos + 1; i < r_last; i++)
      if (!stage.leaves[i]->reduce) {
        Expr c = tir::EQ::make(stage.leaves[i]->var, Expr(0));
        first = first.defined() ? (first && c) : c;
      }
    std::set<std::string> seen;
    for (auto& index : reads.indices) {
      Expr ahead = tir::substitute(index, at);
      if (!seen.insert(tir::to_string(ahead)).second) continue;
      Stmt s = tir::Prefetch::make(b, ahead);
      for (size_t i = stage.leaves.size(); i-- > r_last + 1;)
        if (tir::uses_var(ahead, stage.leaves[i]->var))
          s = tir::For::make(stage.leaves[i]->var, Expr(0), Expr(stage.leaves[i]->extent), stage.leaves[i]->kind, s);
      out.push_back(first.defined() ? tir::IfThenElse::make(first, s) : s);
    }
  }
  return out.empty() ? Stmt() : tir::Block::make(out);
}

}  // namespace

Stmt lower_stage(const Stage& stage, const tir::Buffer& out, const BufferOf& buffer_of, const Expr& store_offset,
                 const Epilogue& epilogue) {
  const TensorNode* t = stage.tensor.get();
  // Values of every loop: leaves are loop variables; walk the relations
  // backwards to recover the loops they replaced, down to the original axes.
  std::map<const IterVarNode*, Expr> value;
  for (auto& l : stage.leaves) value[l.get()] = l->var;
  std::vector<Expr> spatial_guards, reduce_guards;
  for (auto it = stage.relations.rbegin(); it != stage.relations.rend(); ++it) {
    if (it->kind == Relation::Kind::Split) {
      Expr p = value.at(it->outer.get()) * Expr(it->factor) + value.at(it->inner.get());
      value[it->parent.get()] = p;
      if (it->parent->extent % it->factor != 0)
        (it->parent->reduce ? reduce_guards : spatial_guards).push_back(p < Expr(it->parent->extent));
    } else {
      Expr f = value.at(it->fused.get());
      value[it->outer.get()] = f / Expr(it->inner->extent);
      value[it->inner.get()] = f % Expr(it->inner->extent);
    }
  }
  Indices axes, raxes;
  for (auto& a : stage.axes) axes.push_back(value.at(a.get()));
  for (auto& a : stage.reduce_axes) raxes.push_back(value.at(a.get()));
  auto guard = [](const std::vector<Expr>& conds, Stmt s) {
    for (auto& c : conds) s = tir::IfThenElse::make(c, s);
    return s;
  };

  // tensorize: the loops from the tensorized leaf inward become the intrinsic.
  if (stage.tensorized) {
    size_t pos = stage.leaf_index(stage.tensorized);
    TensorizeContext ctx;
    ctx.stage = &stage;
    std::vector<std::pair<Expr, Expr>> zero;
    for (size_t i = pos; i < stage.leaves.size(); i++) {
      ctx.tile_vars.push_back(stage.leaves[i]->var);
      ctx.tile_extents.push_back(stage.leaves[i]->extent);
      zero.push_back({stage.leaves[i]->var, Expr(0)});
    }
    ctx.axis_value = axes;
    for (auto& a : axes) ctx.axis_base.push_back(tir::substitute(a, zero));
    ctx.out = out;
    ctx.store_offset = store_offset;
    ctx.buffer_of = buffer_of;
    ctx.write = [&](const Expr& value, const std::vector<Expr>& at) {
      Expr v = epilogue ? epilogue(value, at) : value;
      return Resolver(buffer_of).build({v}, [&](const std::vector<Expr>& r) {
        return tir::Store::make(out, flat_index(t->shape, at) + store_offset, r[0]);
      });
    };
    Stmt body = stage.intrin.emit(ctx);
    for (size_t i = pos; i-- > 0;) {
      auto& l = stage.leaves[i];
      body = tir::For::make(l->var, Expr(0), Expr(l->extent), l->kind, body);
    }
    return body;
  }

  Stmt body;
  Expr out_index = flat_index(t->shape, axes) + store_offset;
  if (t->kind == TensorNode::Kind::Compute) {
    body = Resolver(buffer_of).build({t->fcompute(axes)}, [&](const std::vector<Expr>& v) {
      return tir::Store::make(out, out_index, v[0]);
    });
  } else {
    internal_assert(t->kind == TensorNode::Kind::Reduce) << "cannot lower placeholder " << t->name;
    // Reductions accumulate into a local tile (TVM's cache_write): one
    // accumulator per iteration of the spatial loops that sit inside the
    // first reduction loop (just one when every spatial loop is outside).
    size_t first_reduce = stage.leaves.size();
    for (size_t i = 0; i < stage.leaves.size(); i++)
      if (stage.leaves[i]->reduce) {
        first_reduce = i;
        break;
      }
    std::vector<IterVar> tile;  // spatial loops inside the reductions, in order
    for (size_t i = first_reduce; i < stage.leaves.size(); i++)
      if (!stage.leaves[i]->reduce) tile.push_back(stage.leaves[i]);
    Shape tile_shape;
    Indices tile_idx;
    for (auto& l : tile) {
      tile_shape.push_back(l->extent);
      tile_idx.push_back(l->var);
    }
    tir::Buffer acc = tir::make_buffer(t->name + "_acc", t->dtype, std::max<int64_t>(graph_elements(tile_shape), 1), -1);
    Expr acc_index = flat_index(tile_shape, tile_idx);
    auto over_tile = [&](Stmt s) {
      for (size_t i = tile.size(); i-- > 0;) s = tir::For::make(tile[i]->var, Expr(0), Expr(tile[i]->extent), tile[i]->kind, s);
      return s;
    };
    Stmt init = over_tile(tir::Store::make(acc, acc_index, t->init));
    // Spatial loops with reduction loops inside them (rows of a conv placed
    // inside its outer channel loop, so a slice of the weights serves every
    // row while it is in L1): the innermost spatial loops, those with only
    // spatial loops inside, get a register tile of their own. It is loaded
    // from the local tile before the inner reductions and stored back after,
    // so the inner loops accumulate in registers, not through memory.
    size_t inner_begin = first_reduce;  // the first leaf of the inner scope
    for (size_t i = first_reduce; i < stage.leaves.size(); i++)
      if (!stage.leaves[i]->reduce)
        for (size_t j = i + 1; j < stage.leaves.size(); j++)
          if (stage.leaves[j]->reduce) inner_begin = i + 1;
    bool two_level = inner_begin > first_reduce;
    std::vector<IterVar> inner_tile;
    Shape inner_shape;
    Indices inner_idx;
    for (size_t i = inner_begin; i < stage.leaves.size(); i++)
      if (!stage.leaves[i]->reduce) {
        inner_tile.push_back(stage.leaves[i]);
        inner_shape.push_back(stage.leaves[i]->extent);
        inner_idx.push_back(stage.leaves[i]->var);
      }
    tir::Buffer reg = two_level ? tir::make_buffer(t->name + "_reg", t->dtype,
                                                   std::max<int64_t>(graph_elements(inner_shape), 1), -1)
                                : acc;
    Expr reg_index = two_level ? flat_index(inner_shape, inner_idx) : acc_index;
    auto over_inner = [&](Stmt s) {
      for (size_t i = inner_tile.size(); i-- > 0;)
        s = tir::For::make(inner_tile[i]->var, Expr(0), Expr(inner_tile[i]->extent), inner_tile[i]->kind, s);
      return s;
    };
    Stmt update = Resolver(buffer_of).build({t->fbody(axes, raxes)}, [&](const std::vector<Expr>& v) {
      return tir::Store::make(reg, reg_index, combine(t->reduce_kind, tir::Load::make(reg, reg_index), v[0]));
    });
    update = guard(reduce_guards, guard(tile.empty() ? std::vector<Expr>() : spatial_guards, update));
    size_t r_last = first_reduce;  // the innermost reduction loop
    for (size_t i = first_reduce; i < stage.leaves.size(); i++)
      if (stage.leaves[i]->reduce) r_last = i;
    for (size_t i = stage.leaves.size(); i-- > inner_begin;) {
      auto& l = stage.leaves[i];
      if (i == r_last && !stage.prefetches.empty())
        if (Stmt p = prefetch_stmt(stage, update, r_last, buffer_of); p.defined()) update = tir::Block::make({p, update});
      update = tir::For::make(l->var, Expr(0), Expr(l->extent), l->kind, update);
    }
    if (two_level) {
      Stmt load = over_inner(tir::Store::make(reg, reg_index, tir::Load::make(acc, acc_index)));
      Stmt store = over_inner(tir::Store::make(acc, acc_index, tir::Load::make(reg, reg_index)));
      update = tir::Allocate::make(reg, tir::Block::make({load, update, store}));
      for (size_t i = inner_begin; i-- > first_reduce;) {
        auto& l = stage.leaves[i];
        update = tir::For::make(l->var, Expr(0), Expr(l->extent), l->kind, update);
      }
    }
    Stmt write;
    if (epilogue) {
      write = Resolver(buffer_of).build({epilogue(tir::Load::make(acc, acc_index), axes)}, [&](const std::vector<Expr>& v) {
        return tir::Store::make(out, out_index, v[0]);
      });
    } else {
      write = tir::Store::make(out, out_index, tir::Load::make(acc, acc_index));
    }
    if (!tile.empty()) write = over_tile(guard(spatial_guards, write));
    body = tir::Allocate::make(acc, tir::Block::make({init, update, write}));
    if (tile.empty()) body = guard(spatial_guards, body);  // else already inside the tile loops
    for (size_t i = first_reduce; i-- > 0;) {
      auto& l = stage.leaves[i];
      body = tir::For::make(l->var, Expr(0), Expr(l->extent), l->kind, body);
    }
    return body;
  }
  body = guard(spatial_guards, body);
  for (size_t i = stage.leaves.size(); i-- > 0;) {
    auto& l = stage.leaves[i];
    if (l->reduce) continue;
    body = tir::For::make(l->var, Expr(0), Expr(l->extent), l->kind, body);
  }
  return body;
}

}  // namespace kiln::te

namespace kiln::te {
namespace {

// Inlines compute producers, leaving reads of reductions and placeholders.
class InlineComputes : public tir::IRMutator {
 protected:
  using tir::IRMutator::visit;
  Expr visit(const tir::ProducerLoad* op, const Expr& self) override {
    auto* t = static_cast<const TensorNode*>(op->producer.get());
    if (t->kind != TensorNode::Kind::Compute) return tir::IRMutator::visit(op, self);
    std::vector<Expr> idx;
    for (auto& i : op->indices) idx.push_back(mutate(i));
    return mutate(t->fcompute(idx));
  }
};

// Collects reads of reductions.
class ReduceReads : public tir::IRVisitor {
 public:
  std::vector<const tir::ProducerLoad*> reads;

 protected:
  using tir::IRVisitor::visit;
  void visit(const tir::ProducerLoad* op) override {
    if (static_cast<const TensorNode*>(op->producer.get())->kind == TensorNode::Kind::Reduce) reads.push_back(op);
    tir::IRVisitor::visit(op);
  }
};

// Replaces reads of one tensor with a value.
class ReplaceReads : public tir::IRMutator {
 public:
  ReplaceReads(const tir::Producer* p, Expr v) : p_(p), v_(std::move(v)) {}

 protected:
  using tir::IRMutator::visit;
  Expr visit(const tir::ProducerLoad* op, const Expr& self) override {
    if (op->producer.get() == p_) return v_;
    return tir::IRMutator::visit(op, self);
  }

 private:
  const tir::Producer* p_;
  Expr v_;
};

}  // namespace

Tensor find_epilogue_anchor(const Tensor& t, Epilogue* out_epilogue) {
  if (t->kind == TensorNode::Kind::Reduce) return Tensor();
  if (t->kind != TensorNode::Kind::Compute) return Tensor();
  Indices axes;
  for (size_t i = 0; i < t.ndim(); i++) axes.push_back(tir::Var::make(tir::Index(), "e" + std::to_string(i)));
  Expr body = InlineComputes().mutate(t->fcompute(axes));
  ReduceReads rr;
  rr.visit_expr(body);
  if (rr.reads.empty()) return Tensor();
  const tir::ProducerLoad* first = rr.reads[0];
  for (auto* r : rr.reads) {
    if (r->producer != first->producer) return Tensor();  // two different reductions
    for (size_t i = 0; i < axes.size() && i < r->indices.size(); i++) {
      bool unit_dim = t.shape()[i] == 1 && as_const_int(r->indices[i]) && *as_const_int(r->indices[i]) == 0;
      if (!r->indices[i].same_as(axes[i]) && !unit_dim) return Tensor();  // read elsewhere than t's own index
    }
  }
  auto anchor = std::static_pointer_cast<const TensorNode>(first->producer);
  if (anchor->shape != t.shape() || first->indices.size() != axes.size()) return Tensor();
  Tensor keep = t;
  *out_epilogue = [keep](const Expr& acc, const Indices& idx) {
    Expr e = InlineComputes().mutate(keep->fcompute(idx));
    ReduceReads found;
    found.visit_expr(e);
    return ReplaceReads(found.reads.at(0)->producer.get(), acc).mutate(e);
  };
  return Tensor(anchor);
}

}  // namespace kiln::te
