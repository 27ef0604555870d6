// Units for int8 (docs/int8.md): the dot-product intrinsics as the code
// generator emits them (vpdpbusd on this host, the widened form for an AVX2
// CPU), the quantize graph pass (QDQ and QOperator rewrites, checked against
// the float graph they replace), the int8 layouts of the layout pass, and
// the user errors for bad quantization parameters.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "compiler_graph_builder.h"
#include "compiler_test_util.h"
#include "driver/evaluate.h"
#include "graph/passes.h"

namespace {

using namespace kiln;
using kiln::test::Builder;
using kiln::test::ints;
using kiln::test::integer;
using graph::DType;

// Four bytes of each word: a's unsigned (u8) or signed, b's signed.
int32_t reference_dot(uint32_t a, uint32_t b, bool u8) {
  int32_t s = 0;
  for (int k = 0; k < 4; k++) {
    int32_t ak = u8 ? (int32_t)((a >> (8 * k)) & 0xFF) : (int32_t)(int8_t)(a >> (8 * k));
    s += ak * (int32_t)(int8_t)(b >> (8 * k));
  }
  return s;
}

// out[i] = acc[i] + Dot(a[i], b[i]) over n words, `lanes` per vector (0: scalar loop).
KernelDef dot_kernel(int64_t n, int64_t lanes, tir::Intrinsic dot) {
  KernelDef k;
  k.name = "dot";
  auto acc_b = tir::make_buffer("acc", tir::Int(32), n, 0), a_b = tir::make_buffer("a", tir::Int(32), n, 1),
       b_b = tir::make_buffer("b", tir::Int(32), n, 2), out_b = tir::make_buffer("out", tir::Int(32), n, 3);
  k.params = {acc_b, a_b, b_b, out_b};
  te::Tensor acc = te::placeholder("acc", {n}, tir::Int(32)), a = te::placeholder("a", {n}, tir::Int(32)),
             b = te::placeholder("b", {n}, tir::Int(32));
  te::Stage s(te::compute("out", {n}, [&](const te::Indices& i) {
    return acc(i) + tir::Call::make(dot, {a(i), b(i)});
  }));
  if (lanes) {
    auto [o, v] = s.split(s.axes[0], lanes);
    s.vectorize(v);
  }
  k.body = te::lower_stage(s, out_b, [&](const te::TensorNode* t) {
    return t == acc.get() ? acc_b : t == a.get() ? a_b : t == b.get() ? b_b : nullptr;
  });
  return k;
}

std::vector<uint8_t> u8_bytes(const std::vector<double>& x) {
  std::vector<uint8_t> b(x.size());
  for (size_t i = 0; i < x.size(); i++) b[i] = (uint8_t)(int64_t)x[i];
  return b;
}

// A QDQ convolution: x (uint8, input) -> DequantizeLinear -> Conv (int8
// per-channel weights, int32 bias) -> Relu -> QuantizeLinear (uint8).
struct QdqConv {
  Builder b;
  int x, y;
  int64_t C, M, H;
  QdqConv(int64_t C_, int64_t M_, int64_t H_, int64_t group = 1) : C(C_), M(M_), H(H_) {
    std::mt19937 rng(7);
    x = b.input("x", {1, C, H, H}, graph::DType::U8);
    int sx = b.constant_of("sx", graph::DType::F32, {}, {0.02});
    int zx = b.constant_of("zx", graph::DType::U8, {}, {121});
    int xf = b.node("DequantizeLinear", {x, sx, zx}, {1, C, H, H});
    int64_t Cg = C / group;
    std::vector<double> w((size_t)(M * Cg * 9)), ws((size_t)M), wz((size_t)M, 0.0), bias((size_t)M), bs((size_t)M);
    for (auto& v : w) v = (double)((int)(rng() % 255) - 127);
    for (int64_t m = 0; m < M; m++) ws[(size_t)m] = 0.001 + 0.0005 * (double)(m % 7), bias[(size_t)m] = (double)((int)(rng() % 4001) - 2000);
    for (int64_t m = 0; m < M; m++) bs[(size_t)m] = (double)((float)0.02 * (float)ws[(size_t)m]);
    int wq = b.constant_of("wq", graph::DType::I8, {M, Cg, 3, 3}, w);
    int wf = b.node("DequantizeLinear", {wq, b.constant_of("ws", graph::DType::F32, {M}, ws),
                                         b.constant_of("wz", graph::DType::I8, {M}, wz)},
                    {M, Cg, 3, 3}, {{"axis", integer(0)}});
    int bq = b.constant_of("bq", graph::DType::I32, {M}, bias);
    int bf = b.node("DequantizeLinear", {bq, b.constant_of("bs", graph::DType::F32, {M}, bs)}, {M}, {{"axis", integer(0)}});
    int c = b.node("Conv", {xf, wf, bf}, {1, M, H, H},
                   {{"pads", ints({1, 1, 1, 1})}, {"kernel_shape", ints({3, 3})}, {"group", integer(group)}});
    int r = b.node("Relu", {c}, {1, M, H, H});
    y = b.node("QuantizeLinear", {r, b.constant_of("sy", graph::DType::F32, {}, {0.05}),
                                  b.constant_of("zy", graph::DType::U8, {}, {7})},
               {1, M, H, H}, {}, graph::DType::U8);
    b.output(y);
  }
  std::vector<uint8_t> input() const {
    std::vector<double> v((size_t)(C * H * H));
    for (size_t i = 0; i < v.size(); i++) v[i] = (double)((i * 37 + 11) % 256);
    return u8_bytes(v);
  }
};

// Runs the quantize pass (and the layout pass when `blocked`) on g and
// compares the result with the float graph `before` (QDQ, run as written):
// uint8 outputs at most one step apart, almost all equal.
void check_against_float(const graph::Graph& before, graph::Graph g, const std::vector<uint8_t>& in, bool blocked,
                         const char* int8_op) {
  graph::PassContext ctx;
  REQUIRE(graph::pass_quantize(g, ctx));
  CAPTURE(ctx.detail);
  bool found = false;
  for (auto& n : g.nodes) found |= n.op == int8_op;
  CHECK(found);
  if (blocked) {
    graph::PassContext lctx;
    lctx.env.vector = vector_info(TargetSpec::host());
    lctx.env.blocked_layout = true;
    graph::pass_layout(g, lctx);
    graph::PassContext dctx;
    graph::pass_dead_code(g, dctx);
    bool moved = false;
    for (auto& n : g.nodes)
      moved |= n.op == int8_op && (n.attr_string("kiln_layout", "") == "NCHWc" || n.attr_int("kiln_packed_b", 0) > 0);
    CHECK(moved);  // the blocked / packed form was really tested
  }
  auto want = evaluate_graph(before, {in});
  auto got = evaluate_graph(g, {in});
  REQUIRE(want.size() == 1);
  REQUIRE(got[0].size() == want[0].size());
  size_t equal = 0;
  int worst = 0;
  for (size_t i = 0; i < got[0].size(); i++) {
    int d = std::abs((int)got[0][i] - (int)want[0][i]);
    worst = std::max(worst, d);
    equal += d == 0;
  }
  CHECK(worst <= 1);
  CHECK((double)equal >= 0.99 * (double)got[0].size());
}

std::string user_error_of(graph::Graph g) {
  graph::PassContext ctx;
  try {
    graph::pass_quantize(g, ctx);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("int8 dot products match the byte sums: vpdpbusd, widened, vectors and scalars") {
  const int64_t n = 64;
  std::mt19937 rng(3);
  std::vector<int32_t> acc(n), a(n), b(n), out(n);
  for (int64_t i = 0; i < n; i++) acc[i] = (int32_t)(rng() % 100000) - 50000, a[i] = (int32_t)rng(), b[i] = (int32_t)rng();
  a[0] = (int32_t)0xFFFFFFFF, b[0] = (int32_t)0x80808080;  // the extremes: 255 * -128 four times
  a[1] = (int32_t)0x80808080, b[1] = (int32_t)0x80808080;  // -128 * -128 (S8S8) four times
  // The host (AVX512-VNNI here: vpdpbusd zmm), an AVX-VNNI CPU (vpdpbusd
  // ymm, VEX) and an AVX2 CPU (no dot product: the widened form), all of
  // which this machine runs (the AVX-VNNI one only where it has avx_vnni).
  std::vector<std::string> targets = {"host", "llvm -mtriple=x86_64-linux-gnu -mcpu=haswell"};
  if (TargetSpec::host().features.find("+avxvnni") != std::string::npos)
    targets.push_back("llvm -mtriple=x86_64-linux-gnu -mcpu=alderlake");
  for (const std::string& target : targets) {
    for (tir::Intrinsic dot : {tir::Intrinsic::DotU8S8, tir::Intrinsic::DotS8S8}) {
      for (int64_t lanes : {0, 4, 8, 16}) {
        CAPTURE(target);
        CAPTURE(tir::intrinsic_name(dot));
        // The host has the dot product where it has AVX512-VNNI or AVX-VNNI (not on an AVX2-only machine).
        const std::string features = TargetSpec::parse(target).features;
        bool vnni = target.find("haswell") == std::string::npos &&
                    (target != "host" || features.find("+avx512vnni") != std::string::npos ||
                     features.find("+avxvnni") != std::string::npos);
        CHECK(vector_info(TargetSpec::parse(target)).int8_dot == (vnni ? Int8Dot::U8S8 : Int8Dot::None));
        CAPTURE(lanes);
        test::Library lib({dot_kernel(n, lanes, dot)}, TargetSpec::parse(target));
        lib.run(0, {acc.data(), a.data(), b.data(), out.data()});
        for (int64_t i = 0; i < n; i++)
          REQUIRE(out[i] == acc[i] + reference_dot((uint32_t)a[i], (uint32_t)b[i], dot == tir::Intrinsic::DotU8S8));
      }
    }
  }
}

TEST_CASE("quantize: QDQ Conv + Relu + QuantizeLinear becomes one kiln.QConv") {
  QdqConv q(8, 16, 6);
  graph::Graph g = q.b.g;
  graph::PassContext ctx;
  REQUIRE(graph::pass_quantize(g, ctx));
  graph::PassContext dctx;
  graph::pass_dead_code(g, dctx);
  REQUIRE(g.nodes.size() == 1);
  const graph::Node& n = g.nodes[0];
  CHECK(n.op == "kiln.QConv");
  CHECK(n.inputs[0] == q.x);
  CHECK(n.outputs[0] == q.y);
  CHECK(n.attr_int("kiln_clip_lo", -1) == 7);  // the Relu: the output's zero point
  CHECK(n.attr_int("kiln_clip_hi", -1) == 255);
  CHECK(g.values[n.inputs[1]].dtype == graph::DType::I8);
  CHECK(g.values[n.inputs[2]].dtype == graph::DType::I32);  // bias
  // wsum: each output channel's weight sum.
  const graph::Value& w = g.values[n.inputs[1]];
  const graph::Value& wsum = g.values[n.inputs[3]];
  for (int64_t m = 0; m < 16; m++) {
    double s = 0;
    for (int64_t i = 0; i < 8 * 9; i++) s += w.const_at(m * 72 + i);
    CHECK(wsum.const_at(m) == s);
  }
}

TEST_CASE("quantize: int8 convolutions compute what the float QDQ graph does (NCHW, blocked dot, depthwise)") {
  SUBCASE("NCHW") {
    QdqConv q(8, 16, 6);
    check_against_float(q.b.g, q.b.g, q.input(), false, "kiln.QConv");
  }
  SUBCASE("blocked, dot product") {
    QdqConv q(32, 32, 9);
    check_against_float(q.b.g, q.b.g, q.input(), true, "kiln.QConv");
  }
  SUBCASE("blocked, narrow input padded to 4 channels") {
    QdqConv q(3, 16, 40);
    check_against_float(q.b.g, q.b.g, q.input(), true, "kiln.QConv");
  }
  SUBCASE("blocked, depthwise") {
    QdqConv q(64, 64, 40, 64);
    check_against_float(q.b.g, q.b.g, q.input(), true, "kiln.QConv");
  }
}

TEST_CASE("quantize: QDQ MatMul and QLinearMatMul become kiln.QMatMul; K not a multiple of 4 pads") {
  for (bool qop : {false, true}) {
    for (bool blocked : {false, true}) {
      CAPTURE(qop);
      CAPTURE(blocked);
      const int64_t M = 8, K = 37, N = 32;
      Builder b;
      int x = b.input("x", {M, K}, graph::DType::U8);
      std::vector<double> w((size_t)(K * N)), ws((size_t)N);
      for (size_t i = 0; i < w.size(); i++) w[i] = (double)((int)((i * 7919) % 255) - 127);
      for (int64_t j = 0; j < N; j++) ws[(size_t)j] = 0.002 + 0.0003 * (double)(j % 5);
      int sx = b.constant_of("sx", graph::DType::F32, {}, {0.03}), zx = b.constant_of("zx", graph::DType::U8, {}, {100});
      int wq = b.constant_of("wq", graph::DType::I8, {K, N}, w);
      int sw = b.constant_of("sw", graph::DType::F32, {N}, ws), zw = b.constant_of("zw", graph::DType::I8, {N}, std::vector<double>((size_t)N, 0.0));
      int sy = b.constant_of("sy", graph::DType::F32, {}, {0.1}), zy = b.constant_of("zy", graph::DType::U8, {}, {128});
      int xf = b.node("DequantizeLinear", {x, sx, zx}, {M, K});
      int wf = b.node("DequantizeLinear", {wq, sw, zw}, {K, N}, {{"axis", integer(1)}});
      int mm = b.node("MatMul", {xf, wf}, {M, N});
      int y = b.node("QuantizeLinear", {mm, sy, zy}, {M, N}, {}, graph::DType::U8);
      b.output(y);
      graph::Graph reference = b.g, g = b.g;
      if (qop) {  // the same in QOperator form: one QLinearMatMul
        g.nodes.clear();
        graph::Node n;
        n.op = "QLinearMatMul";
        n.name = "qlinear";
        n.inputs = {x, sx, zx, wq, sw, zw, sy, zy};
        n.outputs = {y};
        g.nodes.push_back(n);
        graph::recompute_producers(g);
      }
      std::vector<double> in((size_t)(M * K));
      for (size_t i = 0; i < in.size(); i++) in[i] = (double)((i * 53 + 5) % 256);
      check_against_float(reference, g, u8_bytes(in), blocked, "kiln.QMatMul");
    }
  }
}

TEST_CASE("quantize: bad scales and zero points are user errors naming the node") {
  auto graph_with = [](double scale, DType zp_type, double zp, int64_t scale_len) {
    Builder b;
    int x = b.input("x", {1, 4, 2, 2});
    std::vector<double> s((size_t)scale_len, scale);
    int sv = b.constant_of("s", graph::DType::F32, scale_len > 1 ? graph::Shape{scale_len} : graph::Shape{}, s);
    int zv = b.constant_of("z", zp_type, scale_len > 1 ? graph::Shape{scale_len} : graph::Shape{}, std::vector<double>((size_t)scale_len, zp));
    int q = b.node("QuantizeLinear", {x, sv, zv}, {1, 4, 2, 2}, {{"axis", integer(1)}}, graph::DType::U8);
    b.g.nodes.back().name = "the_quantizer";
    b.output(q);
    return b.g;
  };
  CHECK(user_error_of(graph_with(0.0, DType::U8, 0, 1)).find("QuantizeLinear node 'the_quantizer'") != std::string::npos);
  CHECK(user_error_of(graph_with(0.0, DType::U8, 0, 1)).find("scale 0 is not a positive finite number") != std::string::npos);
  CHECK(user_error_of(graph_with(NAN, DType::U8, 0, 1)).find("not a positive finite number") != std::string::npos);
  CHECK(user_error_of(graph_with(-1.0, DType::U8, 0, 1)).find("not a positive finite number") != std::string::npos);
  CHECK(user_error_of(graph_with(0.5, DType::I32, 300, 1)).find("must be the same type") != std::string::npos);
  CHECK(user_error_of(graph_with(0.5, DType::U8, 0, 3)).find("per-channel lengths must match") != std::string::npos);
  CHECK(user_error_of(graph_with(0.5, DType::U8, 0, 4)).empty());  // per-channel along axis 1: fine
  CHECK(user_error_of(graph_with(0.5, DType::U8, 0, 1)).empty());
}

TEST_CASE("QuantizeLinear: half-way values round to even, saturate, and NaN saturates to the low end") {
  // 67 values: a vector body and a scalar tail. x / 0.5 lands on k + 0.5 for
  // many k, on the bounds and past them, and on the infinities and NaN.
  std::vector<float> x;
  for (int k = -70; k < 60; k += 3) x.push_back(0.5f * ((float)k + 0.5f));
  for (float v : {1e30f, -1e30f, INFINITY, -INFINITY, NAN, 63.75f, -64.25f, 0.25f, -0.25f, 0.75f})
    x.push_back(v);
  while (x.size() < 67) x.push_back(0.5f * (float)x.size());
  for (DType t : {DType::U8, DType::I8}) {
    CAPTURE((int)t);
    const double zp = t == DType::U8 ? 3 : -5, lo = t == DType::U8 ? 0 : -128, hi = t == DType::U8 ? 255 : 127;
    Builder b;
    int64_t n = (int64_t)x.size();
    int in = b.input("x", {n}, DType::F32);
    int y = b.node("QuantizeLinear", {in, b.constant_of("s", DType::F32, {}, {0.5}), b.constant_of("z", t, {}, {zp})},
                   {n}, {}, t);
    b.output(y);
    std::vector<uint8_t> bytes(x.size() * 4);
    std::memcpy(bytes.data(), x.data(), bytes.size());
    auto got = evaluate_graph(b.g, {bytes});
    REQUIRE(got.size() == 1);
    REQUIRE(got[0].size() == x.size());
    for (size_t i = 0; i < x.size(); i++) {
      CAPTURE(x[i]);
      float q = x[i] / 0.5f;
      double want = std::isnan(q) ? lo : std::min(hi, std::max(lo, (double)std::nearbyint(q) + zp));
      int have = t == DType::U8 ? (int)got[0][i] : (int)(int8_t)got[0][i];
      CHECK(have == (int)want);
    }
  }
}
