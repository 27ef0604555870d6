#include "te/lower.h"

#include <climits>
#include <map>
#include <optional>
#include <set>

#include "support/diagnostics.h"
#include "te/specialize_guards.h"
#include "tir/inplace.h"
#include "tir/ir_printer.h"
#include "tir/ir_visitor.h"
#include "tir/simplify.h"

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

// Inlines compute producers (but `keep`, if given), leaving reads of
// reductions and placeholders.
class InlineComputes : public tir::IRMutator {
 public:
  explicit InlineComputes(const TensorNode* keep = nullptr) : keep_(keep) {}

 protected:
  using tir::IRMutator::visit;
  Expr visit(const tir::ProducerLoad* op, const Expr& self) override {
    auto* t = static_cast<const TensorNode*>(op->producer.get());
    if (t->kind != TensorNode::Kind::Compute || t == keep_) return tir::IRMutator::visit(op, self);
    std::vector<Expr> idx;
    for (auto& i : op->indices) idx.push_back(mutate(i));
    return mutate(t->fcompute(idx));
  }

 private:
  const TensorNode* keep_;
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

// Resolves ProducerLoads in one statement's expressions. Reductions found on
// the way become accumulators computed before the statement.
class Resolver : public tir::IRMutator {
 public:
  // `lanes`: inlined reductions that qualify (reduction_lanes) accumulate
  // in vector lanes (Stage::inline_reduction_lanes).
  explicit Resolver(const BufferOf& buffer_of, bool lanes = false) : buffer_of_(buffer_of), lanes_(lanes) {}
  // Reads of `t` become `read(indices)` (a shared-memory tile).
  using Read = std::function<Expr(const std::vector<Expr>&)>;
  void override_reads(const TensorNode* t, Read read) { overrides_[t] = std::move(read); }

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
    auto o = overrides_.find(t);
    if (o != overrides_.end()) return o->second(idx);
    if (tir::Buffer b = buffer_of(t)) return tir::Load::make(b, flat_index(t->dims, idx));
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
    for (size_t i = 0; i < t->rdims.size(); i++) r.push_back(tir::Var::make(tir::Index(), t->name + "_r" + std::to_string(i)));
    // The update may itself read reductions: resolve it in a nested scope so
    // their accumulators are computed inside this reduction's loops.
    Resolver inner(buffer_of_);
    inner.overrides_ = overrides_;
    allocs_.push_back(acc);
    prelude_.push_back(tir::Store::make(acc, Expr(0), t->init));
    if (int64_t lanes = lanes_ ? reduction_lanes(t) : 0) {  // (it reads no reduction)
      Expr value = inner.mutate(t->fbody(idx, r));
      internal_assert(inner.prelude_.empty()) << "reduction " << t->name << ": nested reductions in lanes";
      prelude_.push_back(lane_partials(t, r, value, acc, lanes));
      return tir::Load::make(acc, Expr(0));
    }
    Stmt update = inner.build({t->fbody(idx, r)}, [&](const std::vector<Expr>& v) {
      return tir::Store::make(acc, Expr(0), combine(t->reduce_kind, tir::Load::make(acc, Expr(0)), v[0]));
    });
    for (int i = (int)r.size() - 1; i >= 0; i--)
      update = tir::For::make(r[i], Expr(0), t->rdims[i], tir::ForKind::Serial, update);
    prelude_.push_back(update);
    return tir::Load::make(acc, Expr(0));
  }

 private:
  // The reduction of `t` over loops `r` into `acc` (which holds the start
  // value), in `lanes` partial accumulators: the innermost loop is split into
  // vectors of `lanes`, lane l accumulating elements l, l + lanes, ... of
  // each row (a vectorized loop over the partials buffer), then the lanes
  // combine into `acc` in order. A sum starts its lanes at 0 (a custom start
  // counts once); max and min start them at the start value.
  Stmt lane_partials(const TensorNode* t, const std::vector<Expr>& r, const Expr& body, const tir::Buffer& acc,
                     int64_t lanes) {
    // A row sized per run: chunks and tail are expressions (the tail loop always there).
    const int64_t* extent = tir::as_const_int(t->rdims.back());
    internal_assert(!extent || *extent >= lanes) << "reduction " << t->name << ": a row shorter than the lanes";
    const Expr chunks = extent ? Expr(*extent / lanes) : tir::simplify(t->rdims.back() / Expr(lanes));
    const Expr tail = extent ? Expr(*extent % lanes) : tir::simplify(t->rdims.back() % Expr(lanes));
    tir::Buffer part = tir::make_buffer(t->name + "_lanes", t->dtype, lanes, -1);
    Expr lane = tir::Var::make(tir::Index(), t->name + "_lane");
    Expr outer = tir::Var::make(tir::Index(), t->name + "_r" + std::to_string(r.size() - 1) + "o");
    Expr start = t->reduce_kind == ReduceKind::Sum ? tir::make_const(t->dtype, 0) : t->init;
    Stmt init = tir::For::make(lane, Expr(0), Expr(lanes), tir::ForKind::Vectorized,
                               tir::Store::make(part, lane, start));
    // The body with the innermost reduction variable at outer * lanes + lane.
    Expr value = tir::substitute(body, {{r.back(), outer * Expr(lanes) + lane}});
    Stmt step = tir::Store::make(part, lane, combine(t->reduce_kind, tir::Load::make(part, lane), value));
    Stmt loop = tir::For::make(lane, Expr(0), Expr(lanes), tir::ForKind::Vectorized, step);
    loop = tir::For::make(outer, Expr(0), chunks, tir::ForKind::Serial, loop);
    const int64_t* tail_size = tir::as_const_int(tail);
    if (!tail_size || *tail_size != 0) {  // a row the lanes do not divide: its last elements, one per lane, serially
      Expr e = tir::Var::make(tir::Index(), t->name + "_tail");
      Expr tv = tir::substitute(body, {{r.back(), chunks * Expr(lanes) + e}});
      Stmt tail_step = tir::Store::make(part, e, combine(t->reduce_kind, tir::Load::make(part, e), tv));
      loop = tir::Block::make({loop, tir::For::make(e, Expr(0), tail, tir::ForKind::Serial, tail_step)});
    }
    for (int i = (int)r.size() - 2; i >= 0; i--) loop = tir::For::make(r[i], Expr(0), t->rdims[i], tir::ForKind::Serial, loop);
    Expr l = tir::Var::make(tir::Index(), t->name + "_l");
    Stmt merge = tir::For::make(l, Expr(0), Expr(lanes), tir::ForKind::Unrolled,
                                tir::Store::make(acc, Expr(0), combine(t->reduce_kind, tir::Load::make(acc, Expr(0)),
                                                                       tir::Load::make(part, l))));
    return tir::Allocate::make(part, tir::Block::make({init, loop, merge}));
  }

  tir::Buffer buffer_of(const TensorNode* t) const { return buffer_of_(t); }
  const BufferOf& buffer_of_;
  bool lanes_ = false;  // inlined reductions may accumulate in lanes (reduction_lanes)
  std::vector<tir::Buffer> allocs_;
  std::vector<Stmt> prelude_;
  std::map<std::string, tir::Buffer> accumulators_;
  std::map<const TensorNode*, Read> overrides_;
};

// `s` under every condition of `conds`.
Stmt guard(const std::vector<Expr>& conds, Stmt s) {
  for (auto& c : conds) s = tir::IfThenElse::make(c, s);
  return s;
}

// The loop of leaf `l` around `body`: extent_expr() iterations (a run-time
// count for a loop over a symbolic extent).
Stmt loop(const IterVar& l, Stmt body) { return tir::For::make(l->var, Expr(0), l->extent_expr(), l->kind, std::move(body)); }

// --- Shared-memory tiles (Stage::cache_shared) ---

// The value of integer expression e with the variables in env (others 0);
// nullopt for anything but integer arithmetic and comparisons.
std::optional<int64_t> eval_int(const Expr& e, const std::map<const tir::ExprNode*, int64_t>& env) {
  using tir::NodeType;
  auto two = [&](const Expr& a, const Expr& b) -> std::optional<std::pair<int64_t, int64_t>> {
    auto x = eval_int(a, env), y = eval_int(b, env);
    if (!x || !y) return std::nullopt;
    return std::make_pair(*x, *y);
  };
  switch (e->node_type) {
    case NodeType::IntImm: return *tir::as_const_int(e);
    case NodeType::Var: {
      auto it = env.find(e.get());
      return it == env.end() ? 0 : it->second;
    }
    case NodeType::Cast: return e.type().is_float() ? std::nullopt : eval_int(e.as<tir::Cast>()->value, env);
#define KILN_EVAL(N, expr)                     \
  case NodeType::N: {                          \
    auto v = two(e.as<tir::N>()->a, e.as<tir::N>()->b); \
    if (!v) return std::nullopt;               \
    int64_t a = v->first, b = v->second;       \
    return (expr);                             \
  }
    KILN_EVAL(Add, a + b)
    KILN_EVAL(Sub, a - b)
    KILN_EVAL(Mul, a * b)
    KILN_EVAL(Min, std::min(a, b))
    KILN_EVAL(Max, std::max(a, b))
    KILN_EVAL(LT, (int64_t)(a < b))
    KILN_EVAL(LE, (int64_t)(a <= b))
    KILN_EVAL(EQ, (int64_t)(a == b))
    KILN_EVAL(NE, (int64_t)(a != b))
    KILN_EVAL(And, (int64_t)(a && b))
    KILN_EVAL(Or, (int64_t)(a || b))
#undef KILN_EVAL
    case NodeType::Div:
    case NodeType::Mod: {
      bool div = e->node_type == NodeType::Div;
      auto v = div ? two(e.as<tir::Div>()->a, e.as<tir::Div>()->b) : two(e.as<tir::Mod>()->a, e.as<tir::Mod>()->b);
      if (!v || v->second == 0) return std::nullopt;
      int64_t a = v->first, b = v->second, q = a / b;
      if (q * b != a && ((a < 0) != (b < 0))) q--;  // floor semantics
      return div ? q : a - q * b;
    }
    case NodeType::Not: {
      auto a = eval_int(e.as<tir::Not>()->a, env);
      return a ? std::optional<int64_t>(!*a) : std::nullopt;
    }
    case NodeType::Select: {
      auto* s = e.as<tir::Select>();
      auto c = eval_int(s->cond, env);
      if (!c) return std::nullopt;
      return eval_int(*c ? s->true_value : s->false_value, env);
    }
    default: return std::nullopt;
  }
}

// One shared tile: the region [base, base + extent) of `input` per dimension.
struct SharedTile {
  Tensor input;                 // the tensor tiled
  size_t loop;                  // leaf position of the reduction loop it serves
  tir::Buffer buf;              // the shared buffer, row-major over extent
  std::vector<Expr> base;       // per dimension, over the loops outside `loop`
  std::vector<int64_t> lo;      // per dimension: the least inner part of an index
  std::vector<int64_t> extent;  // per dimension
  std::set<const tir::ExprNode*> inner;  // the variables of the loops the tile serves
};

// Splits e into outer + inner, the first using no variable of `inner`, the
// second only those; nullopt where they mix (a select, a clamp, a product
// of both): such an index's range could depend on where the outer loops are.
std::optional<std::pair<Expr, Expr>> separate(const Expr& e, const std::set<const tir::ExprNode*>& inner) {
  struct Vars : tir::IRVisitor {
    const std::set<const tir::ExprNode*>* inner;
    bool in = false, out = false;
    using tir::IRVisitor::visit;
    void visit(const tir::Var* op) override { (inner->count(op) ? in : out) = true; }
  } v;
  v.inner = &inner;
  v.visit_expr(e);
  if (!v.in) return std::make_pair(e, Expr(0));
  if (!v.out) return std::make_pair(Expr(0), e);
  if (auto* a = e.as<tir::Add>()) {
    auto x = separate(a->a, inner), y = separate(a->b, inner);
    if (!x || !y) return std::nullopt;
    return std::make_pair(x->first + y->first, x->second + y->second);
  }
  if (auto* a = e.as<tir::Sub>()) {
    auto x = separate(a->a, inner), y = separate(a->b, inner);
    if (!x || !y) return std::nullopt;
    return std::make_pair(x->first - y->first, x->second - y->second);
  }
  if (auto* m = e.as<tir::Mul>()) {
    const Expr* k = tir::as_const_int(m->b) ? &m->b : tir::as_const_int(m->a) ? &m->a : nullptr;
    if (!k) return std::nullopt;
    auto x = separate(k == &m->b ? m->a : m->b, inner);
    if (!x) return std::nullopt;
    return std::make_pair(x->first * *k, x->second * *k);
  }
  return std::nullopt;
}

// The tile of `spec`, or nullopt where its region cannot be bounded: every
// read of the input in the formula `body` (computes inlined, as lowering
// will) must index each dimension as outer + inner (see separate), all with
// the same outer part; the inner parts' range over every value of the
// loops inside `loop` and of the local loop `local` is the extent, the same
// for every iteration of the outer loops.
std::optional<SharedTile> plan_shared_tile(const Stage& stage, const Stage::SharedCache& spec, const Expr& body,
                                           size_t local) {
  size_t pos = stage.leaf_index(spec.loop);
  if (pos <= local) return std::nullopt;
  // Computes inlined (their reads of the input are redirected too); a
  // reduction read by the formula could read the input with loop variables
  // of its own: no tile then.
  Expr flat_body = InlineComputes(spec.input.get()).mutate(body);
  ReduceReads nested;
  nested.visit_expr(flat_body);
  for (auto* r : nested.reads)
    if (r->producer.get() != spec.input.get()) return std::nullopt;
  struct Reads : tir::IRVisitor {
    const TensorNode* t;
    std::vector<std::vector<Expr>> found;
    using tir::IRVisitor::visit;
    void visit(const tir::ProducerLoad* op) override {
      if (op->producer.get() == t) found.push_back(op->indices);
      tir::IRVisitor::visit(op);
    }
  } reads;
  reads.t = spec.input.get();
  reads.visit_expr(flat_body);
  if (reads.found.empty()) return std::nullopt;
  std::vector<IterVar> inner = {stage.leaves[local]};
  for (size_t i = pos + 1; i < stage.leaves.size(); i++) inner.push_back(stage.leaves[i]);
  SharedTile tile{spec.input, pos, tir::Buffer(), {}, {}, {}, {}};
  for (auto& v : inner) tile.inner.insert(v->var.get());
  int64_t total = 1;
  for (size_t d = 0; d < spec.input.ndim(); d++) {
    std::vector<Expr> parts;  // the inner part of each read
    std::string outer_text;
    Expr outer;
    for (auto& r : reads.found) {
      auto sep = separate(r[d], tile.inner);
      if (!sep) return std::nullopt;
      std::string text = tir::to_string(tir::simplify(sep->first));
      if (!outer.defined()) outer = tir::simplify(sep->first), outer_text = text;
      else if (text != outer_text) return std::nullopt;
      parts.push_back(sep->second);
    }
    std::vector<IterVar> used;  // the inner loops this dimension's indices vary with
    for (auto& v : inner) {
      bool uses = false;
      for (auto& p : parts) uses |= tir::uses_var(p, v->var);
      if (uses) used.push_back(v);
    }
    int64_t combos = 1;
    for (auto& v : used) combos = extent_product(combos, v->extent);
    if (combos > (1 << 16)) return std::nullopt;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    std::map<const tir::ExprNode*, int64_t> env;
    for (int64_t c = 0; c < combos; c++) {
      int64_t rest = c;
      for (auto& v : used) {
        env[v->var.get()] = rest % v->extent;
        rest /= v->extent;
      }
      for (auto& p : parts) {
        auto x = eval_int(p, env);
        if (!x) return std::nullopt;
        lo = std::min(lo, *x);
        hi = std::max(hi, *x);
      }
    }
    tile.base.push_back(tir::simplify(outer + Expr(lo)));
    tile.lo.push_back(lo);
    tile.extent.push_back(hi - lo + 1);
    total *= hi - lo + 1;
  }
  if (total > 4096) return std::nullopt;
  tile.buf = tir::make_buffer(spec.input.name() + "_shared", spec.input.dtype(), total, -1);
  return tile;
}

// The copy of `tile` by `threads` invocations (local index `lid`), each
// taking every threads-th element; indices past the input are clamped (the
// values they give only reach guarded-off outputs).
Stmt fill_shared_tile(const SharedTile& tile, const Expr& lid, int64_t threads, const BufferOf& buffer_of) {
  int64_t total = tile.buf->size;
  Expr f = tir::Var::make(tir::Index(), tile.buf->name + "_f");
  Expr flat = f * Expr(threads) + lid;
  std::vector<Expr> idx;
  int64_t stride = total;
  for (size_t d = 0; d < tile.extent.size(); d++) {
    stride /= tile.extent[d];
    Expr j = (flat / Expr(stride)) % Expr(tile.extent[d]);
    idx.push_back(tir::clamp(tile.base[d] + j, Expr(0), tile.input.dims()[d] - Expr(1)));
  }
  Stmt copy = Resolver(buffer_of).build({tile.input(idx)}, [&](const std::vector<Expr>& v) {
    return tir::Store::make(tile.buf, flat, v[0]);
  });
  if (total % threads) copy = tir::IfThenElse::make(flat < Expr(total), copy);
  return tir::For::make(f, Expr(0), Expr((total + threads - 1) / threads), tir::ForKind::Serial, copy);
}

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
          s = loop(stage.leaves[i], s);
      out.push_back(first.defined() ? tir::IfThenElse::make(first, s) : s);
    }
  }
  return out.empty() ? Stmt() : tir::Block::make(out);
}

// A reduction whose loop `local` (of the leaves) is bound to local x: the
// invocations of a workgroup share it (GPU). Each accumulates every
// local-th element over the other reduction loops, writes its partial
// result to a shared buffer, and a tree of halving steps (a barrier after
// each) combines them; invocation 0 writes the output. All spatial loops
// are outside the reduction loops.
Stmt lower_cross_invocation(const Stage& stage, size_t local, const tir::Buffer& out, const Expr& out_index,
                            const Indices& axes, const Indices& raxes, const std::vector<Expr>& spatial_guards,
                            const std::vector<Expr>& reduce_guards, const BufferOf& buffer_of, const Epilogue& epilogue) {
  const TensorNode* t = stage.tensor.get();
  const IterVar& lane = stage.leaves[local];
  int64_t n = lane->extent;
  internal_assert(n >= 1 && (n & (n - 1)) == 0 && n <= 128) << t->name << ": a shared reduction over " << n
                                                            << " invocations (a power of two up to 128)";
  size_t first_reduce = stage.leaves.size();
  for (size_t i = 0; i < stage.leaves.size(); i++)
    if (stage.leaves[i]->reduce && first_reduce == stage.leaves.size()) first_reduce = i;
  for (size_t i = first_reduce; i < stage.leaves.size(); i++)
    internal_assert(stage.leaves[i]->reduce) << t->name << ": spatial loop inside a shared reduction";
  tir::Buffer acc = tir::make_buffer(t->name + "_acc", t->dtype, 1, -1);
  tir::Buffer red = tir::make_buffer(t->name + "_red", t->dtype, n, -1);
  Expr lid = lane->var;
  Stmt update = Resolver(buffer_of).build({t->fbody(axes, raxes)}, [&](const std::vector<Expr>& v) {
    return tir::Store::make(acc, Expr(0), combine(t->reduce_kind, tir::Load::make(acc, Expr(0)), v[0]));
  });
  // (Outputs past an uneven spatial split accumulate nothing; the barriers
  // below stay outside every guard.)
  update = guard(reduce_guards, guard(spatial_guards, update));
  for (size_t i = stage.leaves.size(); i-- > first_reduce;) {
    if (i == local) continue;
    auto& l = stage.leaves[i];
    update = loop(l, update);
  }
  std::vector<Stmt> seq = {tir::Store::make(acc, Expr(0), t->init), update,
                           tir::Store::make(red, lid, tir::Load::make(acc, Expr(0))), tir::Barrier::make()};
  for (int64_t half = n / 2; half >= 1; half /= 2) {
    Expr both = combine(t->reduce_kind, tir::Load::make(red, lid), tir::Load::make(red, lid + Expr(half)));
    seq.push_back(tir::IfThenElse::make(lid < Expr(half), tir::Store::make(red, lid, both)));
    seq.push_back(tir::Barrier::make());
  }
  Expr total = tir::Load::make(red, Expr(0));
  Stmt write = epilogue ? Resolver(buffer_of).build({epilogue(total, axes)}, [&](const std::vector<Expr>& v) {
    return tir::Store::make(out, out_index, v[0]);
  })
                        : tir::Store::make(out, out_index, total);
  seq.push_back(tir::IfThenElse::make(tir::EQ::make(lid, Expr(0)), guard(spatial_guards, write)));
  seq.push_back(tir::Barrier::make());  // invocation 0 has read red[0] before the next output's partials
  Stmt body = tir::For::make(lid, Expr(0), Expr(n), lane->kind, tir::Allocate::make(acc, tir::Block::make(seq)));
  body = tir::Allocate::make(red, body, tir::MemScope::Shared);
  for (size_t i = first_reduce; i-- > 0;) body = loop(stage.leaves[i], body);
  return body;
}

// The loops of `stage` (see lower_stage); `specs` gets the guards of splits
// of run-time extents, for specialize_guards, `out_axes` the original axes'
// values. `interior`: reduce with the tensor's interior formula.
Stmt lower_stage_loops(const Stage& stage, const tir::Buffer& out, const BufferOf& buffer_of, const Expr& store_offset,
                       const Epilogue& epilogue, bool host, bool interior, std::vector<GuardSpec>* specs,
                       Indices* out_axes) {
  const TensorNode* t = stage.tensor.get();
  // Values of every loop: leaves are loop variables; walk the relations
  // backwards to recover the loops they replaced, down to the original axes.
  std::map<const IterVarNode*, Expr> value;
  for (auto& l : stage.leaves) value[l.get()] = l->var;
  std::vector<Expr> spatial_guards, reduce_guards;
  size_t tensorized = stage.tensorized ? stage.leaf_index(stage.tensorized) : stage.leaves.size();
  for (auto it = stage.relations.rbegin(); it != stage.relations.rend(); ++it) {
    if (it->kind == Relation::Kind::Split) {
      Expr outer = value.at(it->outer.get());
      Expr p = outer * Expr(it->factor) + value.at(it->inner.get());
      value[it->parent.get()] = p;
      // (The interior formula's tiles lie inside the axes it bounds: no guard there.)
      bool inside = false;
      for (size_t a = 0; interior && a < stage.axes.size() && a < t->interior.size(); a++)
        inside |= stage.axes[a] == it->parent && t->interior[a].second.defined();
      if (!inside && (it->parent->is_dynamic() || it->parent->extent % it->factor != 0)) {
        Expr g = p < it->parent->extent_expr();
        (it->parent->reduce ? reduce_guards : spatial_guards).push_back(g);
        // A run-time extent: the guard holds for a whole tile when outer < E / f,
        // testable inside the innermost loop outer is made of (CPU loops only).
        for (size_t i = std::min(tensorized, stage.leaves.size()); it->parent->is_dynamic() && !host && i-- > 0;) {
          if (!tir::uses_var(outer, stage.leaves[i]->var)) continue;
          if (!tir::is_local_loop(stage.leaves[i]->kind))
            specs->push_back({g, outer < it->parent->extent_expr() / Expr(it->factor), stage.leaves[i]->var});
          break;
        }
      }
    } else {
      Expr f = value.at(it->fused.get());
      value[it->outer.get()] = f / it->inner->extent_expr();
      value[it->inner.get()] = f % it->inner->extent_expr();
    }
  }
  Indices axes, raxes;
  for (auto& a : stage.axes) axes.push_back(value.at(a.get()));
  for (auto& a : stage.reduce_axes) raxes.push_back(value.at(a.get()));
  *out_axes = axes;

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
        return tir::Store::make(out, flat_index(t->dims, at) + store_offset, r[0]);
      });
    };
    Stmt body = stage.intrin.emit(ctx);
    for (size_t i = pos; i-- > 0;) body = loop(stage.leaves[i], body);
    return body;
  }

  Stmt body;
  Expr out_index = flat_index(t->dims, axes) + store_offset;
  for (size_t i = 0; i < stage.leaves.size() && !host; i++)
    if (stage.leaves[i]->reduce && tir::is_local_loop(stage.leaves[i]->kind))
      return lower_cross_invocation(stage, i, out, out_index, axes, raxes, spatial_guards, reduce_guards, buffer_of,
                                    epilogue);
  if (t->kind == TensorNode::Kind::Compute) {
    bool vectorized = false;  // lanes inside a vectorized loop would nest vector loops
    for (auto& l : stage.leaves) vectorized |= l->kind == tir::ForKind::Vectorized;
    body = Resolver(buffer_of, stage.inline_reduction_lanes && !vectorized).build({t->fcompute(axes)}, [&](const std::vector<Expr>& v) {
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
      for (size_t i = tile.size(); i-- > 0;) s = loop(tile[i], s);
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
      for (size_t i = inner_tile.size(); i-- > 0;) s = loop(inner_tile[i], s);
      return s;
    };
    // Shared-memory tiles (GPU): planned from the formula's reads, which
    // then come from the tiles; each is filled at the top of its loop.
    std::vector<SharedTile> tiles;
    size_t local = stage.leaves.size();
    for (size_t i = 0; i < stage.leaves.size(); i++) {
      auto k = stage.leaves[i]->kind;
      if (tir::is_local_loop(k)) {
        internal_assert(local == stage.leaves.size() || stage.shared_caches.empty())
            << "cache_shared: " << t->name << " needs a single local loop";
        local = i;
      }
    }
    Resolver resolver(buffer_of);
    int64_t shared_bytes = 0;
    for (auto& spec : stage.shared_caches) {
      if (host || local == stage.leaves.size()) break;  // no invocations to share with
      // With no spatial loop inside the reduction, an uneven spatial split
      // guards the whole reduction: its barriers would not be reached by
      // every invocation.
      if (tile.empty() && !spatial_guards.empty()) break;
      auto planned = plan_shared_tile(stage, spec, t->fbody(axes, raxes), local);
      if (!planned) continue;
      // Within 16 KB in all, what every Vulkan device offers.
      int64_t bytes = planned->buf->size * std::max(planned->buf->dtype.bits / 8, 4);  // as GLSL declares it
      if (shared_bytes + bytes > 16384) continue;
      shared_bytes += bytes;
      tiles.push_back(*planned);
      SharedTile st = *planned;
      resolver.override_reads(spec.input.get(), [st](const std::vector<Expr>& idx) {
        // Each index's inner part, less its least value (the planner
        // separated the same expressions).
        Expr flat = Expr(0);
        for (size_t d = 0; d < idx.size(); d++) {
          auto sep = separate(idx[d], st.inner);
          internal_assert(sep) << "cache_shared: a read of " << st.input.name() << " changed after planning";
          flat = flat * Expr(st.extent[d]) + (sep->second - Expr(st.lo[d]));
        }
        return tir::Load::make(st.buf, flat);
      });
    }
    Expr formula = interior ? t->fbody_interior(axes, raxes) : t->fbody(axes, raxes);
    Stmt update = resolver.build({formula}, [&](const std::vector<Expr>& v) {
      return tir::Store::make(reg, reg_index, combine(t->reduce_kind, tir::Load::make(reg, reg_index), v[0]));
    });
    update = guard(reduce_guards, guard(tile.empty() ? std::vector<Expr>() : spatial_guards, update));
    size_t r_last = first_reduce;  // the innermost reduction loop
    for (size_t i = first_reduce; i < stage.leaves.size(); i++)
      if (stage.leaves[i]->reduce) r_last = i;
    auto wrap = [&](size_t i, Stmt body) {
      auto& l = stage.leaves[i];
      if (i == r_last && !stage.prefetches.empty())
        if (Stmt p = prefetch_stmt(stage, body, r_last, buffer_of); p.defined()) body = tir::Block::make({p, body});
      std::vector<Stmt> seq;
      for (auto& st : tiles)
        if (st.loop == i) seq.push_back(fill_shared_tile(st, stage.leaves[local]->var, stage.leaves[local]->extent, buffer_of));
      if (!seq.empty()) {
        seq.push_back(tir::Barrier::make());  // the tiles are complete
        seq.push_back(body);
        seq.push_back(tir::Barrier::make());  // and read by all before the next fill
        body = tir::Block::make(seq);
      }
      return loop(l, body);
    };
    for (size_t i = stage.leaves.size(); i-- > inner_begin;) update = wrap(i, update);
    if (two_level) {
      Stmt load = over_inner(tir::Store::make(reg, reg_index, tir::Load::make(acc, acc_index)));
      Stmt store = over_inner(tir::Store::make(acc, acc_index, tir::Load::make(reg, reg_index)));
      update = tir::Allocate::make(reg, tir::Block::make({load, update, store}));
      for (size_t i = inner_begin; i-- > first_reduce;) update = wrap(i, update);
    }
    for (auto& st : tiles) update = tir::Allocate::make(st.buf, update, tir::MemScope::Shared);
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
    for (size_t i = first_reduce; i-- > 0;) body = loop(stage.leaves[i], body);
    return body;
  }
  body = guard(spatial_guards, body);
  for (size_t i = stage.leaves.size(); i-- > 0;)
    if (!stage.leaves[i]->reduce) body = loop(stage.leaves[i], body);
  return body;
}

}  // namespace

Stmt lower_stage(const Stage& stage, const tir::Buffer& out, const BufferOf& buffer_of, const Expr& store_offset,
                 const Epilogue& epilogue, bool host) {
  std::vector<GuardSpec> specs, unused;
  Indices axes;
  Stmt s = lower_stage_loops(stage, out, buffer_of, store_offset, epilogue, host, false, &specs, &axes);
  // Tiles away from the padding run the interior formula (no bounds checks).
  Expr loop_var;
  Expr cond = host ? Expr() : interior_condition(stage, axes, &loop_var);
  if (cond.defined()) {
    Stmt inside = lower_stage_loops(stage, out, buffer_of, store_offset, epilogue, host, true, &unused, &axes);
    s = merge_interior(s, inside, loop_var, cond);
  }
  return specs.empty() ? s : specialize_guards(s, specs);
}

}  // namespace kiln::te

namespace kiln::te {
namespace {

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

int reduction_lanes(const TensorNode* r) {
  bool kind = r->reduce_kind == ReduceKind::Sum || r->reduce_kind == ReduceKind::Max ||
              r->reduce_kind == ReduceKind::Min;
  if (r->kind != TensorNode::Kind::Reduce || !kind || !r->dtype.is_float() || r->dtype.bits != 32 || r->rdims.empty())
    return 0;
  const int64_t* extent = tir::as_const_int(r->rdims.back());
  int64_t lanes = extent ? lanes_for(*extent) : 16;  // a row sized per run: 16 lanes and a serial tail
  if (!lanes && *extent >= 64) lanes = 16;  // a long row the lanes do not divide: a serial tail
  if (!lanes) return 0;
  Indices raxes = fresh_indices("r", r->rdims.size());
  const Expr body = InlineComputes().mutate(r->fbody(fresh_indices("o", r->dims.size()), raxes));
  ReduceReads nested;
  nested.visit_expr(body);
  if (!nested.reads.empty()) return 0;
  // Every read moving with the innermost axis walks it as its last index.
  struct Reads : tir::IRVisitor {
    Expr last;        // the innermost reduction variable
    bool ok = true;   // no read found that moves with it otherwise
    using tir::IRVisitor::visit;
    void visit(const tir::ProducerLoad* op) override {
      for (size_t i = 0; i < op->indices.size(); i++)
        if (tir::uses_var(op->indices[i], last)) ok &= i + 1 == op->indices.size() && op->indices[i].same_as(last);
      tir::IRVisitor::visit(op);
    }
  } reads;
  reads.last = raxes.back();
  reads.visit_expr(body);
  return reads.ok ? (int)lanes : 0;
}

bool inline_reductions_vectorize(const Tensor& t) {
  if (t->kind != TensorNode::Kind::Compute) return false;
  const Expr body = InlineComputes().mutate(t->fcompute(fresh_indices("i", t.ndim())));  // `reads` point into it
  ReduceReads found;
  found.visit_expr(body);
  for (auto* load : found.reads)
    if (!reduction_lanes(static_cast<const TensorNode*>(load->producer.get()))) return false;
  return !found.reads.empty();
}

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
      auto extent = as_const_int(t.dims()[i]);
      bool unit_dim = extent && *extent == 1 && as_const_int(r->indices[i]) && *as_const_int(r->indices[i]) == 0;
      if (!r->indices[i].same_as(axes[i]) && !unit_dim) return Tensor();  // read elsewhere than t's own index
    }
  }
  auto anchor = std::static_pointer_cast<const TensorNode>(first->producer);
  if (anchor->dims.size() != t.ndim() || first->indices.size() != axes.size()) return Tensor();
  for (size_t i = 0; i < t.ndim(); i++)
    if (!tir::equal(tir::simplify(anchor->dims[i]), tir::simplify(t.dims()[i]))) return Tensor();
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
