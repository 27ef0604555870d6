// cache_shared: a GPU shared-memory tile of a reduction's input (lowered in
// te/lower.cpp, where the reads and their region are known).
#include "support/diagnostics.h"
#include "te/schedule.h"

namespace kiln::te {

void Stage::cache_shared(const Tensor& input, const IterVar& loop) {
  leaf_index(loop);
  internal_assert(tensor->kind == TensorNode::Kind::Reduce) << "cache_shared: " << tensor.name() << " is not a reduction";
  internal_assert(loop->reduce) << "cache_shared: " << loop->name << " is not a reduction loop";
  shared_caches.push_back({input, loop});
}

}  // namespace kiln::te
