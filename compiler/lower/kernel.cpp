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

}  // namespace kiln
