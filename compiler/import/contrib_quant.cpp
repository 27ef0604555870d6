// ONNX Runtime's quantized contrib operators (contrib_ops.h lists them and
// their forms): the QOperator ones of its static quantizer become
// DequantizeLinear -> float operator -> QuantizeLinear (docs/int8.md); the
// dynamic ones MatMulInteger with the scales applied after; MatMulNBits a
// float MatMul whose weight is the dequantized blocks (constant folding makes
// it a float32 constant when the blocks are initializers).
#include "import/contrib_builder.h"
#include "support/diagnostics.h"

namespace kiln::contrib {
namespace {

void require_inputs(Builder& b, int count, const std::vector<int>& required) {
  b.check(b.node().input_size() >= count, "needs " + std::to_string(count) + " inputs");
  for (int i : required) b.check(b.has(i), "input " + std::to_string(i) + " is missing");
}

std::string dequantize(Builder& b, int x, int scale, int zp, const std::vector<Attr>& attrs = {}) {
  std::vector<std::string> ins = {b.in(x), b.in(scale)};
  if (b.has(zp)) ins.push_back(b.in(zp));
  return b.op("DequantizeLinear", ins, attrs);
}

void quantize(Builder& b, const std::string& x, int scale, int zp) {
  std::vector<std::string> ins = {x, b.in(scale)};
  if (b.has(zp)) ins.push_back(b.in(zp));
  b.op("QuantizeLinear", ins, {}, b.out(0));
}

bool expand_qlinear(Builder& b) {
  const std::string& op = b.op_type();
  if (op == "QLinearAdd" || op == "QLinearMul") {  // (A, A_scale, A_zp, B, B_scale, B_zp, C_scale, C_zp)
    require_inputs(b, 7, {0, 1, 3, 4, 6});
    std::string x = dequantize(b, 0, 1, 2), y = dequantize(b, 3, 4, 5);
    quantize(b, b.op(op == "QLinearAdd" ? "Add" : "Mul", {x, y}, b.attrs_but({})), 6, 7);
    return true;
  }
  if (op == "QLinearGlobalAveragePool" || op == "QLinearAveragePool" || op == "QLinearSigmoid" ||
      op == "QLinearLeakyRelu") {  // (X, X_scale, X_zp, Y_scale, Y_zp)
    require_inputs(b, 4, {0, 1, 3});
    if (b.attr_i("channels_last", 0) != 0) b.refuse("channels_last=1", "export the model in NCHW");
    std::string x = dequantize(b, 0, 1, 2);
    quantize(b, b.op(op.substr(7), {x}, b.attrs_but({"channels_last"})), 3, 4);
    return true;
  }
  if (op == "QGemm") {  // (A, a_scale, a_zp, B, b_scale, b_zp[, C, y_scale, y_zp]): int32 C, float y without y_scale
    require_inputs(b, 6, {0, 1, 3, 4});
    bool trans_b = b.attr_i("transB", 0) != 0;
    std::string x = dequantize(b, 0, 1, 2);
    std::string w = dequantize(b, 3, 4, 5, {Attr::i("axis", trans_b ? 0 : 1)});  // per-channel: along N
    std::vector<std::string> ins = {x, w};
    if (b.has(6)) {  // C: int32 with scale a_scale * b_scale
      std::string scale = b.op("Mul", {b.in(1), b.in(4)});
      ins.push_back(b.op("DequantizeLinear", {b.in(6), scale}, {Attr::i("axis", 0)}));
    }
    if (!b.has(7)) {  // a float output
      b.op("Gemm", ins, b.attrs_but({}), b.out(0));
      return true;
    }
    quantize(b, b.op("Gemm", ins, b.attrs_but({})), 7, 8);
    return true;
  }
  if (op == "QLinearConcat") {  // (Y_scale, Y_zp, X1, X1_scale, X1_zp, ...), axis
    int n = b.node().input_size();
    b.check(n >= 5 && (n - 2) % 3 == 0, "needs Y_scale, Y_zero_point and (X, X_scale, X_zero_point) per input");
    std::vector<std::string> parts;
    for (int i = 2; i < n; i += 3) {
      b.check(b.has(i) && b.has(i + 1), "input " + std::to_string(i) + " or its scale is missing");
      parts.push_back(dequantize(b, i, i + 1, i + 2));
    }
    b.check(b.has(0), "Y_scale is missing");
    quantize(b, b.op("Concat", parts, b.attrs_but({})), 0, 1);
    return true;
  }
  return false;
}

// x: uint8 [..., n] packed `bits` to a value, the first in the low bits ->
// the values (uint8), reshaped to `shape`.
std::string unpack_bits(Builder& b, const std::string& x, int bits, const std::vector<int64_t>& shape) {
  if (bits == 8) return b.reshape(x, shape);
  b.need_opset(11, "BitShift");
  int per = 8 / bits;
  auto shift = [&](const std::string& v, int by, const char* dir) {
    return b.op("BitShift", {v, b.u8((uint8_t)by)}, {Attr::s("direction", dir)});
  };
  std::vector<std::string> parts;
  for (int j = 0; j < per; j++) {
    std::string y = j ? shift(x, bits * j, "RIGHT") : x;
    if (j < per - 1) y = b.op("Sub", {y, shift(shift(y, bits, "RIGHT"), bits, "LEFT")});  // its low `bits` bits
    parts.push_back(b.unsqueeze(y, {-1}));
  }
  return b.reshape(b.concat(parts, -1), shape);
}

bool expand_matmul_nbits(Builder& b) {
  // (A, B [N, k_blocks, blob], scales [N, k_blocks][, zero_points][, g_idx][, bias]); K, N, bits, block_size
  std::string a = b.need(0, "A");
  b.require_float(a, "A");
  std::string scales = b.need(2, "scales");
  b.require_float(scales, "scales");
  b.refuse_input(4, "g_idx");
  int64_t n = b.attr_i("N", 0), k = b.attr_i("K", 0), bits = b.attr_i("bits", 4), block = b.attr_i("block_size", 0);
  b.check(n > 0 && k > 0 && block > 0, "attributes K, N and block_size must be positive");
  if (bits != 2 && bits != 4 && bits != 8) b.refuse("bits=" + std::to_string(bits), "it takes 2, 4 and 8");
  b.check(block % 8 == 0, "block_size must be a multiple of 8");
  int per = 8 / (int)bits;
  int64_t blocks = (k + block - 1) / block, blob = block * bits / 8;
  // The element counts the reshapes below take, where the shapes are known.
  auto count = [&](int i, int64_t want, const char* what) {
    int r = b.rank_or(b.in(i), -1);
    int64_t n_el = r >= 0 ? 1 : -1;
    for (int d = 0; d < r && n_el >= 0; d++) {
      int64_t v = b.static_dim(b.in(i), d);
      n_el = v < 0 ? -1 : n_el * v;
    }
    b.check(n_el < 0 || n_el == want, std::string(what) + " has " + std::to_string(n_el) + " elements, but N=" +
                                          std::to_string(n) + ", K=" + std::to_string(k) + " and block_size=" +
                                          std::to_string(block) + " give " + std::to_string(want));
  };
  count(1, n * blocks * blob, "B");
  count(2, n * blocks, "scales");
  int zp_type = b.has(3) ? b.elem_type(b.in(3)) : 0;
  if (zp_type == onnx::TensorProto::FLOAT) count(3, n * blocks, "zero_points");
  if (zp_type == onnx::TensorProto::UINT8) count(3, n * ((blocks * bits + 7) / 8), "zero_points");
  std::string q = unpack_bits(b, b.reshape(b.need(1, "B"), std::vector<int64_t>{n, blocks, blob}), (int)bits,
                              {n, blocks, block});
  std::string zp;
  if (!b.has(3)) {
    zp = b.f32((float)(1 << (bits - 1)));
  } else {
    int t = b.elem_type(b.in(3));
    if (t == onnx::TensorProto::UINT8) {
      int64_t zb = (blocks * bits + 7) / 8;
      zp = unpack_bits(b, b.reshape(b.in(3), std::vector<int64_t>{n, zb}), (int)bits, {n, zb * per});
      if (zb * per != blocks) zp = b.slice_c(zp, {0}, {blocks}, {1});
      zp = b.reshape(b.cast(zp, onnx::TensorProto::FLOAT), std::vector<int64_t>{n, blocks, 1});
    } else if (t == onnx::TensorProto::FLOAT) {
      zp = b.reshape(b.in(3), std::vector<int64_t>{n, blocks, 1});
    } else {
      b.refuse(std::string("zero_points of ") + (t ? onnx::TensorProto::DataType_Name(t) : "unknown type"),
               "it takes uint8 (packed) or float32 zero points");
    }
  }
  std::string w = b.op("Sub", {b.cast(q, onnx::TensorProto::FLOAT), zp});
  w = b.op("Mul", {w, b.reshape(scales, std::vector<int64_t>{n, blocks, 1})});
  w = b.reshape(w, std::vector<int64_t>{n, blocks * block});
  if (blocks * block != k) w = b.slice_c(w, {0}, {k}, {1});
  w = b.transpose(w, {1, 0});  // [K, N]
  if (b.has(5))
    b.op("Add", {b.op("MatMul", {a, w}), b.in(5)}, {}, b.out(0));
  else
    b.op("MatMul", {a, w}, {}, b.out(0));
  return true;
}

// W [D, rows, 4H] quantized with scale and zero point [D] or [D, 4H] ->
// float [D, 4H, rows], ONNX LSTM's layout.
std::string dequantize_lstm_weight(Builder& b, int w, int scale, int zp, const char* what) {
  std::string s = b.need(scale, what), z = b.need(zp, what);
  int r = b.rank(s, "a scale");
  std::vector<int64_t> axes = r == 1 ? std::vector<int64_t>{1, 2} : std::vector<int64_t>{1};
  b.check(r == 1 || r == 2, std::string(what) + " must be 1-D or 2-D");
  std::string wf = b.op("Sub", {b.cast(b.need(w, what), onnx::TensorProto::FLOAT),
                                b.unsqueeze(b.cast(z, onnx::TensorProto::FLOAT), axes)});
  wf = b.op("Mul", {wf, b.unsqueeze(s, axes)});
  return b.transpose(wf, {0, 2, 1});
}

bool expand_dynamic(Builder& b) {
  const std::string& op = b.op_type();
  if (op == "MatMulIntegerToFloat") {  // (A, B, a_scale, b_scale[, a_zp][, b_zp][, bias])
    b.need(0, "A");
    b.need(1, "B");
    std::string scale = b.op("Mul", {b.need(2, "a_scale"), b.need(3, "b_scale")});
    b.integer_matmul(b.in(0), b.in(1), b.in(4), b.in(5), scale, b.in(6), b.out(0));
    return true;
  }
  if (op == "DynamicQuantizeMatMul") {  // (A float, B, b_scale[, b_zp][, bias]): A quantized as uint8 at run time
    std::string a = b.need(0, "A");
    b.require_float(a, "A");
    b.need_opset(11, "DynamicQuantizeLinear");
    std::string aq = b.temp("a_q"), as = b.temp("a_scale"), az = b.temp("a_zero_point");
    b.emit("DynamicQuantizeLinear", {a}, {aq, as, az});
    std::string scale = b.op("Mul", {as, b.need(2, "b_scale")});
    b.integer_matmul(aq, b.need(1, "B"), az, b.in(3), scale, b.in(4), b.out(0));
    return true;
  }
  if (op == "DynamicQuantizeLSTM") {
    // (X, W, R[, B][, sequence_lens][, initial_h][, initial_c][, P], W_scale, W_zero_point, R_scale,
    //  R_zero_point): LSTM on the dequantized W and R (ONNX Runtime quantizes X and H at run time; kilnc
    //  computes in float).
    std::string x = b.need(0, "X");
    b.require_float(x, "X");
    std::vector<std::string> ins = {x, dequantize_lstm_weight(b, 1, 8, 9, "W"),
                                    dequantize_lstm_weight(b, 2, 10, 11, "R")};
    for (int i = 3; i < 8; i++) ins.push_back(b.in(i));
    while (ins.back().empty()) ins.pop_back();
    std::vector<std::string> outs = {b.out(0), b.out(1), b.out(2)};
    while (!outs.empty() && outs.back().empty()) outs.pop_back();
    b.check(!outs.empty(), "it has no output");
    b.emit("LSTM", ins, outs, b.attrs_but({}));
    return true;
  }
  return false;
}

}  // namespace

bool expand_quantized(Builder& b) {
  if (b.op_type() == "MatMulNBits") return expand_matmul_nbits(b);
  return expand_qlinear(b) || expand_dynamic(b);
}

}  // namespace kiln::contrib
