// vectorize, unroll, bind: set how a loop runs.
#include "support/diagnostics.h"
#include "te/schedule.h"

namespace kiln::te {

void Stage::vectorize(const IterVar& iv) {
  leaf_index(iv);
  iv->kind = tir::ForKind::Vectorized;
}

void Stage::unroll(const IterVar& iv) {
  leaf_index(iv);
  iv->kind = tir::ForKind::Unrolled;
}

void Stage::bind(const IterVar& iv, tir::ForKind axis) {
  size_t pos = leaf_index(iv);
  if (tir::is_local_loop(axis)) {
    // Invocations of a workgroup (GPU targets; serial on CPU). A reduction
    // loop bound here is shared by the invocations (te/lower.cpp).
    iv->kind = axis;
    return;
  }
  internal_assert(!iv->reduce) << "cannot bind reduction loop " << iv->name << " to a workgroup axis";
  internal_assert(axis == tir::ForKind::WorkgroupX || axis == tir::ForKind::WorkgroupY || axis == tir::ForKind::WorkgroupZ)
      << "bind takes a workgroup or local axis";
  for (size_t i = 0; i < pos; i++) {
    auto k = leaves[i]->kind;
    internal_assert(k == tir::ForKind::WorkgroupX || k == tir::ForKind::WorkgroupY || k == tir::ForKind::WorkgroupZ ||
                    leaves[i]->extent == 1)
        << "bound loop " << iv->name << " must be outside every serial loop";
  }
  iv->kind = axis;
}

}  // namespace kiln::te

namespace kiln::te {

void Stage::parallel(const IterVar& iv) {
  for (tir::ForKind axis : {tir::ForKind::WorkgroupX, tir::ForKind::WorkgroupY, tir::ForKind::WorkgroupZ}) {
    bool used = false;
    for (auto& l : leaves) used |= l->kind == axis;
    if (!used) return bind(iv, axis);
  }
  internal_error << "parallel: all three workgroup axes of " << tensor.name() << " are bound";
}

}  // namespace kiln::te
