// Lowering a scheduled stage to TIR.
//
// Builds the stage's loops from its schedule, recovers each original axis
// from the split/fuse relations (guarding non-dividing splits), and writes
// the tensor's values into `out`. Every read in the formulas is resolved:
//  - a tensor that `buffer_of` maps to a buffer (placeholders, materialized
//    tensors) becomes a Load at the flat index;
//  - any other compute is inlined (compute_inline);
//  - any other reduction is computed where it is read, into a local
//    accumulator (compute_at the innermost loop), once per distinct index.
#pragma once

#include <functional>

#include "te/schedule.h"
#include "tir/ir.h"

namespace kiln::te {

using BufferOf = std::function<tir::Buffer(const TensorNode*)>;

// `store_offset` (in elements) is added to every store into `out`: a scan
// step writes its slice of a [steps, ...] state buffer.
// `epilogue` (reductions only) maps the accumulated value at an output index
// to the value stored: how an elementwise consumer fused into a reduction
// (bias, activation, residual add) runs at write-back, inside the
// reduction's own schedule.
// `host`: for a CPU that runs a GPU-scheduled kernel (a heterogeneous
// bundle's fallback), whose local loops run one after another: no
// workgroup shared memory (the stage's shared caches stay global reads, a
// reduction loop bound to invocations is an ordinary loop).
using Epilogue = std::function<tir::Expr(const tir::Expr& acc, const Indices& axes)>;
tir::Stmt lower_stage(const Stage& stage, const tir::Buffer& out, const BufferOf& buffer_of,
                      const tir::Expr& store_offset = tir::Expr(0), const Epilogue& epilogue = nullptr,
                      bool host = false);

// If `t`'s formula (with computes inlined) reads exactly one reduction, of
// t's shape, only at t's own index, returns that reduction and the epilogue
// that turns its value into t's; else returns an undefined tensor.
Tensor find_epilogue_anchor(const Tensor& t, Epilogue* out_epilogue);

// The vector lanes reduction `r` accumulates in where inlined into a stage
// with Stage::inline_reduction_lanes: 16 or 8, or 0 (a serial loop). It
// must be a float32 sum, max or min whose innermost reduction axis has a
// constant extent the lanes divide (or of 64 or more, or sized per run: 16
// lanes and a serial tail of the last extent % 16 elements; a serial sum of a
// long row sized per run lost accuracy), is the last index (and no other) of
// every read that moves with it once computes are inlined, and whose
// formula reads no reduction.
int reduction_lanes(const TensorNode* r);
// Whether `t` is a compute that reads reductions (computes inlined) and
// every one has lanes: the CPU schedule then gives the lanes to each row's
// reduction rather than vectorizing across rows.
bool inline_reductions_vectorize(const Tensor& t);

}  // namespace kiln::te
