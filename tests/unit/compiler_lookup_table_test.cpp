// Units for the lookup-table graph pass (graph/pass_lookup_table.cpp) and
// the code it leads to: 8-bit-to-8-bit elementwise chains become
// kiln.LookupTable with a table the compiler computed, whose results are
// those of the chain bit for bit (the host's kernels run both: the table is
// looked up with vpermi2b where the host has AVX512-VBMI, gathered
// elsewhere); chains that are not self-contained, or read a constant that is
// not a scalar, stay.
#include <doctest/doctest.h>

#include <numeric>

#include "compiler_graph_builder.h"
#include "driver/evaluate.h"
#include "graph/passes.h"

namespace {

using namespace kiln;
using kiln::test::Builder;
using graph::DType;

const graph::Shape kShape = {1, 64, 256};  // big enough to be vectorized

int quantize(Builder& b, int x, double scale, double zp, DType t) {
  return b.node("QuantizeLinear", {x, b.constant_of("s", DType::F32, {}, {scale}), b.constant_of("z", t, {}, {zp})},
                kShape, {}, t);
}
int dequantize(Builder& b, int q, double scale, double zp, DType t) {
  return b.node("DequantizeLinear", {q, b.constant_of("s", DType::F32, {}, {scale}), b.constant_of("z", t, {}, {zp})},
                kShape);
}
int scalar(Builder& b, double v) { return b.constant_of("k", DType::F32, {}, {v}); }

// GELU as ONNX Runtime's quantizer leaves it: x * (1 + erf(x / sqrt 2)) * 0.5,
// every intermediate re-quantized (uint8).
Builder gelu() {
  Builder b;
  int x = b.input("x", kShape, DType::U8);
  int xf = dequantize(b, x, 0.05, 128, DType::U8);
  int e = b.node("Erf", {b.node("Div", {xf, scalar(b, 1.4142135)}, kShape)}, kShape);
  int ef = dequantize(b, quantize(b, e, 2.0 / 255, 128, DType::U8), 2.0 / 255, 128, DType::U8);
  int a = b.node("Add", {ef, scalar(b, 1.0)}, kShape);
  int af = dequantize(b, quantize(b, a, 2.0 / 255, 0, DType::U8), 2.0 / 255, 0, DType::U8);
  int m = b.node("Mul", {xf, af}, kShape);
  int mf = dequantize(b, quantize(b, m, 0.06, 40, DType::U8), 0.06, 40, DType::U8);
  b.output(quantize(b, b.node("Mul", {mf, scalar(b, 0.5)}, kShape), 0.03, 20, DType::U8));
  return b;
}

// Every byte value, 64 times, in a scrambled order.
std::vector<uint8_t> all_bytes() {
  std::vector<uint8_t> v(64 * 256);
  for (size_t i = 0; i < v.size(); i++) v[i] = (uint8_t)(i * 167 + 13);
  return v;
}

bool run_pass(graph::Graph& g, bool byte_table) {
  graph::PassContext ctx;
  ctx.env.evaluate = evaluate_graph;
  ctx.env.vector.byte_table = byte_table;
  return graph::pass_lookup_table(g, ctx);
}

int count(const graph::Graph& g, const std::string& op) {
  int n = 0;
  for (auto& node : g.nodes) n += node.op == op;
  return n;
}

}  // namespace

TEST_CASE("lookup-table: a quantized GELU becomes one table, equal bit for bit") {
  for (bool byte_table : {true, false}) {
    CAPTURE(byte_table);
    Builder b = gelu();
    graph::Graph g = b.g;
    REQUIRE(run_pass(g, byte_table));
    CHECK(g.nodes.size() == 1);
    CHECK(count(g, "kiln.LookupTable") == 1);
    auto want = evaluate_graph(b.g, {all_bytes()});
    auto got = evaluate_graph(g, {all_bytes()});
    REQUIRE(got.size() == 1);
    CHECK(got[0] == want[0]);
    std::vector<uint8_t> distinct(got[0].begin(), got[0].end());
    std::sort(distinct.begin(), distinct.end());
    CHECK(std::unique(distinct.begin(), distinct.end()) - distinct.begin() > 50);  // a real function, not a constant
  }
}

TEST_CASE("lookup-table: int8 in, int8 out; short chains only where bytes are looked up in registers") {
  Builder b;
  int x = b.input("x", kShape, DType::I8);
  int s = b.node("Sigmoid", {dequantize(b, x, 0.1, -3, DType::I8)}, kShape);
  b.output(quantize(b, s, 1.0 / 256, -128, DType::I8));
  graph::Graph without = b.g;
  CHECK_FALSE(run_pass(without, false));  // 3 nodes: cheaper computed than gathered
  graph::Graph g = b.g;
  REQUIRE(run_pass(g, true));
  CHECK(count(g, "kiln.LookupTable") == 1);
  CHECK(count(g, "Sigmoid") == 0);
  CHECK(evaluate_graph(g, {all_bytes()})[0] == evaluate_graph(b.g, {all_bytes()})[0]);
}

TEST_CASE("lookup-table: what stays computed") {
  SUBCASE("an intermediate value read outside the chain") {
    Builder b = gelu();
    b.output(b.g.nodes[1].outputs[0]);  // x / sqrt 2, now also a model output
    graph::Graph g = b.g;
    // The furthest 8-bit cut fails; a nearer one (from erf's quantized value on) may not:
    run_pass(g, true);
    CHECK(count(g, "Div") == 1);
    CHECK(count(g, "Erf") == 1);
    CHECK(evaluate_graph(g, {all_bytes()}) == evaluate_graph(b.g, {all_bytes()}));
  }
  SUBCASE("a constant that is not a scalar") {
    Builder b;
    int x = b.input("x", kShape, DType::U8);
    std::vector<double> bias(256);
    std::iota(bias.begin(), bias.end(), 0.0);
    int a = b.node("Add", {dequantize(b, x, 0.05, 128, DType::U8), b.constant_of("bias", DType::F32, {256}, bias)}, kShape);
    b.output(quantize(b, b.node("Tanh", {a}, kShape), 0.01, 128, DType::U8));
    graph::Graph g = b.g;
    CHECK_FALSE(run_pass(g, true));
  }
  SUBCASE("no evaluator: nothing changes") {
    Builder b = gelu();
    graph::PassContext ctx;
    ctx.env.vector.byte_table = true;
    CHECK_FALSE(graph::pass_lookup_table(b.g, ctx));
  }
}

TEST_CASE("lookup-table: a region whose input is another region's result, also read elsewhere") {
  // x -> DQ -> Relu -> Q -> y (a model output too) -> DQ -> Sigmoid -> Q -> z: two tables, the
  // second computed from all byte values, not from the first table's results.
  Builder b;
  int x = b.input("x", kShape, DType::U8);
  int y = quantize(b, b.node("Relu", {dequantize(b, x, 0.05, 128, DType::U8)}, kShape), 0.03, 0, DType::U8);
  int z = quantize(b, b.node("Sigmoid", {dequantize(b, y, 0.03, 0, DType::U8)}, kShape), 1.0 / 256, 0, DType::U8);
  b.output(y);
  b.output(z);
  graph::Graph g = b.g;
  REQUIRE(run_pass(g, true));
  CHECK(count(g, "kiln.LookupTable") == 2);
  auto want = evaluate_graph(b.g, {all_bytes()}), got = evaluate_graph(g, {all_bytes()});
  REQUIRE(got.size() == 2);
  CHECK(got[0] == want[0]);
  CHECK(got[1] == want[1]);
}

TEST_CASE("lookup-table: integer division stays computed (a zero divisor among the 256 inputs)") {
  // y = x / (x - 1) in uint8: x = 1 divides by zero, which the model's data may never hold.
  Builder b;
  int x = b.input("x", kShape, DType::U8);
  int d = b.node("Sub", {x, b.constant_of("one", DType::U8, {}, {1})}, kShape, {}, DType::U8);
  b.output(b.node("Div", {x, d}, kShape, {}, DType::U8));
  graph::Graph g = b.g;
  run_pass(g, true);  // x - 1 alone may become a table; the division must not be evaluated on all bytes
  CHECK(count(g, "Div") == 1);
}
