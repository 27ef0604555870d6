#include "lower/schedules_gpu.h"

#include <algorithm>

#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

// Fuses `loops` (outermost first) into one and spreads it over invocations:
// local x within a workgroup, workgroup x (and y beyond 65535 groups).
// Returns false when there is nothing to spread (a single iteration).
bool bind_invocations(te::Stage& s, const std::vector<te::IterVar>& loops) {
  te::IterVar all = loops[0];
  for (size_t i = 1; i < loops.size(); i++) all = s.fuse(all, loops[i]);
  if (all->extent <= 1) return false;
  auto [groups, local] = s.split(all, kGpuWorkgroupSize);
  s.bind(local, tir::ForKind::LocalX);
  if (groups->extent <= kGpuMaxWorkgroupCount) {
    s.bind(groups, tir::ForKind::WorkgroupX);
    return true;
  }
  auto [y, x] = s.split(groups, kGpuMaxWorkgroupCount);
  internal_assert(y->extent <= kGpuMaxWorkgroupCount) << s.tensor.name() << ": too many elements for one dispatch";
  s.bind(y, tir::ForKind::WorkgroupY);
  s.bind(x, tir::ForKind::WorkgroupX);
  return true;
}

}  // namespace

void default_gpu_schedule(te::Stage& s) {
  if (s.axes.empty()) return;  // a scalar: one invocation
  bind_invocations(s, s.axes);
}

void schedule_register_tile_gpu(te::Stage& s, size_t a, int64_t ta, size_t b, int64_t tb) {
  if (s.reduce_axes.empty() || a >= s.axes.size() || b >= s.axes.size() || a == b) return default_gpu_schedule(s);
  ta = te::largest_divisor(s.axes[a]->extent, ta);
  tb = te::largest_divisor(s.axes[b]->extent, tb);
  std::vector<te::IterVar> outer, inner;
  for (size_t i = 0; i < s.axes.size(); i++) {
    if (i != a && i != b) {
      outer.push_back(s.axes[i]);
      continue;
    }
    auto [o, in] = s.split(s.axes[i], i == a ? ta : tb);
    outer.push_back(o);
    inner.push_back(in);
  }
  std::vector<te::IterVar> order = outer;
  order.insert(order.end(), s.reduce_axes.begin(), s.reduce_axes.end());
  order.insert(order.end(), inner.begin(), inner.end());
  s.reorder(order);
  for (auto& l : inner) s.unroll(l);
  bind_invocations(s, outer);
}

}  // namespace kiln::lower
