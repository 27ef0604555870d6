// The frontend list: one row per model format. A new format (TFLite, issue
// 35) is its frontend's folder and one row here, before ONNX, whose
// recognizer is the loosest.
#include "driver/frontends.h"

#include "import/onnx_import.h"

namespace kiln {

const std::vector<const Frontend*>& frontends() {
  static const std::vector<const Frontend*> list = {&kOnnxFrontend};
  return list;
}

const Frontend& frontend_for(const std::string& bytes) {
  for (const Frontend* f : frontends())
    if (f->recognizes(bytes)) return *f;
  return kOnnxFrontend;
}

}  // namespace kiln
