// Schedules: the loop structure of a materialized tensor, kept apart from
// its formula (the TVM split between compute and schedule).
//
// A Stage starts with one loop per output axis (outermost first) followed by
// one per reduction axis. Primitives (te/primitive/*.cpp, one per file)
// rewrite that loop list: split, fuse, reorder, tile, and the loop-kind
// annotations vectorize, unroll and bind (to a workgroup axis). Lowering
// (te/lower.h) turns the final list into TIR loops and recovers each
// original axis from the split/fuse relations. Reduction loops must stay
// inside all spatial loops.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "te/tensor.h"
#include "tir/ir.h"

namespace kiln::te {

struct IterVarNode {
  std::string name;                          // for printing
  int64_t extent = 1;                        // number of iterations
  bool reduce = false;                       // a reduction loop (or derived from one)
  tir::ForKind kind = tir::ForKind::Serial;  // how the loop runs
  Expr var;                                  // the loop variable (Index type)
};
using IterVar = std::shared_ptr<IterVarNode>;

// How loops derive from each other, in the order the primitives ran.
//   Split: parent = outer * factor + inner (guarded by parent < extent when
//          factor does not divide it).
//   Fuse:  fused = outer * extent(inner) + inner.
struct Relation {
  enum class Kind { Split, Fuse } kind;
  IterVar parent;  // Split: the loop that was split
  IterVar outer;   // both: the outer half / the outer fused loop
  IterVar inner;   // both: the inner half / the inner fused loop
  IterVar fused;   // Fuse: the loop that replaced outer and inner
  int64_t factor;  // Split: extent of inner
};

struct Stage {
  Tensor tensor;                     // what this stage computes
  std::vector<IterVar> axes;         // original spatial axes
  std::vector<IterVar> reduce_axes;  // original reduction axes (Reduce tensors)
  std::vector<IterVar> leaves;       // current loops, outermost first
  std::vector<Relation> relations;   // in the order the primitives ran

  explicit Stage(const Tensor& t);

  // Primitives (te/primitive/).
  std::pair<IterVar, IterVar> split(const IterVar& iv, int64_t factor);
  IterVar fuse(const IterVar& outer, const IterVar& inner);
  void reorder(const std::vector<IterVar>& order);
  // Splits x and y and orders the loops xo, yo, xi, yi (x outer of y).
  std::vector<IterVar> tile(const IterVar& x, const IterVar& y, int64_t fx, int64_t fy);
  void vectorize(const IterVar& iv);
  void unroll(const IterVar& iv);
  void bind(const IterVar& iv, tir::ForKind workgroup_axis);

  // The position of iv among the leaves (InternalError if absent).
  size_t leaf_index(const IterVar& iv) const;
  std::string str() const;  // the loop list, for debugging
};

IterVar make_iter_var(const std::string& name, int64_t extent, bool reduce);

// The default CPU schedule: the outermost spatial loop of extent > 1 becomes
// workgroup x; everything else stays serial.
void default_cpu_schedule(Stage& s);

}  // namespace kiln::te
