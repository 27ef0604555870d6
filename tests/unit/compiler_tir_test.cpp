// Units for the loop IR: builders' type rules, the simplifier's bound
// analysis, the printer and the verifier.
#include <doctest/doctest.h>

#include "support/diagnostics.h"
#include "tir/ir.h"
#include "tir/ir_printer.h"
#include "tir/simplify.h"
#include "tir/verify.h"

using namespace kiln::tir;

TEST_CASE("constants fold with floor division semantics") {
  CHECK(*as_const_int(simplify(Expr(-7) / Expr(2))) == -4);
  CHECK(*as_const_int(simplify(Expr(-7) % Expr(2))) == 1);
  CHECK(*as_const_int(simplify(Expr(7) / Expr(-2))) == -4);
  CHECK(*as_const_int(simplify(Expr(7) % Expr(-2))) == -1);
  CHECK(*as_const_int(simplify((Expr(3) + Expr(4)) * Expr(5) - Expr(1))) == 34);
}

TEST_CASE("identities and reassociation of constants") {
  Expr x = Var::make(Index(), "x");
  CHECK(simplify(x + Expr(0)).same_as(x));
  CHECK(simplify(x * Expr(1)).same_as(x));
  CHECK(to_string(simplify((x + Expr(2)) + Expr(3))) == "(x + 5)");
  CHECK(to_string(simplify((x + Expr(2)) - Expr(2))) == "x");
}

TEST_CASE("loop bounds decide guards") {
  Expr i = Var::make(Index(), "i");
  Buffer out = make_buffer("out", Float(32), 16, 0);
  // for i in [0, 16): if (i < 16) out[i] = 1   -> the guard is provably true
  Stmt s = For::make(i, Expr(0), Expr(16), ForKind::Serial,
                     IfThenElse::make(i < Expr(16), Store::make(out, i, Expr(1.0f))));
  std::string printed = to_string(simplify(s));
  CHECK(printed.find("if") == std::string::npos);
  // ... and i >= 16 is provably false: the store disappears.
  Stmt dead = For::make(i, Expr(0), Expr(16), ForKind::Serial,
                        IfThenElse::make(i >= Expr(16), Store::make(out, i, Expr(1.0f))));
  CHECK(to_string(simplify(dead)).find("out[") == std::string::npos);
  // A guard that can fail stays.
  Stmt live = For::make(i, Expr(0), Expr(16), ForKind::Serial,
                        IfThenElse::make(i < Expr(10), Store::make(out, i, Expr(1.0f))));
  CHECK(to_string(simplify(live)).find("if ((i < 10))") != std::string::npos);
}

TEST_CASE("min/max and mod use bounds") {
  Expr i = Var::make(Index(), "i");
  Buffer out = make_buffer("out", Index(), 8, 0);
  Stmt s = For::make(i, Expr(0), Expr(8), ForKind::Serial,
                     Store::make(out, i, min(i, Expr(7)) + max(i, Expr(0)) + (i % Expr(8)) + i / Expr(8)));
  CHECK(to_string(simplify(s)).find("min") == std::string::npos);
  CHECK(to_string(simplify(s)).find("max") == std::string::npos);
  CHECK(to_string(simplify(s)).find("%") == std::string::npos);
  CHECK(to_string(simplify(s)).find("/") == std::string::npos);
}

TEST_CASE("float arithmetic is folded but never reassociated") {
  Expr x = Var::make(Float(32), "x");
  CHECK(to_string(simplify(Expr(1.5f) + Expr(2.0f))) == "3.5f");
  // x + 0.0 is not x for x = -0.0: kept.
  CHECK(to_string(simplify(x + Expr(0.0f))) == "(x + 0f)");
}

TEST_CASE("a for loop of extent one becomes its body") {
  Expr i = Var::make(Index(), "i");
  Buffer out = make_buffer("out", Float(32), 4, 0);
  Stmt s = For::make(i, Expr(3), Expr(1), ForKind::Serial, Store::make(out, i, Expr(2.0f)));
  CHECK(to_string(simplify(s)) == "out[3] = 2f\n");
}

TEST_CASE("type rules are enforced") {
  Expr x = Var::make(Float(32), "x");
  Expr i = Var::make(Index(), "i");
  CHECK_THROWS_AS(x + i, kiln::InternalError);
  CHECK_THROWS_AS(select(i, x, x), kiln::InternalError);
  CHECK((x + Expr(1)).type() == Float(32));  // a constant adopts the other operand's type
}

TEST_CASE("verifier rejects broken kernels") {
  Expr i = Var::make(Index(), "i"), j = Var::make(Index(), "j");
  Buffer out = make_buffer("out", Float(32), 4, 0);
  Buffer stray = make_buffer("stray", Float(32), 4, 1);
  // Var used outside its loop.
  CHECK_THROWS_AS(verify_kernel("k", Store::make(out, j, Expr(1.0f)), {out}), kiln::InternalError);
  // Buffer that is neither a parameter nor allocated.
  CHECK_THROWS_AS(verify_kernel("k", For::make(i, Expr(0), Expr(4), ForKind::Serial, Store::make(stray, i, Expr(1.0f))), {out}),
                  kiln::InternalError);
  // Workgroup loop nested inside a serial loop.
  Stmt nested = For::make(i, Expr(0), Expr(4), ForKind::Serial,
                          For::make(j, Expr(0), Expr(4), ForKind::WorkgroupX, Store::make(out, j, Expr(1.0f))));
  CHECK_THROWS_AS(verify_kernel("k", nested, {out}), kiln::InternalError);
  // Constant index out of range.
  CHECK_THROWS_AS(verify_kernel("k", Store::make(out, Expr(4), Expr(1.0f)), {out}), kiln::InternalError);
  // A good one passes.
  CHECK_NOTHROW(verify_kernel("k", For::make(i, Expr(0), Expr(4), ForKind::WorkgroupX, Store::make(out, i, Expr(1.0f))), {out}));
}

TEST_CASE("printer shows loops, kinds and allocations") {
  Expr i = Var::make(Index(), "i");
  Buffer out = make_buffer("out", Float(32), 4, 0);
  Buffer acc = make_buffer("acc", Float(32), 1, -1);
  Stmt s = For::make(i, Expr(0), Expr(4), ForKind::WorkgroupX,
                     Allocate::make(acc, Block::make({Store::make(acc, Expr(0), Expr(0.0f)),
                                                      Store::make(out, i, Load::make(acc, Expr(0)))})));
  CHECK(to_string(s) ==
        "workgroup.x (i, 0, 4) {\n"
        "  allocate acc[f32 * 1]\n"
        "  acc[0] = 0f\n"
        "  out[i] = acc[0]\n"
        "}\n");
}

TEST_CASE("a split's recombination divides back exactly") {
  Expr o = Var::make(Index(), "o"), i = Var::make(Index(), "i");
  Buffer out = make_buffer("out", Index(), 64, 0);
  // for o in [0, 8), i in [0, 8): (o * 8 + i) / 8 == o and (o * 8 + i) % 8 == i
  Stmt s = For::make(o, Expr(0), Expr(8), ForKind::Serial,
                     For::make(i, Expr(0), Expr(8), ForKind::Serial,
                               Store::make(out, o * Expr(8) + i, (o * Expr(8) + i) / Expr(8) + (o * Expr(8) + i) % Expr(8))));
  CHECK(to_string(simplify(s)).find("] = (o + i)") != std::string::npos);
  // Not when the remainder can reach the divisor.
  Expr j = Var::make(Index(), "j");
  Stmt t = For::make(j, Expr(0), Expr(9), ForKind::Serial, Store::make(out, j, (o * Expr(8) + j) / Expr(8)));
  CHECK(to_string(simplify(t)).find("/ 8") != std::string::npos);
}

TEST_CASE("simplify: a quantized value read back as float drops its two conversions only when exact") {
  Expr x = Var::make(Float(32), "x");
  Expr zp = cast(Float(32), Var::make(UInt(8), "zp"));
  Expr q = clamp(Call::make(Intrinsic::RoundEven, {x}) + zp, make_const(Float(32), 0), make_const(Float(32), 255));
  // float(uint8(clamp(round(x) + zp, 0, 255))): an integer in range, converted and back.
  Expr back = simplify(cast(Float(32), cast(UInt(8), q)));
  CHECK(back.as<Max>() != nullptr);  // the clamp itself
  // Not integral (no rounding): uint8 truncates, so the conversions stay.
  Expr raw = clamp(x, make_const(Float(32), 0), make_const(Float(32), 255));
  CHECK(simplify(cast(Float(32), cast(UInt(8), raw))).as<Cast>() != nullptr);
  // A clamp wider than int8's range: stays.
  Expr wide = clamp(Call::make(Intrinsic::RoundEven, {x}), make_const(Float(32), -200), make_const(Float(32), 127));
  CHECK(simplify(cast(Float(32), cast(Int(8), wide))).as<Cast>() != nullptr);
}
