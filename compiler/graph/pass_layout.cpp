// layout: moves convolutions and what surrounds them into the blocked
// channel layout NCHWc (TVM's NCHW[x]c, oneDNN's nChw16c).
//
// A blocked tensor [N, C/c, H, W, c] keeps c consecutive channels of one
// pixel together, so a convolution's innermost loop runs over c output
// channels in one vector register while every input element is broadcast
// from memory; NCHW would instead need strided vectors across pixels. The
// block c is a function of the channel count only (the largest of the
// target's float32 lanes, half of them, ... down to 4 that divides C; C
// itself for a narrow input such as RGB), so a producer and a consumer of
// the same tensor always agree. Channel counts that are not a multiple of
// the lanes are padded up to one when that costs at most a third more
// (ShuffleNet's 58 -> 64, a 1000-class 1x1 conv -> 1008): the padding
// channels have zero weights and bias, and only ops that keep finite values
// finite (flag kKeepsFinite in the operator table) run on them (so a
// consumer's zero weights cancel them); FromBlocked drops them.
//
// Rewrites, in topological order, by each operator's Layout column in the
// operator table (graph/op_table.def):
//   Conv (2-D; group 1 or depthwise)   -> Conv{kiln_layout=NCHWc} with weights
//                                          packed at compile time:
//                                          [M/m, C/c, KH, KW, c, m] (depthwise [M/m, 1, KH, KW, 1, m])
//   Pool: MaxPool, AveragePool,        -> the same op on the blocked tensor
//         Global{Average,Max}Pool
//   Any: elementwise ops               -> the same op on blocked operands
//                                          (constant operands re-laid out here)
//   Concat over channels               -> Concat over channel blocks
// and, for the same reason (vector loads along a weight's rows), MatMul and
// Gemm (PackWeights) get constant weights packed into column panels
// [N/nb, K, nb] (a Gemm with transB=1 has them transposed first).
// A conv whose input is not blocked yet is rewritten only when it does at
// least kMinMacs multiply-adds (a tiny conv would not pay for the
// conversions). Each rewritten node reads its inputs through kiln.ToBlocked and its
// results leave through kiln.FromBlocked (which produces the original NCHW
// value, so every other reader is untouched). A ToBlocked of a value that
// already has a blocked twin is cancelled: the twin is read instead. So a
// chain of rewritten nodes pays for conversions only at its ends, and
// dead-code removes the FromBlocked nodes nobody reads.
#include <set>

#include "graph/passes.h"
#include "target/register_tiles.h"
#include "support/diagnostics.h"

namespace kiln::graph {
namespace {

constexpr int64_t kMinMacs = 1 << 18;  // smallest conv worth converting its input for

class Blocker {
 public:
  Blocker(Graph& g, const VectorInfo& vector) : g_(g), vector_(vector), lanes_(vector.lanes) {}

  bool run(PassContext& ctx) {
    std::vector<Node> old = std::move(g_.nodes);
    g_.nodes.clear();
    int rewritten = 0;
    for (Node& n : old) {
      if (rewrite(n)) {
        rewritten++;
        continue;
      }
      for (int o : n.outputs)
        if (o >= 0) guards_[o] = n.guards;
      g_.nodes.push_back(std::move(n));
    }
    recompute_producers(g_);
    if (rewritten || transposed_)
      ctx.detail = std::to_string(rewritten) + " nodes to NCHWc, " + std::to_string(conversions_) +
                   " conversions inserted, " + std::to_string(transposed_) + " matmul weights packed";
    return rewritten > 0 || transposed_ > 0;
  }

 private:
  Graph& g_;
  VectorInfo vector_;  // the target's vector unit (matmul panel widths)
  int64_t lanes_;      // its float32 lanes: the widest channel block
  std::map<int, int> blocked_;  // NCHW value -> its blocked twin
  // Guards of each value's producer (a run-time If's branch): conversions
  // of a value run when it is computed.
  std::map<int, std::vector<std::pair<int, bool>>> guards_;
  int conversions_ = 0;
  int transposed_ = 0;  // matmul weights packed

  // The block of a C-channel tensor (0: not blocked): the full vector
  // width, the channels padded up to a multiple of it when that adds at
  // most a third (58 -> 64, 1000 -> 1008); else the widest block dividing C.
  int64_t block_of(int64_t C) const {
    if (C >= lanes_ && padded(C, lanes_) * 3 <= C * 4) return lanes_;
    for (int64_t b = lanes_ / 2; b >= 4; b /= 2)
      if (C % b == 0) return b;
    return 0;
  }
  static int64_t padded(int64_t C, int64_t b) { return (C + b - 1) / b * b; }
  // A conv input may be blocked by its whole channel count when narrow.
  int64_t input_block_of(int64_t C) const {
    int64_t b = block_of(C);
    return b ? b : C <= lanes_ ? C : 0;
  }

  // 4-D with a static channel count (run-time batch or spatial dimensions are fine).
  static bool static_channels(const Value& v) { return !v.is_dynamic() || tir::as_const_int(v.dims[1]); }
  static bool is_float4d(const Value& v) {
    return v.shape.size() == 4 && (v.dtype == DType::F32 || v.dtype == DType::F64) && static_channels(v);
  }
  // Float or 8-bit (quantized) 4-D: what elementwise ops and concats run on blocked.
  static bool is_4d(const Value& v) {
    return is_float4d(v) || (v.shape.size() == 4 && (v.dtype == DType::U8 || v.dtype == DType::I8) && static_channels(v));
  }
  // Whether v is [N, C, 1, 1] (a per-channel value), whatever N.
  static bool per_channel_4d(const Value& v) {
    DimExprs d = v.dim_exprs();
    auto one = [](const tir::Expr& e) { return tir::as_const_int(e) && *tir::as_const_int(e) == 1; };
    return d.size() == 4 && one(d[2]) && one(d[3]);
  }

  // The blocked twin of `like` [N, C, H, W], blocked by b: [N, ceil(C / b),
  // H, W, b] (its run-time dimensions too); the channels past C (padding)
  // hold finite values that no real output depends on.
  int new_value(const Value& like, int64_t b, const std::string& suffix) {
    Value v;
    v.name = g_.unique_name(like.name + suffix);
    v.dtype = like.dtype;
    int id = g_.add_value(std::move(v));
    DimExprs d = like.dim_exprs();
    g_.set_dims(id, {d[0], tir::Expr(padded(like.shape[1], b) / b), d[2], d[3], tir::Expr(b)});
    return id;
  }

  // The blocked twin of value v (a ToBlocked conversion unless one exists).
  int to_blocked(int v, int64_t b) {
    auto it = blocked_.find(v);
    if (it != blocked_.end()) {
      internal_assert(g_.values[it->second].shape.back() == b) << "block mismatch for " << g_.values[v].name;
      return it->second;
    }
    const Value src = g_.values[v];
    int out = new_value(src, b, ".nchwc");
    Node t;
    t.op = op_name(Op::KilnToBlocked);
    t.name = src.name + ".to_nchwc";
    t.attrs["block"].i = b;
    t.inputs = {v};
    t.outputs = {out};
    if (guards_.count(v)) t.guards = guards_[v];
    guards_[out] = t.guards;
    g_.nodes.push_back(std::move(t));
    conversions_++;
    blocked_[v] = out;
    return out;
  }

  // Emits `n` (already on blocked values) and FromBlocked conversions that
  // produce its original outputs `orig`.
  void emit(Node n, const std::vector<int>& orig) {
    std::string name = n.name;
    const std::vector<std::pair<int, bool>> guards = n.guards;
    for (int o : n.outputs)
      if (o >= 0) guards_[o] = guards;
    g_.nodes.push_back(std::move(n));
    for (size_t i = 0; i < orig.size(); i++) {
      int bv = g_.nodes.back().outputs[i];
      Node f;
      f.op = op_name(Op::KilnFromBlocked);
      f.name = name + ".from_nchwc";
      f.guards = guards;
      guards_[orig[i]] = guards;
      f.inputs = {bv};
      f.outputs = {orig[i]};
      blocked_[orig[i]] = bv;
      g_.nodes.push_back(std::move(f));
      conversions_++;
    }
  }

  bool rewrite(Node& n) {
    if (n.outputs.size() != 1 || n.outputs[0] < 0) return false;
    switch (n.traits().layout) {
      case OpLayout::Conv: return rewrite_conv(n);
      case OpLayout::Pool: return rewrite_pool(n);
      case OpLayout::Any: return rewrite_elementwise(n);
      case OpLayout::Concat: return rewrite_concat(n);
      case OpLayout::PackWeights:
        if (n.is(Op::Gemm)) pretranspose_gemm(n);
        if (n.is(Op::KilnQMatMul)) pack_int8_matmul_weights(n);
        else pack_matmul_weights(n);
        return false;
      case OpLayout::Nchw: return false;
    }
    return false;
  }

  // MatMul/Gemm with constant 2-D weights B [K, N] (Gemm: transB=0):
  // packed into panels [N/nb, K, nb] (kiln_packed_b=nb), nb the column tile
  // of the matmul schedule (matmul_panel_width), so that one tile's
  // weights are one contiguous block. The node is changed in place.
  void pack_matmul_weights(Node& n) {
    if (n.inputs.size() < 2 || n.inputs[1] < 0 || n.has_attr("kiln_packed_b")) return;
    if (n.is(Op::Gemm) && n.attr_int("transB", 0) != 0) return;
    const Value b = g_.values[n.inputs[1]];
    if (!b.is_constant() || b.shape.size() != 2 || (b.dtype != DType::F32 && b.dtype != DType::F64)) return;
    if (n.inputs[0] < 0) return;
    const Shape& as = g_.values[n.inputs[0]].shape;
    bool ta = n.is(Op::Gemm) && n.attr_int("transA", 0) != 0;
    int64_t M = as.size() < 2 ? 1 : ta ? as[as.size() - 1] : as[as.size() - 2];  // rows per batch
    int64_t K = b.shape[0], N = b.shape[1];
    int64_t nb = matmul_panel_width(M, N, vector_);
    if (!nb) return;
    std::vector<double> d = constant_as_doubles(b), p(d.size());
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < N; j++) p[(size_t)(((j / nb) * K + k) * nb + j % nb)] = d[(size_t)(k * N + j)];
    n.inputs[1] = g_.add_constant(b.name + ".packed", b.dtype, {N / nb, K, nb}, doubles_to_bytes(p, b.dtype));
    n.attrs["kiln_packed_b"].kind = Attr::Kind::Int;
    n.attrs["kiln_packed_b"].i = nb;
    transposed_++;
  }

  // kiln.QMatMul's int8 weights [K, N]: into panels of int32 words
  // [N/nb, K4/4, nb] for the target's dot product (lower/ops_int8.cpp),
  // each word four consecutive k of one column (K4: K rounded up to 4, zero
  // bytes past K). Without a dot-product instruction too: the widened dot
  // product does four multiply-adds per word.
  void pack_int8_matmul_weights(Node& n) {
    if (n.has_attr("kiln_packed_b") || n.inputs[0] < 0) return;
    const Value b = g_.values[n.inputs[1]];
    if (!b.is_constant() || b.shape.size() != 2 || b.dtype != DType::I8) return;
    const Shape& as = g_.values[n.inputs[0]].shape;
    int64_t M = as.size() < 2 ? 1 : as[as.size() - 2];
    int64_t K = b.shape[0], N = b.shape[1], K4 = padded(K, 4);
    int64_t nb = matmul_panel_width(M, N, vector_);
    if (!nb) return;
    std::vector<double> d = constant_as_doubles(b);
    std::vector<uint8_t> bytes((size_t)(N * K4), 0);
    for (int64_t k = 0; k < K; k++)
      for (int64_t j = 0; j < N; j++)
        bytes[(size_t)((((j / nb) * (K4 / 4) + k / 4) * nb + j % nb) * 4 + k % 4)] = (uint8_t)(int8_t)d[(size_t)(k * N + j)];
    n.inputs[1] = g_.add_constant(b.name + ".packed", DType::I32, {N / nb, K4 / 4, nb}, std::move(bytes));
    n.attrs["kiln_packed_b"].kind = Attr::Kind::Int;
    n.attrs["kiln_packed_b"].i = nb;
    n.attrs["kiln_int8_dot"].kind = Attr::Kind::Int;
    n.attrs["kiln_int8_dot"].i = 1;
    transposed_++;
  }

  // Gemm with constant B and transB=1 (a Linear layer): B is transposed
  // here, so the kernel's vector loads run along B's rows. The node itself
  // is kept (changed in place).
  void pretranspose_gemm(Node& n) {
    if (n.attr_int("transB", 0) == 0 || n.inputs.size() < 2 || n.inputs[1] < 0) return;
    const Value b = g_.values[n.inputs[1]];
    if (!b.is_constant() || b.shape.size() != 2 || (b.dtype != DType::F32 && b.dtype != DType::F64)) return;
    int64_t N = b.shape[0], K = b.shape[1];
    std::vector<double> d = constant_as_doubles(b), t(d.size());
    for (int64_t i = 0; i < N; i++)
      for (int64_t k = 0; k < K; k++) t[(size_t)(k * N + i)] = d[(size_t)(i * K + k)];
    n.inputs[1] = g_.add_constant(b.name + ".t", b.dtype, {K, N}, doubles_to_bytes(t, b.dtype));
    n.attrs["transB"].i = 0;
  }

  bool rewrite_conv(Node& n) {
    if (n.is(Op::KilnQConv)) return rewrite_int8_conv(n);
    if (n.inputs.size() < 2 || n.inputs[0] < 0 || n.inputs[1] < 0) return false;
    // Copies: the graph's value list grows below.
    const Value x = g_.values[n.inputs[0]], w = g_.values[n.inputs[1]], y = g_.values[n.outputs[0]];
    if (!is_float4d(x) || !is_float4d(y) || !w.is_constant() || w.shape.size() != 4 || w.dtype != x.dtype) return false;
    bool has_bias = n.inputs.size() > 2 && n.inputs[2] >= 0;
    if (has_bias && !g_.values[n.inputs[2]].is_constant()) return false;
    int64_t group = n.attr_int("group", 1), C = x.shape[1], M = y.shape[1];
    bool depthwise = group == C && group == M && w.shape[1] == 1 && group > 1;
    if (group != 1 && !depthwise) return false;
    int64_t m = block_of(M), c = depthwise ? m : input_block_of(C);
    if (!m || !c) return false;
    // A small conv whose input is not blocked anyway does not pay for the
    // conversions around it.
    int64_t macs = y.elements() * w.shape[1] * w.shape[2] * w.shape[3];
    if (!blocked_.count(n.inputs[0]) && macs < kMinMacs) return false;
    // Pack the weights: [M, C, KH, KW] -> [Mp/m, Cp/c, KH, KW, c, m], zero
    // for the padding channels (Mp, Cp: M and C padded to their blocks).
    int64_t KH = w.shape[2], KW = w.shape[3], Cw = w.shape[1], cw = depthwise ? 1 : c;
    int64_t Mp = padded(M, m), Cwp = padded(Cw, cw);
    std::vector<double> wd = constant_as_doubles(w), packed((size_t)(Mp * Cwp * KH * KW), 0.0);
    for (int64_t oc = 0; oc < M; oc++)
      for (int64_t ic = 0; ic < Cw; ic++)
        for (int64_t kh = 0; kh < KH; kh++)
          for (int64_t kw = 0; kw < KW; kw++) {
            int64_t to = ((((oc / m) * (Cwp / cw) + ic / cw) * KH + kh) * KW + kw) * cw * m + (ic % cw) * m + oc % m;
            packed[(size_t)to] = wd[(size_t)(((oc * Cw + ic) * KH + kh) * KW + kw)];
          }
    Node b = n;
    b.attrs["kiln_layout"].kind = Attr::Kind::String;
    b.attrs["kiln_layout"].s = "NCHWc";
    b.inputs[0] = to_blocked(n.inputs[0], c);
    b.inputs[1] = g_.add_constant(w.name + ".nchwc", w.dtype, {Mp / m, Cwp / cw, KH, KW, cw, m}, doubles_to_bytes(packed, w.dtype));
    if (has_bias && Mp != M) {  // the bias too, with zeros
      std::vector<double> bias = constant_as_doubles(g_.values[n.inputs[2]]);
      bias.resize((size_t)Mp, 0.0);
      b.inputs[2] = g_.add_constant(g_.values[n.inputs[2]].name + ".padded", w.dtype, {Mp}, doubles_to_bytes(bias, w.dtype));
    }
    b.outputs = {new_value(y, m, ".nchwc")};
    emit(std::move(b), n.outputs);
    return true;
  }

  // kiln.QConv (lower/ops_int8.cpp): int8 weights packed like a float
  // conv's, or, where c is a multiple of 4 (not depthwise), as int32 words
  // [M/m, C/c, KH, KW, c/4, m] of four input channels each (kiln_int8_dot);
  // bias, wsum and scale padded with zeros.
  bool rewrite_int8_conv(Node& n) {
    const Value x = g_.values[n.inputs[0]], w = g_.values[n.inputs[1]], y = g_.values[n.outputs[0]];
    if (!is_4d(x) || !is_4d(y) || !w.is_constant() || w.shape.size() != 4 || w.dtype != DType::I8) return false;
    int64_t group = n.attr_int("group", 1), C = x.shape[1], M = y.shape[1];
    bool depthwise = group == C && group == M && w.shape[1] == 1 && group > 1;
    if (group != 1 && !depthwise) return false;
    int64_t m = block_of(M), c = depthwise ? m : input_block_of(C);
    if (!m || !c) return false;
    // A narrow input (RGB) is blocked by 4 with zero channels added, for the
    // dot product: 4 bytes per step instead of 3 int32 products.
    if (!depthwise && c % 4 && padded(c, 4) <= lanes_ && !blocked_.count(n.inputs[0])) c = padded(c, 4);
    int64_t macs = y.elements() * w.shape[1] * w.shape[2] * w.shape[3];
    if (!blocked_.count(n.inputs[0]) && macs < kMinMacs) return false;
    int64_t KH = w.shape[2], KW = w.shape[3], Cw = w.shape[1], cw = depthwise ? 1 : c;
    int64_t Mp = padded(M, m), Cwp = padded(Cw, cw);
    bool dot = !depthwise && c % 4 == 0;
    std::vector<double> wd = constant_as_doubles(w);
    std::vector<uint8_t> packed((size_t)(Mp * Cwp * KH * KW), 0);
    for (int64_t oc = 0; oc < M; oc++)
      for (int64_t ic = 0; ic < Cw; ic++)
        for (int64_t kh = 0; kh < KH; kh++)
          for (int64_t kw = 0; kw < KW; kw++) {
            int64_t tile = (((oc / m) * (Cwp / cw) + ic / cw) * KH + kh) * KW + kw;
            int64_t to = dot ? (tile * (cw / 4) + (ic % cw) / 4) * m * 4 + (oc % m) * 4 + ic % 4
                             : tile * cw * m + (ic % cw) * m + oc % m;
            packed[(size_t)to] = (uint8_t)(int8_t)wd[(size_t)(((oc * Cw + ic) * KH + kh) * KW + kw)];
          }
    Node b = n;
    b.attrs["kiln_layout"].kind = Attr::Kind::String;
    b.attrs["kiln_layout"].s = "NCHWc";
    if (dot) b.attrs["kiln_int8_dot"].i = 1;
    b.inputs[0] = to_blocked(n.inputs[0], c);
    b.inputs[1] = dot ? g_.add_constant(w.name + ".nchwc", DType::I32, {Mp / m, Cwp / cw, KH, KW, cw / 4, m}, std::move(packed))
                      : g_.add_constant(w.name + ".nchwc", DType::I8, {Mp / m, Cwp / cw, KH, KW, cw, m}, std::move(packed));
    for (size_t i : {2, 3, 5}) {  // per-channel bias, wsum, scale
      if (i >= n.inputs.size() || n.inputs[i] < 0 || Mp == M) continue;
      const Value p = g_.values[n.inputs[i]];
      std::vector<double> d = constant_as_doubles(p);
      d.resize((size_t)Mp, 0.0);
      b.inputs[i] = g_.add_constant(p.name + ".padded", p.dtype, {Mp}, doubles_to_bytes(d, p.dtype));
    }
    b.outputs = {new_value(y, m, ".nchwc")};
    emit(std::move(b), n.outputs);
    return true;
  }

  bool rewrite_pool(Node& n) {
    if (n.inputs.empty() || n.inputs[0] < 0) return false;
    const Value x = g_.values[n.inputs[0]], y = g_.values[n.outputs[0]];
    bool int8_ok = n.is(Op::MaxPool);  // MaxPool also runs on quantized tensors
    if (!(int8_ok ? is_4d(x) && is_4d(y) : is_float4d(x) && is_float4d(y))) return false;
    int64_t b = block_of(x.shape[1]);
    if (!b || !blocked_.count(n.inputs[0])) return false;  // only where the input is blocked anyway
    Node p = n;
    p.attrs["kiln_layout"].kind = Attr::Kind::String;
    p.attrs["kiln_layout"].s = "NCHWc";
    p.inputs[0] = to_blocked(n.inputs[0], b);
    p.outputs = {new_value(y, b, ".nchwc")};
    emit(std::move(p), n.outputs);
    return true;
  }

  // A constant operand re-laid out to broadcast against [N, C/b, H, W, b]
  // as it did against [N, C, H, W]; -1 if it cannot be.
  int block_constant(int v, int64_t C, int64_t b) {
    const Value k = g_.values[v];
    Shape s = k.shape;
    if (s.size() > 4) return -1;
    while (s.size() < 4) s.insert(s.begin(), 1);
    if (s[1] != 1 && s[1] != C) return -1;
    if (k.dtype != DType::F32 && k.dtype != DType::F64) return -1;
    if (s[1] == 1) return g_.add_constant(k.name + ".nchwc", k.dtype, {s[0], 1, s[2], s[3], 1}, *k.data);
    int64_t Cp = padded(C, b), hw = s[2] * s[3];
    std::vector<double> d = constant_as_doubles(k), out((size_t)(s[0] * Cp * hw), 0.0);  // padding channels: 0
    for (int64_t n = 0; n < s[0]; n++)
      for (int64_t c = 0; c < C; c++)
        for (int64_t i = 0; i < hw; i++)
          out[(size_t)((((n * (Cp / b) + c / b) * hw) + i) * b + c % b)] = d[(size_t)((n * C + c) * hw + i)];
    return g_.add_constant(k.name + ".nchwc", k.dtype, {s[0], Cp / b, s[2], s[3], b}, doubles_to_bytes(out, k.dtype));
  }

  bool rewrite_elementwise(Node& n) {
    const Value y = g_.values[n.outputs[0]];
    if (!is_4d(y)) return false;
    if (n.traits().axis_operands())  // per-axis operands do not broadcast like numpy's
      for (size_t i = 1; i < n.inputs.size(); i++)
        if (n.inputs[i] >= 0 && g_.values[n.inputs[i]].elements() != 1) return false;
    int64_t C = y.shape[1], b = block_of(C);
    if (!b || (padded(C, b) != C && !n.traits().keeps_finite())) return false;
    std::vector<int> inputs = n.inputs;
    bool any_blocked = false;
    for (size_t i = 0; i < inputs.size(); i++) {
      int v = inputs[i];
      if (v < 0) continue;
      const Value x = g_.values[v];
      if (x.elements() == 1 && x.shape.size() <= 5) continue;  // a scalar broadcasts in any layout
      if (blocked_.count(v) && x.shape.size() == 4 && x.shape[1] == C) {
        inputs[i] = blocked_[v];
        any_blocked = true;
        continue;
      }
      // A per-channel value computed at run time ([N, C, 1, 1], e.g. the
      // scale of a squeeze-and-excitation block) is cheap to convert.
      if (!x.is_constant() && x.shape.size() == 4 && x.shape[1] == C && per_channel_4d(x)) {
        inputs[i] = to_blocked(v, b);
        continue;
      }
      if (!x.is_constant()) return false;
      inputs[i] = block_constant(v, C, b);
      if (inputs[i] < 0) return false;
    }
    if (!any_blocked) return false;  // nothing blocked feeds it: stay NCHW
    Node e = n;
    e.inputs = inputs;
    e.outputs = {new_value(y, b, ".nchwc")};
    emit(std::move(e), n.outputs);
    return true;
  }

  bool rewrite_concat(Node& n) {
    const Value y = g_.values[n.outputs[0]];
    if (!is_4d(y) || (n.attr_int("axis", 1) != 1 && n.attr_int("axis", 1) != -3)) return false;
    int64_t b = block_of(y.shape[1]);
    if (!b) return false;
    std::vector<int> inputs;
    for (int v : n.inputs) {
      if (v < 0 || !blocked_.count(v) || g_.values[blocked_[v]].shape.back() != b) return false;
      if (g_.values[v].shape[1] % b != 0) return false;  // padding would land between the inputs' channels
      inputs.push_back(blocked_[v]);
    }
    Node c = n;
    c.attrs["axis"].kind = Attr::Kind::Int;
    c.attrs["axis"].i = 1;
    c.inputs = inputs;
    c.outputs = {new_value(y, b, ".nchwc")};
    emit(std::move(c), n.outputs);
    return true;
  }
};

}  // namespace

bool pass_layout(Graph& g, PassContext& ctx) {
  if (!ctx.env.blocked_layout || ctx.env.vector.lanes < 4) return false;
  return Blocker(g, ctx.env.vector).run(ctx);
}

}  // namespace kiln::graph
