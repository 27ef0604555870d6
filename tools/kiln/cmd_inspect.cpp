// kiln inspect MODEL.kiln [--json | --dot | --svg] [--profile TRACE.json | --profile-run]
// Reads the bundle through the runtime's public accessors (kiln_model_get_*,
// contents.cpp) after a KILN_MODEL_LOAD_VERIFY_ONLY load: the bundle is
// verified, so the indices it holds are valid; kernels are not mapped, so
// bundles built for another architecture can be inspected too. The text and
// JSON listings are here; the --dot picture is dot.cpp, its colours come from
// a kiln profile trace or a measurement (profiling.cpp).
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "dot.h"
#include "profiling.h"

namespace kiln_tool {

namespace {

const char* AccessName(kiln_access_t access) {
  switch (access) {
    case KILN_ACCESS_READ: return "read";
    case KILN_ACCESS_WRITE: return "write";
    case KILN_ACCESS_READ_WRITE: return "readwrite";
  }
  return "?";
}

const char* StorageName(kiln_storage_t storage) {
  return storage == KILN_STORAGE_CONSTANT ? "constant" : storage == KILN_STORAGE_DYNAMIC ? "per-run" : "arena";
}

const char* FormatName(kiln_library_format_t format) {
  return format == KILN_LIBRARY_FORMAT_SPIRV ? "spirv" : format == KILN_LIBRARY_FORMAT_STATIC ? "static" : "elf";
}

const char* DeviceName(kiln_device_kind_t device) {
  return device == KILN_DEVICE_VULKAN ? "vulkan" : device == KILN_DEVICE_HOST ? "host" : "cpu";
}

// A string tensor's capacity (the bytes its strings may hold in all):
// ", \"string_bytes\": N" for JSON, " (N bytes of strings)" for text; "" for
// other dtypes.
std::string StringBytes(const kiln_tensor_info_t& t, bool json) {
  if (t.dtype != KILN_DTYPE_STRING) return "";
  std::string bytes = std::to_string(t.string_bytes);
  return json ? ", \"string_bytes\": " + bytes : " (" + bytes + " bytes of strings)";
}

//===--------------------------------------------------------------------===//
// JSON
//===--------------------------------------------------------------------===//

// "\"shape\": [..]" of the largest sizes, and with run-time dimensions
// "\"min_shape\": [..]" of the least (ShapeText's LO..HI is no JSON).
std::string JsonShape(const kiln_tensor_info_t& t) {
  auto list = [&](const int64_t* dims) {
    std::string s = "[";
    for (uint32_t d = 0; d < t.rank; ++d) s += (d ? ", " : "") + std::to_string(dims[d]);
    return s + "]";
  };
  std::string out = "\"shape\": " + list(t.shape);
  if (t.dynamic && t.min_shape) out += ", \"min_shape\": " + list(t.min_shape);
  return out;
}

std::string JsonTensorList(const std::vector<kiln_tensor_info_t>& list) {
  std::string out = "[";
  for (size_t i = 0; i < list.size(); ++i) {
    const kiln_tensor_info_t& t = list[i];
    if (i) out += ", ";
    out += "{\"name\": " + JsonString(t.name) + ", \"tensor\": " + std::to_string(t.index) +
           ", \"dtype\": \"" + kiln_dtype_name(t.dtype) + "\", " + JsonShape(t) +
           ", \"byte_size\": " + std::to_string(t.byte_size) + StringBytes(t, true) + "}";
  }
  return out + "]";
}

// ["name", ...] of `count` tensor indices.
std::string JsonNameList(const ModelContents& c, const uint32_t* list, uint32_t count) {
  std::string out = "[";
  for (uint32_t i = 0; i < count; ++i) {
    if (i) out += ", ";
    out += JsonString(c.tensors[list[i]].name);
  }
  return out + "]";
}

void PrintJson(const ModelContents& c) {
  const kiln_model_info_t& info = c.info;
  std::string out = "{\n";
  out += "  \"version\": \"" + std::to_string(info.version_major) + "." +
         std::to_string(info.version_minor) + "\",\n";
  out += "  \"min_runtime_minor\": " + std::to_string(info.min_runtime_minor) + ",\n";
  out += "  \"producer\": " + JsonString(info.producer) + ",\n";
  out += "  \"signature\": " + JsonString(DescribeSignature(info).c_str()) + ",\n";
  out += "  \"arena_bytes\": " + std::to_string(info.arena_bytes) + ",\n";
  out += "  \"constant_count\": " + std::to_string(info.constant_count) + ",\n";
  out += "  \"constant_bytes\": " + std::to_string(info.constant_bytes) + ",\n";
  out += "  \"data_segment_bytes\": " + std::to_string(info.data_segment_size) + ",\n";
  out += "  \"inputs\": " + JsonTensorList(c.inputs) + ",\n";
  out += "  \"outputs\": " + JsonTensorList(c.outputs) + ",\n";
  out += "  \"composites\": [";  // sequences and optionals (docs/sequences.md)
  for (size_t i = 0; i < c.composites.size(); ++i) {
    const kiln_composite_info_t& k = c.composites[i];
    std::string elements;
    for (size_t e = 0; e < k.element_count; ++e) elements += (e ? ", " : "") + std::to_string(k.elements[e]);
    out += std::string(i ? ", " : "") + "{\"name\": " + JsonString(k.name) + ", \"kind\": \"" +
           (k.kind == KILN_COMPOSITE_OPTIONAL ? "optional" : "sequence") + "\", \"output\": " +
           (k.is_output ? "true" : "false") + ", \"elements\": [" + elements + "], \"presence\": " +
           std::to_string(k.presence) + ", \"holds_sequence\": " + (k.holds_sequence ? "true" : "false") + "}";
  }
  out += "],\n";
  out += "  \"tensors\": [";
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const kiln_tensor_info_t& t = c.tensors[i];
    out += std::string(i ? ",\n    " : "\n    ") + "{\"index\": " + std::to_string(i) +
           ", \"name\": " + JsonString(t.name) + ", \"dtype\": \"" + kiln_dtype_name(t.dtype) +
           "\", " + JsonShape(t) + ", \"storage\": \"" + StorageName(t.storage) +
           "\", \"offset\": " + std::to_string(t.offset) + ", \"byte_size\": " +
           std::to_string(t.byte_size) + StringBytes(t, true) + "}";
  }
  out += "],\n  \"nodes\": [";
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const kiln_node_info_t& n = c.nodes[i];
    std::string attributes = "{";
    for (size_t a = 0; a < c.attributes[i].size(); ++a) {
      const kiln_attribute_info_t& attribute = c.attributes[i][a];
      attributes += std::string(a ? ", " : "") + JsonString(attribute.name) + ": " + JsonString(attribute.value);
    }
    attributes += "}";
    out += std::string(i ? ",\n    " : "\n    ") + "{\"name\": " + JsonString(n.name) +
           ", \"op_type\": " + JsonString(n.op_type) + ", \"attributes\": " + attributes +
           ", \"inputs\": " + JsonNameList(c, n.inputs, n.input_count) +
           ", \"outputs\": " + JsonNameList(c, n.outputs, n.output_count) + "}";
  }
  out += "],\n  \"libraries\": [";
  for (size_t i = 0; i < c.libraries.size(); ++i) {
    const kiln_library_info_t& l = c.libraries[i];
    out += std::string(i ? ",\n    " : "\n    ") + "{\"format\": \"" + FormatName(l.format) +
           "\", \"target_triple\": " + JsonString(l.target_triple) + ", \"cpu\": " + JsonString(l.cpu) +
           ", \"features\": " + JsonString(l.features) + ", \"offset\": " + std::to_string(l.offset) +
           ", \"size\": " + std::to_string(l.size) +
           (l.format == KILN_LIBRARY_FORMAT_STATIC
                ? ", \"kernel_hash\": \"" + HexHash(l.kernel_hash) + "\", \"static_symbol\": " + JsonString(l.static_symbol)
                : std::string()) +
           "}";
  }
  out += "],\n  \"kernels\": [";
  for (size_t i = 0; i < c.kernels.size(); ++i) {
    const kiln_kernel_info_t& k = c.kernels[i];
    out += std::string(i ? ",\n    " : "\n    ") + "{\"name\": " + JsonString(k.name) +
           ", \"library\": " + std::to_string(k.library) + ", \"ordinal\": " +
           std::to_string(k.ordinal) + "}";
  }
  out += "],\n  \"dispatches\": [";
  for (size_t i = 0; i < c.dispatches.size(); ++i) {
    const kiln_dispatch_info_t& d = c.dispatches[i];
    std::string workgroups = "[";
    for (uint32_t w = 0; w < 3; ++w) workgroups += (w ? ", " : "") + std::to_string(d.workgroup_count[w]);
    workgroups += "]";
    std::string bindings = "[";
    for (size_t x = 0; x < c.bindings[i].size(); ++x) {
      const kiln_binding_info_t& binding = c.bindings[i][x];
      bindings += std::string(x ? ", " : "") + "{\"tensor\": " + JsonString(c.tensors[binding.tensor].name) +
                  ", \"tensor_index\": " + std::to_string(binding.tensor) + ", \"access\": \"" +
                  AccessName(binding.access) + "\"}";
    }
    bindings += "]";
    std::string push = "[";
    for (uint32_t x = 0; x < d.push_constant_count; ++x) {
      push += (x ? ", " : "") + std::to_string(d.push_constants[x]);
    }
    push += "]";
    std::string sources = "[";
    for (uint32_t x = 0; x < d.source_node_count; ++x) {
      sources += (x ? ", " : "") + JsonString(c.nodes[d.source_nodes[x]].name);
    }
    sources += "]";
    std::string device = std::string(", \"device\": \"") + DeviceName(d.device) +
                         "\", \"host_downloads\": " + JsonNameList(c, d.host_downloads, d.host_download_count) +
                         ", \"host_uploads\": " + JsonNameList(c, d.host_uploads, d.host_upload_count);
    out += std::string(i ? ",\n    " : "\n    ") + "{\"index\": " + std::to_string(i) +
           ", \"kernel\": " + JsonString(c.kernels[d.kernel].name) + ", \"kernel_index\": " +
           std::to_string(d.kernel) + ", \"workgroup_count\": " + workgroups + ", \"bindings\": " +
           bindings + ", \"push_constants\": " + push + ", \"source_nodes\": " + sources + device + "}";
  }
  out += "]\n}\n";
  fputs(out.c_str(), stdout);
}

//===--------------------------------------------------------------------===//
// Text
//===--------------------------------------------------------------------===//

std::string NameList(const std::vector<kiln_tensor_info_t>& list) {
  std::string out;
  for (size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + TensorText(list[i]) + StringBytes(list[i], false);
  return out;
}

// "name:dtype[shape], ..." of `count` tensor indices.
std::string NameList(const ModelContents& c, const uint32_t* list, uint32_t count) {
  std::string out;
  for (uint32_t i = 0; i < count; ++i) out += (i ? ", " : "") + TensorText(c.tensors[list[i]]);
  return out;
}

void PrintText(const ModelContents& c) {
  const kiln_model_info_t& info = c.info;
  printf("bundle version %u.%u (needs runtime minor >= %u), producer \"%s\"\n", info.version_major,
         info.version_minor, info.min_runtime_minor, info.producer);
  printf("signature: %s\n", DescribeSignature(info).c_str());
  printf("inputs:  %s\n", NameList(c.inputs).c_str());
  printf("outputs: %s\n", NameList(c.outputs).c_str());
  for (const kiln_composite_info_t& k : c.composites) {  // docs/sequences.md
    const auto& list = k.is_output ? c.outputs : c.inputs;
    std::string elements;
    for (size_t e = 0; e < k.element_count; ++e) elements += (e ? ", " : "") + std::string(list[k.elements[e]].name);
    if (k.kind == KILN_COMPOSITE_OPTIONAL) {
      printf("%s %s: an optional %s [%s], present when %s\n", k.is_output ? "output" : "input", k.name,
             k.holds_sequence ? "sequence" : "tensor", elements.c_str(), list[(size_t)k.presence].name);
    } else {
      printf("%s %s: a sequence of %zu [%s]\n", k.is_output ? "output" : "input", k.name, k.element_count,
             elements.c_str());
    }
  }
  printf("memory plan: arena %" PRIu64 " bytes, alignment %u\n", info.arena_bytes, info.arena_alignment);
  printf("constants: %u tensors, %" PRIu64 " bytes (data segment %" PRIu64 " bytes)\n",
         info.constant_count, info.constant_bytes, info.data_segment_size);

  printf("\ntensors (%zu):\n  %5s  %-9s %-8s %12s %12s  %-20s %s\n", c.tensors.size(), "index",
         "storage", "dtype", "offset", "bytes", "shape", "name");
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const kiln_tensor_info_t& t = c.tensors[i];
    printf("  %5zu  %-9s %-8s %12" PRIu64 " %12zu  %-20s %s%s\n", i, StorageName(t.storage),
           kiln_dtype_name(t.dtype), t.offset, t.byte_size, ShapeText(t).c_str(), t.name,
           StringBytes(t, false).c_str());
  }

  printf("\nnodes (%zu):\n", c.nodes.size());
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const kiln_node_info_t& n = c.nodes[i];
    printf("  %zu: %s \"%s\"\n", i, n.op_type, n.name);
    for (const kiln_attribute_info_t& attribute : c.attributes[i]) {
      printf("      %s = %s\n", attribute.name, attribute.value);
    }
    printf("      inputs:  %s\n      outputs: %s\n", NameList(c, n.inputs, n.input_count).c_str(),
           NameList(c, n.outputs, n.output_count).c_str());
  }

  printf("\nlibraries (%zu):\n", c.libraries.size());
  for (size_t i = 0; i < c.libraries.size(); ++i) {
    const kiln_library_info_t& l = c.libraries[i];
    if (l.format == KILN_LIBRARY_FORMAT_STATIC) {
      printf("  %zu: static %s cpu=%s features=%s, linked into the application: %s() (kernel hash %s)\n",
             i, l.target_triple, l.cpu, l.features, l.static_symbol, HexHash(l.kernel_hash).c_str());
      continue;
    }
    printf("  %zu: %s %s cpu=%s features=%s, %" PRIu64 " bytes at %" PRIu64 "\n", i,
           FormatName(l.format), l.target_triple, l.cpu, l.features, l.size, l.offset);
  }
  printf("\nkernels (%zu):\n", c.kernels.size());
  for (size_t i = 0; i < c.kernels.size(); ++i) {
    const kiln_kernel_info_t& k = c.kernels[i];
    printf("  %zu: %s (library %u, ordinal %u)\n", i, k.name, k.library, k.ordinal);
  }
  printf("\ndispatches (%zu):\n", c.dispatches.size());
  for (size_t i = 0; i < c.dispatches.size(); ++i) {
    const kiln_dispatch_info_t& d = c.dispatches[i];
    printf("  %zu: [%s] %s workgroups=(%u,%u,%u)", i, DeviceName(d.device), c.kernels[d.kernel].name,
           d.workgroup_count[0], d.workgroup_count[1], d.workgroup_count[2]);
    if (d.push_constant_count) {
      printf(" push=[");
      for (uint32_t x = 0; x < d.push_constant_count; ++x) printf("%s%u", x ? "," : "", d.push_constants[x]);
      printf("]");
    }
    printf("\n");
    for (size_t x = 0; x < c.bindings[i].size(); ++x) {
      const kiln_binding_info_t& binding = c.bindings[i][x];
      printf("      binding %zu: %-9s %s\n", x, AccessName(binding.access),
             TensorText(c.tensors[binding.tensor]).c_str());
    }
    for (int up = 0; up < 2; ++up) {
      const uint32_t* list = up ? d.host_uploads : d.host_downloads;
      uint32_t count = up ? d.host_upload_count : d.host_download_count;
      if (!count) continue;
      printf("      %s:", up ? "then upload to the device" : "first download to the host");
      for (uint32_t x = 0; x < count; ++x) printf(" %s", c.tensors[list[x]].name);
      printf("\n");
    }
    if (d.source_node_count) {
      printf("      from nodes:");
      for (uint32_t x = 0; x < d.source_node_count; ++x) printf(" \"%s\"", c.nodes[d.source_nodes[x]].name);
      printf("\n");
    }
  }
}

}  // namespace

const CommandHelp kInspectHelp = {
    "inspect", "MODEL.kiln [--json | --dot | --svg] [--profile TRACE.json | --profile-run]",
    "Prints what the bundle describes: the graph, tensors, memory plan, kernel\n"
    "libraries and dispatches (as text, or JSON with --json); with --dot a Graphviz\n"
    "picture of the graph (--svg: rendered by Graphviz's dot), its nodes coloured by\n"
    "kernel time with --profile or --profile-run. Bundles for another architecture\n"
    "can be inspected (the kernels are not loaded), but not profiled.\n"};

int CmdInspect(int argc, char** argv) {
  enum Format { kText, kJson, kDot, kSvg } format = kText;
  const char* trace_path = nullptr;
  bool profile_run = false;
  CommandArgs args;
  args.iterations = 5;
  using kiln_cli::Arity;
  const kiln_cli::OptionTable own = {
      {kOptJson, "--json", Arity::kFlag, "", "print JSON (arena_bytes, constant_bytes, nodes, dispatches, ...)"},
      {kOptDot, "--dot", Arity::kFlag, "",
       "print the graph in Graphviz's DOT language: a cluster per fused kernel,\n"
       "edges labelled with the tensors' shapes"},
      {kOptSvg, "--svg", Arity::kFlag, "", "the --dot graph as SVG (runs Graphviz's dot -Tsvg)"},
      {kOptProfileTrace, "--profile", Arity::kValue, "TRACE.json",
       "--dot/--svg: colour by kernel time from a trace of kiln profile -o"},
      {kOptProfileRun, "--profile-run", Arity::kFlag, "",
       "--dot/--svg: colour by kernel time measured now (with the options below)"},
  };
  auto handle = [&](const kiln_cli::Option& option, const char* value) -> int {
    Format wanted = option.id == kOptJson ? kJson : option.id == kOptDot ? kDot : kSvg;
    switch (option.id) {
      case kOptProfileTrace: trace_path = value; return kContinue;
      case kOptProfileRun: profile_run = true; return kContinue;
      default:
        if (format != kText && format != wanted) return UsageError("--json, --dot and --svg exclude each other");
        format = wanted;
        return kContinue;
    }
  };
  int result = ParseCommandArgs(kInspectHelp, own, "--profile-run: profiled runs after the first (default 5)",
                                argc, argv, handle, &args);
  if (result != kContinue) return result;
  if ((trace_path || profile_run) && format != kDot && format != kSvg) {
    return UsageError("--profile and --profile-run colour the --dot or --svg graph");
  }
  if (trace_path && profile_run) return UsageError("--profile and --profile-run exclude each other");
  if (args.session_options_given && !profile_run) {
    return UsageError("--threads, --iterations, --input and the device options go with --profile-run");
  }

  kiln::Model model;
  kiln::Status status;
  std::vector<double> dispatch_ms;
  std::string measured_on;
  Measurement measurement;
  if (profile_run) {  // a full load: the model runs
    result = Measure(args, &model, &measurement);
    if (result != kExitOk) return result;
  } else {
    kiln_model_load_options_t options;
    LoadOptions(args, KILN_MODEL_LOAD_VERIFY_ONLY, &options);
    status = kiln::Model::LoadFile(args.model_path, options, &model);
    if (!status.ok()) return FailStatus(status);
  }
  ModelContents contents;
  status = ReadModelContents(model, &contents);
  if (!status.ok()) return FailStatus(status);
  if (profile_run) {
    dispatch_ms = DispatchMedianMs(measurement.runs, contents.dispatches.size());
    measured_on = MeasuredOn(measurement.device, measurement.threads);
  }
  if (trace_path) {
    result = ReadTrace(trace_path, contents, &dispatch_ms, &measured_on);
    if (result != kExitOk) return result;
  }
  result = kExitOk;
  switch (format) {
    case kJson: PrintJson(contents); break;
    case kText: PrintText(contents); break;
    case kDot: fputs(DotGraph(contents, dispatch_ms, measured_on).c_str(), stdout); break;
    case kSvg: result = WriteSvg(DotGraph(contents, dispatch_ms, measured_on)); break;
  }
  return result != kExitOk ? result : CheckValidationMessages();
}

}  // namespace kiln_tool
