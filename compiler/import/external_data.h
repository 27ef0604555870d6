// External data (tensors stored in files beside the model, ONNX's
// data_location = EXTERNAL), read into the model before anything else looks
// at it. ONNX's checker and shape inference would resolve a location
// relative to the current directory and follow any path; here a location
// must be a relative path inside the model's folder: no "..", no absolute
// path, and its real path (symlinks resolved) must be a regular file under
// the folder's real path. Offsets and lengths are parsed strictly and
// checked without overflow. (CVE-2024-27318 was this bug in ONNX.)
#pragma once

#include <onnx/onnx_pb.h>

#include <string>

namespace kiln {

// Every EXTERNAL tensor of `model` (initializers, tensor attributes, in
// subgraphs too) gets its bytes as raw_data read from `model_dir`; returns
// how many. Throws UserError naming the tensor for any location or range
// that breaks the rules above.
int read_external_data(onnx::ModelProto& model, const std::string& model_dir);

}  // namespace kiln
