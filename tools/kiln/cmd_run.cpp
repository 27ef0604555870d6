// kiln run MODEL.kiln --input NAME=FILE.npy ... [--output-dir DIR] [--top K]
//                     [--iterations N] [--threads N] [--device auto|cpu|vulkan]
//                     [--vulkan-device N] [--validation[=sync]]
// Runs the model on .npy inputs, writes the outputs as .npy files and
// prints the median latency (and, with --top, the best classes).
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <algorithm>
#include <numeric>

#include "common.h"
#include "npy.h"

namespace kiln_tool {

namespace {

// A float8 (but e8m0) or float4e2m1 code's value (kiln.h describes the formats).
double NarrowFloatAsDouble(kiln_dtype_t dtype, uint8_t b) {
  int e_bits = 4, m_bits = 3, bias = 7;
  if (dtype == KILN_DTYPE_FLOAT8E4M3FNUZ) bias = 8;
  if (dtype == KILN_DTYPE_FLOAT8E5M2 || dtype == KILN_DTYPE_FLOAT8E5M2FNUZ)
    e_bits = 5, m_bits = 2, bias = dtype == KILN_DTYPE_FLOAT8E5M2 ? 15 : 16;
  if (dtype == KILN_DTYPE_FLOAT4E2M1) e_bits = 2, m_bits = 1, bias = 1, b &= 15;
  const bool fnuz = dtype == KILN_DTYPE_FLOAT8E4M3FNUZ || dtype == KILN_DTYPE_FLOAT8E5M2FNUZ;
  if ((fnuz && b == 0x80) || (dtype == KILN_DTYPE_FLOAT8E4M3FN && (b & 0x7F) == 0x7F)) return NAN;
  const int sign = b >> (e_bits + m_bits), e = (b >> m_bits) & ((1 << e_bits) - 1), m = b & ((1 << m_bits) - 1);
  double v = e == 0 ? ldexp(m, 1 - bias - m_bits) : ldexp((1 << m_bits) + m, e - bias - m_bits);
  if (dtype == KILN_DTYPE_FLOAT8E5M2 && e == 31) v = m ? NAN : INFINITY;
  return sign ? -v : v;
}

// Reads element `i` of a tensor as a double (for --top).
double ElementAsDouble(kiln_dtype_t dtype, const uint8_t* data, size_t i) {
  switch (dtype) {
    case KILN_DTYPE_FLOAT32: { float v; memcpy(&v, data + 4 * i, 4); return v; }
    case KILN_DTYPE_FLOAT64: { double v; memcpy(&v, data + 8 * i, 8); return v; }
    case KILN_DTYPE_FLOAT16: {
      uint16_t h;
      memcpy(&h, data + 2 * i, 2);
      int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
      double value = exponent == 0 ? ldexp(mantissa, -24)
                     : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                      : ldexp(mantissa + 1024, exponent - 25);
      return (h & 0x8000) ? -value : value;
    }
    case KILN_DTYPE_BFLOAT16: {
      uint16_t b;
      memcpy(&b, data + 2 * i, 2);
      uint32_t bits = (uint32_t)b << 16;
      float v;
      memcpy(&v, &bits, 4);
      return v;
    }
    case KILN_DTYPE_INT8: return (int8_t)data[i];
    case KILN_DTYPE_UINT8: case KILN_DTYPE_BOOL: return data[i];
    case KILN_DTYPE_INT16: { int16_t v; memcpy(&v, data + 2 * i, 2); return v; }
    case KILN_DTYPE_INT32: { int32_t v; memcpy(&v, data + 4 * i, 4); return v; }
    case KILN_DTYPE_INT64: { int64_t v; memcpy(&v, data + 8 * i, 8); return (double)v; }
    case KILN_DTYPE_UINT16: { uint16_t v; memcpy(&v, data + 2 * i, 2); return v; }
    case KILN_DTYPE_UINT32: { uint32_t v; memcpy(&v, data + 4 * i, 4); return v; }
    case KILN_DTYPE_UINT64: { uint64_t v; memcpy(&v, data + 8 * i, 8); return (double)v; }
    case KILN_DTYPE_STRING: return 0.0;  // no scores (CmdRun refuses --top on strings)
    case KILN_DTYPE_UINT4: return data[i] & 15;
    case KILN_DTYPE_INT4: return (int)((data[i] + 8) & 15) - 8;
    case KILN_DTYPE_UINT2: return data[i] & 3;
    case KILN_DTYPE_INT2: return (int)((data[i] + 2) & 3) - 2;
    case KILN_DTYPE_FLOAT8E8M0: return data[i] == 0xFF ? NAN : ldexp(1.0, (int)data[i] - 127);
    case KILN_DTYPE_FLOAT8E4M3FN: case KILN_DTYPE_FLOAT8E4M3FNUZ: case KILN_DTYPE_FLOAT8E5M2:
    case KILN_DTYPE_FLOAT8E5M2FNUZ: case KILN_DTYPE_FLOAT4E2M1:
      return NarrowFloatAsDouble(dtype, data[i]);
  }
  return 0.0;
}

// Prints the top-k entries of the last axis of each row of an output.
void PrintTop(const kiln_tensor_info_t& info, const uint8_t* data, uint64_t k) {
  // The last dimension is untrusted (an empty tensor may declare any): use
  // it only when the tensor holds at least one row of it.
  size_t elements = info.byte_size / kiln_dtype_size(info.dtype);
  int64_t last = info.rank ? info.shape[info.rank - 1] : 1;
  if (last <= 0 || (uint64_t)last > elements) return;
  size_t classes = (size_t)last;
  size_t rows = elements / classes;
  size_t top = std::min<size_t>((size_t)k, classes);
  std::vector<size_t> order(classes);
  for (size_t row = 0; row < rows; ++row) {
    std::iota(order.begin(), order.end(), 0);
    auto score = [&](size_t c) { return ElementAsDouble(info.dtype, data, row * classes + c); };
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return score(a) > score(b); });
    for (size_t i = 0; i < top; ++i) {
      if (rows > 1) printf("row %zu: ", row);
      printf("top-%zu: class %zu (score %.4g)\n", i + 1, order[i], score(order[i]));
    }
  }
}

std::string SanitizeName(const char* name) {
  std::string out = name;
  std::replace(out.begin(), out.end(), '/', '_');
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

bool MakeDirectories(const std::string& path) {
  std::string partial;
  for (size_t i = 0; i <= path.size(); ++i) {
    if (i == path.size() || path[i] == '/') {
      if (!partial.empty() && mkdir(partial.c_str(), 0777) != 0 && errno != EEXIST) return false;
    }
    if (i < path.size()) partial += path[i];
  }
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

// What an input or output is to the sequences and optionals (docs/sequences.md).
struct Role {
  std::string composite;        // the sequence or optional it belongs to ("": a plain tensor)
  bool presence = false;        // an optional's bool scalar
  bool in_sequence = false;     // an element of a sequence (DIR/<composite>/<position>.npy)
  size_t position = 0;          // its position in the sequence
  int64_t presence_index = -1;  // an optional's value: the index of the optional's bool
};

std::vector<Role> Roles(const kiln::Model& model, bool outputs) {
  std::vector<Role> roles(outputs ? model.output_count() : model.input_count());
  for (size_t c = 0; c < model.composite_count(); ++c) {
    kiln_composite_info_t info;
    if (!model.get_composite_info(c, &info).ok() || (info.is_output != 0) != outputs) continue;
    const bool optional = info.kind == KILN_COMPOSITE_OPTIONAL;
    for (size_t e = 0; e < info.element_count; ++e) {
      if (info.elements[e] >= roles.size()) continue;
      Role& r = roles[info.elements[e]];
      r.composite = info.name;
      r.in_sequence = !optional || info.holds_sequence;
      r.position = e;
      r.presence_index = optional ? info.presence : -1;
    }
    if (optional && (size_t)info.presence < roles.size()) {
      roles[(size_t)info.presence].composite = info.name;
      roles[(size_t)info.presence].presence = true;
    }
  }
  return roles;
}

}  // namespace

const CommandHelp kRunHelp = {
    "run", "MODEL.kiln --input NAME=FILE.npy ... [options]",
    "Runs the model on inputs from .npy files (every input needs one) and writes each\n"
    "output to DIR/<output name>.npy ('/' in a name becomes '_'); prints latency_ms=X\n"
    "(the median run). A sequence input takes --input NAME=DIR, DIR holding 0.npy ..\n"
    "N-1.npy; a sequence output is written to DIR/<name>/0.npy ... An optional input\n"
    "takes its value's FILE.npy or DIR, or 'none'; an optional output holding none is\n"
    "not written (docs/sequences.md).\n"};

int CmdRun(int argc, char** argv) {
  std::string output_dir;
  uint64_t top = 0;
  CommandArgs args;  // iterations: 1
  using kiln_cli::Arity;
  const kiln_cli::OptionTable own = {
      {kOptOutputDir, "--output-dir", Arity::kValue, "DIR", "write the outputs to DIR (created if missing)"},
      {kOptTop, "--top", Arity::kValue, "K", "print the K highest-scoring classes of the first output"},
  };
  auto handle = [&](const kiln_cli::Option& option, const char* value) -> int {
    if (option.id == kOptOutputDir) {
      if (!*value) return UsageError("--output-dir needs a directory");
      output_dir = value;
    } else if (!ParseCount(value, 1u << 30, &top)) {
      return UsageError("--top needs a count");
    }
    return kContinue;
  };
  int parsed = ParseCommandArgs(kRunHelp, own, "how many runs; latency_ms is their median (default 1)", argc,
                                argv, handle, &args);
  if (parsed != kContinue) return parsed;

  kiln::Model model;
  int result = OpenModel(args, &model);
  if (result != kExitOk) return result;
  kiln_tensor_info_t first;
  if (top > 0 && model.get_output_info(0, &first).ok() && first.dtype == KILN_DTYPE_STRING) {
    return Fail("--top needs scores, but the first output ('%s') holds strings", first.name);
  }
  // Every model input needs an --input of matching dtype and shape.
  std::vector<NpyArray> arrays;
  std::vector<bool> given;
  result = ReadInputs(model, args, &arrays, &given);
  if (result != kExitOk) return result;
  size_t input_count = model.input_count();
  const std::vector<Role> input_roles = Roles(model, false);
  for (size_t i = 0; i < input_count; ++i) {
    if (!given[i]) {
      kiln_tensor_info_t info;
      model.get_input_info(i, &info);
      const Role& role = input_roles[i];
      if (!role.composite.empty()) {
        return Fail("missing --input %s=%s (%s)", role.composite.c_str(),
                    role.presence_index >= 0 || role.presence ? (role.in_sequence ? "DIR|none" : "FILE.npy|none")
                                                              : "DIR",
                    role.in_sequence ? "a sequence of .npy files 0.npy, 1.npy, .." : "an optional");
      }
      return Fail("missing --input %s=FILE.npy (%s)", info.name, DescribeTensor(info).c_str());
    }
  }

  kiln::Session session;
  kiln_session_options_t options;
  result = OpenSession(args, model, &options, &session);
  if (result != kExitOk) return result;
  kiln::Status status;
  std::vector<double> times;
  for (uint64_t it = 0; it < args.iterations; ++it) {
    // Inputs are copied in every time: the memory plan may reuse their space.
    status = SetInputs(&session, arrays);
    if (!status.ok()) return FailStatus(status);
    double start = NowMs();
    status = session.run();
    if (!status.ok()) return FailStatus(status);
    times.push_back(NowMs() - start);
  }

  if (!output_dir.empty() && !MakeDirectories(output_dir)) {
    return Fail("cannot create output directory '%s': %s", output_dir.c_str(), strerror(errno));
  }
  const std::vector<Role> output_roles = Roles(model, true);
  for (size_t i = 0; i < model.output_count(); ++i) {
    const Role& role = output_roles[i];
    if (role.presence) continue;  // said by its value's line
    if (role.presence_index >= 0) {  // an optional's value: nothing when it holds none
      const void* flag = nullptr;
      status = session.get_output_view((size_t)role.presence_index, &flag);
      if (!status.ok()) return FailStatus(status);
      if (!*(const uint8_t*)flag) {
        if (role.position == 0) printf("output %s: none\n", role.composite.c_str());
        continue;
      }
    }
    kiln_tensor_info_t info;
    status = session.get_output_info(i, &info);  // this run's shape (run-time dimensions)
    if (!status.ok()) return FailStatus(status);
    info.dynamic = 0;
    const void* data = nullptr;
    status = session.get_output_view(i, &data);
    if (!status.ok()) return FailStatus(status);
    if (!output_dir.empty()) {
      std::string path = output_dir + "/" + SanitizeName(info.name) + ".npy";
      if (role.in_sequence) {  // DIR/<sequence>/<position>.npy
        std::string folder = output_dir + "/" + SanitizeName(role.composite.c_str());
        if (!MakeDirectories(folder)) return Fail("cannot create directory '%s': %s", folder.c_str(), strerror(errno));
        path = folder + "/" + std::to_string(role.position) + ".npy";
      } else if (!role.composite.empty()) {  // an optional's tensor: DIR/<optional>.npy
        path = output_dir + "/" + SanitizeName(role.composite.c_str()) + ".npy";
      }
      std::string error;
      if (!WriteNpy(path, info.dtype, info.shape, info.rank, data, info.byte_size, &error)) {
        return Fail("%s", error.c_str());
      }
      printf("output %s: %s -> %s\n", info.name, DescribeTensor(info).c_str(), path.c_str());
    } else {
      printf("output %s: %s\n", info.name, DescribeTensor(info).c_str());
    }
    if (i == 0 && top > 0) PrintTop(info, (const uint8_t*)data, top);
  }
  // Empty sequences (an optional's only when it holds one): empty folders.
  for (size_t c = 0; !output_dir.empty() && c < model.composite_count(); ++c) {
    kiln_composite_info_t info;
    if (!model.get_composite_info(c, &info).ok() || !info.is_output || info.element_count) continue;
    const bool optional = info.kind == KILN_COMPOSITE_OPTIONAL;
    if (optional) {  // (an optional tensor with no elements never holds one)
      const void* flag = nullptr;
      status = session.get_output_view((size_t)info.presence, &flag);
      if (!status.ok()) return FailStatus(status);
      if (!*(const uint8_t*)flag || !info.holds_sequence) {
        printf("output %s: none\n", info.name);
        continue;
      }
    }
    std::string folder = output_dir + "/" + SanitizeName(info.name);
    if (!MakeDirectories(folder)) return Fail("cannot create directory '%s': %s", folder.c_str(), strerror(errno));
    printf("output %s: an empty sequence -> %s\n", info.name, folder.c_str());
  }
  printf("latency_ms=%.4f\n", Median(times));
  return CheckValidationMessages();
}

}  // namespace kiln_tool
