// The pinned ONNX release is built with its own C++ namespace and protobuf
// package, onnx_kiln (tools/deps/build_onnx.sh: another ONNX in the same
// process, Python's `onnx` beside the `kiln` extension, would register a
// second onnx-ml.proto otherwise). Kilnc's code calls it `onnx`. Every
// translation unit that uses ONNX gets this header first (-include, from the
// onnx dependency in compiler/meson.build).
#pragma once

#ifdef __cplusplus
namespace onnx_kiln {}
namespace onnx = onnx_kiln;
#endif
