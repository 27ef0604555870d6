// Units for the loop-IR passes after lowering: loop partitioning (serial
// loops split, workgroup loops branched) and unrolling of register tiles.
// Each test checks the IR's shape and that the kernel computes the same
// values before and after (compiled and run).
#include <doctest/doctest.h>

#include <vector>

#include "compiler_test_util.h"
#include "tir/ir_printer.h"
#include "tir/hoist_invariants.h"
#include "tir/ir_visitor.h"
#include "tir/loop_partition.h"
#include "tir/unroll_loops.h"

using namespace kiln;
using kiln::test::Library;
using tir::Expr;

namespace {

// How many comparisons (<, <=) a statement holds.
int comparisons(const tir::Stmt& s) {
  struct Count : tir::IRVisitor {
    int n = 0;
    using tir::IRVisitor::visit;
    void visit(const tir::LT* op) override {
      n++;
      tir::IRVisitor::visit(op);
    }
    void visit(const tir::LE* op) override {
      n++;
      tir::IRVisitor::visit(op);
    }
  } c;
  c.visit_stmt(s);
  return c.n;
}

// out[h] = in[h - 1] + in[h] + in[h + 1], zero outside [0, 12): a 1-D
// "padded convolution" with its taps in an inner loop k (as in a conv, the
// guard depends on h and k), h bound by a loop of `kind`.
KernelDef stencil(const std::string& name, tir::ForKind kind) {
  const int64_t n = 12;
  auto in = tir::make_buffer("in", tir::Float(32), n, 0);
  auto out = tir::make_buffer("out", tir::Float(32), n, 1);
  Expr h = tir::Var::make(tir::Index(), "h"), k = tir::Var::make(tir::Index(), "k");
  Expr i = h + k - Expr(1);
  Expr ok = Expr(0) <= i && i < Expr(n);
  Expr tap = tir::select(ok, tir::Load::make(in, tir::clamp(i, Expr(0), Expr(n - 1))), Expr(0.0f));
  tir::Stmt taps = tir::For::make(k, Expr(0), Expr(3), tir::ForKind::Serial,
                                  tir::Store::make(out, h, tir::Load::make(out, h) + tap));
  KernelDef kd;
  kd.name = name;
  kd.params = {in, out};
  kd.body = tir::For::make(h, Expr(0), Expr(n), kind, tir::Block::make({tir::Store::make(out, h, Expr(0.0f)), taps}));
  return kd;
}

std::vector<float> run_stencil(const KernelDef& k) {
  Library lib({k});
  std::vector<float> in(12), out(12, -1.0f);
  for (int i = 0; i < 12; i++) in[i] = (float)(i * i % 7) - 2.5f;
  lib.run(0, {in.data(), out.data()});
  return out;
}

}  // namespace

TEST_CASE("partition-loops: a serial loop splits into border and guard-free interior") {
  KernelDef k = stencil("serial", tir::ForKind::Serial);
  KernelDef p = k;
  p.body = tir::simplify(tir::partition_loops(k.body));
  std::string ir = tir::to_string(p.body);
  CHECK(ir.find("for (h, 1, 10)") != std::string::npos);  // the interior
  struct Interior : tir::IRVisitor {  // the loop over h in [1, 11)
    tir::Stmt found;
    using tir::IRVisitor::visit;
    void visit(const tir::For* op) override {
      auto mn = tir::as_const_int(op->min), ext = tir::as_const_int(op->extent);
      if (mn && ext && *mn == 1 && *ext == 10) found = tir::For::make(op->var, op->min, op->extent, op->kind, op->body);
      tir::IRVisitor::visit(op);
    }
  } interior;
  interior.visit_stmt(p.body);
  REQUIRE(interior.found.defined());
  CHECK(comparisons(interior.found) == 0);    // no guards inside
  CHECK(comparisons(p.body) > 0);             // the borders keep theirs
  std::vector<float> want = run_stencil(k), got = run_stencil(p);
  CHECK(got == want);
  CHECK(want[0] == -2.5f + -1.5f);   // in[-1] reads as 0: out[0] = in[0] + in[1]
  CHECK(want[11] == -0.5f + -0.5f);  // out[11] = in[10] + in[11]
}

TEST_CASE("partition-loops: a workgroup loop branches to a guard-free interior") {
  KernelDef k = stencil("workgroup", tir::ForKind::WorkgroupX);
  KernelDef p = k;
  p.body = tir::simplify(tir::partition_loops(k.body));
  auto* loop = p.body.as<tir::For>();
  REQUIRE(loop);
  CHECK(loop->kind == tir::ForKind::WorkgroupX);  // still one workgroup per row
  auto* branch = loop->body.as<tir::IfThenElse>();
  REQUIRE(branch);
  CHECK(comparisons(branch->then_case) == 0);  // interior: no guards left
  CHECK(comparisons(branch->else_case) > 0);
  CHECK(run_stencil(p) == run_stencil(k));
}

TEST_CASE("unroll: register tiles around vector loops are unrolled in the IR, others stay") {
  // out[i * 8 + j] = in[i * 8 + j] * (i + 1) for a 3 x 8 tile; the same
  // nest with a serial inner loop is left alone.
  auto in = tir::make_buffer("in", tir::Float(32), 24, 0);
  auto out = tir::make_buffer("out", tir::Float(32), 24, 1);
  auto nest = [&](tir::ForKind inner) {
    Expr i = tir::Var::make(tir::Index(), "i"), j = tir::Var::make(tir::Index(), "j");
    Expr at = i * Expr(8) + j;
    tir::Stmt store = tir::Store::make(out, at, tir::Load::make(in, at) * tir::Cast::make(tir::Float(32), i + Expr(1)));
    return tir::For::make(i, Expr(0), Expr(3), tir::ForKind::Unrolled, tir::For::make(j, Expr(0), Expr(8), inner, store));
  };
  tir::Stmt vec = tir::unroll_loops(nest(tir::ForKind::Vectorized));
  CHECK(vec.as<tir::Block>() != nullptr);
  CHECK(tir::to_string(vec).find("unrolled") == std::string::npos);
  tir::Stmt serial = tir::unroll_loops(nest(tir::ForKind::Serial));
  CHECK(serial.as<tir::For>() != nullptr);
  CHECK(serial.as<tir::For>()->kind == tir::ForKind::Unrolled);
  CHECK(tir::unroll_loops(nest(tir::ForKind::Serial), /*all=*/true).as<tir::Block>() != nullptr);  // GPU targets

  KernelDef k;
  k.name = "tile";
  k.params = {in, out};
  k.body = tir::simplify(vec);
  Library lib({k});
  std::vector<float> x(24), y(24, 0.0f);
  for (int t = 0; t < 24; t++) x[t] = 0.5f * (float)t - 3.0f;
  lib.run(0, {x.data(), y.data()}, 1);
  for (int t = 0; t < 24; t++) CHECK(y[t] == x[t] * (float)(t / 8 + 1));
}

TEST_CASE("hoist-invariants: index arithmetic leaves the loops it does not depend on") {
  // A GPU-style kernel: invocation g (a workgroup loop) decomposed with / and
  // %, then a reduction loop r that reads in[(g / 4) * 8 + r] and, guarded,
  // in[(g % 4) + r - 1]. The decomposition and the guard's invariant half
  // move out of r; loads stay.
  auto in = tir::make_buffer("in", tir::Float(32), 64, 0);
  auto out = tir::make_buffer("out", tir::Float(32), 16, 1);
  Expr g = tir::Var::make(tir::Index(), "g"), r = tir::Var::make(tir::Index(), "r");
  Expr i = g % Expr(4) + r - Expr(1);
  Expr tap = tir::select(Expr(0) <= i, tir::Load::make(in, tir::max(i, Expr(0))), Expr(0.0f));
  Expr a = tir::Load::make(in, (g / Expr(4)) * Expr(8) + r);
  tir::Stmt acc = tir::Store::make(out, g, tir::Load::make(out, g) + a * tap);
  // Invariant too, but a division by a non-constant under the condition
  // that keeps it from dividing by zero: it must stay under it.
  Expr q = g % Expr(4);
  acc = tir::Block::make({acc, tir::IfThenElse::make(q > Expr(0), tir::Store::make(out, g, tir::Load::make(out, g) +
                                                                                      tir::cast(tir::Float(32), Expr(12) / q)))});
  KernelDef k;
  k.name = "hoist";
  k.params = {in, out};
  k.body = tir::For::make(g, Expr(0), Expr(16), tir::ForKind::WorkgroupX,
                          tir::Block::make({tir::Store::make(out, g, Expr(0.0f)),
                                            tir::For::make(r, Expr(0), Expr(8), tir::ForKind::Serial, acc)}));
  KernelDef h = k;
  h.body = tir::hoist_invariants(k.body);
  // Inside the workgroup loop, lets bind g / 4 * 8 and g % 4 - 1 (or the
  // like) before the loop over r, whose body has no division left.
  auto* wg = h.body.as<tir::For>();
  REQUIRE(wg);
  struct Find : tir::IRVisitor {
    int lets = 0, divs_in_r = 0;
    bool in_r = false;
    using tir::IRVisitor::visit;
    void visit(const tir::LetStmt* op) override {
      lets++;
      tir::IRVisitor::visit(op);
    }
    void visit(const tir::For* op) override {
      bool was = in_r;
      in_r = op->kind == tir::ForKind::Serial;
      tir::IRVisitor::visit(op);
      in_r = was;
    }
    int nonconst_divs_in_r = 0;
    void visit(const tir::Div* op) override {
      divs_in_r += in_r && tir::as_const_int(op->b);
      nonconst_divs_in_r += in_r && !tir::as_const_int(op->b);
      tir::IRVisitor::visit(op);
    }
    void visit(const tir::Mod* op) override {
      divs_in_r += in_r;
      tir::IRVisitor::visit(op);
    }
  } f;
  f.visit_stmt(h.body);
  CHECK(f.lets >= 2);
  CHECK(f.divs_in_r == 0);
  CHECK(f.nonconst_divs_in_r == 1);  // 12 / (g % 4) stayed under its select
  Library lib({k, h});
  std::vector<float> x(64), y0(16), y1(16);
  for (int t = 0; t < 64; t++) x[t] = 0.25f * (float)(t % 13) - 1.0f;
  lib.run(0, {x.data(), y0.data()});
  lib.run(1, {x.data(), y1.data()});
  CHECK(y0 == y1);
  CHECK(tir::to_string(tir::hoist_invariants(h.body)) == tir::to_string(h.body));  // nothing left to move
}
