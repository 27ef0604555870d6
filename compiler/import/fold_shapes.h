// Compile-time evaluation of shape computations, on the ONNX model itself.
//
// Exported models often compute shapes at run time: Shape -> Gather ->
// Concat -> Reshape, or Shape -> Size -> Range -> ConstantOfShape. ONNX's
// shape inference propagates only some of these, so values downstream get no
// static shape and kilnc (which compiles static shapes) could not continue.
// This step evaluates every node of a small set of integer/shape operators
// whose inputs are known (constants, or shapes of tensors whose shape is
// known), replaces it with an initializer holding its result, re-runs shape
// inference, and repeats until nothing changes; an If whose condition became
// a constant is replaced by its branch on the way (inline_if.h). What remains for the graph
// optimizer's constant folder (issue 4) is computation on real data.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace kiln {

// Returns the number of nodes folded. Where ONNX's shape inference fails,
// that is a warning, the values it could type keep their types and
// *inference_failed is set: the import then infers every shape itself
// (infer_dims.h). `run_time_ifs`: the guards of a run-time If's inlined
// branches, which the nodes of an If inlined inside one inherit
// (import/inline_if.h).
struct RunTimeIfs;
int fold_shape_computations(onnx::ModelProto& model, RunTimeIfs* run_time_ifs = nullptr,
                            bool* inference_failed = nullptr);

// The elements of an integer (or bool) constant tensor, raw or typed
// fields, up to 2^22 of them; nothing for floats or anything unreadable.
std::optional<std::vector<int64_t>> constant_ints(const onnx::TensorProto& t);

// The static shapes `g` states: its inputs', outputs' and value_info's with
// every dimension known, and its initializers'.
std::map<std::string, std::vector<int64_t>> static_shapes(const onnx::GraphProto& g);

}  // namespace kiln
