// The whole compilation, ONNX file to bundle bytes, as one list of steps.
#pragma once

#include <iosfwd>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "codegen/target.h"
#include "import/onnx_import.h"

namespace kiln {

struct CompileOptions {
  ImportOptions import;              // input shape overrides
  TargetSpec target;                 // where the kernels run
  std::set<std::string> dump_after;  // pass names (see pipeline.cpp); "all" for every pass
  bool dump_graph = false;           // print the graph after import and after lowering
  bool report = false;               // print per-step statistics
  std::ostream* dump_stream = nullptr;  // where dumps and the report go (stderr if null)
};

// Names of the passes --dump-after accepts, in order.
const std::vector<std::string>& pipeline_pass_names();

// Compiles the ONNX model at `path`; throws UserError / InternalError.
std::string compile_onnx_file(const std::string& path, const CompileOptions& options);

}  // namespace kiln
