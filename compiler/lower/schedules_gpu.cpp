#include "lower/schedules_gpu.h"

#include <algorithm>

#include "lower/schedules_cpu.h"
#include "support/diagnostics.h"
#include "support/int_math.h"

namespace kiln::lower {
namespace {

// Binds `groups` to workgroup x, or y and x beyond 65535 groups.
void bind_groups(te::Stage& s, te::IterVar groups) {
  if (groups->extent <= kGpuMaxWorkgroupCount) return s.bind(groups, tir::ForKind::WorkgroupX);
  auto [y, x] = s.split(groups, kGpuMaxWorkgroupCount);
  internal_assert(y->extent <= kGpuMaxWorkgroupCount) << s.tensor.name() << ": too many elements for one dispatch";
  s.bind(y, tir::ForKind::WorkgroupY);
  s.bind(x, tir::ForKind::WorkgroupX);
}

// Fuses `loops` (outermost first) into one and spreads it over invocations:
// local x within a workgroup, workgroup x (and y beyond 65535 groups).
// Returns false when there is nothing to spread (a single iteration).
bool bind_invocations(te::Stage& s, const std::vector<te::IterVar>& loops) {
  te::IterVar all = loops[0];
  for (size_t i = 1; i < loops.size(); i++) all = s.fuse(all, loops[i]);
  if (all->extent <= 1) return false;
  auto [groups, local] = s.split(all, kGpuWorkgroupSize);
  s.bind(local, tir::ForKind::LocalX);
  bind_groups(s, groups);
  return true;
}

// A block of work per workgroup: `lanes` on its invocations, `groups` on
// the workgroups, each invocation's register tile `unrolled`.
void bind_block(te::Stage& s, te::IterVar lanes, te::IterVar groups, std::initializer_list<te::IterVar> unrolled) {
  s.bind(lanes, tir::ForKind::LocalX);
  bind_groups(s, groups);
  for (auto& l : unrolled) s.unroll(l);
}

// A GPU workload's variant: "smem" added when the compile may use shared
// memory (--vulkan-shared-memory=on), whose spaces have other knobs.
std::string with_shared_memory(const std::string& variant, bool shared) {
  if (!shared) return variant;
  return variant.empty() ? "smem" : variant + " smem";
}

}  // namespace

void default_gpu_schedule(te::Stage& s) {
  if (s.axes.empty()) return;  // a scalar: one invocation
  bind_invocations(s, s.axes);
}

void schedule_register_tile_gpu(te::Stage& s, size_t a, int64_t ta, size_t b, int64_t tb, int64_t min_invocations) {
  if (s.reduce_axes.empty() || a >= s.axes.size() || b >= s.axes.size() || a == b) return default_gpu_schedule(s);
  // The largest divisor of each axis up to the tile size; where that is
  // under half of it (7 pixels: 1), the tile size itself, the last tile
  // guarded (7 = 4 + 3 wastes 1/8 where 1 x 4 would reload the weights 4x).
  auto size = [](int64_t extent, int64_t t) {
    int64_t d = largest_divisor(extent, t);
    return d * 2 <= t && extent > t ? t : d;
  };
  ta = size(s.axes[a]->extent, ta);
  tb = size(s.axes[b]->extent, tb);
  // Smaller tiles where the big ones would leave a large GPU idle.
  auto invocations = [&] {
    int64_t n = 1;
    for (size_t i = 0; i < s.axes.size(); i++)
      n *= i == a ? ceil_div(s.axes[i]->extent, ta) : i == b ? ceil_div(s.axes[i]->extent, tb) : s.axes[i]->extent;
    return n;
  };
  while (invocations() < min_invocations && (ta > 1 || tb > 1)) {
    if (ta >= tb) ta = size(s.axes[a]->extent, ta / 2);
    else tb = size(s.axes[b]->extent, tb / 2);
  }
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

void schedule_matmul_gpu(te::Stage& s, const te::Tensor& a, const te::Tensor& b, bool shared, tune::Tuning* tuning,
                         const std::string& variant) {
  size_t r = s.axes.size();
  if (r < 2 || s.reduce_axes.size() != 1) return default_gpu_schedule(s);
  auto i = s.axes[r - 2], j = s.axes[r - 1], k = s.reduce_axes[0];
  // The knobs (workload "matmul_gpu"). With shared memory: whether to use
  // it, and then the tile per invocation, the invocations per side of the
  // workgroup (16 or 64 of them: at most the portable 128) and the slice of
  // K copied at once (a and b's slices: at most 16 KB, the portable
  // maxComputeSharedMemorySize); else the register tile's rows and columns.
  tune::Knobs knobs = stage_knobs(s, "matmul_gpu", tuning, with_shared_memory(variant, shared));
  int64_t tile = 4, side = 8, depth = 16;  // 4x4 per invocation, 8x8 invocations, K tiles of 16
  const bool can_share = shared && i->extent >= 2 * tile && j->extent >= 2 * tile && k->extent >= depth;
  bool use_shared = false;
  if (can_share) {
    std::vector<int64_t> tiles, depths;
    for (int64_t t : {2, 4, 8})
      if (2 * t <= std::min(i->extent, j->extent)) tiles.push_back(t);
    // (a's and b's slices, 2 x 64 x depth elements at the largest block, within 16 KB)
    const int64_t element_bytes = std::max<int64_t>(1, std::max(a.dtype().bits, b.dtype().bits) / 8);
    for (int64_t d : {8, 16, 32})
      if (d <= k->extent && 2 * 64 * d * element_bytes <= (16 << 10)) depths.push_back(d);
    use_shared = knobs.get("shared", {0, 1}, 1) != 0;
    tile = knobs.get("tile", tiles, tile, "shared", 1);
    side = knobs.get("side", {4, 8}, side, "shared", 1);
    depth = knobs.get("depth", depths, depth, "shared", 1);
  }
  const std::string register_tile_if = can_share ? "shared" : "";
  int64_t ti = knobs.get("tile_i", {1, 2, 4, 8}, 4, register_tile_if, 0);
  int64_t tj = knobs.get("tile_j", {1, 2, 4, 8}, 4, register_tile_if, 0);
  if (!use_shared) return schedule_register_tile_gpu(s, r - 2, ti, r - 1, tj);
  auto [io, ii] = s.split(i, side * tile);
  auto [ig, it] = s.split(ii, tile);
  auto [jo, ji] = s.split(j, side * tile);
  auto [jg, jt] = s.split(ji, tile);
  auto [ko, ki] = s.split(k, depth);
  std::vector<te::IterVar> order(s.axes.begin(), s.axes.end() - 2);
  for (auto& l : {io, jo, ig, jg, ko, ki, it, jt}) order.push_back(l);
  s.reorder(order);
  te::IterVar lanes = s.fuse(ig, jg);
  te::IterVar groups = jo;
  while (s.leaf_index(groups) > 0) groups = s.fuse(s.leaves[s.leaf_index(groups) - 1], groups);
  bind_block(s, lanes, groups, {it, jt});
  s.cache_shared(a, ko);
  s.cache_shared(b, ko);
}

void schedule_conv2d_gpu(te::Stage& s, const te::Tensor& xpad, const te::Tensor& w, bool shared, bool depthwise,
                         tune::Tuning* tuning, const std::string& variant) {
  if (s.axes.size() != 4 || s.reduce_axes.size() != 3) return default_gpu_schedule(s);
  auto n = s.axes[0], m = s.axes[1], oh = s.axes[2], ow = s.axes[3];
  // (Channel counts that tile evenly: a slice of 8 for C = 3 would be 5/8 waste.)
  // Desktop-class GPUs (`shared`) need many workgroups: a small map (SqueezeNet's
  // 13x13 at 256 channels: 64 blocks) runs as register tiles, made small enough
  // to fill the GPU (docs/vulkan.md, "On a real GPU").
  int64_t blocks = n->extent * ceil_div(m->extent, 16) * ceil_div(oh->extent, 8) * ceil_div(ow->extent, 8);
  const bool can_share = shared && !depthwise && m->extent % 16 == 0 && s.reduce_axes[0]->extent % 8 == 0 &&
                         oh->extent >= 8 && ow->extent >= 8 && blocks >= kGpuMinWorkgroups;
  // The knobs (workload "conv2d_gpu"): where the shared-memory block could
  // run, whether it does; the register tile's channels and pixels.
  tune::Knobs knobs = stage_knobs(s, "conv2d_gpu", tuning, with_shared_memory(variant, shared));
  const bool use_shared = can_share && knobs.get("shared", {0, 1}, 1) != 0;
  const std::string register_tile_if = can_share ? "shared" : "";
  int64_t tm = knobs.get("tile_m", {1, 2, 4, 8}, depthwise ? 1 : 4, register_tile_if, 0);
  int64_t tw = knobs.get("tile_w", {1, 2, 4, 8}, 4, register_tile_if, 0);
  if (!use_shared) return schedule_register_tile_gpu(s, 1, tm, 3, tw, shared ? kGpuMinInvocations : 0);
  auto [mo, mr] = s.split(m, 16);
  auto [mg, mt] = s.split(mr, 4);
  auto [oho, ohi] = s.split(oh, 8);
  auto [owo, owr] = s.split(ow, 8);
  auto [owg, owt] = s.split(owr, 4);
  auto [co, ci] = s.split(s.reduce_axes[0], 8);
  s.reorder({n, mo, oho, owo, mg, ohi, owg, co, ci, s.reduce_axes[1], s.reduce_axes[2], mt, owt});
  te::IterVar lanes = s.fuse(s.fuse(mg, ohi), owg);  // 4 x 8 x 2 = 64 invocations
  te::IterVar groups = s.fuse(s.fuse(s.fuse(n, mo), oho), owo);
  bind_block(s, lanes, groups, {mt, owt});
  s.cache_shared(xpad, co);
  s.cache_shared(w, co);
}

bool reduce_fits_shared_gpu(const te::Stage& s) {
  if (s.reduce_axes.empty()) return false;
  int64_t outputs = 1, length = 1;
  for (auto& a : s.axes) outputs *= a->extent;
  for (auto& r : s.reduce_axes) length *= r->extent;
  // Worth it where outputs alone would not fill a GPU and each is long: a
  // classifier's softmax row, layer norms over a few hundred rows.
  return length >= 128 && outputs <= 16384;
}

bool schedule_reduce_shared_gpu(te::Stage& s) {
  if (!reduce_fits_shared_gpu(s)) return false;
  te::IterVar r = s.reduce_axes[0];
  for (size_t i = 1; i < s.reduce_axes.size(); i++) r = s.fuse(r, s.reduce_axes[i]);
  auto [ro, rl] = s.split(r, kGpuWorkgroupSize);
  s.bind(rl, tir::ForKind::LocalX);
  if (!s.axes.empty()) {
    te::IterVar o = s.axes[0];
    for (size_t i = 1; i < s.axes.size(); i++) o = s.fuse(o, s.axes[i]);
    bind_groups(s, o);
  }
  return true;
}

}  // namespace kiln::lower
