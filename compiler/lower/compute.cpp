#include "lower/compute.h"

#include "lower/kernel.h"
#include "support/diagnostics.h"
#include "tir/ir_visitor.h"

namespace kiln {

std::array<uint32_t, 3> workgroup_count_of(const tir::Stmt& body) {
  std::array<uint32_t, 3> count{1, 1, 1};
  struct Finder : tir::IRVisitor {
    std::array<uint32_t, 3>* count;
    using tir::IRVisitor::visit;
    void visit(const tir::For* op) override {
      int axis = op->kind == tir::ForKind::WorkgroupX ? 0
                 : op->kind == tir::ForKind::WorkgroupY ? 1
                 : op->kind == tir::ForKind::WorkgroupZ ? 2 : -1;
      if (axis >= 0) {
        auto ext = tir::as_const_int(op->extent);
        internal_assert(ext) << "workgroup loop with a non-constant extent";
        (*count)[axis] = (uint32_t)*ext;
      }
      tir::IRVisitor::visit(op);
    }
  } finder;
  finder.count = &count;
  finder.visit_stmt(body);
  return count;
}

namespace lower {

Expr flat_index(const graph::Shape& shape, const Indices& idx) {
  internal_assert(shape.size() == idx.size()) << "flat_index rank mismatch";
  Expr flat = Expr(0);
  for (size_t i = 0; i < shape.size(); i++) flat = flat * Expr(shape[i]) + idx[i];
  return flat;
}

Stmt loop_nest(const std::string& prefix, const graph::Shape& shape, const std::function<Stmt(const Indices&)>& body,
               bool bind_workgroup) {
  Indices vars;
  for (size_t i = 0; i < shape.size(); i++) vars.push_back(tir::Var::make(tir::Index(), prefix + std::to_string(i)));
  Stmt s = body(vars);
  int bound = -1;
  if (bind_workgroup) {
    for (size_t i = 0; i < shape.size(); i++)
      if (shape[i] > 1) {
        bound = (int)i;
        break;
      }
  }
  for (int i = (int)shape.size() - 1; i >= 0; i--) {
    auto kind = i == bound ? tir::ForKind::WorkgroupX : tir::ForKind::Serial;
    s = tir::For::make(vars[i], Expr(0), Expr(shape[i]), kind, s);
  }
  return s;
}

Stmt compute(const tir::Buffer& out, const graph::Shape& shape, const std::function<Expr(const Indices&)>& f,
             bool bind_workgroup) {
  return loop_nest(
      "i", shape, [&](const Indices& idx) { return tir::Store::make(out, flat_index(shape, idx), f(idx)); },
      bind_workgroup);
}

Stmt reduce(const std::string& name, tir::Type acc_type, Expr init, const graph::Shape& rshape,
            const std::function<Expr(const Expr& acc, const Indices& r)>& update,
            const std::function<Stmt(const Expr& acc)>& finish) {
  tir::Buffer acc = tir::make_buffer(name, acc_type, 1, -1);
  Expr acc_value = tir::Load::make(acc, Expr(0));
  Stmt init_s = tir::Store::make(acc, Expr(0), init);
  Stmt loop = loop_nest(
      "r", rshape, [&](const Indices& r) { return tir::Store::make(acc, Expr(0), update(acc_value, r)); }, false);
  return tir::Allocate::make(acc, tir::Block::make({init_s, loop, finish(acc_value)}));
}

Expr in_range(const Indices& idx, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi) {
  Expr cond;
  for (size_t i = 0; i < idx.size(); i++) {
    Expr c = Expr(lo[i]) <= idx[i] && idx[i] < Expr(hi[i]);
    cond = cond.defined() ? (cond && c) : c;
  }
  return cond.defined() ? cond : tir::IntImm::make(tir::Bool(), 1);
}

Expr padded_load(const tir::Buffer& buf, const graph::Shape& shape, const Indices& idx, Expr pad) {
  Indices clamped;
  std::vector<int64_t> lo(shape.size(), 0);
  for (size_t i = 0; i < shape.size(); i++) clamped.push_back(tir::clamp(idx[i], Expr(0), Expr(shape[i] - 1)));
  Expr value = tir::Load::make(buf, flat_index(shape, clamped));
  return tir::select(in_range(idx, lo, shape), value, pad);
}

Indices broadcast_index(const graph::Shape& in_shape, const Indices& out_idx) {
  internal_assert(in_shape.size() <= out_idx.size()) << "broadcast from a higher rank";
  size_t offset = out_idx.size() - in_shape.size();
  Indices r;
  for (size_t i = 0; i < in_shape.size(); i++) r.push_back(in_shape[i] == 1 ? Expr(0) : out_idx[offset + i]);
  return r;
}

}  // namespace lower
}  // namespace kiln
