// A kernel produced by lowering: a TIR body over parameter buffers, and how
// one dispatch binds graph values to those parameters.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "tir/ir.h"

namespace kiln {

enum class Access : uint8_t { Read = 0, Write = 1, ReadWrite = 2 };  // kiln.fb.Access values

struct KernelDef {
  std::string name;                       // unique symbol-safe name, e.g. "k3_conv_Conv_0"
  tir::Stmt body;                         // the loop nest
  // GPU kernels whose body shares workgroup memory between invocations (it
  // needs them to run in parallel): the same schedule without it, for a
  // host CPU fallback (heterogeneous bundles), where local loops run one
  // after another. Undefined when body runs as well on the host.
  tir::Stmt host_body;
  std::vector<tir::Buffer> params;        // params[i] is binding i
  std::vector<int> param_values;          // graph value bound to each param
  std::vector<Access> access;             // how the kernel uses each param
  std::array<uint32_t, 3> workgroup_count{1, 1, 1};  // filled from the body's workgroup loops (the largest counts)
  // Workgroup counts known only at run time: per axis, an expression over
  // shape symbols (undefined where the count is the constant above).
  std::array<tir::Expr, 3> workgroup_dynamic;
  // The shape symbols the body uses, ascending: its push constants, in this
  // order (docs/kernel-abi.md).
  std::vector<int> symbols;
  std::vector<int> source_nodes;          // graph nodes this kernel implements
  // Runs only when this is 1 (a run-time If's branch: a product of data
  // symbols in [0, 1], or 1 minus them); undefined: always.
  tir::Expr predicate;
  std::vector<std::pair<int, int>> inplace;  // (input param, output param) that may share storage
  // Non-empty: the kernel runs on the host CPU even in a Vulkan bundle, for
  // this reason (string tables: byte-serial text processing).
  std::string host_only;
};

// Fills k.workgroup_count, k.workgroup_dynamic and k.symbols from k.body
// (verified): the extents of its workgroup loops and the shape symbols it reads.
void set_launch_parameters(KernelDef& k);

}  // namespace kiln
