// Default CPU schedules for the heavy reductions (TOPI-style, one function
// per operator class). They register-tile the output: a tile of spatial
// loops placed inside the reduction loops accumulates in registers (the
// tile is fully unrolled so LLVM's SLP vectorizer forms vector FMAs), and
// the outermost tile loop is bound to workgroup x so threads split it.
#pragma once

#include <string>

#include "target/target.h"
#include "te/schedule.h"
#include "tune/space.h"

namespace kiln::lower {

// A stage's workload for its schedule's knobs (tune/space.h): the
// schedule's name, the element type, the output and reduction extents and
// `variant` (the CPU and the GPU schedules').
tune::Knobs stage_knobs(const te::Stage& s, const char* schedule, tune::Tuning* tuning, const std::string& variant);

// Conv (NCHW, any group count) with output [N, M, OH, OW] and reduction [Cg, KH, KW].
void schedule_conv2d_cpu(te::Stage& s);
// 1x1, stride-1, unpadded conv: a GEMM over the flattened spatial axis (the
// vector lanes run along contiguous pixels of one channel).
void schedule_conv1x1_cpu(te::Stage& s);
// Conv in the blocked layout NCHWc: output [N, M/m, OH, OW, m], reduction
// [C/c, KH, KW, c]. The m channels of a block are one vector (vectorized);
// a tile of output pixels times channel blocks accumulates in `registers`
// vector registers minus a few, unrolled. Rows and channel tiles are split
// across threads; where the weights outgrow L2 on a small map, each thread
// streams a channel tile's `weights` once, prefetched, over the whole map.
// `depthwise`: one input channel per output channel (a grouped conv with
// one channel per group). Knobs (tune/space.h, workload "conv2d_blocked"):
// tile_w, tile_m, tile_h, stream, prefetch_kb, swap_bind. `variant`: what
// else the workload's key names (tune/space.h). `winograd_knob`: a conv the
// winograd graph pass could compute otherwise (graph::winograd_candidate):
// these knobs then matter only when its "winograd" knob is 0.
void schedule_conv2d_blocked_cpu(te::Stage& s, const te::Tensor& weights, int registers, bool depthwise,
                                 tune::Tuning* tuning, const std::string& variant, bool winograd_knob = false);
// Pooling over a blocked tensor [N, C/c, H, W, c]: the window loops run
// inside each output pixel, whose c channels are one vector.
void schedule_pool_blocked_cpu(te::Stage& s);
// MatMul/Gemm-like: output [..., M, N], one reduction axis K; vectors and
// accumulators sized for `target`. Knobs (workload "matmul", vector tiles):
// rows, rows_outer, k_block.
void schedule_matmul_cpu(te::Stage& s, const VectorInfo& target, tune::Tuning* tuning, const std::string& variant);
// (Its tile sizes: target/register_tiles.h, shared with the layout pass.)

}  // namespace kiln::lower
