#include "lower/kernel.h"

#include <algorithm>
#include <limits>

#include "support/diagnostics.h"
#include "tir/ir_printer.h"
#include "tir/ir_visitor.h"
#include "tir/simplify.h"

namespace kiln {

void set_launch_parameters(KernelDef& k) {
  k.workgroup_count = {1, 1, 1};
  k.workgroup_dynamic = {};
  struct Finder : tir::IRVisitor {
    KernelDef* k;
    using tir::IRVisitor::visit;
    void visit(const tir::For* op) override {
      int axis = op->kind == tir::ForKind::WorkgroupX ? 0
                 : op->kind == tir::ForKind::WorkgroupY ? 1
                 : op->kind == tir::ForKind::WorkgroupZ ? 2 : -1;
      if (axis >= 0) {
        if (auto ext = tir::as_const_int(op->extent)) {
          k->workgroup_count[axis] = (uint32_t)*ext;
        } else {
          // A run-time count (a loop over a symbolic extent): its largest value
          // here, at most 2^32 - 1 (an extent over an unbounded symbol may have
          // no bound: the runtime checks each run's count, docs/bundle.md).
          tir::Interval r = tir::bounds_of(op->extent);
          const int64_t most = (int64_t)std::numeric_limits<uint32_t>::max();
          internal_assert(tir::symbols_used(op->extent).size() > 0 && r.min >= 0 &&
                          (r.max <= most || tir::uses_unbounded_symbol(op->extent)))
              << "workgroup loop of " << k->name << " with extent " << tir::to_string(op->extent)
              << ": neither constant nor a bounded expression over shape symbols";
          k->workgroup_count[axis] = (uint32_t)std::clamp<int64_t>(r.max, 1, most);
          k->workgroup_dynamic[axis] = op->extent;
        }
      }
      tir::IRVisitor::visit(op);
    }
  } finder;
  finder.k = &k;
  finder.visit_stmt(k.body);
  k.symbols = tir::symbols_used(k.body);
}

}  // namespace kiln
