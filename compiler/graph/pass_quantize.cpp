// quantize: compiles quantized ONNX models to int8 operators.
//
// Quantized models reach kilnc in two forms (docs/int8.md):
//   QDQ        DequantizeLinear -> Conv | MatMul | Gemm -> [Relu | Clip] -> QuantizeLinear,
//              float operators between quantize/dequantize pairs (ONNX
//              Runtime's quantizer's default);
//   QOperator  QLinearConv, QLinearMatMul, ConvInteger, MatMulInteger.
// Both become kilnc's own int8 operators, which read uint8/int8
// activations and int8 weights, accumulate in int32 and requantize in one
// epilogue (lower/ops_int8.cpp):
//   kiln.QConv (Conv's attributes), kiln.QMatMul (x [..., M, K] times w [K, N])
//     inputs  x, w (int8 constant), bias (int32), wsum (int32), x_zero_point
//             (scalar, constant or computed), scale (float32, optional),
//             y_zero_point (scalar, optional); bias, wsum, scale per output channel
//     acc     = sum x * w + bias - x_zero_point * wsum                  (int32)
//     y       = clamp(round_half_even(acc * scale) + y_zero_point, kiln_clip_lo, kiln_clip_hi)
//               (a float32 y: acc * scale; no scale: y = acc, int32)
// which is ONNX's sum (x - zx)(w - zw) + bias with the weights stored as
// w - zw (it must fit int8: symmetric int8 weights always do, uint8 weights
// with zero point 128 too) and wsum their per-channel sum. scale is
// x_scale * w_scale / y_scale in float32, as ONNX Runtime computes it. A
// Relu or Clip before the QuantizeLinear becomes the clamp (exact:
// quantization is monotonic and maps 0 to the zero point). Without a
// QuantizeLinear after it, a QDQ Conv/MatMul/Gemm gets a float32 output.
//
// What does not fit (weights computed at run time, non-constant scales,
// weights too far from their zero point) stays float: a QDQ pattern is left
// as it is; QLinearConv / QLinearMatMul become DequantizeLinear -> float op ->
// QuantizeLinear; ConvInteger / MatMulInteger become an int32 Conv / MatMul
// of the inputs minus their zero points (exact).
//
// An operator that commutes with quantization (flag kCommutesWithQuant:
// MaxPool, Reshape, Transpose, Concat, ...) between DequantizeLinear and
// QuantizeLinear nodes of equal parameters runs on the quantized tensors
// instead; a Concat's inputs quantized otherwise are requantized to its
// output's parameters first (DequantizeLinear -> QuantizeLinear, fused into
// their producers).
//
// Every constant scale and zero point of a QuantizeLinear, DequantizeLinear
// or QOperator node is checked first: a scale that is zero, negative or not
// finite, a zero point whose type is not the quantized type's or whose
// per-axis length differs from the axis are user errors naming the node.
// Runs before constant folding, which would otherwise fold the dequantized
// weights into float32 constants.
#include <cmath>
#include <cstring>
#include <map>

#include "graph/passes.h"
#include "support/diagnostics.h"

namespace kiln::graph {
namespace {

bool quantized_type(DType t) { return t == DType::U8 || t == DType::I8; }
double type_min(DType t) { return t == DType::U8 ? 0 : t == DType::I8 ? -128 : -2147483648.0; }
double type_max(DType t) { return t == DType::U8 ? 255 : t == DType::I8 ? 127 : 2147483647.0; }

// A quantization: values q of `type` mean (q - zp) * scale; scale and zp
// have one entry, or one per position along `axis`.
struct Quant {
  int q = -1;                  // the quantized value
  int zp_value = -1;           // its zero-point value (-1: absent, 0)
  DType type = DType::U8;      // the quantized type
  std::vector<double> scale;   // float32 values
  std::vector<double> zp;      // integers
  int64_t axis = 1;            // the axis of per-axis parameters
  bool per_axis() const { return scale.size() > 1; }
};

class Quantizer {
 public:
  // exact_only: only the exact int32 decomposition of ConvInteger and
  // MatMulInteger (models with run-time dimensions, which keep their float form).
  Quantizer(Graph& g, bool exact_only) : g_(g), exact_only_(exact_only) {}

  bool run(PassContext& ctx) {
    recompute_producers(g_);
    if (!exact_only_)
      for (const Node& n : g_.nodes) check_params(n);
    std::vector<int> uses = use_counts(g_);
    std::vector<std::vector<int>> consumers(g_.values.size());
    for (size_t i = 0; i < g_.nodes.size(); i++)
      for (int v : g_.nodes[i].inputs)
        if (v >= 0) consumers[(size_t)v].push_back((int)i);
    std::vector<Node> old = std::move(g_.nodes);
    g_.nodes.clear();
    std::vector<bool> skip(old.size(), false);
    for (size_t i = 0; i < old.size(); i++) {
      if (skip[i]) continue;
      Node& n = old[i];
      bool done = false;
      if (n.is(Op::ConvInteger) || n.is(Op::MatMulInteger)) done = integer_op(n);
      else if (exact_only_) done = false;
      else if (n.is(Op::QLinearConv) || n.is(Op::QLinearMatMul)) done = qoperator(n);
      else if (n.is(Op::Conv) || n.is(Op::MatMul) || n.is(Op::Gemm)) done = qdq(old, n, uses, consumers, skip);
      else if (n.traits().commutes_with_quant()) done = transparent(old, n, uses, consumers, skip);
      if (done) continue;
      g_.nodes.push_back(n);  // a copy: later patterns read `old`
    }
    recompute_producers(g_);
    if (rewritten_ || decomposed_ || moved_)
      ctx.detail = std::to_string(rewritten_) + " int8 operators, " + std::to_string(moved_) +
                   " operators moved onto quantized tensors, " + std::to_string(decomposed_) + " decomposed";
    return rewritten_ + decomposed_ + moved_ > 0;
  }

 private:
  Graph& g_;
  const bool exact_only_;
  int rewritten_ = 0;   // kiln.QConv / kiln.QMatMul made
  int decomposed_ = 0;  // QOperator nodes decomposed into float or int32 ones
  int moved_ = 0;       // operators moved onto quantized tensors

  const Value& val(int v) const { return g_.values[(size_t)v]; }
  bool constant(int v) const { return v >= 0 && val(v).is_constant(); }
  static int in(const Node& n, size_t i) { return i < n.inputs.size() ? n.inputs[i] : -1; }

  // ---- parameter checks ---------------------------------------------------

  // Scale `s` and zero point `z` (may be -1) of quantized value `q` in node n.
  void check_pair(const Node& n, int q, int s, int z, int64_t axis, const char* what) {
    if (s < 0 || !constant(s)) return;
    const Value& sv = val(s);
    for (int64_t i = 0; i < sv.elements(); i++) {
      double x = sv.const_at(i);
      user_assert(std::isfinite(x) && x > 0) << n.describe() << ": " << what << " scale " << x
                                            << " is not a positive finite number; a quantization scale must be";
    }
    // (Blocked quantization, block_size: lowering checks the blocks' shape.)
    if (q >= 0 && sv.elements() > 1 && n.attr_int("block_size", 0) <= 0) {
      const Shape& qs = val(q).shape;
      int64_t r = (int64_t)qs.size(), a = axis < 0 ? axis + r : axis;
      user_assert(sv.shape.size() == 1 && a >= 0 && a < r && qs[(size_t)a] == sv.elements())
          << n.describe() << ": " << what << " scale has " << sv.elements() << " entries but axis " << axis << " of "
          << shape_str(qs) << " has " << (a >= 0 && a < r ? qs[(size_t)a] : 0) << "; per-channel lengths must match";
    }
    if (z < 0) return;
    const Value& zv = val(z);
    user_assert(zv.elements() == sv.elements())
        << n.describe() << ": " << what << " zero point has " << zv.elements() << " entries and its scale "
        << sv.elements() << "; they must match";
    if (q >= 0) {
      user_assert(zv.dtype == val(q).dtype) << n.describe() << ": " << what << " zero point is "
                                            << dtype_name(zv.dtype) << " but the quantized value is "
                                            << dtype_name(val(q).dtype) << "; they must be the same type";
    }
    if (!zv.is_constant() || !quantized_type(zv.dtype)) return;
    for (int64_t i = 0; i < zv.elements(); i++) {
      double x = zv.const_at(i);
      user_assert(x >= type_min(zv.dtype) && x <= type_max(zv.dtype))
          << n.describe() << ": " << what << " zero point " << x << " is outside " << dtype_name(zv.dtype);
    }
  }

  void check_params(const Node& n) {
    int64_t axis = n.attr_int("axis", 1);
    if (n.is(Op::QuantizeLinear)) check_pair(n, n.outputs.empty() ? -1 : n.outputs[0], in(n, 1), in(n, 2), axis, "y");
    if (n.is(Op::DequantizeLinear)) check_pair(n, in(n, 0), in(n, 1), in(n, 2), axis, "x");
    if (n.is(Op::QLinearConv)) {
      check_pair(n, in(n, 0), in(n, 1), in(n, 2), 1, "x");
      check_pair(n, in(n, 3), in(n, 4), in(n, 5), 0, "w");
      check_pair(n, n.outputs[0], in(n, 6), in(n, 7), 1, "y");
    }
    if (n.is(Op::QLinearMatMul)) {
      check_pair(n, in(n, 0), in(n, 1), in(n, 2), -2, "a");
      check_pair(n, in(n, 3), in(n, 4), in(n, 5), -1, "b");
      check_pair(n, n.outputs[0], in(n, 6), in(n, 7), -1, "y");
    }
  }

  // ---- reading quantizations ----------------------------------------------

  // Quantization of value q by constant scale s and zero point z (z may be -1).
  bool quant_of(int q, int s, int z, int64_t axis, Quant& out) const {
    if (q < 0 || !constant(s) || (z >= 0 && !constant(z)) || !quantized_type(val(q).dtype)) return false;
    out = Quant();
    out.q = q;
    out.zp_value = z;
    out.type = val(q).dtype;
    out.scale = constant_as_doubles(val(s));
    out.zp = z >= 0 ? constant_as_doubles(val(z)) : std::vector<double>(out.scale.size(), 0.0);
    int64_t r = (int64_t)val(q).shape.size();
    out.axis = axis < 0 ? axis + r : axis;
    return true;
  }

  // ---- building the int8 operator ------------------------------------------

  // The int8 node for conv/matmul `core` (its attributes are kept): x with
  // quantization qx (its zero point: x_zp_value, a scalar value, may be
  // computed), weights wq (the weights' integer values minus their zero
  // point, shape ws: Conv [M, C/g, KH, KW], matmul [K, N]), bias (int32
  // per channel, may be empty), requantization `scale` per channel (empty:
  // int32 output), y's zero point value (-1: none), the clamp.
  Node int8_node(const Node& core, bool conv, int x, int x_zp_value, const std::vector<double>& wq, const Shape& ws,
                 std::vector<double> bias, const std::vector<double>& scale, int y_zp_value, double lo, double hi,
                 int out) {
    int64_t channels = conv ? ws[0] : ws[1];
    std::vector<double> wsum((size_t)channels, 0.0);
    if (conv) {
      int64_t per = (int64_t)wq.size() / channels;
      for (int64_t m = 0; m < channels; m++)
        for (int64_t i = 0; i < per; i++) wsum[(size_t)m] += wq[(size_t)(m * per + i)];
    } else {
      for (int64_t k = 0; k < ws[0]; k++)
        for (int64_t j = 0; j < channels; j++) wsum[(size_t)j] += wq[(size_t)(k * channels + j)];
    }
    if (bias.empty()) bias.assign((size_t)channels, 0.0);
    Node q;
    q.op = op_name(conv ? Op::KilnQConv : Op::KilnQMatMul);
    q.name = core.name;
    if (conv) {
      for (const char* a : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
        if (core.has_attr(a)) q.attrs[a] = core.attrs.at(a);
    }
    if (scale.size() && y_zp_value >= 0) {
      q.attrs["kiln_clip_lo"].i = (int64_t)lo;
      q.attrs["kiln_clip_hi"].i = (int64_t)hi;
    }
    const std::string base = core.name.empty() ? val(out).name : core.name;
    int w = g_.add_constant(base + ".w_int8", DType::I8, ws, doubles_to_bytes(wq, DType::I8));
    int b = g_.add_constant(base + ".bias_int32", DType::I32, {channels}, doubles_to_bytes(bias, DType::I32));
    int s = g_.add_constant(base + ".wsum", DType::I32, {channels}, doubles_to_bytes(wsum, DType::I32));
    int sc = scale.empty() ? -1 : g_.add_constant(base + ".requant_scale", DType::F32, {channels}, doubles_to_bytes(scale, DType::F32));
    q.inputs = {x, w, b, s, x_zp_value, sc, y_zp_value};
    while (!q.inputs.empty() && q.inputs.back() < 0) q.inputs.pop_back();
    q.outputs = {out};
    rewritten_++;
    return q;
  }

  // A scalar zero-point value of type t (zp), reusing `existing` when it is one.
  int zp_value(int existing, DType t, double zp) {
    if (existing >= 0 && val(existing).elements() == 1 && val(existing).dtype == t) return existing;
    return g_.add_constant("kiln.zero_point", t, {}, doubles_to_bytes({zp}, t));
  }

  // The weights' values minus their zero points, as [M, ...] (conv, per-
  // channel along axis 0) or [K, N] (matmul, per-channel along axis 1;
  // `transposed` weights [N, K] are transposed here); false if one does not
  // fit int8. Per-channel scales in `wscale` (one per output channel).
  bool int8_weights(const Quant& qw, bool conv, bool transposed, std::vector<double>& wq, Shape& ws,
                    std::vector<double>& wscale) const {
    const Value& w = val(qw.q);
    if (!w.is_constant()) return false;
    ws = w.shape;
    if (conv ? ws.size() < 3 : ws.size() != 2) return false;
    std::vector<double> d = constant_as_doubles(w);
    int64_t channels = conv ? ws[0] : transposed ? ws[0] : ws[1];
    int64_t channel_axis = conv ? 0 : transposed ? 0 : 1;
    if (qw.per_axis() && (qw.axis != channel_axis || (int64_t)qw.scale.size() != channels)) return false;
    auto at = [&](const std::vector<double>& p, int64_t c) { return p.size() > 1 ? p[(size_t)c] : p[0]; };
    wq.resize(d.size());
    wscale.resize((size_t)channels);
    int64_t per = (int64_t)d.size() / ws[0];
    for (size_t i = 0; i < d.size(); i++) {
      int64_t c = conv || transposed ? (int64_t)i / per : (int64_t)i % channels;
      double v = d[i] - at(qw.zp, c);
      if (v < -128 || v > 127) return false;
      int64_t to = (int64_t)i;
      if (transposed) to = ((int64_t)i % ws[1]) * ws[0] + (int64_t)i / ws[1];  // [N, K] -> [K, N]
      wq[(size_t)to] = v;
    }
    if (transposed) ws = {ws[1], ws[0]};
    for (int64_t c = 0; c < channels; c++) wscale[(size_t)c] = at(qw.scale, c);
    return true;
  }

  // ---- QDQ ------------------------------------------------------------------

  // Conv / MatMul / Gemm n with dequantized inputs: rewritten to int8 (with
  // the Relu/Clip and QuantizeLinear after it, flagged in `skip`).
  bool qdq(const std::vector<Node>& old, const Node& n, const std::vector<int>& uses,
           const std::vector<std::vector<int>>& consumers, std::vector<bool>& skip) {
    bool conv = n.is(Op::Conv);
    if (n.outputs.size() != 1 || n.outputs[0] < 0 || n.inputs.size() < 2) return false;
    if (n.is(Op::Gemm) && (n.attr_int("transA", 0) || n.attr_float("alpha", 1) != 1 || n.attr_float("beta", 1) != 1))
      return false;
    Quant qx, qw;
    if (!dequantized_old(old, n.inputs[0], qx) || !dequantized_old(old, n.inputs[1], qw)) return false;
    if (qx.per_axis() || val(qx.q).shape.size() < 2) return false;
    if (conv && val(qx.q).shape.size() != 4) return false;  // 2-D convolutions
    bool transposed = n.is(Op::Gemm) && n.attr_int("transB", 0);
    std::vector<double> wq, wscale;
    Shape ws;
    if (!int8_weights(qw, conv, transposed, wq, ws, wscale)) return false;
    int64_t channels = conv ? ws[0] : ws[1];
    // The bias: a dequantized int32 constant (scale x_scale * w_scale, zero point 0), or none.
    std::vector<double> bias;
    if (in(n, 2) >= 0) {
      Quant qb;
      int b = in(n, 2);
      int p = val(b).producer;
      if (p < 0 || !old[(size_t)p].is(Op::DequantizeLinear)) return false;
      const Node& d = old[(size_t)p];
      if (in(d, 0) < 0 || !constant(in(d, 0)) || val(in(d, 0)).dtype != DType::I32 || val(in(d, 0)).elements() != channels)
        return false;
      if (in(d, 2) >= 0 && (!constant(in(d, 2)) || std::abs(val(in(d, 2)).const_at(0)) > 0)) return false;
      bias = constant_as_doubles(val(in(d, 0)));
    }
    // What follows: [Relu | Clip] -> QuantizeLinear, or a float output.
    int y = n.outputs[0];
    int act = -1, quant = -1;
    auto only_consumer = [&](int v) {
      return uses[(size_t)v] == 1 && !is_model_output(g_, v) && consumers[(size_t)v].size() == 1 ? consumers[(size_t)v][0] : -1;
    };
    double relu_lo = -INFINITY, relu_hi = INFINITY;
    int c = only_consumer(y);
    if (c >= 0 && (old[(size_t)c].is(Op::Relu) || old[(size_t)c].is(Op::Clip))) {
      const Node& a = old[(size_t)c];
      bool ok = true;
      if (a.is(Op::Relu)) relu_lo = 0;
      else {
        relu_lo = a.attr_float("min", -INFINITY), relu_hi = a.attr_float("max", INFINITY);
        if (in(a, 1) >= 0) ok &= constant(in(a, 1)) && (relu_lo = val(in(a, 1)).const_at(0), true);
        if (in(a, 2) >= 0) ok &= constant(in(a, 2)) && (relu_hi = val(in(a, 2)).const_at(0), true);
      }
      int c2 = ok ? only_consumer(a.outputs[0]) : -1;
      if (c2 >= 0 && old[(size_t)c2].is(Op::QuantizeLinear)) act = c, quant = c2;
    } else if (c >= 0 && old[(size_t)c].is(Op::QuantizeLinear)) {
      quant = c;
    }
    std::vector<double> scale((size_t)channels);
    if (quant >= 0) {
      const Node& q = old[(size_t)quant];
      Quant qy;
      if (!quant_of(q.outputs[0], in(q, 1), in(q, 2), q.attr_int("axis", 1), qy) || qy.per_axis()) return false;
      for (int64_t m = 0; m < channels; m++)
        scale[(size_t)m] = (double)((float)qx.scale[0] * (float)wscale[(size_t)m] / (float)qy.scale[0]);
      double zy = qy.zp[0], lo = type_min(qy.type), hi = type_max(qy.type);
      // The activation's bounds, quantized (Relu: 0 maps to the zero point exactly).
      if (relu_lo > -INFINITY) lo = std::max(lo, std::nearbyint(relu_lo / qy.scale[0]) + zy);
      if (relu_hi < INFINITY) hi = std::min(hi, std::nearbyint(relu_hi / qy.scale[0]) + zy);
      int yzp = zp_value(qy.zp_value, qy.type, zy);
      g_.nodes.push_back(int8_node(n, conv, qx.q, zp_value(qx.zp_value, qx.type, qx.zp[0]), wq, ws, bias, scale, yzp,
                                   lo, hi, q.outputs[0]));
      skip[(size_t)quant] = true;
      if (act >= 0) skip[(size_t)act] = true;
      return true;
    }
    if (val(y).dtype != DType::F32) return false;
    for (int64_t m = 0; m < channels; m++) scale[(size_t)m] = (double)((float)qx.scale[0] * (float)wscale[(size_t)m]);
    g_.nodes.push_back(int8_node(n, conv, qx.q, zp_value(qx.zp_value, qx.type, qx.zp[0]), wq, ws, bias, scale, -1, 0, 0, y));
    return true;
  }

  // DequantizeLinear -> n -> QuantizeLinear with equal per-tensor
  // parameters, n moving or picking values (MaxPool, Reshape, ...): n on the
  // quantized tensor (exact: quantizing a dequantized value gives it back).
  bool transparent(const std::vector<Node>& old, const Node& n, const std::vector<int>& uses,
                   const std::vector<std::vector<int>>& consumers, std::vector<bool>& skip) {
    if (n.inputs.empty() || n.outputs.size() != 1 || n.outputs[0] < 0) return false;
    int y = n.outputs[0];
    if (uses[(size_t)y] != 1 || is_model_output(g_, y) || consumers[(size_t)y].size() != 1) return false;
    const Node& q = old[(size_t)consumers[(size_t)y][0]];
    Quant qy;
    if (!q.is(Op::QuantizeLinear) || in(q, 0) != y) return false;
    if (!quant_of(q.outputs[0], in(q, 1), in(q, 2), q.attr_int("axis", 1), qy) || qy.per_axis()) return false;
    auto same = [&](const Quant& a) {
      return a.type == qy.type && (float)a.scale[0] == (float)qy.scale[0] && a.zp[0] == qy.zp[0];
    };
    // The data inputs: the first, and a Concat's every one (others' later
    // inputs are shapes, axes...). A Concat input quantized differently is
    // requantized to the output's parameters first (DQ -> Q, fused into its
    // producer's epilogue): Q(concat(DQ_i(a_i))) = concat(Q(DQ_i(a_i))).
    size_t count = n.is(Op::Concat) ? n.inputs.size() : 1;
    std::vector<Quant> qs(count);
    for (size_t i = 0; i < count; i++) {
      if (!dequantized_old(old, n.inputs[i], qs[i]) || qs[i].per_axis()) return false;
      if (!n.is(Op::Concat) && !same(qs[i])) return false;
    }
    Node m = n;
    for (size_t i = 0; i < count; i++) {
      if (same(qs[i])) {
        m.inputs[i] = qs[i].q;
        continue;
      }
      const Node& d = old[(size_t)val(n.inputs[i]).producer];
      const std::string base = val(n.inputs[i]).name + ".requantized";
      int f = emit("DequantizeLinear", base + "_float", d.inputs, DType::F32, val(qs[i].q).shape, d.attrs);
      m.inputs[i] = emit("QuantizeLinear", base, {f, in(q, 1), in(q, 2)}, qy.type, val(qs[i].q).shape);
    }
    m.outputs = q.outputs;
    g_.nodes.push_back(std::move(m));
    skip[(size_t)consumers[(size_t)y][0]] = true;
    moved_++;
    return true;
  }

  bool dequantized_old(const std::vector<Node>& old, int v, Quant& out) const {
    int p = v >= 0 ? val(v).producer : -1;
    if (p < 0 || !old[(size_t)p].is(Op::DequantizeLinear)) return false;
    const Node& d = old[(size_t)p];
    if (d.attr_int("block_size", 0) > 0 && d.inputs.size() > 1 && d.inputs[1] >= 0 && val(d.inputs[1]).elements() > 1)
      return false;  // blocked quantization: computed as it is, in float
    return quant_of(in(d, 0), in(d, 1), in(d, 2), d.attr_int("axis", 1), out);
  }

  // ---- QOperator --------------------------------------------------------------

  // QLinearConv (x, xs, xz, w, ws, wz, ys, yz, B) / QLinearMatMul (a, as, az, b, bs, bz, ys, yz).
  bool qoperator(const Node& n) {
    bool conv = n.is(Op::QLinearConv);
    Quant qx, qw, qy;
    int y = n.outputs[0];
    bool ok = quant_of(in(n, 0), in(n, 1), in(n, 2), 1, qx) && !qx.per_axis() &&
              quant_of(in(n, 3), in(n, 4), in(n, 5), conv ? 0 : 1, qw) &&
              quant_of(y, in(n, 6), in(n, 7), 1, qy) && !qy.per_axis() &&
              (!conv || val(in(n, 0)).shape.size() == 4) && val(in(n, 0)).shape.size() >= 2;
    std::vector<double> wq, wscale, bias;
    Shape ws;
    ok = ok && int8_weights(qw, conv, false, wq, ws, wscale);
    if (ok && conv && in(n, 8) >= 0) {
      ok = constant(in(n, 8));
      if (ok) bias = constant_as_doubles(val(in(n, 8)));
    }
    if (!ok) return decompose_qoperator(n);
    int64_t channels = conv ? ws[0] : ws[1];
    std::vector<double> scale((size_t)channels);
    for (int64_t m = 0; m < channels; m++)
      scale[(size_t)m] = (double)((float)qx.scale[0] * (float)wscale[(size_t)m] / (float)qy.scale[0]);
    g_.nodes.push_back(int8_node(n, conv, in(n, 0), zp_value(qx.zp_value, qx.type, qx.zp[0]), wq, ws, bias, scale,
                                 zp_value(qy.zp_value, qy.type, qy.zp[0]), type_min(qy.type), type_max(qy.type), y));
    return true;
  }

  // A new value and the node that computes it.
  int emit(const std::string& op, const std::string& name, std::vector<int> inputs, DType t, const Shape& s,
           std::map<std::string, Attr> attrs = {}) {
    Value v;
    v.name = g_.unique_name(name);
    v.dtype = t;
    v.shape = s;
    int out = g_.add_value(std::move(v));
    Node n;
    n.op = op;
    n.name = g_.values[(size_t)out].name;
    n.inputs = std::move(inputs);
    n.outputs = {out};
    n.attrs = std::move(attrs);
    g_.nodes.push_back(std::move(n));
    return out;
  }
  static std::map<std::string, Attr> int_attr(const char* name, int64_t v) {
    std::map<std::string, Attr> a;
    a[name].i = v;
    return a;
  }

  // QLinearConv / QLinearMatMul that cannot be int8 here: dequantize, the
  // float operator, quantize.
  bool decompose_qoperator(const Node& n) {
    bool conv = n.is(Op::QLinearConv);
    const std::string base = n.name.empty() ? val(n.outputs[0]).name : n.name;
    int x = emit("DequantizeLinear", base + ".x", {in(n, 0), in(n, 1), in(n, 2)}, DType::F32, val(in(n, 0)).shape,
                 int_attr("axis", 1));
    int w = emit("DequantizeLinear", base + ".w", {in(n, 3), in(n, 4), in(n, 5)}, DType::F32, val(in(n, 3)).shape,
                 int_attr("axis", conv ? 0 : 1));
    const Shape& ys = val(n.outputs[0]).shape;
    Node core;
    core.op = conv ? "Conv" : "MatMul";
    core.name = base + ".float";
    core.attrs = n.attrs;
    core.inputs = {x, w};
    if (conv && in(n, 8) >= 0) {  // bias: int32 with scale x_scale * w_scale
      int s = emit("Mul", base + ".bias_scale", {in(n, 1), in(n, 4)}, DType::F32, val(in(n, 4)).shape);
      int b = emit("Cast", base + ".bias_float", {in(n, 8)}, DType::F32, val(in(n, 8)).shape, int_attr("to", 1));
      core.inputs.push_back(emit("Mul", base + ".bias", {b, s}, DType::F32, val(in(n, 8)).shape));
    }
    Value v;
    v.name = g_.unique_name(base + ".float");
    v.shape = ys;
    core.outputs = {g_.add_value(std::move(v))};
    int yf = core.outputs[0];
    g_.nodes.push_back(std::move(core));
    Node q;
    q.op = "QuantizeLinear";
    q.name = base;
    q.inputs = {yf, in(n, 6), in(n, 7)};
    q.outputs = n.outputs;
    g_.nodes.push_back(std::move(q));
    decomposed_++;
    return true;
  }

  // ConvInteger (x, w, x_zero_point, w_zero_point) / MatMulInteger (a, b, a_zp, b_zp): int32 output.
  bool integer_op(const Node& n) {
    bool conv = n.is(Op::ConvInteger);
    int x = in(n, 0), w = in(n, 1), xz = in(n, 2), wz = in(n, 3);
    if (x < 0 || w < 0 || !quantized_type(val(x).dtype) || !quantized_type(val(w).dtype)) return false;
    bool scalar_xz = xz < 0 || val(xz).elements() == 1;
    if (!exact_only_ && constant(w) && scalar_xz && (!conv || val(x).shape.size() == 4) && val(x).shape.size() >= 2) {
      Quant qw;
      qw.q = w;
      qw.type = val(w).dtype;
      qw.axis = conv ? 0 : 1;
      qw.zp = wz >= 0 && constant(wz) ? constant_as_doubles(val(wz)) : std::vector<double>{0.0};
      qw.scale.assign(qw.zp.size(), 1.0);
      std::vector<double> wq, wscale;
      Shape ws;
      if ((wz < 0 || constant(wz)) && int8_weights(qw, conv, false, wq, ws, wscale)) {
        int x_zp = xz >= 0 ? xz : zp_value(-1, val(x).dtype, 0);
        g_.nodes.push_back(int8_node(n, conv, x, x_zp, wq, ws, {}, {}, -1, 0, 0, n.outputs[0]));
        return true;
      }
    }
    // int32 Conv / MatMul of (x - x_zero_point) and (w - w_zero_point): exact.
    const std::string base = n.name.empty() ? val(n.outputs[0]).name : n.name;
    auto widen = [&](int v, int zp, const char* what, int64_t axis) {
      auto like_v = [&](int out) {  // (run-time dimensions: v's)
        if (val(v).is_dynamic()) g_.set_dims(out, val(v).dims);
        return out;
      };
      int c = like_v(emit("Cast", base + "." + what, {v}, DType::I32, val(v).shape, int_attr("to", 6)));
      if (zp < 0) return c;
      int z = emit("Cast", base + "." + what + "_zp", {zp}, DType::I32, val(zp).shape, int_attr("to", 6));
      if (val(zp).elements() > 1) {  // per-axis: reshape to broadcast along `axis`
        Shape s(val(v).shape.size() - (size_t)axis, 1);
        s[0] = val(zp).elements();
        std::vector<double> dims(s.begin(), s.end());
        std::vector<uint8_t> bytes(dims.size() * 8);
        for (size_t i = 0; i < dims.size(); i++) {
          int64_t d = (int64_t)dims[i];
          memcpy(bytes.data() + i * 8, &d, 8);
        }
        int shape = g_.add_constant(base + ".zp_shape", DType::I64, {(int64_t)s.size()}, bytes);
        z = emit("Reshape", base + "." + what + "_zp_axis", {z, shape}, DType::I32, s);
      }
      return like_v(emit("Sub", base + "." + what + "_centered", {c, z}, DType::I32, val(v).shape));
    };
    int64_t a_axis = val(x).shape.size() >= 2 ? (int64_t)val(x).shape.size() - 2 : 0;
    int xc = widen(x, xz, "x", conv ? 1 : a_axis);
    int wc = widen(w, wz, "w", conv ? 0 : (int64_t)val(w).shape.size() - 1);
    Node core;
    core.op = conv ? "Conv" : "MatMul";
    core.name = n.name;
    core.attrs = n.attrs;
    core.inputs = {xc, wc};
    core.outputs = n.outputs;
    g_.nodes.push_back(std::move(core));
    decomposed_++;
    return true;
  }
};

}  // namespace

bool pass_quantize(Graph& g, PassContext& ctx) {
  // Run-time dimensions: quantized models keep their float form
  // (docs/dynamic-shapes.md); ConvInteger and MatMulInteger, which have no
  // lowering of their own, still become their exact int32 Conv / MatMul.
  return Quantizer(g, !g.symbols.empty()).run(ctx);
}

}  // namespace kiln::graph
