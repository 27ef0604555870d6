// Shape operators. Reshape, Flatten, Squeeze, Unsqueeze, Identity and Dropout
// (inference) only reinterpret their input: the output aliases the input's
// storage and no kernel runs. Concat and Transpose move data.
#include "lower/op_lowering.h"
#include "support/diagnostics.h"

namespace kiln::lower {
namespace {

void lower_alias(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const graph::Value& in = ctx.value(ctx.input(0));
  const graph::Value& out = ctx.value(ctx.output(0));
  user_assert(in.elements() == out.elements() && in.dtype == out.dtype)
      << n.describe() << ": output " << graph::shape_str(out.shape) << " does not hold the same elements as input "
      << graph::shape_str(in.shape);
  if (n.op == "Dropout")
    user_assert(n.outputs.size() < 2 || n.outputs[1] < 0) << n.describe() << ": the mask output is not supported";
  ctx.aliases.push_back({ctx.output(0), ctx.input(0)});
}

void lower_concat(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const graph::Shape& os = ctx.out_shape(0);
  int64_t axis = normalize_axis(ctx, n.attr_int("axis", 0), (int64_t)os.size());
  KernelDef& kd = ctx.new_kernel("concat");
  std::vector<tir::Buffer> ins;
  for (size_t i = 0; i < n.inputs.size(); i++) {
    user_assert(ctx.value(ctx.input(i)).dtype == ctx.value(ctx.output(0)).dtype)
        << n.describe() << ": inputs must share the output's element type";
    ins.push_back(ctx.param(kd, ctx.input(i), Access::Read));
  }
  tir::Buffer out = ctx.param(kd, ctx.output(0), Access::Write);
  std::vector<Stmt> copies;
  int64_t offset = 0;
  for (size_t i = 0; i < ins.size(); i++) {
    const graph::Shape& s = ctx.in_shape(i);
    int64_t off = offset;
    copies.push_back(loop_nest(
        "i", s,
        [&](const Indices& idx) {
          Indices oi = idx;
          oi[axis] = idx[axis] + Expr(off);
          return tir::Store::make(out, flat_index(os, oi), tir::Load::make(ins[i], flat_index(s, idx)));
        },
        false));
    offset += s[axis];
  }
  user_assert(offset == os[axis]) << n.describe() << ": input extents along axis do not sum to the output's";
  kd.body = tir::Block::make(copies);
}

void lower_transpose(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const graph::Shape& is = ctx.in_shape(0);
  const graph::Shape& os = ctx.out_shape(0);
  std::vector<int64_t> perm;
  for (int64_t i = (int64_t)is.size() - 1; i >= 0; i--) perm.push_back(i);
  perm = n.attr_ints("perm", perm);
  user_assert(perm.size() == is.size()) << n.describe() << ": 'perm' must have one entry per dimension";
  KernelDef& kd = ctx.new_kernel("transpose");
  tir::Buffer x = ctx.param(kd, ctx.input(0), Access::Read);
  tir::Buffer out = ctx.param(kd, ctx.output(0), Access::Write);
  kd.body = compute(out, os, [&](const Indices& o) {
    Indices ii(is.size());
    for (size_t i = 0; i < perm.size(); i++) {
      user_assert(perm[i] >= 0 && perm[i] < (int64_t)is.size()) << n.describe() << ": bad 'perm'";
      ii[perm[i]] = o[i];
    }
    return tir::Load::make(x, flat_index(is, ii));
  });
}

}  // namespace

void register_shape_ops(std::map<std::string, OpLowering>& r) {
  for (const char* op : {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"}) r[op] = lower_alias;
  r["Concat"] = lower_concat;
  r["Transpose"] = lower_transpose;
}

}  // namespace kiln::lower
