// Units for the graph optimizer (compiler/graph/passes.h): one test per pass
// on a small hand-built graph, checking the graph after the pass and, where
// values change, that the graph computes the same outputs before and after
// (both run through the real compiler: the driver's steps from lowering to
// the kernel library, then dlopen; see driver/evaluate.h).
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <sstream>

#include "compiler_graph_builder.h"
#include "driver/evaluate.h"
#include "graph/passes.h"
#include "tune/space.h"
#include "lower/fuse.h"
#include "lower/lower_graph.h"
#include "support/diagnostics.h"

namespace {

using namespace kiln::graph;
using kiln::test::Builder;
using kiln::test::ints;
using kiln::test::integer;
using kiln::test::real;
using kiln::test::tensor;

std::vector<float> pattern(int64_t n, float scale, float offset = 0) {
  std::vector<float> x((size_t)n);
  for (int64_t i = 0; i < n; i++) x[(size_t)i] = std::sin(0.7f * (float)i + offset) * scale;
  return x;
}

std::vector<uint8_t> bytes_of(const std::vector<float>& x) {
  std::vector<uint8_t> b(x.size() * 4);
  memcpy(b.data(), x.data(), b.size());
  return b;
}

std::vector<float> floats_of(const std::vector<uint8_t>& b) {
  std::vector<float> x(b.size() / 4);
  memcpy(x.data(), b.data(), b.size());
  return x;
}

std::vector<std::string> ops_of(const Graph& g) {
  std::vector<std::string> ops;
  for (auto& n : g.nodes) ops.push_back(n.op);
  return ops;
}

// Every model input filled with a deterministic pattern.
std::vector<std::vector<uint8_t>> inputs_for(const Graph& g) {
  std::vector<std::vector<uint8_t>> in;
  for (size_t k = 0; k < g.inputs.size(); k++) {
    const Value& v = g.values[g.inputs[k]];
    in.push_back(bytes_of(pattern(v.elements(), 1.0f, (float)k)));
  }
  return in;
}

// Runs before and after through the compiler and compares every output.
void check_same_outputs(const Graph& before, const Graph& after, double tol = 1e-5) {
  auto in = inputs_for(before);
  auto a = kiln::evaluate_graph(before, in);
  auto b = kiln::evaluate_graph(after, in);
  REQUIRE(a.size() == b.size());
  for (size_t k = 0; k < a.size(); k++) {
    auto x = floats_of(a[k]), y = floats_of(b[k]);
    REQUIRE(x.size() == y.size());
    double worst = 0;
    for (size_t i = 0; i < x.size(); i++) worst = std::max(worst, std::fabs((double)x[i] - y[i]) / (1.0 + std::fabs(x[i])));
    CHECK(worst <= tol);
  }
}

bool all_consumers_valid(const Graph& g) {
  for (size_t i = 0; i < g.nodes.size(); i++)
    for (int v : g.nodes[i].inputs)
      if (v >= 0 && !g.values[v].is_constant() && !is_model_input(g, v)) {
        int p = g.values[v].producer;
        if (p < 0 || p >= (int)i) return false;  // produced earlier, in topological order
      }
  for (int o : g.outputs)
    if (!g.values[o].is_constant() && !is_model_input(g, o) && g.values[o].producer < 0) return false;
  return true;
}

}  // namespace

// A pass context whose constant folding evaluates with the compiler, as the
// driver sets it up.
PassContext with_evaluator() {
  PassContext ctx;
  ctx.env.evaluate = kiln::evaluate_graph;
  return ctx;
}

// A pass context for a CPU target with `lanes` float32 lanes.
PassContext with_vectors(int lanes) {
  PassContext ctx;
  ctx.env.vector = kiln::VectorInfo{lanes, 16};
  ctx.env.blocked_layout = true;
  return ctx;
}

TEST_CASE("graph pass identity: Identity and inference Dropout are removed, output names kept") {
  Builder b;
  int x = b.input("x", {2, 5});
  int i1 = b.node("Identity", {x}, {2, 5});
  int r = b.node("Relu", {i1}, {2, 5});
  int d = b.node("Dropout", {r}, {2, 5});
  b.output(d);
  Graph before = b.g;
  PassContext ctx;
  CHECK(pass_identity(b.g, ctx));
  CHECK(ops_of(b.g) == std::vector<std::string>{"Relu"});
  CHECK(b.g.nodes[0].inputs == std::vector<int>{x});
  CHECK(b.g.values[b.g.outputs[0]].name == before.values[d].name);
  CHECK(all_consumers_valid(b.g));
  check_same_outputs(before, b.g);
  PassContext ctx2;
  CHECK_FALSE(pass_identity(b.g, ctx2));
}

TEST_CASE("graph pass identity: an Identity from a model input to an output stays") {
  Builder b;
  int x = b.input("x", {3});
  int i1 = b.node("Identity", {x}, {3});
  b.output(i1);
  PassContext ctx;
  CHECK_FALSE(pass_identity(b.g, ctx));
  CHECK(b.g.nodes.size() == 1);
}

TEST_CASE("graph pass dead-code: unreachable nodes and unused constants go") {
  Builder b;
  int x = b.input("x", {4});
  int c = b.constant("unused_c", {4}, {1, 2, 3, 4});
  int s = b.node("Sigmoid", {x}, {4});
  b.node("Add", {s, c}, {4});  // dead
  int r = b.node("Relu", {x}, {4});
  b.output(r);
  PassContext ctx;
  CHECK(pass_dead_code(b.g, ctx));
  CHECK(ops_of(b.g) == std::vector<std::string>{"Relu"});
  CHECK_FALSE(b.g.values[c].is_constant());
  CHECK(all_consumers_valid(b.g));
  PassContext ctx2;
  CHECK_FALSE(pass_dead_code(b.g, ctx2));
}

TEST_CASE("graph pass cse: identical op, attributes and inputs become one node") {
  Builder b;
  int x = b.input("x", {2, 6});
  int e1 = b.node("LeakyRelu", {x}, {2, 6}, {{"alpha", real(0.1)}});
  int e2 = b.node("LeakyRelu", {x}, {2, 6}, {{"alpha", real(0.1)}});
  int e3 = b.node("LeakyRelu", {x}, {2, 6}, {{"alpha", real(0.2)}});  // different attribute: kept
  int s1 = b.node("Sigmoid", {e1}, {2, 6});
  int s2 = b.node("Sigmoid", {e2}, {2, 6});  // a duplicate once e2 is e1
  int a = b.node("Add", {s1, s2}, {2, 6});
  int out = b.node("Add", {a, e3}, {2, 6});
  b.output(out);
  Graph before = b.g;
  PassContext ctx;
  CHECK(pass_cse(b.g, ctx));
  CHECK(ops_of(b.g) == std::vector<std::string>{"LeakyRelu", "LeakyRelu", "Sigmoid", "Add", "Add"});
  CHECK(b.g.nodes[3].inputs[0] == b.g.nodes[3].inputs[1]);
  CHECK(all_consumers_valid(b.g));
  check_same_outputs(before, b.g);
}

TEST_CASE("graph pass fold-batchnorm: Conv -> BatchNormalization folds into the conv") {
  Builder b;
  int x = b.input("x", {1, 3, 7, 6});
  int w = b.constant("w", {4, 3, 3, 3}, pattern(108, 0.4f));
  int bias = b.constant("bias", {4}, {0.1f, -0.2f, 0.3f, 0.05f});
  int conv = b.node("Conv", {x, w, bias}, {1, 4, 7, 6}, {{"pads", ints({1, 1, 1, 1})}});
  int scale = b.constant("scale", {4}, {1.5f, 0.5f, -0.75f, 2.0f});
  int shift = b.constant("shift", {4}, {0.2f, -0.3f, 0.0f, 1.0f});
  int mean = b.constant("mean", {4}, {0.1f, 0.4f, -0.2f, 0.0f});
  int var = b.constant("var", {4}, {0.5f, 2.0f, 1.0f, 0.1f});
  int y = b.node("BatchNormalization", {conv, scale, shift, mean, var}, {1, 4, 7, 6}, {{"epsilon", real(1e-3)}});
  int r = b.node("Relu", {y}, {1, 4, 7, 6});
  b.output(r);
  Graph before = b.g;
  PassContext ctx;
  CHECK(pass_fold_batchnorm(b.g, ctx));
  CHECK(ops_of(b.g) == std::vector<std::string>{"Conv", "Relu"});
  CHECK(b.g.nodes[0].outputs[0] == y);  // the conv writes the BN's output value
  CHECK(b.g.values[b.g.nodes[0].inputs[1]].is_constant());
  CHECK(b.g.values[w].const_at(0) == doctest::Approx(before.values[w].const_at(0)));  // original untouched
  CHECK(all_consumers_valid(b.g));
  check_same_outputs(before, b.g, 1e-5);
}

TEST_CASE("graph pass fold-batchnorm: Gemm -> BatchNormalization, and a shared conv output is left alone") {
  Builder b;
  int x = b.input("x", {3, 5});
  int B = b.constant("B", {4, 5}, pattern(20, 0.5f));
  int C = b.constant("C", {4}, {0.1f, 0.2f, 0.3f, 0.4f});
  int gm = b.node("Gemm", {x, B, C}, {3, 4}, {{"transB", integer(1)}, {"beta", real(0.5)}, {"alpha", real(1.25)}});
  int y = b.node("BatchNormalization",
                 {gm, b.constant("s", {4}, {1, 2, 3, 4}), b.constant("t", {4}, {0, 1, 0, 1}),
                  b.constant("m", {4}, {0.5f, 0, -0.5f, 0}), b.constant("v", {4}, {1, 2, 0.5f, 4})},
                 {3, 4});
  b.output(y);
  Graph before = b.g;
  PassContext ctx;
  CHECK(pass_fold_batchnorm(b.g, ctx));
  CHECK(ops_of(b.g) == std::vector<std::string>{"Gemm"});
  check_same_outputs(before, b.g, 1e-5);

  Builder s;  // conv output also read elsewhere: no fold
  int xi = s.input("x", {1, 2, 4, 4});
  int c = s.node("Conv", {xi, s.constant("w", {2, 2, 1, 1}, {1, 2, 3, 4})}, {1, 2, 4, 4});
  int bn = s.node("BatchNormalization",
                  {c, s.constant("s", {2}, {1, 2}), s.constant("t", {2}, {0, 1}), s.constant("m", {2}, {0, 0}),
                   s.constant("v", {2}, {1, 1})},
                  {1, 2, 4, 4});
  s.output(bn);
  s.output(c);
  PassContext ctx2;
  CHECK_FALSE(pass_fold_batchnorm(s.g, ctx2));
}

TEST_CASE("graph pass fold-affine: per-channel Mul and Add after a Conv fold into weights and bias") {
  Builder b;
  int x = b.input("x", {1, 2, 6, 5});
  int w = b.constant("w", {3, 2, 3, 3}, pattern(54, 0.3f));
  int conv = b.node("Conv", {x, w}, {1, 3, 4, 3});  // no bias: one is added
  int m = b.node("Mul", {b.constant("k", {3, 1, 1}, {2.0f, -0.5f, 0.25f}), conv}, {1, 3, 4, 3});
  int a = b.node("Add", {m, b.constant("c", {1, 3, 1, 1}, {0.5f, 1.0f, -1.0f})}, {1, 3, 4, 3});
  int s = b.node("Sub", {a, b.constant("one", {}, {0.125f})}, {1, 3, 4, 3});
  // Not per channel: varies along W, stays.
  int n = b.node("Mul", {s, b.constant("row", {3}, {1, 2, 3})}, {1, 3, 4, 3});
  b.output(n);
  Graph before = b.g;
  PassContext ctx;
  CHECK(pass_fold_affine(b.g, ctx));
  CHECK(ops_of(b.g) == std::vector<std::string>{"Conv", "Mul"});
  CHECK(b.g.nodes[0].inputs.size() == 3);
  CHECK(b.g.nodes[0].outputs[0] == s);
  CHECK(all_consumers_valid(b.g));
  check_same_outputs(before, b.g, 1e-5);
}

// The decomposed layer norm as torch exports it: over the last axis with
// scale and bias; over the last two with neither (a scale of ones is made);
// and a pattern whose mean is read elsewhere, which stays.
TEST_CASE("graph pass fuse-layer-norm: the exported pattern becomes LayerNormalization; shared parts stay") {
  auto layer_norm = [](Builder& b, int x, Shape shape, std::vector<int64_t> axes, int gamma, int beta,
                       int* out_mean) {
    std::map<std::string, Attr> reduce = {{"axes", ints(axes)}};
    Shape kept = shape;
    for (auto a : axes) kept[(size_t)a] = 1;
    int m = b.node("ReduceMean", {x}, kept, reduce);
    if (out_mean) *out_mean = m;
    int d = b.node("Sub", {x, m}, shape);
    int p = b.node("Pow", {d, b.constant("two", {}, {2.0f})}, shape);
    int v = b.node("ReduceMean", {p}, kept, reduce);
    int e = b.node("Add", {v, b.constant("eps", {}, {1e-5f})}, kept);
    int s = b.node("Sqrt", {e}, kept);
    int n = b.node("Div", {d, s}, shape);
    if (gamma >= 0) n = b.node("Mul", {n, gamma}, shape);
    if (beta >= 0) n = b.node("Add", {beta, n}, shape);
    return n;
  };
  Builder b;
  int x = b.input("x", {2, 3, 16});
  int gamma = b.constant("gamma", {16}, pattern(16, 1.0f, 0.5f));
  int beta = b.constant("beta", {1, 1, 16}, pattern(16, 0.3f, 1.5f));
  int y1 = layer_norm(b, x, {2, 3, 16}, {2}, gamma, beta, nullptr);
  int y2 = layer_norm(b, y1, {2, 3, 16}, {1, 2}, -1, -1, nullptr);
  int mean = -1;
  int y3 = layer_norm(b, y2, {2, 3, 16}, {2}, gamma, -1, &mean);
  b.output(y3);
  b.output(mean);  // the third pattern's mean is a model output: not fused
  Graph before = b.g;
  PassContext ctx;
  CHECK(pass_fuse_layer_norm(b.g, ctx));
  CHECK(ctx.detail == "2 layer norms fused");
  REQUIRE(b.g.nodes[0].op == "LayerNormalization");
  CHECK(b.g.nodes[0].attr_int("axis", 0) == 2);
  CHECK(b.g.nodes[0].inputs == std::vector<int>{x, gamma, beta});
  CHECK(std::fabs(b.g.nodes[0].attr_float("epsilon", 0) - 1e-5) < 1e-9);
  REQUIRE(b.g.nodes[1].op == "LayerNormalization");
  CHECK(b.g.nodes[1].attr_int("axis", 0) == 1);
  CHECK(b.g.nodes[1].inputs.size() == 2);  // the made scale of ones, no bias
  CHECK(b.g.values[b.g.nodes[1].inputs[1]].shape == Shape{3, 16});
  CHECK(b.g.nodes[1].outputs[0] == y2);
  CHECK(b.g.nodes.size() == 2 + 8);  // the third pattern untouched
  CHECK(all_consumers_valid(b.g));
  check_same_outputs(before, b.g, 1e-5);
  PassContext again;
  CHECK_FALSE(pass_fuse_layer_norm(b.g, again));
}

// Attention as torch exports `softmax(q @ k.transpose(-2, -1) / c + mask) @ v`
// with the heads split from projections [B, S, H*D] and merged back: Q from
// its own input, K and V from a Split of one [B, Sk, 2*H*D] input.
struct AttentionForm {
  int64_t B, Sq, Sk, H, D;
  bool mask;         // an additive mask [B, 1, 1, Sk]
  bool mul_scale;    // Mul(c, S) instead of Div(S, c)
  bool two_step_kt;  // Kt as Transpose(0,2,1,3) then Transpose(0,1,3,2), not one (0,2,3,1)
};

// Builds the form; returns the output (the merged [B, Sq, H*D]).
int build_attention(Builder& b, const AttentionForm& f, int* out_q, int* out_kv, int* out_mask) {
  const int64_t B = f.B, Sq = f.Sq, Sk = f.Sk, H = f.H, D = f.D;
  int q = b.input("q", {B, Sq, H * D}), kv = b.input("kv", {B, Sk, 2 * H * D});
  int mask = f.mask ? b.input("mask", {B, 1, 1, Sk}) : -1;
  *out_q = q;
  *out_kv = kv;
  *out_mask = mask;
  int k = -1, v = -1;
  {  // Split(kv, axis 2) into K and V
    Node n;
    n.op = "Split";
    n.name = "split";
    n.attrs["axis"] = integer(2);
    n.inputs = {kv};
    for (int* o : {&k, &v}) {
      Value val;
      val.name = b.g.unique_name("split_out");
      val.shape = {B, Sk, H * D};
      val.producer = (int)b.g.nodes.size();
      *o = b.g.add_value(std::move(val));
      n.outputs.push_back(*o);
    }
    b.g.nodes.push_back(std::move(n));
  }
  auto heads = [&](int x, int64_t s, std::vector<int64_t> perm, Shape out) {
    int r = b.node("Reshape", {x, b.constant_i64(b.g.unique_name("shape"), {B, s, H, D})}, {B, s, H, D});
    return b.node("Transpose", {r}, out, {{"perm", ints(perm)}});
  };
  int q4 = heads(q, Sq, {0, 2, 1, 3}, {B, H, Sq, D});
  int kt = f.two_step_kt ? b.node("Transpose", {heads(k, Sk, {0, 2, 1, 3}, {B, H, Sk, D})}, {B, H, D, Sk},
                                  {{"perm", ints({0, 1, 3, 2})}})
                         : heads(k, Sk, {0, 2, 3, 1}, {B, H, D, Sk});
  int v4 = heads(v, Sk, {0, 2, 1, 3}, {B, H, Sk, D});
  int s = b.node("MatMul", {q4, kt}, {B, H, Sq, Sk});
  int c = b.constant(b.g.unique_name("c"), {}, {f.mul_scale ? 0.125f : 8.0f});
  s = f.mul_scale ? b.node("Mul", {c, s}, {B, H, Sq, Sk}) : b.node("Div", {s, c}, {B, H, Sq, Sk});
  if (mask >= 0) s = b.node("Add", {mask, s}, {B, H, Sq, Sk});
  int p = b.node("Softmax", {s}, {B, H, Sq, Sk}, {{"axis", integer(3)}});
  int o = b.node("MatMul", {p, v4}, {B, H, Sq, D});
  o = b.node("Transpose", {o}, {B, Sq, H, D}, {{"perm", ints({0, 2, 1, 3})}});
  return b.node("Reshape", {o, b.constant_i64(b.g.unique_name("shape"), {B, Sq, H * D})}, {B, Sq, H * D});
}

TEST_CASE("graph pass fuse-attention: exported attention becomes kiln.Attention over the projections") {
  // Ragged row tiles and key blocks, several key blocks (online rescaling), one query row (a decoder step).
  // A one-wide head over 2000 keys: the key block is sized by the scratch budget, not the head alone.
  for (const AttentionForm& f : {AttentionForm{2, 37, 37, 3, 24, true, false, false},
                                 AttentionForm{1, 1, 300, 2, 64, false, true, true},
                                 AttentionForm{1, 70, 150, 1, 16, true, true, false},
                                 AttentionForm{1, 4, 2000, 1, 1, false, false, false}}) {
    CAPTURE(f.Sq);
    CAPTURE(f.Sk);
    Builder b;
    int q, kv, mask;
    int y = build_attention(b, f, &q, &kv, &mask);
    b.output(y);
    Graph before = b.g;
    PassContext ctx;
    CHECK_FALSE(pass_fuse_attention(b.g, ctx));  // a target where the plain operators stay
    ctx.env.attention_kernel = true;
    REQUIRE(pass_fuse_attention(b.g, ctx));
    CHECK(ctx.detail == "1 attentions fused");
    const Node& at = b.g.nodes.back();
    REQUIRE(at.op == "kiln.Attention");
    std::vector<int> inputs = {q, kv, kv};
    if (mask >= 0) inputs.push_back(mask);
    CHECK(at.inputs == inputs);  // read where the projections wrote them
    CHECK(at.outputs == std::vector<int>{y});
    CHECK(at.attr_ints("dims", {}) == std::vector<int64_t>{f.B, f.H, f.Sq, f.Sk, f.D, f.D});
    // [offset, batch, head, row, column] strides; a unit dimension's is 0.
    const int64_t hd = f.H * f.D, bs = f.B > 1 ? 1 : 0, hs = f.H > 1 ? f.D : 0, cs = f.D > 1 ? 1 : 0;
    CHECK(at.attr_ints("k", {}) == std::vector<int64_t>{0, bs * f.Sk * 2 * hd, hs, 2 * hd, cs});
    CHECK(at.attr_ints("v", {}) == std::vector<int64_t>{hd, bs * f.Sk * 2 * hd, hs, 2 * hd, cs});
    CHECK(at.attr_ints("out", {}) == std::vector<int64_t>{0, bs * f.Sq * hd, hs, f.Sq > 1 ? hd : 0, cs});
    CHECK(std::fabs(at.attr_float("scale", 0) - 0.125) < 1e-12);
    PassContext dce;
    pass_dead_code(b.g, dce);
    CHECK(ops_of(b.g) == std::vector<std::string>{"kiln.Attention"});
    CHECK(all_consumers_valid(b.g));
    check_same_outputs(before, b.g, 2e-6);
  }
}

// With a sequence length S known only at run time (32..40): the kernel reads
// the run's row and key counts from dimension 1 of Q's and K's inputs. A
// range reaching below 32 keeps the plain operators (faster on a few tokens),
// and so does a run-time batch.
TEST_CASE("graph pass fuse-attention: run-time sequence lengths") {
  for (int variant = 0; variant < 3; variant++) {
    const bool dynamic_batch = variant == 1, short_range = variant == 2;
    CAPTURE(variant);
    AttentionForm f{dynamic_batch ? 3 : 1, 40, 40, 2, 16, true, false, false};
    Builder b;
    int q, kv, mask;
    int y = build_attention(b, f, &q, &kv, &mask);
    b.output(y);
    // Every dimension of 40 (only the sequence has that size here) becomes S, and of 3 the batch N.
    auto symbol = [&](const char* name, int64_t hi) {
      Symbol sym;
      sym.name = name;
      sym.lo = std::string(name) == "S" && !short_range ? 32 : 1;
      sym.hi = hi;
      sym.var = kiln::tir::Var::make_symbol(name, (int)b.g.symbols.size(), sym.lo, hi);
      b.g.symbols.push_back(sym);
      return sym.var;
    };
    kiln::tir::Expr S = symbol("S", 40), N = symbol("N", 3);
    for (size_t v = 0; v < b.g.values.size(); v++) {
      if (b.g.values[v].is_constant()) continue;
      DimExprs d;
      for (int64_t x : Shape(b.g.values[v].shape)) d.push_back(x == 40 ? S : x == 3 && dynamic_batch ? N : kiln::tir::Expr(x));
      b.g.set_dims((int)v, d);
    }
    PassContext ctx;
    ctx.env.attention_kernel = true;
    // A run-time batch is not fused (the batch count is a constant of the kernel).
    REQUIRE(pass_fuse_attention(b.g, ctx) == (variant == 0));
    if (variant != 0) continue;
    const Node& at = b.g.nodes.back();
    REQUIRE(at.op == "kiln.Attention");
    CHECK(at.attr_ints("dims", {}) == std::vector<int64_t>{1, 2, 40, 40, 16, 16});  // the largest
    CHECK(at.attr_ints("q_rows", {}) == std::vector<int64_t>{1});
    CHECK(at.attr_ints("k_rows", {}) == std::vector<int64_t>{1});
    CHECK(at.attr_ints("k", {}) == std::vector<int64_t>{0, 0, 16, 64, 1});  // constant strides despite S
    CHECK(at.attr_ints("mask", {}) == std::vector<int64_t>{0, 0, 0, 0, 1});
  }
}

TEST_CASE("graph pass fuse-attention: what does not match stays") {
  AttentionForm f{1, 8, 8, 2, 16, true, false, false};
  for (int variant = 0; variant < 4; variant++) {
    CAPTURE(variant);
    Builder b;
    int q, kv, mask;
    int y = build_attention(b, f, &q, &kv, &mask);
    b.output(y);
    for (auto& n : b.g.nodes) {
      if (variant == 0 && n.op == "Softmax") n.attrs["axis"] = integer(2);  // over the rows, not the keys
      if (variant == 2 && n.op == "Div") b.g.values[n.inputs[1]].shape = {1};  // still a scalar constant: fuses
    }
    if (variant == 1)  // the scores are a model output too
      for (auto& n : b.g.nodes)
        if (n.op == "Div") b.output(n.outputs[0]);
    if (variant == 3) {  // a mask of batch 3 broadcasts the scores (and the result) past Q, K and V's batch of 1
      b.g.values[mask].shape = {3, 1, 1, 8};
      for (auto& n : b.g.nodes)
        if (n.op == "Add" || n.op == "Softmax") b.g.values[n.outputs[0]].shape = {3, 2, 8, 8};
    }
    PassContext ctx;
    ctx.env.attention_kernel = true;
    CHECK(pass_fuse_attention(b.g, ctx) == (variant == 2));
    (void)mask;
  }
}

TEST_CASE("graph pass reshape-chain: Reshape chains and Transpose pairs collapse") {
  Builder b;
  int x = b.input("x", {2, 3, 4});
  int r1 = b.node("Reshape", {x, b.constant_i64("s1", {6, 4})}, {6, 4});
  int r2 = b.node("Reshape", {r1, b.constant_i64("s2", {0, 2, 2})}, {6, 2, 2});
  int r3 = b.node("Reshape", {r2, b.constant_i64("s3", {4, -1})}, {4, 6});
  int t1 = b.node("Transpose", {r3}, {6, 4}, {{"perm", ints({1, 0})}});
  int e = b.node("Exp", {t1}, {6, 4});
  // Two transposes composing to a non-identity, two composing to the identity.
  int u1 = b.node("Transpose", {x}, {4, 2, 3}, {{"perm", ints({2, 0, 1})}});
  int u2 = b.node("Transpose", {u1}, {3, 4, 2}, {{"perm", ints({2, 0, 1})}});
  int f = b.node("Neg", {u2}, {3, 4, 2});
  int v1 = b.node("Transpose", {x}, {3, 2, 4}, {{"perm", ints({1, 0, 2})}});
  int v2 = b.node("Transpose", {v1}, {2, 3, 4}, {{"perm", ints({1, 0, 2})}});
  int h = b.node("Sigmoid", {v2}, {2, 3, 4});
  b.output(e);
  b.output(f);
  b.output(h);
  Graph before = b.g;
  PassContext ctx;
  CHECK(pass_reshape_chain(b.g, ctx));
  CHECK(ops_of(b.g) == std::vector<std::string>{"Reshape", "Transpose", "Exp", "Transpose", "Neg", "Sigmoid"});
  CHECK(b.g.nodes[0].inputs[0] == x);
  CHECK(b.g.nodes[0].outputs[0] == r3);
  CHECK(b.g.nodes[3].inputs[0] == x);
  CHECK(b.g.nodes[3].attr_ints("perm", {}) == std::vector<int64_t>{1, 2, 0});
  CHECK(b.g.nodes[4].inputs[0] == b.g.nodes[3].outputs[0]);
  CHECK(b.g.nodes[5].inputs[0] == x);
  CHECK(all_consumers_valid(b.g));
  check_same_outputs(before, b.g, 0);
}

TEST_CASE("graph pass constant-fold: weights built at run time from ConstantOfShape become constants") {
  Builder b;
  int x = b.input("x", {1, 2, 5, 5});
  // w = Sin(ConstantOfShape([3,2,3,3], 0.5) * Range-like constant) : a run-time weight.
  int shape = b.constant_i64("wshape", {3, 2, 3, 3});
  int half = b.constant("half", {1}, {0.5f});
  int w0 = b.node("ConstantOfShape", {shape}, {3, 2, 3, 3}, {{"value", tensor(half)}});
  std::vector<float> ramp(54);
  for (int i = 0; i < 54; i++) ramp[(size_t)i] = (float)i;
  int w1 = b.node("Mul", {w0, b.constant("ramp", {3, 2, 3, 3}, ramp)}, {3, 2, 3, 3});
  int w = b.node("Sin", {w1}, {3, 2, 3, 3});
  // Bias: Shape(x) -> Gather(1) -> ... -> Expand of a scalar to [3].
  int sx = b.node("Shape", {x}, {4}, {}, DType::I64);
  int idx = b.constant_i64("one", {1});
  int ch = b.node("Gather", {sx, idx}, {1}, {{"axis", integer(0)}}, DType::I64);
  int three = b.node("Add", {ch, b.constant_i64("plus1", {1})}, {1}, {}, DType::I64);
  int bias = b.node("Expand", {b.constant("bval", {1}, {0.25f}), three}, {3});
  int conv = b.node("Conv", {x, w, bias}, {1, 3, 3, 3});
  b.output(conv);
  Graph before = b.g;
  Graph unevaluated = b.g;
  PassContext direct;  // no evaluator: only the Shape node folds
  CHECK(pass_constant_fold(unevaluated, direct));
  CHECK(ops_of(unevaluated) == std::vector<std::string>{"ConstantOfShape", "Mul", "Sin", "Gather", "Add", "Expand", "Conv"});
  PassContext ctx = with_evaluator();
  CHECK(pass_constant_fold(b.g, ctx));
  CHECK(ops_of(b.g) == std::vector<std::string>{"Conv"});
  const Value& wv = b.g.values[b.g.nodes[0].inputs[1]];
  REQUIRE(wv.is_constant());
  for (int i = 0; i < 54; i++) CHECK(wv.const_at(i) == doctest::Approx(std::sin(0.5 * i)).epsilon(1e-5));
  const Value& bv = b.g.values[b.g.nodes[0].inputs[2]];
  REQUIRE(bv.is_constant());
  CHECK(bv.const_at(2) == 0.25);
  CHECK(all_consumers_valid(b.g));
  check_same_outputs(before, b.g, 1e-6);
  PassContext ctx2 = with_evaluator();
  CHECK_FALSE(pass_constant_fold(b.g, ctx2));
}

TEST_CASE("graph pass constant-fold: the size rule keeps a large broadcast at run time") {
  Builder b;
  int x = b.input("x", {512, 1024});
  int small = b.constant("row", {1024}, pattern(1024, 1.0f));
  int big = b.node("Expand", {small, b.constant_i64("shape", {512, 1024})}, {512, 1024});  // 2 MiB from 4 KiB
  int y = b.node("Add", {x, big}, {512, 1024});
  int w = b.node("Neg", {b.constant("wsmall", {4}, {1, 2, 3, 4})}, {4});  // small: folded
  int z = b.node("Mul", {y, b.node("ReduceSum", {w}, {}, {{"keepdims", integer(0)}})}, {512, 1024});
  b.output(z);
  PassContext ctx = with_evaluator();
  CHECK(pass_constant_fold(b.g, ctx));
  CHECK(ops_of(b.g) == std::vector<std::string>{"Expand", "Add", "Mul"});
  CHECK(b.g.values[b.g.nodes[2].inputs[1]].is_constant());
  CHECK(b.g.values[b.g.nodes[2].inputs[1]].const_at(0) == -10.0);
}

TEST_CASE("graph pass layout: convs and their neighbours go NCHWc, conversions only at the boundary") {
  // x -> Conv -> Relu -> Conv -> Add(residual) -> MaxPool -> Mul(per-channel const)
  //   -> GlobalAveragePool -> Flatten (output 1); the Relu is also output 2.
  Builder b;
  int x = b.input("x", {1, 8, 16, 16});
  int w1 = b.constant("w1", {16, 8, 3, 3}, pattern(16 * 8 * 9, 0.2f));
  int b1 = b.constant("b1", {16}, pattern(16, 0.1f, 1.0f));
  int c1 = b.node("Conv", {x, w1, b1}, {1, 16, 16, 16}, {{"pads", ints({1, 1, 1, 1})}});
  int r1 = b.node("Relu", {c1}, {1, 16, 16, 16});
  int w2 = b.constant("w2", {16, 16, 3, 3}, pattern(16 * 16 * 9, 0.1f, 2.0f));
  int c2 = b.node("Conv", {r1, w2}, {1, 16, 16, 16}, {{"pads", ints({1, 1, 1, 1})}});
  int add = b.node("Add", {c2, r1}, {1, 16, 16, 16});
  int pool = b.node("MaxPool", {add}, {1, 16, 8, 8}, {{"kernel_shape", ints({2, 2})}, {"strides", ints({2, 2})}});
  int scale = b.constant("scale", {16, 1, 1}, pattern(16, 1.0f, 3.0f));
  int mul = b.node("Mul", {pool, scale}, {1, 16, 8, 8});
  int gap = b.node("GlobalAveragePool", {mul}, {1, 16, 1, 1});
  int flat = b.node("Flatten", {gap}, {1, 16});
  b.output(flat);
  b.output(r1);
  Graph before = b.g;
  PassContext ctx = with_vectors(8);
  CHECK(pass_layout(b.g, ctx));
  CHECK(pass_dead_code(b.g, ctx));
  std::map<std::string, int> count;
  for (auto& n : b.g.nodes) {
    count[n.op]++;
    if (n.op == "Conv" || n.op == "MaxPool" || n.op == "GlobalAveragePool") CHECK(n.attr_string("kiln_layout", "") == "NCHWc");
  }
  CHECK(count["kiln.ToBlocked"] == 1);    // the model input
  CHECK(count["kiln.FromBlocked"] == 2);  // before Flatten, and the Relu output
  CHECK(count["Flatten"] == 1);
  // Weights packed [M/8, C/8, KH, KW, 8, 8]: w[oc, ic, kh, kw] -> [oc/8, ic/8, kh, kw, ic%8, oc%8].
  const Value& packed = b.g.values[b.g.nodes[1].inputs[1]];
  REQUIRE(packed.shape == Shape{2, 1, 3, 3, 8, 8});
  int64_t oc = 9, ic = 3, kh = 1, kw = 2;
  CHECK(packed.const_at((((oc / 8 * 1 + ic / 8) * 3 + kh) * 3 + kw) * 64 + (ic % 8) * 8 + oc % 8) ==
        before.values[w1].const_at(((oc * 8 + ic) * 3 + kh) * 3 + kw));
  CHECK(all_consumers_valid(b.g));
  check_same_outputs(before, b.g, 1e-5);
  // A target without wide vectors keeps NCHW.
  Graph plain = before;
  PassContext narrow = with_vectors(2);
  CHECK_FALSE(pass_layout(plain, narrow));
  // Nor does a target without the blocked layout (Vulkan).
  PassContext gpu;
  CHECK_FALSE(pass_layout(plain, gpu));
}

TEST_CASE("run_graph_passes: the list, statistics and --dump-graph-after") {
  std::vector<std::string> names;
  for (auto& p : graph_passes()) names.push_back(p.name);
  CHECK(names == std::vector<std::string>{"bfloat16", "identity", "quantize", "constant-fold", "reshape-chain", "fold-batchnorm", "fold-affine", "fuse-layer-norm", "fuse-attention",
                                          "conv-transpose", "layout", "winograd", "lookup-table", "cse", "dead-code"});
  Builder b;
  int x = b.input("x", {4});
  int i = b.node("Identity", {x}, {4});
  int r = b.node("Relu", {i}, {4});
  b.output(r);
  std::ostringstream dump;
  PassOptions o;
  o.dump_after = {"identity", "cse"};
  o.dump_stream = &dump;
  auto stats = run_graph_passes(b.g, o);
  REQUIRE(stats.size() == names.size());
  CHECK(stats[0].name == "bfloat16");
  CHECK_FALSE(stats[0].changed);  // no bfloat16 here
  CHECK(stats[1].name == "identity");
  CHECK(stats[1].nodes_before == 2);
  CHECK(stats[1].nodes_after == 1);
  CHECK(stats[1].changed);
  CHECK_FALSE(stats[6].changed);
  CHECK(dump.str().find("graph after identity") != std::string::npos);
  CHECK(dump.str().find("graph after cse") == std::string::npos);  // unchanged: not printed
}

TEST_CASE("graph pass winograd: big 3x3 stride-1 blocked convs switch, the results stay") {
  // x [1,64,14,14] -> Conv 3x3 (64 -> 64, bias) -> Relu -> Conv 3x3 stride 2 (stays direct)
  //                                               -> Conv 3x3 (64 -> 32: too few channels, stays)
  Builder b;
  int x = b.input("x", {1, 64, 14, 14});
  int w1 = b.constant("w1", {64, 64, 3, 3}, pattern(64 * 64 * 9, 0.02f));
  int b1 = b.constant("b1", {64}, pattern(64, 0.1f, 1.0f));
  int c1 = b.node("Conv", {x, w1, b1}, {1, 64, 14, 14}, {{"pads", ints({1, 1, 1, 1})}});
  int r1 = b.node("Relu", {c1}, {1, 64, 14, 14});
  int w2 = b.constant("w2", {64, 64, 3, 3}, pattern(64 * 64 * 9, 0.02f, 2.0f));
  int c2 = b.node("Conv", {r1, w2}, {1, 64, 7, 7}, {{"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}});
  int w3 = b.constant("w3", {32, 64, 3, 3}, pattern(32 * 64 * 9, 0.02f, 3.0f));
  int c3 = b.node("Conv", {r1, w3}, {1, 32, 14, 14}, {{"pads", ints({1, 1, 1, 1})}});
  b.output(c2);
  b.output(c3);
  Graph before = b.g;
  PassContext ctx = with_vectors(16);
  REQUIRE(pass_layout(b.g, ctx));
  PassContext wctx;
  CHECK(pass_winograd(b.g, wctx));
  CHECK(wctx.detail == "1 convolution to Winograd F(2x2, 3x3)");
  int winograd = 0;
  for (auto& n : b.g.nodes)
    if (n.op == "Conv" && n.attr_int("kiln_winograd", 0) == 2) {
      winograd++;
      CHECK(b.g.values[n.inputs[1]].shape == Shape{4, 4, 4, 4, 16, 16});  // U [M/m, 4, 4, C/c, c, m]
    }
  CHECK(winograd == 1);
  PassContext again;
  CHECK_FALSE(pass_winograd(b.g, again));  // converted once
  check_same_outputs(before, b.g, 1e-4);
}

TEST_CASE("graph pass winograd: the algorithm is a knob of the conv's workload; F(4x4, 3x3) where 4 divides the map") {
  Builder b;
  int x = b.input("x", {1, 64, 16, 16});
  int w = b.constant("w", {64, 64, 3, 3}, pattern(64 * 64 * 9, 0.02f));
  int bias = b.constant("b", {64}, pattern(64, 0.1f, 1.0f));
  b.output(b.node("Conv", {x, w, bias}, {1, 64, 16, 16}, {{"pads", ints({1, 1, 1, 1})}}));
  Graph before = b.g;
  PassContext lctx = with_vectors(16);
  REQUIRE(pass_layout(b.g, lctx));
  const Graph blocked = b.g;
  // The key the direct kernel's schedule gives the same nest (lower/schedules_cpu.cpp).
  const std::string key = "conv2d_blocked f32 [1,4,16,16,16;4,3,3,16] s1x1 d1x1";
  auto run = [&](const kiln::tune::Config& point, Graph& g, kiln::tune::Tuning& t) {
    if (!point.empty()) t.apply[key] = point;
    PassContext ctx;
    ctx.env.tuning = &t;
    ctx.env.vector = kiln::VectorInfo{16, 32};  // as lowering's below
    bool changed = pass_winograd(g, ctx);
    return std::make_pair(changed, ctx.detail);
  };
  kiln::tune::Tuning discovery;
  Graph g0 = blocked;
  CHECK(run({}, g0, discovery).first);
  REQUIRE(discovery.spaces.count(key));
  const kiln::tune::Space& space = discovery.spaces.at(key);
  // Before lowering: the pass's knobs, the algorithm and each r's register tile.
  std::vector<std::string> names;
  for (auto& k : space.knobs) names.push_back(k.name);
  CHECK(names == std::vector<std::string>{"winograd", "tiles_r2", "blocks_r2", "tiles_r4", "blocks_r4"});
  CHECK(space.knobs[0].options == std::vector<int64_t>{0, 2, 4});
  CHECK(space.knobs[0].fallback == 4);  // the hand-written pick: F(4x4, 3x3) (4 divides the map)
  CHECK(space.knobs[3].options == std::vector<int64_t>{1, 2, 4});  // 4 tiles of 4x4 a row
  CHECK(space.knobs[4].options == std::vector<int64_t>{1, 2, 4});  // 4 channel blocks
  CHECK(space.knobs[3].only_if == "winograd");
  CHECK(space.knobs[3].only_if_value == 4);
  // Each r's tile matters only at that r.
  CHECK(kiln::tune::canonical(space, {{"winograd", 2}, {"tiles_r4", 1}}) == kiln::tune::canonical(space, {{"winograd", 2}}));
  CHECK_FALSE(kiln::tune::canonical(space, {{"winograd", 4}, {"tiles_r4", 1}}) == kiln::tune::canonical(space, {{"winograd", 4}}));
  int hand = 0;
  for (auto& n : g0.nodes) hand += n.attr_int("kiln_winograd", 0) == 4;
  CHECK(hand == 1);
  // Lowering puts the Winograd kernel in the same workload, and declares the
  // direct kernel's knobs there too, each depending on winograd = 0.
  kiln::lower_graph(g0, kiln::VectorInfo{16, 32}, false, false, {}, &discovery);
  bool mapped = false;
  for (auto& [kernel, workload] : discovery.kernel_workload) mapped |= workload == key;
  CHECK(mapped);
  REQUIRE(space.knobs.size() > 6);
  CHECK(space.knobs[5].name == "tile_w");
  CHECK(space.knobs[5].only_if == "winograd");
  CHECK(kiln::tune::canonical(space, {{"winograd", 4}, {"tile_w", 1}}) == kiln::tune::canonical(space, {{"winograd", 4}}));
  CHECK_FALSE(kiln::tune::canonical(space, {{"winograd", 0}, {"tile_w", 1}}) == kiln::tune::canonical(space, {{"winograd", 0}}));

  kiln::tune::Tuning four;  // the pick, by a point too
  Graph g4 = blocked;
  auto [changed4, detail4] = run({{"winograd", 4}}, g4, four);
  CHECK(changed4);
  CHECK(detail4 == "1 convolution to Winograd F(4x4, 3x3)");
  int converted = 0;
  for (auto& n : g4.nodes)
    if (n.op == "Conv" && n.attr_int("kiln_winograd", 0) == 4) {
      converted++;
      CHECK(g4.values[n.inputs[1]].shape == Shape{4, 6, 6, 4, 16, 16});  // U [M/m, 6, 6, C/c, c, m]
    }
  CHECK(converted == 1);
  check_same_outputs(before, g4, 1e-4);

  kiln::tune::Tuning two;
  Graph g2 = blocked;
  CHECK(run({{"winograd", 2}}, g2, two).second == "1 convolution to Winograd F(2x2, 3x3)");
  check_same_outputs(before, g2, 1e-4);

  kiln::tune::Tuning direct;
  Graph gd = blocked;
  CHECK_FALSE(run({{"winograd", 0}}, gd, direct).first);
  for (auto& n : gd.nodes) CHECK_FALSE(n.has_attr("kiln_winograd"));
}

TEST_CASE("graph pass winograd: float64 convs stay direct (the kernel computes in float32)") {
  Builder b;
  int x = b.input("x", {1, 64, 16, 16}, DType::F64);
  std::vector<double> w(64 * 64 * 9);
  for (size_t i = 0; i < w.size(); i++) w[i] = 0.01 * (double)(i % 17) - 0.08;
  int wv = b.g.add_constant("w", DType::F64, {64, 64, 3, 3}, doubles_to_bytes(w, DType::F64));
  int y = b.node("Conv", {x, wv}, {1, 64, 16, 16}, {{"pads", ints({1, 1, 1, 1})}}, DType::F64);
  b.output(y);
  PassContext ctx = with_vectors(16);
  pass_layout(b.g, ctx);
  PassContext wctx;
  CHECK_FALSE(pass_winograd(b.g, wctx));
}

TEST_CASE("graph pass conv-transpose: a kernel-sized stride becomes a 1x1 Conv and a shuffle; others stay") {
  Builder b;
  int x = b.input("x", {1, 3, 5, 6});
  // 2x2 stride 2 with a bias, then a 3x2 kernel with strides 3x2 and no bias: both rewritten.
  int up = b.node("ConvTranspose", {x, b.constant("w", {3, 4, 2, 2}, pattern(48, 0.3f)), b.constant("bias", {4}, {0.5f, -1, 2, 0.25f})},
                  {1, 4, 10, 12}, {{"strides", ints({2, 2})}});
  int up2 = b.node("ConvTranspose", {up, b.constant("w2", {4, 2, 3, 2}, pattern(48, 0.2f))}, {1, 2, 30, 24},
                   {{"strides", ints({3, 2})}});
  // Kernel 3, stride 2: taps overlap, stays a ConvTranspose.
  int over = b.node("ConvTranspose", {up2, b.constant("w3", {2, 2, 3, 3}, pattern(36, 0.1f))}, {1, 2, 61, 49},
                    {{"strides", ints({2, 2})}});
  b.output(over);
  Graph before = b.g;
  PassContext ctx;
  CHECK(pass_conv_transpose(b.g, ctx));
  CHECK(ops_of(b.g) == std::vector<std::string>{"Conv", "Reshape", "Transpose", "Reshape", "Conv", "Reshape", "Transpose",
                                                 "Reshape", "ConvTranspose"});
  CHECK(b.g.nodes[3].outputs[0] == up);
  CHECK(all_consumers_valid(b.g));
  check_same_outputs(before, b.g, 1e-5);
  Builder grouped;  // group 2: stays
  int gx = grouped.input("x", {1, 4, 3, 3});
  grouped.output(grouped.node("ConvTranspose", {gx, grouped.constant("w", {4, 1, 2, 2}, pattern(16, 0.3f))}, {1, 2, 6, 6},
                              {{"strides", ints({2, 2})}, {"group", integer(2)}}));
  CHECK_FALSE(pass_conv_transpose(grouped.g, ctx));
  Builder bad_bias;  // a bias that is not one per output channel: left to the lowering, which refuses it
  int bx = bad_bias.input("x", {1, 4, 3, 3});
  bad_bias.output(bad_bias.node("ConvTranspose", {bx, bad_bias.constant("w", {4, 8, 2, 2}, pattern(128, 0.3f)),
                                                  bad_bias.constant("b", {1}, {1.0f})},
                                {1, 8, 6, 6}, {{"strides", ints({2, 2})}}));
  CHECK_FALSE(pass_conv_transpose(bad_bias.g, ctx));
  CHECK_THROWS_AS(kiln::evaluate_graph(bad_bias.g, inputs_for(bad_bias.g)), kiln::UserError);
}

TEST_CASE("fusion: a value read twice fuses when both reads end in one kernel, never a model output") {
  // m = x W; y = m * (erf(m / c) + 1): a GELU's shape, m read by Div and Mul.
  std::vector<float> w(8 * 16);
  for (size_t i = 0; i < w.size(); i++) w[i] = 0.05f * (float)((int)(i * 7 % 13) - 6);
  auto gelu = [&w](bool m_is_output, bool split_roots) {
    Builder b;
    int x = b.input("x", {4, 8});
    int m = b.node("MatMul", {x, b.constant("w", {8, 16}, w)}, {4, 16});
    int d = b.node("Div", {m, b.constant("c", {}, {1.41421356f})}, {4, 16});
    int e = b.node("Erf", {d}, {4, 16});
    if (split_roots) {  // the two reads end in two different outputs
      b.output(e);
      b.output(b.node("Relu", {m}, {4, 16}));
      return b.g;
    }
    int a = b.node("Add", {e, b.constant("one", {}, {1.0f})}, {4, 16});
    b.output(b.node("Mul", {m, a}, {4, 16}));
    if (m_is_output) b.output(m);
    return b.g;
  };
  auto fused_names = [](const Graph& g) {
    std::set<std::string> names;
    for (int v : kiln::choose_fused_values(g)) names.insert(g.values[v].name);
    return names;
  };
  Graph g = gelu(false, false);
  CHECK(fused_names(g).count("MatMul_out"));
  CHECK_FALSE(fused_names(gelu(true, false)).count("MatMul_out"));
  CHECK_FALSE(fused_names(gelu(false, true)).count("MatMul_out"));
  // The fused kernel reads the accumulator twice and computes the same values.
  std::vector<float> in(32);
  for (size_t i = 0; i < in.size(); i++) in[i] = 0.1f * (float)((int)i - 16);
  std::vector<uint8_t> bytes(in.size() * 4);
  memcpy(bytes.data(), in.data(), bytes.size());
  auto got = kiln::evaluate_graph(g, {bytes});
  REQUIRE(got.size() == 1);
  REQUIRE(got[0].size() == 4 * 16 * 4);
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 16; j++) {
      float m = 0;
      for (int k = 0; k < 8; k++) m += in[(size_t)(i * 8 + k)] * w[k * 16 + j];
      float want = m * (std::erf(m / 1.41421356f) + 1.0f), have;
      memcpy(&have, got[0].data() + 4 * (i * 16 + j), 4);
      CHECK(have == doctest::Approx(want).epsilon(1e-5));
    }
}
