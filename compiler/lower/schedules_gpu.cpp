#include "lower/schedules_gpu.h"

#include "support/diagnostics.h"

namespace kiln::lower {

void default_gpu_schedule(te::Stage& s) {
  if (s.axes.empty()) return;  // a scalar: one invocation
  te::IterVar all = s.axes[0];
  for (size_t i = 1; i < s.axes.size(); i++) all = s.fuse(all, s.axes[i]);
  if (all->extent <= 1) return;
  auto [groups, local] = s.split(all, kGpuWorkgroupSize);
  s.bind(local, tir::ForKind::LocalX);
  if (groups->extent <= kGpuMaxWorkgroupCount) {
    s.bind(groups, tir::ForKind::WorkgroupX);
    return;
  }
  auto [y, x] = s.split(groups, kGpuMaxWorkgroupCount);
  internal_assert(y->extent <= kGpuMaxWorkgroupCount) << s.tensor.name() << ": too many elements for one dispatch";
  s.bind(y, tir::ForKind::WorkgroupY);
  s.bind(x, tir::ForKind::WorkgroupX);
}

}  // namespace kiln::lower
