// Default CPU schedules for the heavy reductions (TOPI-style, one function
// per operator class). They register-tile the output: a tile of spatial
// loops placed inside the reduction loops accumulates in registers (the
// tile is fully unrolled so LLVM's SLP vectorizer forms vector FMAs), and
// the outermost tile loop is bound to workgroup x so threads split it.
#pragma once

#include "te/schedule.h"

namespace kiln::lower {

// Conv (NCHW, any group count) with output [N, M, OH, OW] and reduction [Cg, KH, KW].
void schedule_conv2d_cpu(te::Stage& s);
// 1x1, stride-1, unpadded conv: a GEMM over the flattened spatial axis (the
// vector lanes run along contiguous pixels of one channel).
void schedule_conv1x1_cpu(te::Stage& s);
// MatMul/Gemm-like: output [..., M, N], one reduction axis K.
void schedule_matmul_cpu(te::Stage& s);

}  // namespace kiln::lower
