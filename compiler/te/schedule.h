// Schedules: the loop structure of a materialized tensor, kept apart from
// its formula (the TVM split between compute and schedule).
//
// A Stage starts with one loop per output axis (outermost first) followed by
// one per reduction axis. Primitives (te/primitive/*.cpp, one per file)
// rewrite that loop list: split, fuse, reorder, tile, and the loop-kind
// annotations vectorize, unroll and bind (to a workgroup axis). Lowering
// (te/lower.h) turns the final list into TIR loops and recovers each
// original axis from the split/fuse relations. Spatial loops placed inside
// the first reduction loop form a tile of accumulators (TVM's cache_write to
// local scope): the register-tiling pattern of GEMM and convolution.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "te/tensor.h"
#include "tir/ir.h"

namespace kiln::te {

// a * b for loop extents, saturating at INT64_MAX: the extents of loops over
// a dimension sized per run are bounds of up to 2^62, whose products overflow.
inline int64_t extent_product(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

struct IterVarNode {
  std::string name;                          // for printing
  int64_t extent = 1;                        // number of iterations (the largest, for a run-time extent)
  Expr dynamic;                              // a run-time number of iterations (over shape symbols); undefined when static
  bool reduce = false;                       // a reduction loop (or derived from one)
  tir::ForKind kind = tir::ForKind::Serial;  // how the loop runs
  Expr var;                                  // the loop variable (Index type)

  // The number of iterations as an expression (a constant when static).
  Expr extent_expr() const { return dynamic.defined() ? dynamic : Expr(extent); }
  bool is_dynamic() const { return dynamic.defined(); }
};
using IterVar = std::shared_ptr<IterVarNode>;

// How loops derive from each other, in the order the primitives ran.
//   Split: parent = outer * factor + inner (guarded by parent < extent when
//          factor does not divide it, or the extent is a run-time one).
//   Fuse:  fused = outer * extent(inner) + inner.
// Schedules decide with `extent`, the largest number of iterations; loops
// over run-time extents iterate extent_expr() times, guarded where split.
struct Relation {
  enum class Kind { Split, Fuse } kind;
  IterVar parent;  // Split: the loop that was split
  IterVar outer;   // both: the outer half / the outer fused loop
  IterVar inner;   // both: the inner half / the inner fused loop
  IterVar fused;   // Fuse: the loop that replaced outer and inner
  int64_t factor;  // Split: extent of inner
};

struct Stage;

// What a tensor intrinsic sees when it replaces a loop nest (tensorize).
struct TensorizeContext {
  const Stage* stage;                 // the stage being lowered
  std::vector<Expr> axis_base;        // each original axis at the tile's origin (replaced loops at 0)
  std::vector<int64_t> tile_extents;  // extents of the replaced loops, outermost first
  std::vector<Expr> tile_vars;        // their loop variables (free in axis_value)
  std::vector<Expr> axis_value;       // each original axis as a function of tile_vars
  tir::Buffer out;                    // where the stage's values go
  Expr store_offset;                  // added to every store into `out`
  std::function<tir::Buffer(const TensorNode*)> buffer_of;  // buffers of materialized inputs
  // Stores `value` as the stage's element at `axes` (any original-axis
  // values), through the kernel's fused epilogue when it has one.
  std::function<tir::Stmt(const Expr& value, const std::vector<Expr>& axes)> write;
};

// A hand-written micro-kernel expressed in loop IR: given the tile, emits
// the statement that computes it (it must compute exactly what the replaced
// loops would). The hook through which schedules plug in register-tiled
// GEMM or dot-product kernels.
struct TensorIntrin {
  std::string name;                                            // for printing
  std::function<tir::Stmt(const TensorizeContext&)> emit;      // builds the replacement
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
  // Runs iv's iterations in parallel: binds it to the next free workgroup axis.
  void parallel(const IterVar& iv);
  // Replaces the loops from iv inward (and the body) with `intrin`.
  void tensorize(const IterVar& iv, const TensorIntrin& intrin);
  // Software prefetch (a reduction's input streamed from memory): while
  // iteration i of `loop` runs, prefetch what iteration i + offset of it
  // will read of `input`. Issued in the innermost reduction loop, once per
  // vector read (its first lane: one cache line for AVX-512 weights; with
  // narrower vectors several prefetches touch a line), and only in the
  // first iteration of the spatial loops between `loop` and that point (the
  // data stays in cache for the others).
  void prefetch(const Tensor& input, const IterVar& loop, int64_t offset);
  // GPU shared-memory tile (TVM's cache_read(.., "shared") + compute_at):
  // in each iteration of reduction loop `loop` (inside the loop bound to
  // local x), the invocations of a workgroup copy together the region of
  // `input` that the iteration reads, over all invocations and inner loops,
  // into a shared buffer, wait at a barrier, compute from it, and wait again
  // before the next copy. The region comes from the reads' index
  // expressions, evaluated over the inner loops (its size must be constant,
  // at most 4096 elements); where that fails the reads stay global.
  void cache_shared(const Tensor& input, const IterVar& loop);

  IterVar tensorized;                // the outermost replaced loop, if any
  TensorIntrin intrin;               // its replacement
  struct PrefetchSpec {
    Tensor input;                    // the tensor read ahead
    IterVar loop;                    // the loop whose later iteration it serves
    int64_t offset;                  // how many iterations ahead
  };
  std::vector<PrefetchSpec> prefetches;  // in the order scheduled
  struct SharedCache {
    Tensor input;                    // the tensor tiled in shared memory
    IterVar loop;                    // the reduction loop each tile serves
  };
  std::vector<SharedCache> shared_caches;  // in the order scheduled
  // Reductions inlined into this (compute) stage accumulate in vector lanes
  // where each qualifies (te::reduction_lanes: a float sum, max or min whose
  // innermost axis walks contiguous memory, of a constant extent the lanes
  // divide): a vectorized loop over lane partials, then a combine of the
  // lanes (TVM's rfactor); the others stay serial loops. CPU schedules set
  // it when no loop of the stage itself is vectorized (default_cpu_schedule).
  bool inline_reduction_lanes = false;

  // The position of iv among the leaves (InternalError if absent).
  size_t leaf_index(const IterVar& iv) const;
};

IterVar make_iter_var(const std::string& name, int64_t extent, bool reduce);
// A loop of `extent` iterations: a constant, or an expression over shape
// symbols (then `extent` of the result is its largest value).
IterVar make_iter_var(const std::string& name, const Expr& extent, bool reduce);

// The default CPU schedule: elementwise kernels are vectorized along their
// innermost axis; otherwise the outermost spatial loop of extent > 1 becomes
// workgroup x, a contiguous float sum is vectorized, and so are contiguous
// reductions inlined into a compute (per-row statistics: softmax, norms).
void default_cpu_schedule(Stage& s);

// The float32 lanes a loop of `extent` iterations splits into: 16 or 8
// where they divide it, else 0.
int64_t lanes_for(int64_t extent);

}  // namespace kiln::te
