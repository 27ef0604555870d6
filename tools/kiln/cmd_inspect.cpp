// kiln inspect MODEL.kiln [--json]
// Reads the bundle through the runtime's public accessors (kiln_model_get_*)
// after a KILN_MODEL_LOAD_VERIFY_ONLY load: the bundle is verified, so the
// indices it holds are valid; kernels are not mapped, so bundles built for
// another architecture can be inspected too.
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <string>
#include <vector>

#include "common.h"

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
  return storage == KILN_STORAGE_CONSTANT ? "constant" : "arena";
}

const char* FormatName(kiln_library_format_t format) {
  return format == KILN_LIBRARY_FORMAT_SPIRV ? "spirv" : format == KILN_LIBRARY_FORMAT_STATIC ? "static" : "elf";
}

// "%016llx" of a static library's kernel hash.
std::string HexHash(uint64_t hash) {
  char text[17];
  snprintf(text, sizeof(text), "%016llx", (unsigned long long)hash);
  return text;
}

const char* DeviceName(kiln_device_kind_t device) {
  return device == KILN_DEVICE_VULKAN ? "vulkan" : device == KILN_DEVICE_HOST ? "host" : "cpu";
}

// Everything inspect prints, read once through the model's accessors (the
// model was verified at load, so every index below is in range).
struct Contents {
  kiln_model_info_t info;                     // header facts, memory plan, counts
  std::vector<kiln_tensor_info_t> tensors;    // by index
  std::vector<kiln_tensor_info_t> inputs;     // model inputs, in order
  std::vector<kiln_tensor_info_t> outputs;    // model outputs, in order
  std::vector<kiln_node_info_t> nodes;        // by index
  std::vector<std::vector<kiln_attribute_info_t>> attributes;  // per node
  std::vector<kiln_library_info_t> libraries; // by index
  std::vector<kiln_kernel_info_t> kernels;    // by index
  std::vector<kiln_dispatch_info_t> dispatches;               // in run order
  std::vector<std::vector<kiln_binding_info_t>> bindings;     // per dispatch
};

// Fills `out` with `count` entries: get(i, &(*out)[i]) until one fails.
template <typename Info, typename Get>
kiln::Status ReadAll(size_t count, std::vector<Info>* out, Get get) {
  out->resize(count);
  kiln::Status status;
  for (size_t i = 0; status.ok() && i < count; ++i) status = get(i, &(*out)[i]);
  return status;
}

kiln::Status Read(const kiln::Model& model, Contents* out) {
  kiln::Status status = model.get_info(&out->info);
  const kiln_model_info_t& info = out->info;
  auto tensor = [&](size_t i, kiln_tensor_info_t* t) { return model.get_tensor_info(i, t); };
  auto input = [&](size_t i, kiln_tensor_info_t* t) { return model.get_input_info(i, t); };
  auto output = [&](size_t i, kiln_tensor_info_t* t) { return model.get_output_info(i, t); };
  auto library = [&](size_t i, kiln_library_info_t* l) { return model.get_library_info(i, l); };
  auto kernel = [&](size_t i, kiln_kernel_info_t* k) { return model.get_kernel_info(i, k); };
  auto node = [&](size_t i, kiln_node_info_t* n) {
    kiln::Status read = model.get_node_info(i, n);
    if (!read.ok()) return read;
    return ReadAll(n->attribute_count, &out->attributes[i], [&](size_t a, kiln_attribute_info_t* x) {
      return model.get_attribute_info(i, a, x);
    });
  };
  auto dispatch = [&](size_t i, kiln_dispatch_info_t* d) {
    kiln::Status read = model.get_dispatch_info(i, d);
    if (!read.ok()) return read;
    return ReadAll(d->binding_count, &out->bindings[i], [&](size_t b, kiln_binding_info_t* x) {
      return model.get_binding_info(i, b, x);
    });
  };
  out->attributes.resize(info.node_count);
  out->bindings.resize(info.dispatch_count);
  if (status.ok()) status = ReadAll(info.tensor_count, &out->tensors, tensor);
  if (status.ok()) status = ReadAll(model.input_count(), &out->inputs, input);
  if (status.ok()) status = ReadAll(model.output_count(), &out->outputs, output);
  if (status.ok()) status = ReadAll(info.node_count, &out->nodes, node);
  if (status.ok()) status = ReadAll(info.library_count, &out->libraries, library);
  if (status.ok()) status = ReadAll(info.kernel_count, &out->kernels, kernel);
  if (status.ok()) status = ReadAll(info.dispatch_count, &out->dispatches, dispatch);
  return status;
}

std::string Shape(const kiln_tensor_info_t& t) {
  std::string s = "[";
  for (uint32_t d = 0; d < t.rank; ++d) {
    if (d) s += ",";
    s += std::to_string(t.shape[d]);
  }
  return s + "]";
}

std::string TensorText(const kiln_tensor_info_t& t) {
  return std::string(t.name) + ":" + kiln_dtype_name(t.dtype) + Shape(t);
}

//===--------------------------------------------------------------------===//
// JSON
//===--------------------------------------------------------------------===//

std::string Json(const char* s) {
  std::string out = "\"";
  for (const unsigned char* p = (const unsigned char*)s; *p; ++p) {
    switch (*p) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (*p < 0x20 || *p >= 0x7f) {  // control and non-ASCII bytes: \u00XX (always valid JSON)
          char buffer[8];
          snprintf(buffer, sizeof(buffer), "\\u%04x", *p);
          out += buffer;
        } else {
          out += (char)*p;
        }
    }
  }
  return out + "\"";
}

std::string JsonTensorList(const std::vector<kiln_tensor_info_t>& list) {
  std::string out = "[";
  for (size_t i = 0; i < list.size(); ++i) {
    const kiln_tensor_info_t& t = list[i];
    if (i) out += ", ";
    out += "{\"name\": " + Json(t.name) + ", \"tensor\": " + std::to_string(t.index) +
           ", \"dtype\": \"" + kiln_dtype_name(t.dtype) + "\", \"shape\": " + Shape(t) +
           ", \"byte_size\": " + std::to_string(t.byte_size) + "}";
  }
  return out + "]";
}

// ["name", ...] of `count` tensor indices.
std::string JsonNameList(const Contents& c, const uint32_t* list, uint32_t count) {
  std::string out = "[";
  for (uint32_t i = 0; i < count; ++i) {
    if (i) out += ", ";
    out += Json(c.tensors[list[i]].name);
  }
  return out + "]";
}

void PrintJson(const Contents& c) {
  const kiln_model_info_t& info = c.info;
  std::string out = "{\n";
  out += "  \"version\": \"" + std::to_string(info.version_major) + "." +
         std::to_string(info.version_minor) + "\",\n";
  out += "  \"min_runtime_minor\": " + std::to_string(info.min_runtime_minor) + ",\n";
  out += "  \"producer\": " + Json(info.producer) + ",\n";
  out += "  \"arena_bytes\": " + std::to_string(info.arena_bytes) + ",\n";
  out += "  \"constant_count\": " + std::to_string(info.constant_count) + ",\n";
  out += "  \"constant_bytes\": " + std::to_string(info.constant_bytes) + ",\n";
  out += "  \"data_segment_bytes\": " + std::to_string(info.data_segment_size) + ",\n";
  out += "  \"inputs\": " + JsonTensorList(c.inputs) + ",\n";
  out += "  \"outputs\": " + JsonTensorList(c.outputs) + ",\n";
  out += "  \"tensors\": [";
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const kiln_tensor_info_t& t = c.tensors[i];
    out += std::string(i ? ",\n    " : "\n    ") + "{\"index\": " + std::to_string(i) +
           ", \"name\": " + Json(t.name) + ", \"dtype\": \"" + kiln_dtype_name(t.dtype) +
           "\", \"shape\": " + Shape(t) + ", \"storage\": \"" + StorageName(t.storage) +
           "\", \"offset\": " + std::to_string(t.offset) + ", \"byte_size\": " +
           std::to_string(t.byte_size) + "}";
  }
  out += "],\n  \"nodes\": [";
  for (size_t i = 0; i < c.nodes.size(); ++i) {
    const kiln_node_info_t& n = c.nodes[i];
    std::string attributes = "{";
    for (size_t a = 0; a < c.attributes[i].size(); ++a) {
      const kiln_attribute_info_t& attribute = c.attributes[i][a];
      attributes += std::string(a ? ", " : "") + Json(attribute.name) + ": " + Json(attribute.value);
    }
    attributes += "}";
    out += std::string(i ? ",\n    " : "\n    ") + "{\"name\": " + Json(n.name) +
           ", \"op_type\": " + Json(n.op_type) + ", \"attributes\": " + attributes +
           ", \"inputs\": " + JsonNameList(c, n.inputs, n.input_count) +
           ", \"outputs\": " + JsonNameList(c, n.outputs, n.output_count) + "}";
  }
  out += "],\n  \"libraries\": [";
  for (size_t i = 0; i < c.libraries.size(); ++i) {
    const kiln_library_info_t& l = c.libraries[i];
    out += std::string(i ? ",\n    " : "\n    ") + "{\"format\": \"" + FormatName(l.format) +
           "\", \"target_triple\": " + Json(l.target_triple) + ", \"cpu\": " + Json(l.cpu) +
           ", \"features\": " + Json(l.features) + ", \"offset\": " + std::to_string(l.offset) +
           ", \"size\": " + std::to_string(l.size) +
           (l.format == KILN_LIBRARY_FORMAT_STATIC
                ? ", \"kernel_hash\": \"" + HexHash(l.kernel_hash) + "\", \"static_symbol\": " + Json(l.static_symbol)
                : std::string()) +
           "}";
  }
  out += "],\n  \"kernels\": [";
  for (size_t i = 0; i < c.kernels.size(); ++i) {
    const kiln_kernel_info_t& k = c.kernels[i];
    out += std::string(i ? ",\n    " : "\n    ") + "{\"name\": " + Json(k.name) +
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
      bindings += std::string(x ? ", " : "") + "{\"tensor\": " + Json(c.tensors[binding.tensor].name) +
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
      sources += (x ? ", " : "") + Json(c.nodes[d.source_nodes[x]].name);
    }
    sources += "]";
    std::string device = std::string(", \"device\": \"") + DeviceName(d.device) +
                         "\", \"host_downloads\": " + JsonNameList(c, d.host_downloads, d.host_download_count) +
                         ", \"host_uploads\": " + JsonNameList(c, d.host_uploads, d.host_upload_count);
    out += std::string(i ? ",\n    " : "\n    ") + "{\"index\": " + std::to_string(i) +
           ", \"kernel\": " + Json(c.kernels[d.kernel].name) + ", \"kernel_index\": " +
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
  for (size_t i = 0; i < list.size(); ++i) out += (i ? ", " : "") + TensorText(list[i]);
  return out;
}

// "name:dtype[shape], ..." of `count` tensor indices.
std::string NameList(const Contents& c, const uint32_t* list, uint32_t count) {
  std::string out;
  for (uint32_t i = 0; i < count; ++i) out += (i ? ", " : "") + TensorText(c.tensors[list[i]]);
  return out;
}

void PrintText(const Contents& c) {
  const kiln_model_info_t& info = c.info;
  printf("bundle version %u.%u (needs runtime minor >= %u), producer \"%s\"\n", info.version_major,
         info.version_minor, info.min_runtime_minor, info.producer);
  printf("inputs:  %s\n", NameList(c.inputs).c_str());
  printf("outputs: %s\n", NameList(c.outputs).c_str());
  printf("memory plan: arena %" PRIu64 " bytes, alignment %u\n", info.arena_bytes, info.arena_alignment);
  printf("constants: %u tensors, %" PRIu64 " bytes (data segment %" PRIu64 " bytes)\n",
         info.constant_count, info.constant_bytes, info.data_segment_size);

  printf("\ntensors (%zu):\n  %5s  %-9s %-8s %12s %12s  %-20s %s\n", c.tensors.size(), "index",
         "storage", "dtype", "offset", "bytes", "shape", "name");
  for (size_t i = 0; i < c.tensors.size(); ++i) {
    const kiln_tensor_info_t& t = c.tensors[i];
    printf("  %5zu  %-9s %-8s %12" PRIu64 " %12zu  %-20s %s\n", i, StorageName(t.storage),
           kiln_dtype_name(t.dtype), t.offset, t.byte_size, Shape(t).c_str(), t.name);
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

int CmdInspect(int argc, char** argv) {
  const char* model_path = nullptr;
  bool json = false;
  for (int i = 0; i < argc; ++i) {
    if (!strcmp(argv[i], "--json")) {
      json = true;
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return UsageError("inspect: unknown option '%s'", argv[i]);
    } else if (!model_path) {
      model_path = argv[i];
    } else {
      return UsageError("inspect: unexpected argument '%s'", argv[i]);
    }
  }
  if (!model_path) return UsageError("inspect: missing MODEL.kiln");
  kiln::Model model;
  kiln::Status status = kiln::Model::LoadFile(model_path, &model, KILN_MODEL_LOAD_VERIFY_ONLY);
  if (!status.ok()) return FailStatus(status);
  Contents contents;
  status = Read(model, &contents);
  if (!status.ok()) return FailStatus(status);
  if (json) {
    PrintJson(contents);
  } else {
    PrintText(contents);
  }
  return kExitOk;
}

}  // namespace kiln_tool
