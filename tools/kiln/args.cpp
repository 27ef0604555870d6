// The command line `kiln run` and `kiln bench` share, parsed once: MODEL.kiln,
// --threads N, --iterations N, --input NAME=FILE.npy and the device options
// (device.cpp); then opening the model and the session they describe and
// reading the --input files.
#include <string.h>

#include <algorithm>

#include "common.h"

namespace kiln_tool {

// The value after option argv[*i] (moving *i to it), or nullptr at the end.
static const char* OptionValue(int argc, char** argv, int* i) {
  return *i + 1 < argc ? argv[++*i] : nullptr;
}

// 1 when argv[*i] is one of the shared options (taken), 0 when not,
// kExitUsage after a usage error.
static int ParseSharedOption(int argc, char** argv, int* i, CommandArgs* out) {
  int parsed = ParseDeviceOption(argc, argv, i, &out->device);
  if (parsed) return parsed;
  const char* arg = argv[*i];
  if (!strcmp(arg, "--threads")) {
    if (!ParseCount(OptionValue(argc, argv, i), KILN_SESSION_MAX_THREADS, &out->threads)) {
      return UsageError("--threads needs a count (at most %u)", KILN_SESSION_MAX_THREADS);
    }
  } else if (!strcmp(arg, "--iterations")) {
    if (!ParseCount(OptionValue(argc, argv, i), 1u << 30, &out->iterations) || out->iterations == 0) {
      return UsageError("--iterations needs a positive count");
    }
  } else if (!strcmp(arg, "--input")) {
    const char* value = OptionValue(argc, argv, i);
    const char* eq = value ? strchr(value, '=') : nullptr;
    if (!eq || eq == value) return UsageError("--input needs NAME=FILE.npy");
    out->inputs.emplace_back(std::string(value, eq), std::string(eq + 1));
  } else {
    return 0;
  }
  return 1;
}

int ParseCommandArgs(const char* command, int argc, char** argv, const CommandOption& own,
                     CommandArgs* out) {
  for (int i = 0; i < argc; ++i) {
    int parsed = ParseSharedOption(argc, argv, &i, out);
    if (!parsed) parsed = own(argc, argv, &i);
    if (parsed == 1) continue;
    if (parsed) return parsed;
    const char* arg = argv[i];
    if (arg[0] == '-' && arg[1]) return UsageError("%s: unknown option '%s'", command, arg);
    if (out->model_path) return UsageError("%s: unexpected argument '%s'", command, arg);
    out->model_path = arg;
  }
  if (!out->model_path) return UsageError("%s: missing MODEL.kiln", command);
  return kExitOk;
}

int OpenModel(const CommandArgs& args, kiln::Model* model) {
  kiln::Status status = kiln::Model::LoadFile(args.model_path, model);
  return status.ok() ? kExitOk : FailStatus(status);
}

int OpenSession(const CommandArgs& args, const kiln::Model& model,
                kiln_session_options_t* out_options, kiln::Session* session) {
  kiln_session_options_init(out_options);
  out_options->thread_count = (uint32_t)args.threads;
  args.device.Apply(out_options);
  kiln::Status status = kiln::Session::Create(model, out_options, session);
  if (!status.ok()) return FailStatus(status);
  PrintDevice(*session);
  return kExitOk;
}

int ReadInputs(const kiln::Model& model, const CommandArgs& args, std::vector<NpyArray>* arrays,
               std::vector<bool>* given) {
  size_t input_count = model.input_count();
  arrays->assign(input_count, NpyArray());
  given->assign(input_count, false);
  for (const auto& input : args.inputs) {
    size_t index = 0;
    kiln_tensor_info_t info;
    if (!model.find_input(input.first.c_str(), &index).ok()) {
      std::string names;
      for (size_t i = 0; i < input_count; ++i) {
        model.get_input_info(i, &info);
        names += (i ? ", " : "") + std::string(info.name);
      }
      return Fail("--input %s: the model has no input of that name (inputs: %s)",
                  input.first.c_str(), names.c_str());
    }
    model.get_input_info(index, &info);
    std::string error;
    NpyArray array;
    if (!ReadNpy(input.second, &array, &error)) return Fail("--input %s: %s", info.name, error.c_str());
    bool same_shape = array.shape.size() == info.rank &&
                      std::equal(array.shape.begin(), array.shape.end(), info.shape);
    if (array.dtype != info.dtype || !same_shape) {
      kiln_tensor_info_t got = info;
      got.dtype = array.dtype;
      got.rank = (uint32_t)array.shape.size();
      got.shape = array.shape.data();
      return Fail("--input %s: '%s' is %s but the model expects %s", info.name,
                  input.second.c_str(), DescribeTensor(got).c_str(), DescribeTensor(info).c_str());
    }
    (*arrays)[index] = std::move(array);
    (*given)[index] = true;
  }
  return kExitOk;
}

}  // namespace kiln_tool
