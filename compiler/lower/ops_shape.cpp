// Shape operators. Reshape, Flatten, Squeeze, Unsqueeze, Identity and Dropout
// (inference) only reinterpret their input: the output aliases the input's
// storage and no kernel runs. Concat and Transpose move data; Shape and Size
// describe their input's static shape.
#include <algorithm>

#include "lower/op_lowering.h"
#include "support/diagnostics.h"
#include "tir/simplify.h"

namespace kiln::lower {

void lower_alias(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const graph::Value& in = ctx.value(ctx.input(0));
  const graph::Value& out = ctx.value(ctx.output(0));
  bool same = in.is_dynamic() || out.is_dynamic()
                  ? !dims_differ(te::num_elements(ctx.in_dims(0)), te::num_elements(ctx.out_dims(0)))
                  : in.elements() == out.elements();
  user_assert(same && in.dtype == out.dtype)
      << n.describe() << ": output " << graph::dims_str(out.dim_exprs()) << " does not hold the same elements as input "
      << graph::dims_str(in.dim_exprs());
  if (ctx.op() == graph::Op::Dropout) {
    // Training mode (true, or known only at run time) is random, unless the ratio is 0.
    bool zero_ratio = ctx.has_input(1) && ctx.value(ctx.input(1)).is_constant() && ctx.value(ctx.input(1)).const_at(0) == 0;
    const graph::Value* t = ctx.has_input(2) ? &ctx.value(ctx.input(2)) : nullptr;
    if (t && !zero_ratio && (!t->is_constant() || t->const_at(0) != 0)) return lower_dropout_training(ctx);  // ops_random.cpp
    if (n.outputs.size() > 1 && n.outputs[1] >= 0) {  // the mask: all true in inference
      ctx.set_output(1, te::compute("mask", ctx.out_dims(1), [](const Indices&) { return tir::IntImm::make(tir::Bool(), 1); }));
    }
  }
  if (!in.sym.empty() && !in.is_constant() && in.producer < 0) {
    // A symbolic constant has no storage to alias: its elements are computed here.
    ctx.set_output(0, symbolic_tensor(in, "symbolic", ctx.out_dims(0)));
    return;
  }
  ctx.aliases.push_back({ctx.output(0), ctx.input(0)});
}

// out[..., j, ...] = input k's element at j - offset_k, for the k whose range holds j.
void lower_concat(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  const te::Dims os = ctx.out_dims(0);
  int64_t axis = normalize_axis(ctx, n.attr_int("axis", 0), (int64_t)os.size());
  std::vector<te::Tensor> ins;
  std::vector<Expr> offsets;
  Expr offset = Expr(0);
  for (size_t i = 0; i < n.inputs.size(); i++) {
    user_assert(ctx.in_dtype(i) == ctx.value(ctx.output(0)).dtype)
        << n.describe() << ": inputs must share the output's element type";
    ins.push_back(ctx.in(i));
    offsets.push_back(offset);
    offset = tir::simplify(offset + ins.back().dims()[axis]);
  }
  user_assert(!dims_differ(offset, os[axis])) << n.describe() << ": input extents along axis do not sum to the output's";
  ctx.set_output(0, te::compute("concat", os, [=](const Indices& idx) {
    // Nested selects from the last input back; each read is clamped into range.
    Expr v;
    for (size_t k = ins.size(); k-- > 0;) {
      Expr extent = ins[k].dims()[axis];
      if (auto c = tir::as_const_int(extent); c && *c == 0) continue;
      Indices ii = idx;
      ii[axis] = tir::clamp(idx[axis] - offsets[k], Expr(0), extent - Expr(1));
      Expr here = ins[k](ii);
      v = v.defined() ? tir::select(idx[axis] < offsets[k] + extent, here, v) : here;
    }
    return v;
  }), [axis, rank = os.size()](te::Stage& s) {
    te::default_cpu_schedule(s);
    // Concatenating along an outer axis (a blocked tensor's channel blocks):
    // the innermost rows are plain copies, in vectors.
    te::IterVar last = s.axes[rank - 1];
    bool leaf = std::find(s.leaves.begin(), s.leaves.end(), last) != s.leaves.end();
    if ((size_t)axis + 1 < rank && rank >= 2 && leaf && last->extent >= 4 && last->extent <= 64 &&
        last->kind == tir::ForKind::Serial)
      s.vectorize(last);
  });
}

void lower_transpose(OpContext& ctx) {
  const graph::Node& n = ctx.node();
  te::Tensor x = ctx.in(0);
  size_t rank = x.ndim();
  std::vector<int64_t> perm;
  for (int64_t i = (int64_t)rank - 1; i >= 0; i--) perm.push_back(i);
  perm = n.attr_ints("perm", perm);
  user_assert(perm.size() == rank) << n.describe() << ": 'perm' must have one entry per dimension";
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    user_assert(p >= 0 && p < (int64_t)rank && !seen[p]) << n.describe() << ": 'perm' is not a permutation";
    seen[p] = true;
  }
  ctx.set_output(0, te::compute("transpose", ctx.out_dims(0), [=](const Indices& o) {
    Indices ii(rank);
    for (size_t i = 0; i < rank; i++) ii[perm[i]] = o[i];
    return x(ii);
  }));
}

// Shape (opset 15 adds start/end). Import folds every Shape of a static
// shape to a constant, and follows those of run-time dimensions where only
// shapes read them (import/infer_dims.h); this lowering is what runs if one
// remains: run-time dimensions are computed from the kernel's symbols.
void lower_shape(OpContext& ctx) {
  te::Dims s = ctx.in_dims(0);
  int64_t rank = (int64_t)s.size();
  int64_t start = ctx.node().attr_int("start", 0), end = ctx.node().attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  te::Dims dims(s.begin() + start, s.begin() + end);
  ctx.set_output(0, te::compute("shape", ctx.out_dims(0), [dims](const Indices& o) {
    Expr v = tir::IntImm::make(tir::Int(64), 0);
    for (size_t i = 0; i < dims.size(); i++)
      v = tir::select(tir::EQ::make(o[0], Expr((int64_t)i)), tir::cast(tir::Int(64), dims[i]), v);
    return v;
  }));
}

void lower_size(OpContext& ctx) {
  Expr n = te::num_elements(ctx.in_dims(0));
  ctx.set_output(0, te::compute("size", ctx.out_dims(0), [n](const Indices&) { return tir::cast(tir::Int(64), n); }));
}

}  // namespace kiln::lower
