#include "lower/schedules_cpu.h"

#include <algorithm>

#include "support/int_math.h"
#include "target/register_tiles.h"

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

// Unroll depth: `loop` in unrolled steps of `step`, the pair taking its
// place in the loop `order` (a step of 1 leaves it as it is, for LLVM).
void unroll_steps(te::Stage& s, std::vector<te::IterVar>& order, const te::IterVar& loop, int64_t step) {
  if (step <= 1) return;
  auto [outer, inner] = s.split(loop, step);
  auto at = std::find(order.begin(), order.end(), loop);
  *at = inner;
  order.insert(at, outer);
  s.unroll(inner);
}

}  // namespace

tune::Knobs stage_knobs(const te::Stage& s, const char* schedule, tune::Tuning* tuning, const std::string& variant) {
  std::vector<int64_t> out, reduce;
  for (auto& a : s.axes) out.push_back(a->extent);
  for (auto& r : s.reduce_axes) reduce.push_back(r->extent);
  return tune::Knobs(tuning, schedule, s.tensor.dtype().str(), out, reduce, variant);
}

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

void schedule_conv2d_blocked_cpu(te::Stage& s, const te::Tensor& weights, int registers, bool depthwise,
                                 tune::Tuning* tuning, const std::string& variant, bool winograd_knob) {
  if (s.axes.size() != 5 || s.reduce_axes.size() != 4) return te::default_cpu_schedule(s);
  tune::Knobs knobs = stage_knobs(s, "conv2d_blocked", tuning, variant);
  // A 3x3 conv the winograd graph pass may compute otherwise: these knobs
  // matter only for the direct kernel. (Not for another conv of the same
  // key, say one without padding, which is always direct.)
  if (winograd_knob && knobs.declared("winograd")) knobs.guard("winograd", 0);
  auto n = s.axes[0], mo = s.axes[1], oh = s.axes[2], ow = s.axes[3], mi = s.axes[4];
  auto rc = s.reduce_axes[0], rh = s.reduce_axes[1], rw = s.reduce_axes[2], ri = s.reduce_axes[3];
  // Accumulators: all vector registers but a few for the weights and the
  // broadcast inputs.
  int64_t budget = std::max(registers - 4, 4);
  int64_t block_weight_bytes = mi->extent * 4;
  for (auto& r : s.reduce_axes) block_weight_bytes *= r->extent;
  int64_t weight_bytes = block_weight_bytes * mo->extent;
  // Two loop orders. Both keep a tile of tw pixels (th rows of them) times
  // tm channel blocks in registers, the pixels outside the channel blocks:
  // each broadcast input serves all tm weight vectors at once, so only
  // tm + 1 registers hold operands (with the channel blocks outside, LLVM
  // keeps all tw broadcasts live and spills accumulators).
  //
  // Streaming, for weights beyond L2 on small maps (ResNet's last stage:
  // 9.4 MB of weights a conv, 7x7 pixels): a workgroup is one channel tile
  // over the whole map. Its input-channel loop is outermost, so each slice
  // of the weights serves every row while it is in L1, and the next slice
  // is prefetched meanwhile: the weights stream from DRAM once, evenly,
  // while the FMAs run (rows outside the channel loop instead stalled on
  // DRAM in each tile's first row). The map's accumulators live in a local
  // tile (L1) between channel slices; each row tile's in registers.
  //
  // The tile: tw (a divisor of the row) x tm (a divisor of the blocks, at
  // most tm_limit) x th rows filling the most accumulators; on a tie, two
  // channel blocks or more, so that each broadcast input serves two weight
  // vectors (one load per FMA was ~5% slower on ResNet-18), then the wider
  // row. (A 7-pixel row on a 16-register machine gets 7 x 1, or 1 x 2 x 6
  // when rows may join, not 1 x 4.)
  //
  // Depthwise (one input channel per output channel): the tile's channel
  // blocks would share no input (each reads its own channel), so the tile is
  // one block by at most half the accumulators, and the rows go to
  // workgroup x, so that a thread walks a block's plane in order. (kilnc
  // tune found it: MobileNetV2's depthwise convolutions ran 1.3-2x faster.)
  auto pick = [&](int64_t tm_limit, bool rows, int64_t& tw, int64_t& tm, int64_t& th) {
    int64_t accumulators = depthwise ? std::max<int64_t>(budget / 2, 4) : budget;
    tw = tm = th = 1;
    for (int64_t w = 1; w <= std::min<int64_t>(ow->extent, accumulators); w++) {
      if (ow->extent % w) continue;
      for (int64_t m = std::min<int64_t>(accumulators / w, depthwise ? 1 : tm_limit); m >= 1; m--) {
        if (mo->extent % m) continue;
        int64_t h = rows ? std::max<int64_t>(1, std::min(accumulators / (w * m), oh->extent)) : 1;
        int64_t have = tw * tm * th, got = w * m * h;
        if (got > have || (got == have && ((m >= 2) > (tm >= 2) || ((m >= 2) == (tm >= 2) && w > tw)))) {
          tw = w;
          tm = m;
          th = h;
        }
        break;  // the largest m that divides; smaller ones fill fewer accumulators
      }
    }
  };
  int64_t tw, tm, th;
  pick(2, true, tw, tm, th);
  int64_t map_bytes = (oh->extent + th - 1) / th * th * ow->extent * tm * mi->extent * 4;
  bool stream = weight_bytes >= (512 << 10) && map_bytes <= (16 << 10) && tw * tm * th >= budget / 2;
  int64_t stream_th = th;
  if (!stream) {  // the hand-written tile of the other loop order
    int64_t tm_cache = std::max<int64_t>(1, (1024 << 10) / block_weight_bytes);
    pick(std::min<int64_t>(4, tm_cache), false, tw, tm, th);
  }
  // The knobs: the tile, the loop order (streaming where the map's
  // accumulators fit a local tile of at most 64 KB), the prefetch distance
  // and which loop goes to workgroup x.
  tw = knobs.get("tile_w", tune::divisors(ow->extent, budget), tw);
  tm = knobs.get("tile_m", tune::divisors(mo->extent, 8), tm);
  int64_t map_limit = oh->extent * ow->extent * mo->extent * mi->extent * 4;  // the largest map tile
  std::vector<int64_t> may_stream = {0};
  if (std::min<int64_t>(map_limit, (oh->extent + budget) * ow->extent * 8 * mi->extent * 4) <= (64 << 10)) may_stream.push_back(1);
  // Every knob is declared whichever order the point picks, so that the
  // space the tuner sees is the same in every compile.
  bool can_stream = stream || may_stream.size() > 1;
  stream = knobs.get("stream", may_stream, stream ? 1 : 0) != 0;
  int64_t stream_rows = can_stream ? knobs.get("tile_h", tune::divisors(oh->extent, budget), stream_th, "stream", 1) : 1;
  int64_t ahead_kb = can_stream ? knobs.get("prefetch_kb", {0, 16, 64, 256}, 64, "stream", 1) : 64;
  bool small_weights =
      knobs.get("swap_bind", {0, 1}, !depthwise && weight_bytes <= (512 << 10) ? 1 : 0, "stream", 0) != 0;
  th = stream ? stream_rows : 1;
  // Unroll depth: the input channels of a block in unrolled steps.
  int64_t unroll = knobs.get("unroll", tune::divisors(ri->extent, 16), 1);
  auto channel_loops = [&](std::vector<te::IterVar> order) {
    unroll_steps(s, order, ri, unroll);
    return order;
  };
  if (stream) {
    auto [moo, moi] = s.split(mo, tm);
    auto [owo, owi] = s.split(ow, tw);
    auto [oho, ohi] = s.split(oh, th);  // the last row tile's guard is split off by loop partitioning
    // A slice is enough input channels for 64 FMA steps per row tile (a
    // 1x1 conv takes 4 channel blocks), so that moving the row tile's
    // accumulators in and out of registers costs a few percent at most.
    int64_t steps = rh->extent * rw->extent * ri->extent;
    auto [rco, rci] = s.split(rc, largest_divisor(rc->extent, std::max<int64_t>(1, 64 / steps)));
    s.reorder(channel_loops({n, moo, rco, oho, owo, rci, rh, rw, ri, ohi, owi, moi, mi}));
    s.bind(s.fuse(n, moo), tir::ForKind::WorkgroupX);
    s.unroll(ohi);
    s.unroll(owi);
    s.unroll(moi);
    s.vectorize(mi);
    // 64 KB ahead: a few slices of a 3x3 conv; for a 1x1 conv (32 KB of
    // weights a workgroup) the addresses run on into the next workgroup's
    // weights, which the same thread runs next. (16 KB ahead left ResNet-18's
    // last 1x1 conv at 76% of peak, DRAM-bound at each workgroup's start.)
    int64_t slice_bytes = block_weight_bytes / rco->extent * tm;
    if (ahead_kb) s.prefetch(weights, rco, std::max<int64_t>(1, ((ahead_kb << 10) + slice_bytes - 1) / slice_bytes));
    return;
  }
  // Rows outside the channel loop: channel blocks per tile as many as the
  // accumulators allow, while the weights of a tile (reused by every row)
  // stay within half of a typical L2 (pick() above).
  auto [moo, moi] = s.split(mo, tm);
  auto [owo, owi] = s.split(ow, tw);
  // Depthwise (one input channel per output channel): the kernel's columns
  // inside the pixels and unrolled, so that neighbouring pixels share their
  // input loads (tw + KW - 1 loads a row instead of tw * KW at stride 1),
  // each live for KW pixels only.
  bool depthwise_row = rc->extent == 1 && ri->extent == 1 && rw->extent <= 7;
  if (depthwise_row) s.reorder(channel_loops({n, moo, oh, owo, rc, rh, ri, owi, rw, moi, mi}));
  else s.reorder(channel_loops({n, moo, oh, owo, rc, rh, rw, ri, owi, moi, mi}));
  // Rows on workgroup x, channel blocks (with the batch) on y: consecutive
  // workgroups of a thread share a tile's weights. Rows stay a loop of their
  // own so that loop partitioning can take the padding guards out of the
  // interior rows.
  // When all the weights fit in L2 anyway (small convs on large maps), the
  // input row is the bigger stream: channel tiles go on x instead, so
  // consecutive workgroups share the row.
  auto f = s.fuse(n, moo);
  s.bind(f, small_weights ? tir::ForKind::WorkgroupX : tir::ForKind::WorkgroupY);
  s.bind(oh, small_weights ? tir::ForKind::WorkgroupY : tir::ForKind::WorkgroupX);
  s.unroll(moi);
  s.unroll(owi);
  if (depthwise_row) s.unroll(rw);
  s.vectorize(mi);
}

void schedule_pool_blocked_cpu(te::Stage& s) {
  if (s.axes.size() != 5) return te::default_cpu_schedule(s);
  std::vector<te::IterVar> order(s.axes.begin(), s.axes.end() - 1);
  order.insert(order.end(), s.reduce_axes.begin(), s.reduce_axes.end());
  order.push_back(s.axes[4]);
  s.reorder(order);
  bind_outer(s, s.axes[2]);
  s.vectorize(s.axes[4]);
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

void schedule_matmul_cpu(te::Stage& s, const VectorInfo& target, tune::Tuning* tuning, const std::string& variant) {
  if (s.axes.size() < 2 || s.reduce_axes.size() != 1) return te::default_cpu_schedule(s);
  size_t r = s.axes.size();
  auto i = s.axes[r - 2], j = s.axes[r - 1], k = s.reduce_axes[0];
  std::vector<te::IterVar> order(s.axes.begin(), s.axes.end() - 2);
  int64_t lanes = matmul_lanes(j->extent, target);
  // A wide row no vector width divides (a 6625-class CTC head): full vectors
  // all the same, the last tile's lanes past the row masked (the guard of an
  // uneven split, split off by loop partitioning). B stays unpacked.
  const bool ragged = !lanes && target.lanes >= 4 && j->extent >= 4 * target.lanes;
  if (ragged) lanes = std::min(target.lanes, 16);
  if (lanes) {
    // Vector tile: `tv` vectors of `lanes` columns by `ti` rows, 16
    // accumulators at most; B's rows are vector loads, A's elements
    // broadcasts. The columns are the packed panel width when B is packed.
    int64_t tv = ragged ? 2 : matmul_panel_width(i->extent, j->extent, target) / lanes;
    int64_t ti = largest_divisor(i->extent, std::max<int64_t>(matmul_accumulators(target) / tv, 1));
    // The knobs (the columns stay the packed panel's): rows per tile, the
    // loop order, and K in blocks (the tile's column panel of partial sums
    // then lives in a local tile between blocks, at most 32 KB).
    tune::Knobs knobs = stage_knobs(s, "matmul", tuning, variant);
    ti = knobs.get("rows", tune::divisors(i->extent, std::max<int64_t>((target.registers - 2) / tv, 1)), ti);
    std::vector<int64_t> blocks = {0};
    for (int64_t b : {32, 64, 128, 256, 512})
      if (b < k->extent && k->extent % b == 0 && i->extent * tv * lanes * 4 <= (32 << 10)) blocks.push_back(b);
    int64_t k_block = knobs.get("k_block", blocks, 0, "rows_outer", 0);
    auto [io, ii] = s.split(i, ti);
    auto [jo, jv] = s.split(j, tv * lanes);
    auto [jt, jl] = s.split(jv, lanes);
    // Column tiles outermost (on threads): one tile's weights (a packed
    // panel, see graph/pass_layout.cpp) stay in cache for all row tiles.
    bool columns = !knobs.get("rows_outer", {0, 1}, jo->extent > 1 || io->extent == 1 ? 0 : 1);
    // Unroll depth: K in unrolled steps.
    std::vector<int64_t> unrolls = {1};
    for (int64_t u : {2, 4, 8})
      if (k->extent % u == 0) unrolls.push_back(u);
    int64_t unroll = knobs.get("unroll", unrolls, 1);
    te::IterVar inner = k;
    if (k_block && columns) {  // (rows outermost, the local tile would be a whole row panel)
      auto [ko, ki] = s.split(k, k_block);
      inner = ki;
      for (auto& v : {columns ? jo : io, ko, columns ? io : jo, ki, ii, jt, jl}) order.push_back(v);
    } else {
      for (auto& v : {columns ? jo : io, columns ? io : jo, k, ii, jt, jl}) order.push_back(v);
    }
    unroll_steps(s, order, inner, unroll);  // (k_block, a multiple of 32, is one of the steps')
    s.reorder(order);
    bind_outer(s, columns ? jo : io);
    s.unroll(ii);
    s.unroll(jt);
    s.vectorize(jl);
    return;
  }
  // Odd widths: a scalar tile unrolled for LLVM's SLP vectorizer, 16 columns
  // (guarded tail, split off by loop partitioning) by as many rows as keep
  // the tile at 32 accumulators.
  int64_t tj = j->extent >= 16 ? 16 : tile_for(j->extent, {8, 4, 2});
  int64_t ti = tile_for(i->extent, {std::max<int64_t>(32 / tj, 1), 2});
  auto [io, ii] = s.split(i, ti);
  auto [jo, ji] = s.split(j, tj);
  for (auto& v : {io, jo, k, ii, ji}) order.push_back(v);
  s.reorder(order);
  // Parallelize the larger of the two outer tile loops (together with the batch loops).
  bind_outer(s, io->extent > 1 || jo->extent == 1 ? io : jo);
  s.unroll(ii);
  s.unroll(ji);
}

}  // namespace kiln::lower
