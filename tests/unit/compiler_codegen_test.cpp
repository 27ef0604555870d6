// Units for code generation: TIR kernels compiled by LLVM, linked by lld into
// a shared object, then run (through dlopen: this checks the code generator
// alone; the runtime's own loader has its tests and the end-to-end tests).
#include <dlfcn.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <vector>

#include "codegen/codegen_llvm.h"
#include "codegen/link_elf.h"
#include "kiln_kernel_abi.h"
#include "te/lower.h"
#include "te/schedule.h"
#include "tir/ir_printer.h"
#include "lower/kernel.h"
#include "lower/serial_tir.h"
#include "tir/simplify.h"

using namespace kiln;
using tir::Expr;

#include "compiler_test_util.h"

using kiln::test::Library;
using kiln::test::unary_kernel;

TEST_CASE("the ABI structs the code generator builds match the header") {
  static_assert(offsetof(kiln_kernel_dispatch_state_t, bindings) == 16, "layout assumed by codegen_llvm.cpp");
  static_assert(offsetof(kiln_kernel_dispatch_state_t, push_constants) == 32, "layout assumed by codegen_llvm.cpp");
  static_assert(sizeof(kiln_kernel_workgroup_state_t) == 16, "layout assumed by codegen_llvm.cpp");
  CHECK(true);
}

TEST_CASE("kernels run and the library has no undefined symbols") {
  const int64_t n = 1000;
  Library lib({unary_kernel("k_exp", n, [](Expr x) { return tir::Call::make(tir::Intrinsic::Exp, {x}); }),
               unary_kernel("k_floor", n, [](Expr x) { return tir::Call::make(tir::Intrinsic::Floor, {x}); }),
               unary_kernel("k_affine", n, [](Expr x) { return x * Expr(2.0f) + Expr(1.0f); })});
  REQUIRE(lib.table->kernel_count == 3);
  CHECK(std::string(lib.table->kernel_names[0]) == "k_exp");
  CHECK(std::string(lib.table->kernel_names[2]) == "k_affine");
  // No libm, no memset: the only undefined-symbol-free library is one whose
  // dynamic symbol table holds nothing but the query function (checked by -z defs
  // at link time; here we check that linking succeeded and the table is sane).
  CHECK(lib.so.compare(0, 4, "\x7f" "ELF") == 0);
  CHECK_THROWS_AS(HostLibrary(lib.so, KILN_KERNEL_ABI_VERSION + 1), kiln::InternalError);  // no table for another ABI

  std::vector<float> in(n), out(n);
  for (int64_t i = 0; i < n; i++) in[i] = -87.0f + 175.0f * (float)i / (float)(n - 1);
  lib.run(0, {in.data(), out.data()});
  double worst = 0;
  for (int64_t i = 0; i < n; i++) {
    double ref = std::exp((double)in[i]);
    if (ref > 1e-30) worst = std::max(worst, std::fabs(out[i] - ref) / ref);
  }
  CHECK(worst < 4e-7);  // a few ulp of float32

  for (int64_t i = 0; i < n; i++) in[i] = -10.0f + 0.0173f * (float)i;
  in[0] = -3e9f;
  in[1] = 1e10f;
  in[2] = -0.5f;
  lib.run(1, {in.data(), out.data()});
  for (int64_t i = 0; i < n; i++) CHECK(out[i] == std::floor(in[i]));

  lib.run(2, {in.data(), out.data()});
  for (int64_t i = 0; i < n; i++) CHECK(out[i] == in[i] * 2.0f + 1.0f);
}

TEST_CASE("floor division and modulo on negative integers") {
  KernelDef k;
  k.name = "k_divmod";
  auto out = tir::make_buffer("out", tir::Index(), 40, 0);
  k.params = {out};
  // out[2i] = (i - 10) / 3, out[2i+1] = (i - 10) % 3
  tir::Expr i = tir::Var::make(tir::Index(), "i");
  k.body = tir::For::make(i, Expr(0), Expr(20), tir::ForKind::Serial,
                          tir::Block::make({tir::Store::make(out, i * Expr(2), (i - Expr(10)) / Expr(3)),
                                            tir::Store::make(out, i * Expr(2) + Expr(1), (i - Expr(10)) % Expr(3))}));
  Library lib({k});
  std::vector<int64_t> r(40);
  lib.run(0, {r.data()}, 1);
  for (int64_t v = -10; v < 10; v++) {
    int64_t q = (int64_t)std::floor(v / 3.0);
    CHECK(r[2 * (v + 10)] == q);
    CHECK(r[2 * (v + 10) + 1] == v - 3 * q);
  }
}

TEST_CASE("workgroups each compute their own slice") {
  KernelDef k;
  k.name = "k_fill";
  auto out = tir::make_buffer("out", tir::Float(32), 6 * 5, 0);
  k.params = {out};
  te::Stage stage(te::compute("fill", {6, 5}, [](const te::Indices& i) {
    return tir::cast(tir::Float(32), i[0] * Expr(10) + i[1]);
  }));
  te::default_cpu_schedule(stage);
  k.body = te::lower_stage(stage, out, [](const te::TensorNode*) { return tir::Buffer(); });
  Library lib({k});
  std::vector<float> r(30, -1.0f);
  lib.run(0, {r.data()}, 6);
  for (int a = 0; a < 6; a++)
    for (int b = 0; b < 5; b++) CHECK(r[a * 5 + b] == (float)(a * 10 + b));
}

// Row statistics: a compute over a float max and a sum (with a custom start,
// which must count once) along the contiguous row gets lane partials from
// the CPU schedule; the values match a scalar evaluation. A read across
// rows (not contiguous) and a row the lanes do not divide get none; a stage
// with lanes on still runs such a reduction, reached through an inlined
// compute, as a serial loop (every element counted).
TEST_CASE("row reductions inlined into a compute accumulate in vector lanes") {
  const int64_t rows = 5;
  for (int64_t len : {48, 40}) {
    auto in = tir::make_buffer("x", tir::Float(32), rows * len, 1);
    auto out = tir::make_buffer("y", tir::Float(32), rows, 0);
    te::Tensor x = te::placeholder("x", {rows, len}, tir::Float(32));
    te::Tensor mx = te::reduce("mx", {rows}, {len}, te::ReduceKind::Max, tir::Float(32),
                               [x](const te::Indices& o, const te::Indices& r) { return x({o[0], r[0]}); });
    te::Tensor sum = te::reduce(
        "sum", {rows}, {len}, te::ReduceKind::Sum, tir::Float(32),
        [x](const te::Indices& o, const te::Indices& r) { return x({o[0], r[0]}) * x({o[0], r[0]}); },
        tir::make_const(tir::Float(32), 0.5));
    te::Tensor y = te::compute("y", {rows}, [=](const te::Indices& o) { return mx(o) + sum(o); });
    CHECK(te::reduction_lanes(mx.get()) == (len % 16 == 0 ? 16 : 8));
    CHECK(te::inline_reductions_vectorize(y));
    te::Stage stage(y);
    te::default_cpu_schedule(stage);
    CHECK(stage.inline_reduction_lanes);
    KernelDef k;
    k.name = "k_rows";
    k.params = {out, in};
    k.body = te::lower_stage(stage, out, [&](const te::TensorNode* t) { return t == x.get() ? in : tir::Buffer(); });
    CHECK(tir::to_string(k.body).find("vectorized") != std::string::npos);
    Library lib({k});
    std::vector<float> xs((size_t)(rows * len)), ys((size_t)rows, -1.0f);
    for (size_t i = 0; i < xs.size(); i++) xs[i] = std::sin(0.37f * (float)i) * 3.0f;
    lib.run(0, {ys.data(), xs.data()}, rows);
    for (int64_t o = 0; o < rows; o++) {
      double m = -INFINITY, s = 0.5;
      for (int64_t r = 0; r < len; r++) {
        double v = xs[(size_t)(o * len + r)];
        m = std::max(m, v);
        s += v * v;
      }
      CHECK(ys[(size_t)o] == doctest::Approx(m + s).epsilon(1e-5));
    }
  }
  te::Tensor x = te::placeholder("x", {32, 32}, tir::Float(32));
  te::Tensor across = te::reduce("c", {32}, {32}, te::ReduceKind::Sum, tir::Float(32),
                                 [x](const te::Indices& o, const te::Indices& r) { return x({r[0], o[0]}); });
  CHECK(te::reduction_lanes(across.get()) == 0);
  CHECK_FALSE(te::inline_reductions_vectorize(te::compute("y", {32}, [=](const te::Indices& o) { return across(o); })));

  // max over a row of 32 (lanes) plus the mean of a row of 3 (none), the
  // mean behind an inlined compute; lanes forced on for the stage.
  auto in_a = tir::make_buffer("a", tir::Float(32), rows * 32, 1);
  auto in_b = tir::make_buffer("b", tir::Float(32), rows * 3, 2);
  auto out = tir::make_buffer("y", tir::Float(32), rows, 0);
  te::Tensor a = te::placeholder("a", {rows, 32}, tir::Float(32));
  te::Tensor b = te::placeholder("b", {rows, 3}, tir::Float(32));
  te::Tensor amax = te::reduce("amax", {rows}, {32}, te::ReduceKind::Max, tir::Float(32),
                               [a](const te::Indices& o, const te::Indices& r) { return a({o[0], r[0]}); });
  te::Tensor bsum = te::reduce("bsum", {rows}, {3}, te::ReduceKind::Sum, tir::Float(32),
                               [b](const te::Indices& o, const te::Indices& r) { return b({o[0], r[0]}); });
  te::Tensor bmean = te::compute("bmean", {rows}, [=](const te::Indices& o) {
    return bsum(o) / tir::make_const(tir::Float(32), 3);
  });
  te::Tensor y = te::compute("y", {rows}, [=](const te::Indices& o) { return amax(o) + bmean(o); });
  CHECK(te::reduction_lanes(bsum.get()) == 0);
  CHECK_FALSE(te::inline_reductions_vectorize(y));
  te::Stage stage(y);
  te::default_cpu_schedule(stage);
  stage.inline_reduction_lanes = true;
  KernelDef k;
  k.name = "k_mixed";
  k.params = {out, in_a, in_b};
  k.body = te::lower_stage(stage, out, [&](const te::TensorNode* t) {
    return t == a.get() ? in_a : t == b.get() ? in_b : tir::Buffer();
  });
  Library lib({k});
  std::vector<float> as((size_t)(rows * 32)), bs((size_t)(rows * 3)), ys((size_t)rows, -1.0f);
  for (size_t i = 0; i < as.size(); i++) as[i] = std::cos(0.21f * (float)i);
  for (size_t i = 0; i < bs.size(); i++) bs[i] = 1.0f + (float)i;
  lib.run(0, {ys.data(), as.data(), bs.data()}, rows);
  for (int64_t o = 0; o < rows; o++) {
    double m = -INFINITY;
    for (int64_t r = 0; r < 32; r++) m = std::max(m, (double)as[(size_t)(o * 32 + r)]);
    double mean = (bs[(size_t)(o * 3)] + bs[(size_t)(o * 3 + 1)] + bs[(size_t)(o * 3 + 2)]) / 3.0;
    CHECK(ys[(size_t)o] == doctest::Approx(m + mean).epsilon(1e-5));
  }
}

TEST_CASE("inline log, tanh, erf and pow are accurate") {
  const int64_t n = 2000;
  auto call1 = [](tir::Intrinsic op) { return [op](Expr x) { return tir::Call::make(op, {x}); }; };
  Library lib({unary_kernel("k_log", n, call1(tir::Intrinsic::Log)), unary_kernel("k_tanh", n, call1(tir::Intrinsic::Tanh)),
               unary_kernel("k_erf", n, call1(tir::Intrinsic::Erf)),
               unary_kernel("k_pow", n, [](Expr x) { return tir::Call::make(tir::Intrinsic::Pow, {x, Expr(2.5f)}); }),
               unary_kernel("k_powi", n, [](Expr x) { return tir::Call::make(tir::Intrinsic::Pow, {x, Expr(3.0f)}); })});
  std::vector<float> in(n), out(n);
  auto check = [&](uint32_t kernel, double (*ref)(double), double rel, double abs) {
    lib.run(kernel, {in.data(), out.data()});
    for (int64_t i = 0; i < n; i++) {
      double r = ref(in[i]);
      if (std::isnan(r)) {
        CHECK(std::isnan(out[i]));
      } else if (std::isinf(r)) {
        CHECK(out[i] == r);
      } else {
        INFO("x = " << in[i] << " got " << out[i] << " want " << r);
        CHECK(std::fabs(out[i] - r) <= abs + rel * std::fabs(r));
      }
    }
  };
  for (int64_t i = 0; i < n; i++) in[i] = std::ldexp(1.0f + (float)(i % 97) / 97.0f, (int)(i % 250) - 140);  // incl. subnormals
  in[0] = 0.0f;
  in[1] = -1.0f;
  in[2] = INFINITY;
  check(0, [](double x) { return std::log(x); }, 3e-7, 0);
  for (int64_t i = 0; i < n; i++) in[i] = -12.0f + 24.0f * (float)i / (float)(n - 1);
  in[3] = 1e-6f;
  in[4] = -3e-5f;
  check(1, [](double x) { return std::tanh(x); }, 5e-7, 1e-9);
  in[5] = INFINITY;
  in[6] = -INFINITY;
  in[7] = NAN;
  in[8] = 1e-30f;
  check(2, [](double x) { return std::erf(x); }, 5e-7, 1e-12);
  CHECK(out[5] == 1.0f);  // exactly: erf rounds to +-1 in float32 beyond 3.93
  CHECK(out[6] == -1.0f);
  CHECK(out[n - 1] == 1.0f);
  for (int64_t i = 0; i < n; i++) in[i] = -20.0f + 40.0f * (float)i / (float)(n - 1);
  check(3, [](double x) { return std::pow(x, 2.5); }, 3e-6, 0);
  check(4, [](double x) { return std::pow(x, 3.0); }, 3e-6, 0);
}

TEST_CASE("inline sin, cos, tan, asin, acos and atan are accurate") {
  const int64_t n = 3000;
  auto call1 = [](tir::Intrinsic op) { return [op](Expr x) { return tir::Call::make(op, {x}); }; };
  Library lib({unary_kernel("k_sin", n, call1(tir::Intrinsic::Sin)), unary_kernel("k_cos", n, call1(tir::Intrinsic::Cos)),
               unary_kernel("k_tan", n, call1(tir::Intrinsic::Tan)), unary_kernel("k_asin", n, call1(tir::Intrinsic::Asin)),
               unary_kernel("k_acos", n, call1(tir::Intrinsic::Acos)), unary_kernel("k_atan", n, call1(tir::Intrinsic::Atan))});
  std::vector<float> in(n), out(n);
  auto check = [&](uint32_t kernel, double (*ref)(double), double abs_tol) {
    lib.run(kernel, {in.data(), out.data()});
    for (int64_t i = 0; i < n; i++) {
      double r = ref(in[i]);
      INFO("kernel " << kernel << " x = " << in[i] << " got " << out[i] << " want " << r);
      if (std::isnan(r)) CHECK(std::isnan(out[i]));
      else CHECK(std::fabs(out[i] - r) <= abs_tol * std::max(1.0, std::fabs(r)));
    }
  };
  for (int64_t i = 0; i < n; i++) in[i] = -100.0f + 200.0f * (float)i / (float)(n - 1);
  check(0, [](double x) { return std::sin(x); }, 3e-7);
  check(1, [](double x) { return std::cos(x); }, 3e-7);
  for (int64_t i = 0; i < n; i++) in[i] = -1.4f + 2.8f * (float)i / (float)(n - 1);
  check(2, [](double x) { return std::tan(x); }, 1e-6);
  for (int64_t i = 0; i < n; i++) in[i] = -1.2f + 2.4f * (float)i / (float)(n - 1);
  check(3, [](double x) { return std::asin(x); }, 3e-7);
  check(4, [](double x) { return std::acos(x); }, 3e-7);
  for (int64_t i = 0; i < n; i++) in[i] = -50.0f + 100.0f * (float)i / (float)(n - 1);
  check(5, [](double x) { return std::atan(x); }, 3e-7);
}

TEST_CASE("integer division by zero gives 0 and MIN / -1 wraps, instead of a trap") {
  // out[i] = a[i] / b[i], out[n + i] = a[i] % b[i] for divisors read at run time (scalar and vector loops).
  const int64_t n = 32;
  std::vector<int32_t> a(n), b(n);
  for (int64_t i = 0; i < n; i++) {
    a[i] = (int32_t)(i * 7 - 100);
    b[i] = (int32_t)(i % 4 == 0 ? 0 : i % 5 - 2);  // zeros, negatives
  }
  a[3] = INT32_MIN, b[3] = -1;
  for (int64_t lanes : {int64_t(0), int64_t(16)}) {
    CAPTURE(lanes);
    KernelDef k;
    k.name = "k_idiv";
    auto ab = tir::make_buffer("a", tir::Int(32), n, 0), bb = tir::make_buffer("b", tir::Int(32), n, 1),
         ob = tir::make_buffer("out", tir::Int(32), 2 * n, 2);
    k.params = {ab, bb, ob};
    tir::Expr i = tir::Var::make(tir::Index(), "i");
    tir::Stmt body = tir::Block::make({tir::Store::make(ob, i, tir::Load::make(ab, i) / tir::Load::make(bb, i)),
                                       tir::Store::make(ob, i + Expr(n), tir::Load::make(ab, i) % tir::Load::make(bb, i))});
    k.body = tir::For::make(i, Expr(0), Expr(n), lanes ? tir::ForKind::Vectorized : tir::ForKind::Serial, body);
    Library lib({k});
    std::vector<int32_t> out(2 * n, 12345);
    lib.run(0, {a.data(), b.data(), out.data()}, 1);
    for (int64_t j = 0; j < n; j++) {
      CAPTURE(j);
      if (b[j] == 0) {
        CHECK(out[j] == 0);
        CHECK(out[n + j] == 0);
      } else if (a[j] == INT32_MIN && b[j] == -1) {
        CHECK(out[j] == INT32_MIN);
        CHECK(out[n + j] == 0);
      } else {
        int64_t q = (int64_t)std::floor((double)a[j] / b[j]);
        CHECK(out[j] == q);
        CHECK(out[n + j] == a[j] - q * b[j]);
      }
    }
  }
}

// serial::workgroups (hand-written kernels: Multinomial, TfIdfVectorizer,
// RoiAlign): beyond 65535 workgroups, the count every Vulkan device allows per
// dimension, the loop spreads over y and x, and every index runs once.
TEST_CASE("hand-written kernels spread more than 65535 workgroups over y and x") {
  const int64_t n = 70000;
  KernelDef k;
  k.name = "k_many_groups";
  auto out = tir::make_buffer("out", tir::Int(32), n, 0);
  k.params = {out};
  Expr v = lower::serial::index_var("v");
  k.body = lower::serial::workgroups(v, n, tir::Store::make(out, v, tir::cast(tir::Int(32), v * Expr(3))));
  Library lib({k});
  std::vector<int32_t> r(n, -1);
  lib.run(0, {r.data()}, 2 * 65535);  // 2 x 65535 groups, the last 61070 guarded
  bool all = true;
  for (int64_t i = 0; i < n; i++) all &= r[i] == (int32_t)(3 * i);
  CHECK(all);
}
