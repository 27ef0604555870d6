// Helpers for compiler unit tests: compile kernels with the real code
// generator and linker, load the library with dlopen and run it.
#pragma once

#include <dlfcn.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

#include "codegen/codegen_llvm.h"
#include "codegen/link_elf.h"
#include "kiln_kernel_abi.h"
#include "lower/kernel.h"
#include "te/lower.h"
#include "tir/simplify.h"

namespace kiln::test {

using tir::Expr;

// Compiles, links and dlopens the kernels; returns the library table.
struct Library {
  void* handle = nullptr;
  const kiln_kernel_library_t* table = nullptr;
  std::string so;
  explicit Library(std::vector<KernelDef> kernels) {
    for (auto& k : kernels) {
      k.body = tir::simplify(k.body);
      k.workgroup_count = workgroup_count_of(k.body);
      grids.push_back(k.workgroup_count);
    }
    TargetSpec host = TargetSpec::host();
    so = link_shared_object(compile_kernels(kernels, host), host);
    char path[] = "/tmp/kiln-codegen-test-XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    REQUIRE(write(fd, so.data(), so.size()) == (ssize_t)so.size());
    close(fd);
    handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    unlink(path);
    REQUIRE(handle);
    auto query = (kiln_kernel_library_query_fn_t)dlsym(handle, KILN_KERNEL_LIBRARY_QUERY_SYMBOL);
    REQUIRE(bool(query));
    CHECK(query(KILN_KERNEL_ABI_VERSION + 1) == nullptr);
    table = query(KILN_KERNEL_ABI_VERSION);
    REQUIRE(table);
  }
  ~Library() {
    if (handle) dlclose(handle);
  }
  // Runs kernel `kernel` over its whole workgroup grid (serially); when
  // `expected_workgroups` is given, first checks the grid has that many.
  void run(uint32_t kernel, std::vector<void*> bindings, int64_t expected_workgroups = -1) {
    const auto& count = grids.at(kernel);
    if (expected_workgroups >= 0) REQUIRE((int64_t)count[0] * count[1] * count[2] == expected_workgroups);
    kiln_kernel_dispatch_state_t d = {};
    for (int i = 0; i < 3; i++) d.workgroup_count[i] = count[i];
    d.binding_count = (uint32_t)bindings.size();
    d.bindings = bindings.data();
    for (uint32_t z = 0; z < count[2]; z++)
      for (uint32_t y = 0; y < count[1]; y++)
        for (uint32_t x = 0; x < count[0]; x++) {
          kiln_kernel_workgroup_state_t w = {{x, y, z}, 0};
          REQUIRE(table->kernels[kernel](&d, &w) == 0);
        }
  }
  std::vector<std::array<uint32_t, 3>> grids;  // per kernel: its workgroup counts
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
