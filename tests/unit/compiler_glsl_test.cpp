// Units for the GLSL emitter (codegen_glsl.cpp): the widths it gives index
// arithmetic next to int64 data, and float division. On a real GPU (NVIDIA,
// tools/gpu_check) chains of int64 divisions in index arithmetic gave wrong
// elements and OpFDiv's 2.5-ulp quotient moved quantization ties; lavapipe
// computes both exactly, so what its conformance run cannot see is pinned
// here on the shader text, and each shader must pass glslang.
#include <doctest/doctest.h>

#include <string>

#include "codegen/codegen_glsl.h"
#include "codegen/codegen_spirv.h"
#include "tir/ir.h"

using namespace kiln;
using tir::Expr;

namespace {

KernelDef one_loop_kernel(const std::string& name, std::vector<tir::Buffer> params, const Expr& i, tir::Stmt body,
                          int64_t n) {
  KernelDef k;
  k.name = name;
  k.params = std::move(params);
  k.access.assign(k.params.size(), Access::Read);
  k.access[0] = Access::Write;
  k.body = tir::For::make(i, Expr(0), Expr(n), tir::ForKind::Serial, body);
  return k;
}

// glslang and the SPIR-V validator accept the kernel (no CPU fallback).
void check_compiles(const KernelDef& k) {
  if (!spirv_codegen_available()) return;
  SpirvOptions options;
  SpirvLibrary lib = compile_kernels_spirv({k}, options);
  REQUIRE(lib.kernels.size() == 1);
  CHECK_MESSAGE(lib.kernels[0].cpu_reason.empty(), lib.kernels[0].cpu_reason);
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("index arithmetic stays 32-bit next to int64 data; int64 data stays 64-bit") {
  // out[i] = data[clamp(idx[i], 0, 4) * 60 + (i / 4 / 3) % 5], as NegativeLogLikelihoodLoss gathers.
  auto out = tir::make_buffer("out", tir::Float(32), 240, 0);
  auto idx = tir::make_buffer("idx", tir::Int(64), 240, 1);
  auto data = tir::make_buffer("data", tir::Float(32), 300, 2);
  Expr i = tir::Var::make(tir::Index(), "i");
  Expr cls = tir::max(tir::min(tir::Load::make(idx, i), Expr(4)), Expr(0));
  Expr at = cls * Expr(60) + ((i / Expr(4)) / Expr(3)) % Expr(5);
  KernelDef k = one_loop_kernel("k_gather64", {out, idx, data}, i, tir::Store::make(out, i, tir::Load::make(data, at)),
                                240);
  GlslKernel g = emit_glsl(k);
  INFO(g.source);
  CHECK((g.features & kGlslFeatureInt64) != 0);
  CHECK(contains(g.source, "int64_t d[]"));               // the int64 tensor keeps its type
  CHECK(contains(g.source, "for (int "));                 // the loop variable is 32-bit
  CHECK(contains(g.source, "kiln_mod(kiln_div(kiln_div("));
  CHECK(contains(g.source, ", 4), 3), 5)"));              // ... over int constants,
  CHECK_FALSE(contains(g.source, "4l"));                  // no int64 literal anywhere
  CHECK(contains(g.source, "int64_t(4)"));                // the clamp of int64 data is int64
  CHECK(contains(g.source, "int64_t(kiln_mod("));         // and the 32-bit part joins it widened
  check_compiles(k);
}

TEST_CASE("int64 arithmetic on data keeps 64 bits: wide constants, wide Lets, stores") {
  // out[i] = idx[i] * 3000000000 + i, through a Let; out is int64.
  auto out = tir::make_buffer("out", tir::Int(64), 16, 0);
  auto idx = tir::make_buffer("idx", tir::Int(64), 16, 1);
  Expr i = tir::Var::make(tir::Index(), "i");
  Expr v = tir::Var::make(tir::Int(64), "v");
  Expr value = tir::Let::make(v, tir::Load::make(idx, i) * Expr(int64_t(3000000000)), v + i);
  KernelDef k = one_loop_kernel("k_wide", {out, idx}, i, tir::Store::make(out, i, value), 16);
  GlslKernel g = emit_glsl(k);
  INFO(g.source);
  CHECK(contains(g.source, "3000000000l"));
  CHECK(contains(g.source, "int64_t v"));   // the Let over data is declared int64_t
  CHECK(contains(g.source, "int64_t(v"));   // the loop variable widened where it meets it
  check_compiles(k);
}

TEST_CASE("an int64 local array in a kernel without int64 tensors is plain int") {
  // Det's pivot row: a one-element i64 local array, no int64 binding.
  auto out = tir::make_buffer("out", tir::Int(32), 4, 0);
  auto pivot = tir::make_buffer("pivot", tir::Index(), 1, -1);
  Expr i = tir::Var::make(tir::Index(), "i");
  tir::Stmt body = tir::Allocate::make(
      pivot, tir::Block::make({tir::Store::make(pivot, Expr(0), i),
                               tir::Store::make(out, i, tir::Cast::make(tir::Int(32), tir::Load::make(pivot, Expr(0))))}));
  KernelDef k = one_loop_kernel("k_local64", {out}, i, body, 4);
  GlslKernel g = emit_glsl(k);
  INFO(g.source);
  CHECK((g.features & kGlslFeatureInt64) == 0);
  CHECK_FALSE(contains(g.source, "int64_t"));
  check_compiles(k);
}

// out[i] = a[2i] / a[2i + 1] in float`bits`.
KernelDef division_kernel(int bits) {
  auto out = tir::make_buffer("out", tir::Float(bits), 8, 0);
  auto a = tir::make_buffer("a", tir::Float(bits), 16, 1);
  Expr i = tir::Var::make(tir::Index(), "i");
  Expr q = tir::Load::make(a, i * Expr(2)) / tir::Load::make(a, i * Expr(2) + Expr(1));
  return one_loop_kernel("k_div" + std::to_string(bits), {out, a}, i, tir::Store::make(out, i, q), 8);
}

TEST_CASE("float32 division is the correctly rounded helper; float64 division is native") {
  KernelDef k = division_kernel(32);
  GlslKernel g = emit_glsl(k);
  INFO(g.source);
  CHECK(contains(g.source, "= kiln_fdiv(b1.d["));
  // The rules an H200 taught (docs/vulkan.md): the hardware quotient hidden
  // from the compiler (NVIDIA's folded a - (a / b) b to 0 and dropped the
  // correction), and Dekker's split by masking bits, not by arithmetic a
  // compiler may simplify.
  CHECK(contains(g.source, "uintBitsToFloat(floatBitsToUint(ma / mb) ^ z)"));
  CHECK(contains(g.source, "uint z = uint(gl_NumWorkGroups.x == 65535u && gl_NumWorkGroups.y == 65535u"));
  CHECK(contains(g.source, "floatBitsToUint(x) & 0xFFFFF000u"));
  check_compiles(k);
  // The optimized module keeps kiln_fdiv one function (DontInline): inlined
  // at every division it made a GridSample module 5 MB.
  if (spirv_codegen_available()) {
    SpirvLibrary lib = compile_kernels_spirv({k}, SpirvOptions());
    REQUIRE(lib.kernels.size() == 1);
    const std::vector<uint32_t>& w = lib.kernels[0].words;
    int out_of_line = 0;
    for (size_t i = 5; i < w.size() && (w[i] >> 16) != 0; i += w[i] >> 16)
      if ((w[i] & 0xFFFFu) == 54 && i + 3 < w.size() && (w[i + 3] & 0x2u)) out_of_line++;
    CHECK(out_of_line == 1);
  }

  KernelDef k64 = division_kernel(64);
  GlslKernel g64 = emit_glsl(k64);
  INFO(g64.source);
  CHECK_FALSE(contains(g64.source, "= kiln_fdiv("));
  check_compiles(k64);
}
