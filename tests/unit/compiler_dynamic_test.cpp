// Units for run-time dimensions on the compiler side (docs/dynamic-shapes.md):
// bounds of expressions over shape symbols, dimension inference through
// small hand-built graphs (import/infer_dims.cpp), the constraints it
// records, and the dimensions constraints make equal (Graph::add_equal_dims)
// as the passes and the fusion see them.
#include <doctest/doctest.h>

#include <set>
#include <string>

#include "compiler_graph_builder.h"
#include "graph/passes.h"
#include "import/infer_dims.h"
#include "lower/fuse.h"
#include "support/diagnostics.h"
#include "tir/inplace.h"
#include "tir/ir_printer.h"
#include "tir/ir_visitor.h"
#include "tir/simplify.h"

namespace {

using namespace kiln::graph;
using kiln::test::Builder;
using kiln::test::ints;
using kiln::tir::Expr;

// Adds shape symbol NAME in LO..HI to the graph (the way the importer does).
Expr add_symbol(Graph& g, const std::string& name, int64_t lo, int64_t hi) {
  Symbol s;
  s.name = name;
  s.lo = lo;
  s.hi = hi;
  s.var = kiln::tir::Var::make_symbol(name, (int)g.symbols.size(), lo, hi);
  g.symbols.push_back(s);
  return s.var;
}

// A model input with run-time dimensions.
int dynamic_input(Builder& b, const std::string& name, const DimExprs& dims) {
  int v = b.input(name, Shape(dims.size(), 1));
  b.g.set_dims(v, dims);
  return v;
}

// A node output whose dimensions ONNX's inference did not know (rank r).
int unknown(Builder& b, const std::string& op, std::vector<int> ins, size_t r,
            std::map<std::string, Attr> attrs = {}) {
  return b.node(op, std::move(ins), Shape(r, -1), std::move(attrs));
}

std::string str(const Expr& e) { return kiln::tir::to_string(kiln::tir::simplify(e)); }

bool mentions(const Graph& g, const std::string& text) {
  for (auto& c : g.constraints)
    if (c.message.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST_CASE("dynamic: bounds of expressions over shape symbols") {
  Expr h = kiln::tir::Var::make_symbol("H", 0, 32, 1280);
  Expr w = kiln::tir::Var::make_symbol("W", 1, 8, 64);
  CHECK(kiln::tir::is_symbol(h));
  auto r = kiln::tir::bounds_of((h - Expr(1)) / Expr(4) + Expr(1));
  CHECK(r.min == 8);
  CHECK(r.max == 320);
  r = kiln::tir::bounds_of(h * w);
  CHECK(r.min == 32 * 8);
  CHECK(r.max == 1280 * 64);
  r = kiln::tir::bounds_of(h - w);
  CHECK(r.min == 32 - 64);
  CHECK(r.max == 1280 - 8);
  CHECK(kiln::tir::only_symbols(h * w + Expr(3)));
  CHECK(kiln::tir::symbols_used(w * h + w) == std::vector<int>{0, 1});
}

TEST_CASE("dynamic: equal dimensions rewrite to the shorter form, constants first") {
  Graph g;
  Expr h = add_symbol(g, "H", 32, 1280);
  Expr a = (h - Expr(1)) / Expr(4) + Expr(1);
  Expr b = ((h - Expr(1)) / Expr(32)) * Expr(8) + Expr(8);
  CHECK_FALSE(same_dims({a}, {b}));
  CHECK_FALSE(g.same_dims({a}, {b}));
  g.add_equal_dims(b, a);
  CHECK(g.same_dims({a, Expr(3)}, {b, Expr(3)}));
  CHECK_FALSE(g.same_dims({a, Expr(3)}, {b, Expr(4)}));
  CHECK(str(g.canonical(b * Expr(2))) == str(a * Expr(2)));
  // Recording it again, either way round, adds nothing (no cycle).
  size_t n = g.equal_dims.size();
  g.add_equal_dims(a, b);
  CHECK(g.equal_dims.size() == n);
  // An equality with a constant makes the expression that constant; the
  // constant is never rewritten into the expression.
  g.add_equal_dims(h, Expr(640));
  CHECK(str(g.canonical(h * Expr(2))) == "1280");
  CHECK(str(g.canonical(Expr(640) + h)) == "1280");
  CHECK(kiln::tir::as_const_int(g.canonical(a)));
}

TEST_CASE("dynamic: inference through strided convolutions, an upsample and an Add") {
  // x[1, 4, H, W] -> Conv stride 4 (ceil(H/4)) and Conv stride 8 then a 2x
  // Resize (2 * ceil(H/8)); the Add needs them equal: a constraint naming it,
  // and from then on one dimension (both branches fuse into the Add's kernel).
  Builder b;
  b.g.opset = 13;
  Expr h = add_symbol(b.g, "H", 32, 1280), w = add_symbol(b.g, "W", 32, 1280);
  int x = dynamic_input(b, "x", {Expr(1), Expr(4), h, w});
  int w4 = b.constant("w4", {4, 4, 1, 1}, std::vector<float>(16, 0.25f));
  int w8 = b.constant("w8", {4, 4, 1, 1}, std::vector<float>(16, 0.5f));
  int a = unknown(b, "Conv", {x, w4}, 4, {{"kernel_shape", ints({1, 1})}, {"strides", ints({4, 4})}});
  int c8 = unknown(b, "Conv", {x, w8}, 4, {{"kernel_shape", ints({1, 1})}, {"strides", ints({8, 8})}});
  int roi = b.constant("roi", {0}, {});
  int scales = b.constant("scales", {4}, {1, 1, 2, 2});
  int up = unknown(b, "Resize", {c8, roi, scales}, 4);
  int sum = unknown(b, "Add", {a, up}, 4);
  b.output(sum);
  kiln::infer_run_time_dims(b.g);
  const Graph& g = b.g;
  REQUIRE(g.values[a].is_dynamic());
  REQUIRE(g.values[up].is_dynamic());
  CHECK(str(g.values[a].dims[2]) == str((h - Expr(1)) / Expr(4) + Expr(1)));
  CHECK(g.values[a].shape == Shape{1, 4, 320, 320});  // the bounds
  CHECK_FALSE(same_dims(g.values[a].dims, g.values[up].dims));
  CHECK(g.same_dims(g.values[a].dims, g.values[up].dims));
  CHECK(g.same_dims(g.values[sum].dims, g.values[a].dims));
  CHECK(g.constraints.size() == 2);  // H and W
  CHECK(mentions(g, "Add"));
  CHECK(mentions(g, "broadcast"));
  std::set<int> fused = kiln::choose_fused_values(g);
  CHECK(fused.count(up));
  CHECK(fused.count(a));  // its dimensions differ from the Add's but for the equality
}

TEST_CASE("dynamic: inference follows a shape computation into Reshape and drops it") {
  // y = Reshape(x, Concat(Shape(x)[0:1], [-1])): [N, 8, 4] -> [N, 32], the
  // Shape/Slice/Concat nodes dropped as symbolic constants.
  Builder b;
  b.g.opset = 13;
  Expr n = add_symbol(b.g, "N", 1, 16);
  int x = dynamic_input(b, "x", {n, Expr(8), Expr(4)});
  int shape = b.node("Shape", {x}, {3}, {}, DType::I64);
  int starts = b.constant_i64("starts", {0}), ends = b.constant_i64("ends", {1});
  int first = b.node("Slice", {shape, starts, ends}, {1}, {}, DType::I64);
  int rest = b.constant_i64("rest", {-1});
  kiln::graph::Attr axis;
  axis.kind = Attr::Kind::Int;
  axis.i = 0;
  int target = b.node("Concat", {first, rest}, {2}, {{"axis", axis}}, DType::I64);
  int y = unknown(b, "Reshape", {x, target}, 2);
  b.output(y);
  kiln::infer_run_time_dims(b.g);
  REQUIRE(b.g.values[y].is_dynamic());
  CHECK(str(b.g.values[y].dims[0]) == "N");
  CHECK(str(b.g.values[y].dims[1]) == "32");
  CHECK(b.g.nodes.size() == 1);  // only the Reshape is left
  CHECK(b.g.nodes[0].op == "Reshape");
}

TEST_CASE("dynamic: dimensions that can never agree are a user error naming the node") {
  Builder b;
  b.g.opset = 13;
  Expr n = add_symbol(b.g, "N", 1, 16);
  int x = dynamic_input(b, "x", {n, Expr(8)});
  int k = b.constant("k", {4, 3}, std::vector<float>(12, 1.0f));
  int y = unknown(b, "MatMul", {x, k}, 2);
  b.output(y);
  bool threw = false;
  try {
    kiln::infer_run_time_dims(b.g);
  } catch (const kiln::UserError& e) {
    threw = true;
    CHECK(std::string(e.what()).find("MatMul") != std::string::npos);
  }
  CHECK(threw);
}

TEST_CASE("dynamic: NonZero and Compress get data symbols with a hidden count output") {
  // NonZero(x [3, 5]) -> [2, c] with c in 0..15; Compress(x, cond [4], axis 1)
  // -> [3, d] with d in 0..4 (the shorter of the condition and the axis).
  // Each node gains output 1, the int64 [1] count that is its symbol's source.
  Builder b;
  b.g.opset = 13;
  int x = b.input("x", {3, 5});
  int cond = b.input("cond", {4}, DType::Bool);
  int nz = unknown(b, "NonZero", {x}, 2);
  kiln::graph::Attr axis;
  axis.kind = Attr::Kind::Int;
  axis.i = 1;
  int kept = unknown(b, "Compress", {x, cond}, 2, {{"axis", axis}});
  b.output(nz);
  b.output(kept);
  kiln::infer_run_time_dims(b.g);
  const Graph& g = b.g;
  REQUIRE(g.symbols.size() == 2);
  CHECK(g.symbols[0].lo == 0);
  CHECK(g.symbols[0].hi == 15);
  CHECK(g.symbols[1].hi == 4);
  REQUIRE(g.nodes[0].outputs.size() == 2);
  CHECK(g.nodes[0].outputs[1] == g.symbols[0].source_value);
  const Value& count = g.values[(size_t)g.symbols[0].source_value];
  CHECK(count.dtype == DType::I64);
  CHECK(count.shape == Shape{1});
  CHECK(count.producer == 0);
  CHECK(str(g.values[nz].dims[0]) == "2");
  CHECK(str(g.values[nz].dims[1]) == str(g.symbols[0].var));
  CHECK(g.values[nz].shape == Shape{2, 15});  // planned at the bound
  CHECK(str(g.values[kept].dims[1]) == str(g.symbols[1].var));
  CHECK(g.values[kept].shape == Shape{3, 4});
  // Never removed, folded or merged: the symbol needs its source. With its
  // output unread, the NonZero stays (dead-code) and so does its symbol.
  Builder d;
  d.g.opset = 13;
  int dx = d.input("x", {3, 5});
  unknown(d, "NonZero", {dx}, 2);
  d.output(d.node("Relu", {dx}, {3, 5}));
  kiln::infer_run_time_dims(d.g);
  PassContext ctx;
  pass_dead_code(d.g, ctx);
  pass_constant_fold(d.g, ctx);
  pass_cse(d.g, ctx);
  REQUIRE(d.g.nodes.size() == 2);
  CHECK(d.g.nodes[0].op == "NonZero");
  CHECK(op_traits("NonZero").data_shape());
  CHECK(op_traits("Compress").data_shape());
  CHECK_FALSE(op_traits("Gather").data_shape());
}

TEST_CASE("dynamic: a run-time If's branches are never fused with what runs unguarded, CSE keeps them apart") {
  // r = Relu(x) guarded (then branch); y = Neg(x) guarded (else); z = Add(r, y)
  // unguarded: no fusion of the branches into z, nor of one branch into the
  // other; two identical Relu of x, one per branch, stay two.
  Builder b;
  b.g.opset = 13;
  int x = b.input("x", {4});
  int flag = b.input("flag", {1}, DType::Bool);
  int r = b.node("Relu", {x}, {4});
  int r2 = b.node("Relu", {x}, {4});
  int sum = b.node("Add", {r, r2}, {4});
  b.output(sum);
  b.g.nodes[0].guards = {{flag, true}};
  b.g.nodes[1].guards = {{flag, false}};
  std::set<int> fused = kiln::choose_fused_values(b.g);
  CHECK_FALSE(fused.count(r));
  CHECK_FALSE(fused.count(r2));
  PassContext ctx;
  pass_cse(b.g, ctx);
  CHECK(b.g.nodes.size() == 3);
  b.g.nodes[1].guards = b.g.nodes[0].guards;  // the same branch: merged
  pass_cse(b.g, ctx);
  CHECK(b.g.nodes.size() == 2);
}
