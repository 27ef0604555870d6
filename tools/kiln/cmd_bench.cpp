// kiln bench MODEL.kiln [--threads N] [--iterations K] [--warmup W]
// Inputs are filled deterministically (fixed seed); the last line is
// "median_ms=X min_ms=Y mean_ms=Z iterations=K".
#include <stdio.h>
#include <string.h>

#include <algorithm>
#include <numeric>

#include "common.h"

namespace kiln_tool {

namespace {

// xorshift64*: a small deterministic generator.
struct Random {
  uint64_t state = 0x9E3779B97F4A7C15ull;
  uint64_t Next() {
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 2685821657736338717ull;
  }
  double Uniform() { return (double)(Next() >> 11) / 9007199254740992.0; }  // [0, 1)
};

// Fills a buffer of `dtype` elements: floats in [-1, 1), integers in [0, 10), bools 0/1.
void Fill(kiln_dtype_t dtype, std::vector<uint8_t>* bytes, Random* random) {
  size_t size = kiln_dtype_size(dtype);
  for (size_t i = 0; i + size <= bytes->size(); i += size) {
    uint8_t* p = bytes->data() + i;
    double u = random->Uniform();
    switch (dtype) {
      case KILN_DTYPE_FLOAT32: { float v = (float)(2 * u - 1); memcpy(p, &v, 4); break; }
      case KILN_DTYPE_FLOAT64: { double v = 2 * u - 1; memcpy(p, &v, 8); break; }
      case KILN_DTYPE_FLOAT16: {  // a multiple of 1/1024 in [-1, 1): exact in float16
        float f = (float)((int)(u * 2048) - 1024) / 1024.0f;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        uint16_t h = (uint16_t)((bits >> 16) & 0x8000);
        int exponent = (int)((bits >> 23) & 0xff) - 127 + 15;
        if (f != 0.0f && exponent > 0) h |= (uint16_t)((exponent << 10) | ((bits >> 13) & 0x3ff));
        memcpy(p, &h, 2);
        break;
      }
      case KILN_DTYPE_BOOL: *p = u < 0.5 ? 0 : 1; break;
      default: {  // integers
        int64_t v = (int64_t)(u * 10);
        memcpy(p, &v, size);  // little-endian: the low bytes
        break;
      }
    }
  }
}

}  // namespace

int CmdBench(int argc, char** argv) {
  const char* model_path = nullptr;
  uint64_t threads = 1, iterations = 10, warmup = 2;
  for (int i = 0; i < argc; ++i) {
    const char* arg = argv[i];
    const char* next = i + 1 < argc ? argv[i + 1] : nullptr;
    if (!strcmp(arg, "--threads")) {
      if (!ParseCount(next, 1024, &threads)) return UsageError("--threads needs a count");
      ++i;
    } else if (!strcmp(arg, "--iterations")) {
      if (!ParseCount(next, 1u << 30, &iterations) || iterations == 0) {
        return UsageError("--iterations needs a positive count");
      }
      ++i;
    } else if (!strcmp(arg, "--warmup")) {
      if (!ParseCount(next, 1u << 30, &warmup)) return UsageError("--warmup needs a count");
      ++i;
    } else if (arg[0] == '-' && arg[1]) {
      return UsageError("bench: unknown option '%s'", arg);
    } else if (!model_path) {
      model_path = arg;
    } else {
      return UsageError("bench: unexpected argument '%s'", arg);
    }
  }
  if (!model_path) return UsageError("bench: missing MODEL.kiln");

  kiln::Model model;
  kiln::Status status = kiln::Model::LoadFile(model_path, &model);
  if (!status.ok()) return FailStatus(status);
  kiln::Session session;
  kiln_session_options_t options = {(uint32_t)threads};
  status = kiln::Session::Create(model, &options, &session);
  if (!status.ok()) return FailStatus(status);

  Random random;
  std::vector<std::vector<uint8_t>> inputs(model.input_count());
  for (size_t i = 0; i < model.input_count(); ++i) {
    kiln_tensor_info_t info;
    model.input_info(i, &info);
    inputs[i].resize(info.byte_size);
    Fill(info.dtype, &inputs[i], &random);
    printf("input %s: %s\n", info.name, DescribeTensor(info).c_str());
  }
  // Inputs are copied in before every run (the memory plan may reuse their
  // space); only session.run() is timed.
  auto set_inputs = [&]() {
    for (size_t i = 0; i < inputs.size(); ++i) {
      kiln::Status set = session.set_input(i, inputs[i].data(), inputs[i].size());
      if (!set.ok()) return set;
    }
    return kiln::Status();
  };
  printf("threads=%llu (the runtime runs serially for now) warmup=%llu iterations=%llu\n",
         (unsigned long long)threads, (unsigned long long)warmup, (unsigned long long)iterations);
  for (uint64_t i = 0; i < warmup; ++i) {
    status = set_inputs();
    if (!status.ok()) return FailStatus(status);
    status = session.run();
    if (!status.ok()) return FailStatus(status);
  }
  std::vector<double> times;
  for (uint64_t i = 0; i < iterations; ++i) {
    status = set_inputs();
    if (!status.ok()) return FailStatus(status);
    double start = NowMs();
    status = session.run();
    double elapsed = NowMs() - start;
    if (!status.ok()) return FailStatus(status);
    times.push_back(elapsed);
  }
  double min = *std::min_element(times.begin(), times.end());
  double mean = std::accumulate(times.begin(), times.end(), 0.0) / (double)times.size();
  printf("median_ms=%.4f min_ms=%.4f mean_ms=%.4f iterations=%llu\n", Median(times), min, mean,
         (unsigned long long)iterations);
  return kExitOk;
}

}  // namespace kiln_tool
