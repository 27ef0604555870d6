// The command line the commands that run a model share, parsed once through
// cli_options.h: MODEL.kiln, --threads N, --iterations N, --input
// NAME=FILE.npy, --max-arena BYTES, the device options (device.cpp) and --help; then opening
// the model and the session they describe and preparing the inputs (--input
// files, or pseudo-random values).
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include <algorithm>

#include <sys/stat.h>

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

// A string table of `count` one-digit strings "0".."9".
std::vector<uint8_t> DigitStrings(size_t count, Random* random) {
  std::vector<std::string> strings(count);
  for (std::string& s : strings) s.assign(1, (char)('0' + (int)(random->Uniform() * 10)));
  std::vector<uint8_t> table;
  kiln::PackStrings(strings, &table);  // count bytes: fits
  return table;
}

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
      case KILN_DTYPE_BFLOAT16: {  // the upper half of a float32 in [-1, 1) with 8 significant bits
        float f = (float)((int)(u * 512) - 256) / 256.0f;
        uint32_t bits;
        memcpy(&bits, &f, 4);
        uint16_t b = (uint16_t)(bits >> 16);
        memcpy(p, &b, 2);
        break;
      }
      case KILN_DTYPE_BOOL: *p = u < 0.5 ? 0 : 1; break;
      // The narrow types: finite codes of moderate size, values in range.
      case KILN_DTYPE_FLOAT8E4M3FN: case KILN_DTYPE_FLOAT8E4M3FNUZ: case KILN_DTYPE_FLOAT8E5M2:
      case KILN_DTYPE_FLOAT8E5M2FNUZ:
        *p = (uint8_t)(0x28 + (int)(u * 32) % 32 + (u < 0.5 ? 0x80 : 0));  // about 2^-3 .. 2^1 (E4M3), never 0x80
        break;
      case KILN_DTYPE_FLOAT4E2M1: *p = (uint8_t)((int)(u * 16) & 15); break;
      case KILN_DTYPE_FLOAT8E8M0: *p = (uint8_t)(120 + (int)(u * 16)); break;  // 2^-7 .. 2^8
      case KILN_DTYPE_UINT4: *p = (uint8_t)((int)(u * 16) & 15); break;
      case KILN_DTYPE_INT4: *p = (uint8_t)(int8_t)((int)(u * 16) % 16 - 8); break;
      case KILN_DTYPE_UINT2: *p = (uint8_t)((int)(u * 4) & 3); break;
      case KILN_DTYPE_INT2: *p = (uint8_t)(int8_t)((int)(u * 4) % 4 - 2); break;
      default: {  // integers
        int64_t v = (int64_t)(u * 10);
        memcpy(p, &v, size);  // little-endian: the low bytes
        break;
      }
    }
  }
}

}  // namespace

int ParseTrustedKey(const char* value, std::vector<uint8_t>* keys) {
  uint8_t key[32];
  size_t digits = strlen(value);
  for (size_t i = 0; i < 32 && digits == 64; ++i) {
    unsigned byte = 0;
    if (sscanf(value + 2 * i, "%2x", &byte) != 1 || !isxdigit((unsigned char)value[2 * i]) ||
        !isxdigit((unsigned char)value[2 * i + 1])) {
      digits = 0;
    }
    key[i] = (uint8_t)byte;
  }
  if (digits != 64) {
    return UsageError("--trusted-key needs an Ed25519 public key as 64 hex digits "
                      "(kilnc --print-public-key=KEY.pem prints it)");
  }
  keys->insert(keys->end(), key, key + 32);
  return kContinue;
}

namespace {

// Takes a shared option's value: kContinue, or kExitUsage after a usage error.
int ParseSharedOption(int id, const char* value, CommandArgs* out) {
  out->session_options_given |= id != kOptTrustedKey;
  switch (id) {
    case kOptTrustedKey:
      return ParseTrustedKey(value, &out->trusted_keys);
    case kOptThreads:
      if (!ParseCount(value, KILN_SESSION_MAX_THREADS, &out->threads)) {
        return UsageError("--threads needs a count (at most %u)", KILN_SESSION_MAX_THREADS);
      }
      return kContinue;
    case kOptIterations:
      if (!ParseCount(value, 1u << 30, &out->iterations) || out->iterations == 0) {
        return UsageError("--iterations needs a positive count");
      }
      return kContinue;
    case kOptMaxArena:
      if (!kiln_cli::ParseByteCount(value, &out->max_arena_bytes)) {
        return UsageError("--max-arena needs a positive byte count such as 4096, 512M or 4G");
      }
      return kContinue;
    case kOptInput: {
      const char* eq = strchr(value, '=');
      if (!eq || eq == value) return UsageError("--input needs NAME=FILE.npy");
      out->inputs.emplace_back(std::string(value, eq), std::string(eq + 1));
      return kContinue;
    }
    default:
      return ParseDeviceOption(id, value, &out->device);
  }
}

}  // namespace

kiln_cli::OptionTable SessionOptionTable(const char* iterations_help) {
  using kiln_cli::Arity;
  kiln_cli::OptionTable table = {
      {kOptThreads, "--threads", Arity::kValue, "N",
       "threads running each dispatch, the calling one included (default 1)"},
      {kOptIterations, "--iterations", Arity::kValue, "N", iterations_help},
      {kOptInput, "--input", Arity::kValue, "NAME=FILE.npy",
       "model input NAME from a .npy file (repeatable; dtype and shape must match)"},
      {kOptMaxArena, "--max-arena", Arity::kValue, "BYTES",
       "the largest arena the session may allocate, e.g. 4G (default 1G)"},
  };
  AddDeviceOptions(&table);
  table.push_back({kOptTrustedKey, "--trusted-key", Arity::kValue, "HEX",
                   "load only bundles signed by this Ed25519 public key (64 hex digits,\n"
                   "from kilnc --print-public-key; repeatable: any of them)"});
  return table;
}

void PrintCommandHelp(const CommandHelp& command, const kiln_cli::OptionTable& table) {
  printf("usage: kiln %s %s\n\n%s\noptions:\n%s", command.name, command.synopsis,
         command.description, kiln_cli::FormatOptions(table).c_str());
}

int ParseCommandArgs(const CommandHelp& command, const kiln_cli::OptionTable& own,
                     const char* iterations_help, int argc, char** argv,
                     const CommandOption& handle, CommandArgs* out) {
  kiln_cli::OptionTable table = own;
  if (iterations_help) {
    kiln_cli::OptionTable shared = SessionOptionTable(iterations_help);
    table.insert(table.end(), shared.begin(), shared.end());
  }
  table.push_back({kOptHelp, "--help", kiln_cli::Arity::kFlag, "", "print this help and exit"});
  kiln_cli::Parser parser(argc, argv);
  for (;;) {
    const kiln_cli::Option* option = nullptr;
    const char* value = nullptr;
    std::string error;
    switch (parser.Read(table, &option, &value, &error)) {
      case kiln_cli::Next::kEnd:
        if (!out->model_path) return UsageError("missing MODEL.kiln");
        return kContinue;
      case kiln_cli::Next::kError:
        return UsageError("%s", error.c_str());
      case kiln_cli::Next::kPositional:
        if (out->model_path) return UsageError("unexpected argument '%s'", value);
        out->model_path = value;
        break;
      case kiln_cli::Next::kOption: {
        if (option->id == kOptHelp) {
          PrintCommandHelp(command, table);
          return kExitOk;
        }
        bool own_option = std::any_of(own.begin(), own.end(),
                                      [&](const kiln_cli::Option& o) { return o.id == option->id; });
        int result = own_option ? handle(*option, value) : ParseSharedOption(option->id, value, out);
        if (result != kContinue) return result;
        break;
      }
    }
  }
}

void LoadOptions(const CommandArgs& args, uint32_t flags, kiln_model_load_options_t* out) {
  kiln_model_load_options_init(out);
  out->flags = flags;
  out->trusted_public_keys = args.trusted_keys.empty() ? nullptr : args.trusted_keys.data();
  out->trusted_public_key_count = args.trusted_keys.size() / 32;
}

int OpenModel(const CommandArgs& args, kiln::Model* model) {
  kiln_model_load_options_t options;
  LoadOptions(args, 0, &options);
  kiln::Status status = kiln::Model::LoadFile(args.model_path, options, model);
  return status.ok() ? kExitOk : FailStatus(status);
}

std::string DescribeSignature(const kiln_model_info_t& info) {
  if (info.signature == KILN_SIGNATURE_NONE) return "none";
  std::string text = "ed25519 by ";
  char byte[4];
  for (uint8_t b : info.signer_public_key) {
    snprintf(byte, sizeof(byte), "%02x", b);
    text += byte;
  }
  return text + (info.signature_verified ? " (verified against a trusted key)"
                                         : " (not checked: no --trusted-key)");
}

void SessionOptions(const CommandArgs& args, kiln_session_options_t* out) {
  kiln_session_options_init(out);
  out->thread_count = (uint32_t)args.threads;
  out->max_arena_bytes = args.max_arena_bytes;
  args.device.Apply(out);
}

int OpenSession(const CommandArgs& args, const kiln::Model& model,
                kiln_session_options_t* out_options, kiln::Session* session) {
  SessionOptions(args, out_options);
  kiln::Status status = kiln::Session::Create(model, out_options, session);
  if (!status.ok()) return FailStatus(status);
  PrintDevice(*session);
  return kExitOk;
}

// A bool scalar holding `value`.
static NpyArray BoolScalar(bool value) {
  NpyArray a;
  a.dtype = KILN_DTYPE_BOOL;
  a.data.assign(1, value ? 1 : 0);
  return a;
}

// The composite input (sequence or optional, docs/sequences.md) named `name`; false when there is none.
static bool FindCompositeInput(const kiln::Model& model, const std::string& name, kiln_composite_info_t* out) {
  for (size_t c = 0; c < model.composite_count(); ++c)
    if (model.get_composite_info(c, out).ok() && !out->is_output && name == out->name) return true;
  return false;
}

// --input for a sequence or optional input NAME (docs/sequences.md): a
// sequence takes DIR holding 0.npy .. N-1.npy (and no N.npy), which become
// its element inputs' files (`files`); an optional takes its value's file
// or DIR, or "none" (its presence false, its tensors zeros: `arrays`).
// Other --inputs are kept as they are.
static int ExpandCompositeInputs(const kiln::Model& model, const CommandArgs& args,
                                 std::vector<std::pair<std::string, std::string>>* files,
                                 std::vector<std::pair<size_t, NpyArray>>* arrays) {
  for (const auto& input : args.inputs) {
    size_t index = 0;
    kiln_composite_info_t info;
    if (model.find_input(input.first.c_str(), &index).ok() || !FindCompositeInput(model, input.first, &info)) {
      files->push_back(input);
      continue;
    }
    const bool optional = info.kind == KILN_COMPOSITE_OPTIONAL;
    if (optional) arrays->push_back({(size_t)info.presence, BoolScalar(input.second != "none")});
    if (optional && input.second == "none") {
      // Zeros of the value's shape: it must be static (a run-time dimension
      // would have to agree with the other inputs sharing it), and no larger
      // than a session may plan (the bundle is untrusted).
      const uint64_t limit = args.max_arena_bytes ? args.max_arena_bytes : KILN_DEFAULT_MAX_ARENA_BYTES;
      for (size_t e = 0; e < info.element_count; ++e) {
        kiln_tensor_info_t element;
        if (!model.get_input_info(info.elements[e], &element).ok()) return Fail("--input %s: bad element", info.name);
        if (element.dynamic) {
          return Fail("--input %s=none: its value's shape is known only at run time; give a file of zeros of the "
                      "shape you run instead", info.name);
        }
        if (element.byte_size > limit) {
          return Fail("--input %s=none: its value (%s) is larger than --max-arena allows", info.name, element.name);
        }
        NpyArray zeros;  // (strings: a table of empty strings)
        zeros.dtype = element.dtype;
        zeros.shape.assign(element.shape, element.shape + element.rank);
        zeros.data.assign(element.dtype == KILN_DTYPE_STRING ? element.byte_size - element.string_bytes
                                                               : element.byte_size, 0);
        arrays->push_back({(size_t)info.elements[e], std::move(zeros)});
      }
      continue;
    }
    if (optional && !info.holds_sequence) {
      if (!info.element_count) return Fail("--input %s: the optional holds nothing to read", info.name);
      kiln_tensor_info_t element;
      if (!model.get_input_info(info.elements[0], &element).ok()) return Fail("--input %s: bad element", info.name);
      files->push_back({element.name, input.second});
      continue;
    }
    struct stat st;
    if (stat(input.second.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      return Fail("--input %s: '%s' is no directory; a sequence input takes a directory holding 0.npy .. %zu.npy%s",
                  info.name, input.second.c_str(), info.element_count ? info.element_count - 1 : 0,
                  optional ? " (or 'none')" : "");
    }
    std::string extra = input.second + "/" + std::to_string(info.element_count) + ".npy";
    if (stat(extra.c_str(), &st) == 0) {
      return Fail("--input %s: '%s' holds more than the %zu tensors the bundle was compiled for "
                  "(kilnc --sequence-length %s=N)", info.name, input.second.c_str(), info.element_count, info.name);
    }
    for (size_t e = 0; e < info.element_count; ++e) {
      kiln_tensor_info_t element;
      if (!model.get_input_info(info.elements[e], &element).ok()) return Fail("--input %s: bad element", info.name);
      files->push_back({element.name, input.second + "/" + std::to_string(e) + ".npy"});
    }
  }
  return kExitOk;
}

int ReadInputs(const kiln::Model& model, const CommandArgs& args, std::vector<NpyArray>* arrays,
               std::vector<bool>* given) {
  size_t input_count = model.input_count();
  arrays->assign(input_count, NpyArray());
  given->assign(input_count, false);
  std::vector<std::pair<std::string, std::string>> inputs;
  std::vector<std::pair<size_t, NpyArray>> literal;
  int expanded = ExpandCompositeInputs(model, args, &inputs, &literal);
  if (expanded != kExitOk) return expanded;
  for (auto& [index, array] : literal) {
    if (index >= input_count) return Fail("bad composite input index %zu", index);
    (*arrays)[index] = std::move(array);
    (*given)[index] = true;
  }
  for (const auto& input : inputs) {
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
    // A run-time dimension takes any size in its range (the session is told
    // the shape before the data: SetInputs).
    bool same_shape = array.shape.size() == info.rank;
    for (uint32_t d = 0; same_shape && d < info.rank; ++d) {
      int64_t least = info.dynamic && info.min_shape ? info.min_shape[d] : info.shape[d];
      same_shape = array.shape[d] >= least && array.shape[d] <= info.shape[d];
    }
    if (!NpyFits(array, info.dtype) || !same_shape) {
      kiln_tensor_info_t got = info;
      got.dtype = array.dtype;
      got.rank = (uint32_t)array.shape.size();
      got.shape = array.shape.data();
      got.dynamic = 0;
      return Fail("--input %s: '%s' is %s but the model expects %s", info.name,
                  input.second.c_str(), DescribeTensor(got).c_str(), DescribeTensor(info).c_str());
    }
    array.dtype = info.dtype;  // a narrow type's bytes ('|V1', '|u1', '|i1') are the input's
    array.raw_bytes = false;
    (*arrays)[index] = std::move(array);
    (*given)[index] = true;
  }
  return kExitOk;
}

int PrepareInputs(const kiln::Model& model, const CommandArgs& args,
                  std::vector<NpyArray>* inputs, std::vector<bool>* given) {
  std::vector<NpyArray> arrays;
  int result = ReadInputs(model, args, &arrays, given);
  if (result != kExitOk) return result;
  Random random;
  inputs->assign(model.input_count(), NpyArray());
  for (size_t i = 0; i < inputs->size(); ++i) {
    kiln_tensor_info_t info;
    model.get_input_info(i, &info);
    if ((*given)[i]) {
      (*inputs)[i] = std::move(arrays[i]);
    } else if (info.dtype == KILN_DTYPE_STRING) {  // one-digit strings, at the largest shape
      size_t count = kiln::ElementCount(info.shape, info.rank);
      if (count > info.string_bytes) {
        return Fail("input %s: %zu strings of one digit exceed its %llu bytes of strings; give it with --input",
                    info.name, count, (unsigned long long)info.string_bytes);
      }
      (*inputs)[i].dtype = info.dtype;
      (*inputs)[i].shape.assign(info.shape, info.shape + info.rank);
      (*inputs)[i].data = DigitStrings(count, &random);
    } else {  // the largest shape of a run-time dimension
      (*inputs)[i].dtype = info.dtype;
      (*inputs)[i].shape.assign(info.shape, info.shape + info.rank);
      (*inputs)[i].data.resize(info.byte_size);
      Fill(info.dtype, &(*inputs)[i].data, &random);
    }
  }
  return kExitOk;
}

kiln::Status SetInputs(kiln::Session* session, const std::vector<NpyArray>& inputs) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    kiln::Status status = session->set_input_shape(i, inputs[i].shape.data(), (uint32_t)inputs[i].shape.size());
    if (status.ok()) status = session->set_input(i, inputs[i].data.data(), inputs[i].data.size());
    if (!status.ok()) return status;
  }
  return kiln::Status();
}

}  // namespace kiln_tool
