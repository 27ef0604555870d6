// Builders for operator bodies: loop nests over an output shape with the
// element written by an index formula, and scalar reductions.
//
// This is the small core that issue 3 grows into full tensor expressions with
// schedules; today the only schedule is the default one: the outermost
// dimension of extent > 1 is bound to workgroup x, everything else is a
// serial loop.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "tir/ir.h"

namespace kiln::lower {

using tir::Expr;
using tir::Stmt;
using Indices = std::vector<Expr>;

// Row-major flat index of `idx` into a tensor of `shape`.
Expr flat_index(const graph::Shape& shape, const Indices& idx);

// for idx in shape: body(idx). With bind_workgroup, the first dimension of
// extent > 1 becomes the workgroup x axis.
Stmt loop_nest(const std::string& prefix, const graph::Shape& shape, const std::function<Stmt(const Indices&)>& body,
               bool bind_workgroup = true);

// out[idx] = f(idx) for every idx of `shape`.
Stmt compute(const tir::Buffer& out, const graph::Shape& shape, const std::function<Expr(const Indices&)>& f,
             bool bind_workgroup = true);

// acc = init; for r in rshape: acc = update(acc, r); then finish(acc).
Stmt reduce(const std::string& name, tir::Type acc_type, Expr init, const graph::Shape& rshape,
            const std::function<Expr(const Expr& acc, const Indices& r)>& update,
            const std::function<Stmt(const Expr& acc)>& finish);

// A load of `buf` (shape `shape`) at `idx` that yields `pad` wherever some
// index falls outside [0, dim): the index is clamped, so the load is always
// safe, and a select picks the pad value. The simplifier drops the guard
// when bounds prove it always holds.
Expr padded_load(const tir::Buffer& buf, const graph::Shape& shape, const Indices& idx, Expr pad);

// The condition that every idx[i] is inside [lo[i], hi[i]).
Expr in_range(const Indices& idx, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi);

// Index into an input of shape `in_shape` broadcast (numpy rules) to an
// output indexed by `out_idx`.
Indices broadcast_index(const graph::Shape& in_shape, const Indices& out_idx);

}  // namespace kiln::lower
