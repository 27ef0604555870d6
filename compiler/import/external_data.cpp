// External data read safely into the model (external_data.h).
#include "import/external_data.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <fstream>

#include "support/diagnostics.h"

namespace kiln {
namespace {

// A non-negative decimal integer, all of `text` (no sign, no spaces, no
// overflow); false otherwise.
bool parse_size(const std::string& text, int64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  int64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    if (v > (INT64_MAX - (c - '0')) / 10) return false;
    v = v * 10 + (c - '0');
  }
  *out = v;
  return true;
}

std::string real_path(const std::string& path) {
  char buf[PATH_MAX];
  return realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

// The bytes of external tensor `t` (see the header for the rules).
std::string read_one(const onnx::TensorProto& t, const std::string& model_dir, const std::string& folder) {
  const std::string what = "tensor '" + t.name() + "': external data";
  std::string location;
  int64_t offset = 0, length = -1;
  for (auto& kv : t.external_data()) {
    if (kv.key() == "location") {
      location = kv.value();
    } else if (kv.key() == "offset") {
      user_assert(parse_size(kv.value(), &offset)) << what << " offset '" << kv.value() << "' is not a non-negative integer";
    } else if (kv.key() == "length") {
      user_assert(parse_size(kv.value(), &length)) << what << " length '" << kv.value() << "' is not a non-negative integer";
    }
  }
  bool dotdot = location == ".." || location.rfind("../", 0) == 0 || location.find("/../") != std::string::npos ||
                (location.size() >= 3 && location.compare(location.size() - 3, 3, "/..") == 0);
  user_assert(!location.empty() && location[0] != '/' && !dotdot && location.find('\0') == std::string::npos)
      << what << " location '" << location << "' must be a relative path inside the model's folder";
  std::string path = real_path(model_dir + "/" + location);
  user_assert(!path.empty()) << what << " file '" << location << "' does not exist in the model's folder " << folder;
  user_assert(path.size() > folder.size() && path.compare(0, folder.size(), folder) == 0 && path[folder.size()] == '/')
      << what << " location '" << location << "' resolves to " << path << ", outside the model's folder " << folder
      << " (symbolic links may not leave it)";
  struct stat st;
  user_assert(stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) << what << " '" << location << "' is not a regular file";
  const int64_t size = (int64_t)st.st_size;
  if (length < 0) length = offset <= size ? size - offset : -1;
  user_assert(offset <= size && length >= 0 && length <= size - offset)
      << what << " range [" << offset << ", +" << length << ") is outside '" << location << "' (" << size << " bytes)";
  std::ifstream f(path, std::ios::binary);
  user_assert(f.good()) << what << ": cannot open '" << location << "'";
  std::string data((size_t)length, '\0');
  f.seekg(offset);
  f.read(data.data(), length);
  user_assert(f.gcount() == length) << what << ": '" << location << "' ended early";
  return data;
}

class Reader {
 public:
  explicit Reader(const std::string& model_dir) : model_dir_(model_dir), folder_(real_path(model_dir)) {}
  int count = 0;  // tensors read

  void tensor(onnx::TensorProto& t) {
    if (t.data_location() != onnx::TensorProto::EXTERNAL) return;
    user_assert(!folder_.empty()) << "tensor '" << t.name() << "' has external data, but the model's folder '"
                                  << model_dir_ << "' cannot be resolved";
    std::string bytes = read_one(t, model_dir_, folder_);
    t.clear_external_data();
    t.set_data_location(onnx::TensorProto::DEFAULT);
    t.set_raw_data(std::move(bytes));
    count++;
  }
  void graph(onnx::GraphProto& g) {
    for (auto& t : *g.mutable_initializer()) tensor(t);
    for (auto& n : *g.mutable_node())
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_t()) tensor(*a.mutable_t());
        for (auto& t : *a.mutable_tensors()) tensor(t);
        if (a.has_g()) graph(*a.mutable_g());
        for (auto& sub : *a.mutable_graphs()) graph(sub);
      }
  }

 private:
  std::string model_dir_;  // as given (for messages and joining)
  std::string folder_;     // its real path
};

}  // namespace

int read_external_data(onnx::ModelProto& model, const std::string& model_dir) {
  Reader r(model_dir);
  r.graph(*model.mutable_graph());
  return r.count;
}

}  // namespace kiln
