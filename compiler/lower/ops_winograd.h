// Conv 3x3 by Winograd's F(2x2, 3x3) in the blocked layout (see ops_winograd.cpp).
#pragma once

#include "target/target.h"
#include "lower/op_lowering.h"

namespace kiln::lower {

// Lowers a Conv marked kiln_winograd=2 by the winograd graph pass.
void lower_conv_winograd(OpContext& ctx);
// The conv as a reduction (its formula; see ops_winograd.cpp): x blocked
// [N, C/c, H, W, c], u the transformed weights [M/m, 4, 4, C/c, c, m], out
// shape os [N, M/m, H, W, m] (H, W even).
te::Tensor winograd_conv(const te::Tensor& x, const te::Tensor& u, const graph::Shape& os);
// Its CPU schedule: a workgroup per row of 2x2 output tiles, tensorized into
// input transform, 16 register-tiled GEMMs and output transform. x is the
// blocked input, u the transformed weights.
void schedule_conv2d_winograd_cpu(te::Stage& s, const te::Tensor& x, const te::Tensor& u, const VectorInfo& target);

}  // namespace kiln::lower
