// tensorize: the loops from a given loop inward are replaced by a tensor
// intrinsic (a micro-kernel written in loop IR); see TensorIntrin.
#include "support/diagnostics.h"
#include "te/schedule.h"

namespace kiln::te {

void Stage::tensorize(const IterVar& iv, const TensorIntrin& in) {
  leaf_index(iv);
  internal_assert(in.emit) << "tensorize with an empty intrinsic";
  tensorized = iv;
  intrin = in;
}

}  // namespace kiln::te
