// prefetch: read a reduction's input some iterations ahead (lowered in
// te/lower.cpp, where the reads of the input are known).
#include "support/diagnostics.h"
#include "te/schedule.h"

namespace kiln::te {

void Stage::prefetch(const Tensor& input, const IterVar& loop, int64_t offset) {
  leaf_index(loop);
  internal_assert(tensor->kind == TensorNode::Kind::Reduce) << "prefetch: " << tensor.name() << " is not a reduction";
  internal_assert(offset > 0) << "prefetch: offset must be positive";
  prefetches.push_back({input, loop, offset});
}

}  // namespace kiln::te
