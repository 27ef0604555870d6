#include "tir/verify.h"

#include <limits>
#include <set>

#include "support/diagnostics.h"
#include "tir/ir_printer.h"
#include "tir/ir_visitor.h"
#include "tir/simplify.h"

namespace kiln::tir {
namespace {

class Verifier : public IRVisitor {
 public:
  Verifier(const std::string& kernel, const std::vector<Buffer>& params) : kernel_(kernel) {
    for (size_t i = 0; i < params.size(); i++) {
      internal_assert(params[i]->binding == (int)i) << "kernel " << kernel << ": parameter " << i << " has binding "
                                                    << params[i]->binding;
      buffers_.insert(params[i].get());
    }
  }

 protected:
  const std::string& kernel_;
  std::set<const ExprNode*> vars_;
  std::set<const BufferNode*> buffers_;
  int loop_depth_ = 0;  // enclosing non-workgroup loops
  int if_depth_ = 0;    // enclosing conditionals
  std::set<ForKind> bound_axes_;

  void define(const Expr& v) {
    internal_assert(v.as<Var>()) << "kernel " << kernel_ << ": binding a non-Var";
    internal_assert(!vars_.count(v.get())) << "kernel " << kernel_ << ": Var " << v.as<Var>()->name << " bound twice";
    vars_.insert(v.get());
  }
  void check_buffer(const Buffer& b, const Expr& index) {
    internal_assert(buffers_.count(b.get())) << "kernel " << kernel_ << ": buffer " << b->name << " not in scope";
    internal_assert(index.type() == Index()) << "kernel " << kernel_ << ": index of " << b->name << " is not i64";
    if (auto c = as_const_int(index)) {
      internal_assert(*c >= 0 && *c < b->size) << "kernel " << kernel_ << ": constant index " << *c << " outside "
                                               << b->name << "[" << b->size << "]";
    }
  }

  void visit(const Var* op) override {
    // Shape symbols are the kernel's parameters, in scope everywhere.
    internal_assert(op->symbol >= 0 || vars_.count(op)) << "kernel " << kernel_ << ": Var " << op->name
                                                        << " used outside its scope";
  }
  void visit(const Load* op) override {
    check_buffer(op->buffer, op->index);
    IRVisitor::visit(op);
  }
  void visit(const ProducerLoad* op) override {
    internal_assert(false) << "kernel " << kernel_ << ": read of stage " << op->producer->name << " was not lowered";
  }
  void visit(const Let* op) override {
    visit_expr(op->value);
    define(op->var);
    visit_expr(op->body);
    vars_.erase(op->var.get());
  }
  void visit(const LetStmt* op) override {
    visit_expr(op->value);
    define(op->var);
    visit_stmt(op->body);
    vars_.erase(op->var.get());
  }
  void visit(const For* op) override {
    visit_expr(op->min);
    visit_expr(op->extent);
    bool wg = op->kind == ForKind::WorkgroupX || op->kind == ForKind::WorkgroupY || op->kind == ForKind::WorkgroupZ;
    if (wg) {
      internal_assert(loop_depth_ == 0) << "kernel " << kernel_ << ": workgroup loop inside a serial loop";
      internal_assert(!bound_axes_.count(op->kind)) << "kernel " << kernel_ << ": " << for_kind_name(op->kind) << " bound twice";
      auto ext = as_const_int(op->extent);
      auto mn = as_const_int(op->min);
      // A constant count, or one computed from shape symbols at run time (at
      // most its bound; over a dimension sized per run it has none, and the
      // runtime checks each run's count against 2^32 - 1).
      Interval range = bounds_of(op->extent);
      const bool unbounded = !ext && uses_unbounded_symbol(op->extent);
      bool symbolic = !ext && range.min >= 0 && (unbounded || range.max != std::numeric_limits<int64_t>::max());
      internal_assert(((ext && *ext >= 1) || symbolic) && mn && *mn == 0)
          << "kernel " << kernel_ << ": workgroup loop needs min 0 and a constant or symbolic extent";
      // A size, not a bug: the kernel ABI counts workgroups in 32 bits.
      int64_t most = ext ? *ext : range.max;
      user_assert(unbounded || most <= 0xffffffffLL) << "kernel " << kernel_ << " would need " << most
                                                     << " workgroups along one axis (at most 2^32 - 1): its tensors are too large";
      bound_axes_.insert(op->kind);
    } else {
      loop_depth_++;
    }
    define(op->var);
    visit_stmt(op->body);
    vars_.erase(op->var.get());
    if (!wg) loop_depth_--;
    // (The same axis may be bound again in another branch: loop partitioning
    // copies the loops inside a workgroup loop into its interior and border.)
    if (wg) bound_axes_.erase(op->kind);
  }
  void visit(const IfThenElse* op) override {
    visit_expr(op->cond);
    if_depth_++;
    visit_stmt(op->then_case);
    visit_stmt(op->else_case);
    if_depth_--;
  }
  void visit(const Barrier*) override {
    // Every invocation of the workgroup must reach it.
    internal_assert(if_depth_ == 0) << "kernel " << kernel_ << ": barrier under a condition";
  }
  void visit(const Store* op) override {
    check_buffer(op->buffer, op->index);
    internal_assert(op->value.type() == op->buffer->dtype) << "kernel " << kernel_ << ": store type mismatch";
    IRVisitor::visit(op);
  }
  void visit(const Prefetch* op) override {
    // Any index: a prefetch past the end is a hint, not an access.
    internal_assert(buffers_.count(op->buffer.get())) << "kernel " << kernel_ << ": buffer " << op->buffer->name << " not in scope";
    internal_assert(op->index.type() == Index()) << "kernel " << kernel_ << ": prefetch index is not i64";
    IRVisitor::visit(op);
  }
  void visit(const Allocate* op) override {
    internal_assert(op->buffer->binding < 0) << "kernel " << kernel_ << ": Allocate of a parameter";
    buffers_.insert(op->buffer.get());
    visit_stmt(op->body);
    buffers_.erase(op->buffer.get());
  }
};

}  // namespace

void verify_kernel(const std::string& kernel_name, const Stmt& body, const std::vector<Buffer>& params) {
  Verifier v(kernel_name, params);
  v.visit_stmt(body);
}

}  // namespace kiln::tir
