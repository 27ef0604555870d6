// Helpers for compiler unit tests: compile kernels with the real code
// generator and linker, load the library into the test (codegen/host_library.h)
// and run it.
#pragma once

#include <doctest/doctest.h>

#include <array>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "codegen/codegen_llvm.h"
#include "codegen/host_library.h"
#include "support/diagnostics.h"
#include "codegen/link_elf.h"
#include "kiln_kernel_abi.h"
#include "lower/kernel.h"
#include "te/lower.h"
#include "tir/simplify.h"

namespace kiln::test {

using tir::Expr;

// Compiles and links the kernels and loads them into this process.
struct Library {
  std::string so;
  std::unique_ptr<HostLibrary> lib;
  // `target` must run on this machine (default: the host itself).
  explicit Library(std::vector<KernelDef> kernels, const TargetSpec& target = TargetSpec::host()) {
    for (auto& k : kernels) {
      k.body = tir::simplify(k.body);
      set_launch_parameters(k);
      grids.push_back(k.workgroup_count);
    }
    so = link_shared_object(compile_kernels(kernels, target), target);
    lib = std::make_unique<HostLibrary>(so);
    table = &lib->table();
  }
  // Runs kernel `kernel` over its whole workgroup grid (serially); when
  // `expected_workgroups` is given, first checks the grid has that many.
  void run(uint32_t kernel, std::vector<void*> bindings, int64_t expected_workgroups = -1) {
    const auto& count = grids.at(kernel);
    if (expected_workgroups >= 0) REQUIRE((int64_t)count[0] * count[1] * count[2] == expected_workgroups);
    REQUIRE(kernel < table->kernel_count);
    REQUIRE(HostLibrary::run(table->kernels[kernel], count, std::move(bindings)) == 0);
  }
  const kiln_kernel_library_t* table = nullptr;  // the library's kernel table
  std::vector<std::array<uint32_t, 3>> grids;     // per kernel: its workgroup counts
};

inline KernelDef unary_kernel(const std::string& name, int64_t n, const std::function<Expr(Expr)>& f) {
  KernelDef k;
  k.name = name;
  auto in = tir::make_buffer("in", tir::Float(32), n, 0);
  auto out = tir::make_buffer("out", tir::Float(32), n, 1);
  k.params = {in, out};
  te::Tensor x = te::placeholder("in", {n}, tir::Float(32));
  te::Stage stage(te::compute("out", {n}, [&](const te::Indices& i) { return f(x(i)); }));
  te::default_cpu_schedule(stage);
  k.body = te::lower_stage(stage, out, [&](const te::TensorNode* t) { return t == x.get() ? in : nullptr; });
  return k;
}


}  // namespace kiln::test
