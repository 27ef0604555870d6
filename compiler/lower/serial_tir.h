// Small statement builders for hand-written serial kernels
// (OpContext::emit_tir: NonZero, Compress, NonMaxSuppression, Unique in
// ops_select.cpp, Det in ops_math.cpp): loops, blocks, conditionals and
// one-element local scalars, so such a kernel reads as the loop it is.
#pragma once

#include <utility>
#include <vector>

#include "lower/schedules_gpu.h"
#include "tir/ir.h"

namespace kiln::lower::serial {

using tir::Expr;
using tir::Stmt;

inline Expr index_var(const char* name) { return tir::Var::make(tir::Index(), name); }
// for v in [lo, lo + extent), serially.
inline Stmt loop(const Expr& v, const Expr& lo, const Expr& extent, Stmt body) {
  return tir::For::make(v, lo, extent, tir::ForKind::Serial, std::move(body));
}
inline Stmt loop(const Expr& v, const Expr& extent, Stmt body) { return loop(v, Expr(0), extent, std::move(body)); }
inline Stmt block(std::vector<Stmt> s) { return tir::Block::make(std::move(s)); }
inline Stmt when(const Expr& c, Stmt then) { return tir::IfThenElse::make(c, std::move(then)); }
inline Expr as_index(const Expr& v) { return tir::Cast::make(tir::Index(), v); }

// for v in [0, extent), a workgroup each: along x, and over y and x beyond
// the kGpuMaxWorkgroupCount groups per dimension every Vulkan device has
// (the last row of x groups guarded).
inline Stmt workgroups(const Expr& v, int64_t extent, Stmt body) {
  if (extent <= kGpuMaxWorkgroupCount) return tir::For::make(v, Expr(0), Expr(extent), tir::ForKind::WorkgroupX, body);
  const int64_t rows = (extent + kGpuMaxWorkgroupCount - 1) / kGpuMaxWorkgroupCount;
  Expr gy = index_var("gy"), gx = index_var("gx");
  return tir::For::make(
      gy, Expr(0), Expr(rows), tir::ForKind::WorkgroupY,
      tir::For::make(gx, Expr(0), Expr(kGpuMaxWorkgroupCount), tir::ForKind::WorkgroupX,
                     tir::LetStmt::make(v, gy * Expr(kGpuMaxWorkgroupCount) + gx,
                                        tir::IfThenElse::make(v < Expr(extent), std::move(body)))));
}

// A local scalar: a one-element buffer (allocated by allocate()).
struct Local {
  tir::Buffer b;  // the buffer
  Local(const char* name, tir::Type t) : b(tir::make_buffer(name, t, 1, -1)) {}
  Expr get() const { return tir::Load::make(b, Expr(0)); }
  Stmt set(const Expr& v) const { return tir::Store::make(b, Expr(0), v); }
};

// `body` with each of `buffers` allocated around it.
inline Stmt allocate(const std::vector<tir::Buffer>& buffers, Stmt body) {
  for (size_t i = buffers.size(); i-- > 0;) body = tir::Allocate::make(buffers[i], body);
  return body;
}

}  // namespace kiln::lower::serial
