#include "lower/schedules_cpu.h"

#include <algorithm>

namespace kiln::lower {
namespace {

// The largest of `options` that divides n (tiles never need guards), else 1.
int64_t tile_for(int64_t n, std::initializer_list<int64_t> options) {
  for (int64_t t : options)
    if (t <= n && n % t == 0) return t;
  return 1;
}

// Binds `iv` to workgroup x after fusing it with every outer loop (so the
// bound loop is outermost, as bind requires).
void bind_outer(te::Stage& s, te::IterVar iv) {
  while (s.leaf_index(iv) > 0) iv = s.fuse(s.leaves[s.leaf_index(iv) - 1], iv);
  s.bind(iv, tir::ForKind::WorkgroupX);
}

}  // namespace

void schedule_conv2d_cpu(te::Stage& s) {
  if (s.axes.size() != 4 || s.reduce_axes.size() != 3) return te::default_cpu_schedule(s);
  auto n = s.axes[0], m = s.axes[1], oh = s.axes[2], ow = s.axes[3];
  auto c = s.reduce_axes[0], kh = s.reduce_axes[1], kw = s.reduce_axes[2];
  int64_t tw = tile_for(ow->extent, {8, 7, 6, 5, 4});
  int64_t tm = tile_for(m->extent, {std::max<int64_t>(32 / tw, 1), 2});  // <= 32 accumulators (see below)
  auto [mo, mi] = s.split(m, tm);
  auto [wo, wi] = s.split(ow, tw);
  s.reorder({n, mo, oh, wo, c, kh, kw, mi, wi});
  bind_outer(s, mo);
  s.unroll(mi);
  s.unroll(wi);
}

void schedule_conv1x1_cpu(te::Stage& s) {
  if (s.axes.size() != 4 || s.reduce_axes.size() != 3) return te::default_cpu_schedule(s);
  auto n = s.axes[0], m = s.axes[1];
  auto c = s.reduce_axes[0], kh = s.reduce_axes[1], kw = s.reduce_axes[2];
  auto f = s.fuse(s.axes[2], s.axes[3]);
  // At most 32 accumulators: LLVM's SLP vectorizer keeps that many in vector
  // registers (with 64 it gave up and left scalar code).
  // 16 pixels per tile even when 16 does not divide the pixel count: the
  // last tile's guard is split off by loop partitioning.
  int64_t tf = f->extent >= 16 ? 16 : tile_for(f->extent, {8, 7, 4});
  int64_t tm = tile_for(m->extent, {std::max<int64_t>(32 / tf, 1), 2});
  auto [mo, mi] = s.split(m, tm);
  auto [fo, fi] = s.split(f, tf);
  s.reorder({n, mo, fo, c, kh, kw, mi, fi});
  bind_outer(s, mo);
  s.unroll(mi);
  s.unroll(fi);
}

void schedule_matmul_cpu(te::Stage& s) {
  if (s.axes.size() < 2 || s.reduce_axes.size() != 1) return te::default_cpu_schedule(s);
  size_t r = s.axes.size();
  auto i = s.axes[r - 2], j = s.axes[r - 1], k = s.reduce_axes[0];
  // 16 output columns per tile (guarded tail, split off by loop partitioning)
  // and as many rows as keep the tile at 32 accumulators.
  int64_t tj = j->extent >= 16 ? 16 : tile_for(j->extent, {8, 4, 2});
  int64_t ti = tile_for(i->extent, {std::max<int64_t>(32 / tj, 1), 2});
  auto [io, ii] = s.split(i, ti);
  auto [jo, ji] = s.split(j, tj);
  std::vector<te::IterVar> order(s.axes.begin(), s.axes.end() - 2);
  for (auto& v : {io, jo, k, ii, ji}) order.push_back(v);
  s.reorder(order);
  // Parallelize the larger of the two outer tile loops (together with the batch loops).
  bind_outer(s, io->extent > 1 || jo->extent == 1 ? io : jo);
  s.unroll(ii);
  s.unroll(ji);
}

}  // namespace kiln::lower
