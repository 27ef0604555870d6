// Conv 3x3 by Winograd's F(2x2, 3x3) or F(4x4, 3x3) in the blocked layout (see ops_winograd.cpp).
#pragma once

#include "target/target.h"
#include "lower/op_lowering.h"
#include "tune/space.h"

namespace kiln::lower {

// Lowers a Conv marked kiln_winograd=r (2 or 4) by the winograd graph pass.
void lower_conv_winograd(OpContext& ctx);
// The conv as a reduction (its formula; see ops_winograd.cpp): x blocked
// [N, C/c, H, W, c], u the transformed weights [M/m, a, a, C/c, c, m] (a = r + 2), out
// shape os [N, M/m, H, W, m] (r divides H and W).
te::Tensor winograd_conv(const te::Tensor& x, const te::Tensor& u, const graph::Shape& os);
// Its CPU schedule: a workgroup per row of r x r output tiles, tensorized into
// input transform, a^2 register-tiled GEMMs and output transform. x is the
// blocked input, u the transformed weights. Its register tile is a knob of
// the conv's workload (graph::winograd_register_tile; `tuning` null: the
// hand-written tile).
void schedule_conv2d_winograd_cpu(te::Stage& s, const te::Tensor& x, const te::Tensor& u, const VectorInfo& target,
                                  tune::Tuning* tuning);

}  // namespace kiln::lower
