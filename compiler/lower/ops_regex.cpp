// RegexFullMatch (opset 20): Y[i] = whether string X[i] matches attribute
// `pattern` (RE2 syntax) as a whole; Y is bool, of X's shape.
//
// The pattern becomes a DFA at compile time (lower/regex_dfa.h); the runtime
// has no regex engine. The DFA is one int32 constant buffer:
//   [0, 256)                 the column of each byte value
//   [256, 256 + S)           per state: 1 when a string ending there matches
//   [256 + S, 256 + S + S*K) the state after a byte: [state * K + column]
// (S states, K columns). The kernel is serial hand-written TIR over X's
// string table (lower/string_table.h), one pass over each string's bytes
// from the start state, and runs on the host CPU even in a Vulkan bundle
// (KernelDef::host_only), as the other string kernels (ops_text.cpp).
#include <cstring>

#include "lower/op_lowering.h"
#include "lower/regex_dfa.h"
#include "lower/serial_tir.h"
#include "lower/string_table.h"
#include "support/diagnostics.h"

namespace kiln::lower {

using namespace serial;  // NOLINT: the builders are this file's vocabulary
using graph::DType;

void lower_regex_full_match(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  user_assert(ctx.in_dtype(0) == DType::String) << n.describe() << ": X must be a string tensor";
  user_assert(n.has_attr("pattern")) << n.describe() << ": RegexFullMatch needs attribute 'pattern'";
  const std::string pattern = n.attr_string("pattern", "");
  std::string error;
  const regex::Dfa dfa = regex::compile_full_match(pattern, &error);
  user_assert(error.empty()) << n.describe() << ": pattern '" << pattern << "': " << error;
  const int in = ctx.input(0), out = ctx.output(0);
  if (ctx.value(out).elements() == 0) return;  // no strings (at every run-time size): nothing to compute

  const int64_t S = dfa.states(), K = dfa.classes;
  std::vector<int32_t> table(dfa.byte_class.begin(), dfa.byte_class.end());
  table.insert(table.end(), dfa.accepts.begin(), dfa.accepts.end());
  table.insert(table.end(), dfa.next.begin(), dfa.next.end());
  std::vector<uint8_t> bytes(table.size() * 4);
  memcpy(bytes.data(), table.data(), bytes.size());
  const int table_v = ctx.graph.add_constant(ctx.graph.unique_name(n.name + ".dfa"), DType::I32, {(int64_t)table.size()},
                                             std::move(bytes));
  const Expr count = te::num_elements(ctx.in_dims(0));
  ctx.emit_tir("regex_full_match", [&](const OpContext::BindFn& bind) {
    tir::Buffer X = bind(in, Access::Read), Y = bind(out, Access::Write), T = bind(table_v, Access::Read);
    Local state("state", tir::Index());
    Expr i = index_var("i"), p = index_var("p"), begin = index_var("begin"), end = index_var("end");
    Expr xs = strings::bytes_start(count);
    auto entry = [&](const Expr& at) { return as_index(tir::Load::make(T, at)); };
    Expr column = entry(strings::byte_at(X, begin + p));
    Stmt step = state.set(entry(Expr(256 + S) + state.get() * Expr(K) + column));
    Stmt each = tir::LetStmt::make(begin, xs + strings::offset(X, i), tir::LetStmt::make(end, xs + strings::offset(X, i + Expr(1)),
        block({state.set(Expr((int64_t)dfa.start)), loop(p, end - begin, step),
               tir::Store::make(Y, i, tir::cast(tir::UInt(8), entry(Expr(256) + state.get())))})));
    return allocate({state.b}, loop(i, count, each));
  });
  ctx.kernels.back().host_only = "string tables run on the CPU";
}

}  // namespace kiln::lower
