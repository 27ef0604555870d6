// tile: split two loops and order them xo, yo, xi, yi.
#include "te/schedule.h"

namespace kiln::te {

std::vector<IterVar> Stage::tile(const IterVar& x, const IterVar& y, int64_t fx, int64_t fy) {
  auto [xo, xi] = split(x, fx);
  auto [yo, yi] = split(y, fy);
  reorder({xo, yo, xi, yi});
  return {xo, yo, xi, yi};
}

}  // namespace kiln::te
