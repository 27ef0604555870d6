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
  for (size_t i = 0; i < order.size(); i++) leaves[positions[i]] = order[i];
  // Reduction loops must stay inside every spatial loop.
  bool seen_reduce = false;
  for (auto& l : leaves) {
    internal_assert(!(seen_reduce && !l->reduce)) << "reorder would put spatial loop " << l->name
                                                  << " inside a reduction loop of " << tensor.name();
    seen_reduce |= l->reduce;
  }
}

}  // namespace kiln::te
