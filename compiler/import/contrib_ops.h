// ONNX Runtime's quantized contrib operators (domain com.microsoft), which
// its quantizer writes in QOperator models next to the standard QLinearConv
// and QLinearMatMul: each becomes standard operators before ONNX's checker
// and shape inference see the model, as DequantizeLinear -> the float
// operator -> QuantizeLinear (docs/int8.md):
//   QGemm                          (A, a_scale, a_zp, B, b_scale, b_zp[, C, y_scale, y_zp]),
//                                  C int32 (scale a_scale * b_scale), a float Y without y_scale
//   QLinearAdd, QLinearMul         (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp)
//   QLinearGlobalAveragePool       (X, X_scale, X_zp, Y_scale, Y_zp), channels_last = 0
//   QLinearAveragePool             (X, X_scale, X_zp, Y_scale, Y_zp), AveragePool's attributes
//   QLinearConcat                  (Y_scale, Y_zp, X1, X1_scale, X1_zp, ...), axis
//   QLinearSigmoid                 (X, X_scale, X_zp, Y_scale, Y_zp)
//   QLinearLeakyRelu               (X, X_scale, X_zp, Y_scale, Y_zp), alpha
// The graph passes then run what they can on the quantized tensors (quantize
// pass) and fuse the rest into one kernel. Results are within one
// quantization step of ONNX Runtime's fixed-point kernels. Any other
// com.microsoft operator stays, and the import refuses it by name.
#pragma once

#include <onnx/onnx_pb.h>

namespace kiln {

// Rewrites the contrib nodes of the main graph (and its subgraphs) in place;
// throws UserError for a malformed one (naming it).
void expand_contrib_ops(onnx::ModelProto& model);

// The contrib operators expand_contrib_ops handles, for error messages.
const char* supported_contrib_ops();

}  // namespace kiln
