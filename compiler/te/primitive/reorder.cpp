// reorder: the given loops take the positions they occupy, in the given order.
#include <algorithm>

#include "support/diagnostics.h"
#include "te/schedule.h"

namespace kiln::te {

void Stage::reorder(const std::vector<IterVar>& order) {
  std::vector<size_t> positions;
  for (auto& iv : order) positions.push_back(leaf_index(iv));
  std::sort(positions.begin(), positions.end());
  internal_assert(std::adjacent_find(positions.begin(), positions.end()) == positions.end()) << "reorder names a loop twice";
  std::vector<IterVar> next = leaves;
  for (size_t i = 0; i < order.size(); i++) next[positions[i]] = order[i];
  // Spatial loops may move inside reduction loops (the reduction then
  // accumulates a tile: see te/lower.cpp), but bound loops stay outermost.
  // Checked before the stage changes, so a rejected reorder leaves it as it was.
  bool seen_reduce = false;
  for (auto& l : next) {
    bool bound = l->kind == tir::ForKind::WorkgroupX || l->kind == tir::ForKind::WorkgroupY ||
                 l->kind == tir::ForKind::WorkgroupZ;
    internal_assert(!(seen_reduce && bound)) << "reorder would put workgroup loop " << l->name
                                             << " inside a reduction loop of " << tensor.name();
    seen_reduce |= l->reduce;
  }
  leaves = next;
}

}  // namespace kiln::te
