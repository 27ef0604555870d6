// Classifies an image with a Kiln bundle through the C++ layer (kiln.hpp:
// RAII handles, kiln::Status) and prints the top class:
//
//   classify_cpp MODEL.kiln IMAGE.npy LABELS.txt
//   -> top: triangle (class 2, p=0.993)
//
// The image is a float32 .npy of the model's input shape; LABELS.txt has one
// class name per line.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "kiln/kiln.hpp"

namespace {

// The data of a little-endian float32 C-order .npy file (format 1.0-3.0), or
// an empty vector.
std::vector<char> ReadNpy(const char* path) {
  std::ifstream file(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  if (bytes.size() < 10 || std::string(bytes.data(), 6) != "\x93NUMPY") return {};
  auto byte = [&](size_t i) { return size_t(static_cast<unsigned char>(bytes[i])); };
  bool wide = bytes[6] >= 2;  // version 2+: a u32 header length
  size_t header = byte(8) | byte(9) << 8 | (wide ? byte(10) << 16 | byte(11) << 24 : 0);
  size_t start = (wide ? 12 : 10) + header;
  if (start > bytes.size()) return {};
  std::string dict(bytes.data() + (wide ? 12 : 10), header);
  if (dict.find("'descr': '<f4'") == std::string::npos ||
      dict.find("'fortran_order': False") == std::string::npos) {
    return {};
  }
  return std::vector<char>(bytes.begin() + start, bytes.end());
}

std::string Label(const char* path, size_t index) {
  std::ifstream file(path);
  std::string line;
  for (size_t i = 0; std::getline(file, line); ++i) {
    if (i == index) return line.substr(0, line.find_last_not_of("\r") + 1);
  }
  return "?";
}

int Fail(const kiln::Status& status, const char* what) {
  std::fprintf(stderr, "classify_cpp: %s: %s: %s\n", what, kiln_status_code_name(status.code()),
               status.message());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: classify_cpp MODEL.kiln IMAGE.npy LABELS.txt\n");
    return 2;
  }
  std::vector<char> image = ReadNpy(argv[2]);
  if (image.empty()) {
    std::fprintf(stderr, "classify_cpp: cannot read %s (a float32 .npy in C order)\n", argv[2]);
    return 1;
  }
  kiln::Model model;
  kiln::Status status = kiln::Model::LoadFile(argv[1], &model);
  if (!status.ok()) return Fail(status, "loading the model");
  kiln::Session session;
  if (!(status = kiln::Session::Create(model, nullptr, &session)).ok()) return Fail(status, "creating a session");
  if (!(status = session.set_input(0, image.data(), image.size())).ok()) return Fail(status, "setting the input");
  if (!(status = session.run()).ok()) return Fail(status, "running");

  kiln_tensor_info_t info;
  if (!(status = model.get_output_info(0, &info)).ok()) return Fail(status, "output 0");
  if (info.dtype != KILN_DTYPE_FLOAT32) {
    std::fprintf(stderr, "classify_cpp: output 0 is not float32 scores\n");
    return 1;
  }
  std::vector<float> scores(info.byte_size / sizeof(float));
  if (!(status = session.get_output(0, scores.data(), info.byte_size)).ok()) return Fail(status, "reading output 0");

  // Softmax over the scores: the top class and its probability.
  size_t best = std::max_element(scores.begin(), scores.end()) - scores.begin();
  double sum = 0;
  for (float s : scores) sum += std::exp(double(s) - scores[best]);
  std::printf("top: %s (class %zu, p=%.3f)\n", Label(argv[3], best).c_str(), best, 1.0 / sum);
  return 0;
}
