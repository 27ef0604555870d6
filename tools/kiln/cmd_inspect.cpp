// kiln inspect MODEL.kiln [--json]
// Reads the bundle only after the runtime has verified it
// (KILN_MODEL_LOAD_VERIFY_ONLY + kiln_model_bundle_data), so every index and
// string used below is known to be valid; kernels are not mapped, so
// bundles built for another architecture can be inspected too.
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <string>

#include "bundle_generated.h"
#include "common.h"

namespace kiln_tool {

namespace {

namespace fb = kiln::fb;

const char* Str(const flatbuffers::String* s) { return s ? s->c_str() : ""; }

const char* AccessName(fb::Access access) {
  switch (access) {
    case fb::Access::Read: return "read";
    case fb::Access::Write: return "write";
    case fb::Access::ReadWrite: return "readwrite";
  }
  return "?";
}

const char* StorageName(fb::Storage storage) {
  return storage == fb::Storage::Constant ? "constant" : "arena";
}

const char* FormatName(fb::LibraryFormat format) {
  return format == fb::LibraryFormat::SpirV ? "spirv" : "elf";
}

template <typename T>
uint32_t Size(const flatbuffers::Vector<T>* v) {
  return v ? v->size() : 0;
}

std::string Shape(const fb::Tensor* t) {
  std::string s = "[";
  for (uint32_t d = 0; d < Size(t->shape()); ++d) {
    if (d) s += ",";
    s += std::to_string(t->shape()->Get(d));
  }
  return s + "]";
}

std::string TensorText(const fb::Bundle* b, uint32_t index) {
  const fb::Tensor* t = b->tensors()->Get(index);
  return std::string(Str(t->name())) + ":" + kiln_dtype_name((kiln_dtype_t)t->dtype()) + Shape(t);
}

uint64_t ConstantBytes(const fb::Bundle* b, uint32_t* count) {
  uint64_t total = 0;
  *count = 0;
  for (uint32_t i = 0; i < Size(b->tensors()); ++i) {
    const fb::Tensor* t = b->tensors()->Get(i);
    if (t->storage() == fb::Storage::Constant) {
      total += t->byte_size();
      ++*count;
    }
  }
  return total;
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

std::string JsonShape(const fb::Tensor* t) { return Shape(t); }

std::string JsonTensorList(const fb::Bundle* b, const flatbuffers::Vector<uint32_t>* list) {
  std::string out = "[";
  for (uint32_t i = 0; i < Size(list); ++i) {
    const fb::Tensor* t = b->tensors()->Get(list->Get(i));
    if (i) out += ", ";
    out += "{\"name\": " + Json(Str(t->name())) + ", \"tensor\": " + std::to_string(list->Get(i)) +
           ", \"dtype\": \"" + kiln_dtype_name((kiln_dtype_t)t->dtype()) +
           "\", \"shape\": " + JsonShape(t) + ", \"byte_size\": " + std::to_string(t->byte_size()) +
           "}";
  }
  return out + "]";
}

// Where a dispatch runs: "vulkan" (SpirV kernel), "cpu" in a CPU bundle,
// "host" (an ELF kernel of a heterogeneous Vulkan bundle; verified indices).
const char* DispatchDevice(const fb::Bundle* b, const fb::Dispatch* d) {
  const fb::Kernel* k = b->kernels()->Get(d->kernel());
  if (b->libraries()->Get(k->library())->format() == fb::LibraryFormat::SpirV) return "vulkan";
  for (uint32_t i = 0; i < Size(b->libraries()); ++i) {
    if (b->libraries()->Get(i)->format() == fb::LibraryFormat::SpirV) return "host";
  }
  return "cpu";
}

std::string JsonNameList(const fb::Bundle* b, const flatbuffers::Vector<uint32_t>* list) {
  std::string out = "[";
  for (uint32_t i = 0; i < Size(list); ++i) {
    if (i) out += ", ";
    out += Json(Str(b->tensors()->Get(list->Get(i))->name()));
  }
  return out + "]";
}

void PrintJson(const fb::Bundle* b) {
  uint32_t constant_count = 0;
  uint64_t constant_bytes = ConstantBytes(b, &constant_count);
  std::string out = "{\n";
  out += "  \"version\": \"" + std::to_string(b->version_major()) + "." +
         std::to_string(b->version_minor()) + "\",\n";
  out += "  \"min_runtime_minor\": " + std::to_string(b->min_runtime_minor()) + ",\n";
  out += "  \"producer\": " + Json(Str(b->producer())) + ",\n";
  out += "  \"arena_bytes\": " + std::to_string(b->memory() ? b->memory()->arena_bytes() : 0) + ",\n";
  out += "  \"constant_count\": " + std::to_string(constant_count) + ",\n";
  out += "  \"constant_bytes\": " + std::to_string(constant_bytes) + ",\n";
  out += "  \"data_segment_bytes\": " + std::to_string(b->data_segment_size()) + ",\n";
  out += "  \"inputs\": " + JsonTensorList(b, b->inputs()) + ",\n";
  out += "  \"outputs\": " + JsonTensorList(b, b->outputs()) + ",\n";
  out += "  \"tensors\": [";
  for (uint32_t i = 0; i < Size(b->tensors()); ++i) {
    const fb::Tensor* t = b->tensors()->Get(i);
    out += std::string(i ? ",\n    " : "\n    ") + "{\"index\": " + std::to_string(i) +
           ", \"name\": " + Json(Str(t->name())) + ", \"dtype\": \"" +
           kiln_dtype_name((kiln_dtype_t)t->dtype()) + "\", \"shape\": " + JsonShape(t) +
           ", \"storage\": \"" + StorageName(t->storage()) + "\", \"offset\": " +
           std::to_string(t->offset()) + ", \"byte_size\": " + std::to_string(t->byte_size()) + "}";
  }
  out += "],\n  \"nodes\": [";
  for (uint32_t i = 0; i < Size(b->nodes()); ++i) {
    const fb::Node* n = b->nodes()->Get(i);
    std::string attributes = "{";
    for (uint32_t a = 0; a < Size(n->attributes()); ++a) {
      const fb::Attribute* attribute = n->attributes()->Get(a);
      attributes += std::string(a ? ", " : "") + Json(Str(attribute->name())) + ": " +
                    Json(Str(attribute->value()));
    }
    attributes += "}";
    out += std::string(i ? ",\n    " : "\n    ") + "{\"name\": " + Json(Str(n->name())) +
           ", \"op_type\": " + Json(Str(n->op_type())) + ", \"attributes\": " + attributes +
           ", \"inputs\": " + JsonNameList(b, n->inputs()) +
           ", \"outputs\": " + JsonNameList(b, n->outputs()) + "}";
  }
  out += "],\n  \"libraries\": [";
  for (uint32_t i = 0; i < Size(b->libraries()); ++i) {
    const fb::KernelLibrary* l = b->libraries()->Get(i);
    out += std::string(i ? ",\n    " : "\n    ") + "{\"format\": \"" + FormatName(l->format()) +
           "\", \"target_triple\": " + Json(Str(l->target_triple())) + ", \"cpu\": " +
           Json(Str(l->cpu())) + ", \"features\": " + Json(Str(l->features())) +
           ", \"offset\": " + std::to_string(l->offset()) + ", \"size\": " + std::to_string(l->size()) + "}";
  }
  out += "],\n  \"kernels\": [";
  for (uint32_t i = 0; i < Size(b->kernels()); ++i) {
    const fb::Kernel* k = b->kernels()->Get(i);
    out += std::string(i ? ",\n    " : "\n    ") + "{\"name\": " + Json(Str(k->name())) +
           ", \"library\": " + std::to_string(k->library()) + ", \"ordinal\": " +
           std::to_string(k->ordinal()) + "}";
  }
  out += "],\n  \"dispatches\": [";
  for (uint32_t i = 0; i < Size(b->dispatches()); ++i) {
    const fb::Dispatch* d = b->dispatches()->Get(i);
    std::string workgroups = "[";
    for (uint32_t w = 0; w < 3; ++w) workgroups += (w ? ", " : "") + std::to_string(d->workgroup_count()->Get(w));
    workgroups += "]";
    std::string bindings = "[";
    for (uint32_t x = 0; x < Size(d->bindings()); ++x) {
      const fb::Binding* binding = d->bindings()->Get(x);
      bindings += std::string(x ? ", " : "") + "{\"tensor\": " +
                  Json(Str(b->tensors()->Get(binding->tensor())->name())) + ", \"tensor_index\": " +
                  std::to_string(binding->tensor()) + ", \"access\": \"" +
                  AccessName(binding->access()) + "\"}";
    }
    bindings += "]";
    std::string push = "[";
    for (uint32_t x = 0; x < Size(d->push_constants()); ++x) {
      push += (x ? ", " : "") + std::to_string(d->push_constants()->Get(x));
    }
    push += "]";
    std::string sources = "[";
    for (uint32_t x = 0; x < Size(d->source_nodes()); ++x) {
      sources += (x ? ", " : "") + Json(Str(b->nodes()->Get(d->source_nodes()->Get(x))->name()));
    }
    sources += "]";
    std::string device = std::string(", \"device\": \"") + DispatchDevice(b, d) +
                         "\", \"host_downloads\": " + JsonNameList(b, d->host_downloads()) +
                         ", \"host_uploads\": " + JsonNameList(b, d->host_uploads());
    out += std::string(i ? ",\n    " : "\n    ") + "{\"index\": " + std::to_string(i) +
           ", \"kernel\": " + Json(Str(b->kernels()->Get(d->kernel())->name())) +
           ", \"kernel_index\": " + std::to_string(d->kernel()) + ", \"workgroup_count\": " +
           workgroups + ", \"bindings\": " + bindings + ", \"push_constants\": " + push +
           ", \"source_nodes\": " + sources + device + "}";
  }
  out += "]\n}\n";
  fputs(out.c_str(), stdout);
}

//===--------------------------------------------------------------------===//
// Text
//===--------------------------------------------------------------------===//

std::string NameList(const fb::Bundle* b, const flatbuffers::Vector<uint32_t>* list) {
  std::string out;
  for (uint32_t i = 0; i < Size(list); ++i) out += (i ? ", " : "") + TensorText(b, list->Get(i));
  return out;
}

void PrintText(const fb::Bundle* b) {
  uint32_t constant_count = 0;
  uint64_t constant_bytes = ConstantBytes(b, &constant_count);
  printf("bundle version %u.%u (needs runtime minor >= %u), producer \"%s\"\n", b->version_major(),
         b->version_minor(), b->min_runtime_minor(), Str(b->producer()));
  printf("inputs:  %s\n", NameList(b, b->inputs()).c_str());
  printf("outputs: %s\n", NameList(b, b->outputs()).c_str());
  printf("memory plan: arena %" PRIu64 " bytes, alignment %u\n",
         b->memory() ? b->memory()->arena_bytes() : 0, b->memory() ? b->memory()->alignment() : 0);
  printf("constants: %u tensors, %" PRIu64 " bytes (data segment %" PRIu64 " bytes)\n",
         constant_count, constant_bytes, b->data_segment_size());

  printf("\ntensors (%u):\n  %5s  %-9s %-8s %12s %12s  %-20s %s\n", Size(b->tensors()), "index",
         "storage", "dtype", "offset", "bytes", "shape", "name");
  for (uint32_t i = 0; i < Size(b->tensors()); ++i) {
    const fb::Tensor* t = b->tensors()->Get(i);
    printf("  %5u  %-9s %-8s %12" PRIu64 " %12" PRIu64 "  %-20s %s\n", i, StorageName(t->storage()),
           kiln_dtype_name((kiln_dtype_t)t->dtype()), t->offset(), t->byte_size(),
           Shape(t).c_str(), Str(t->name()));
  }

  printf("\nnodes (%u):\n", Size(b->nodes()));
  for (uint32_t i = 0; i < Size(b->nodes()); ++i) {
    const fb::Node* n = b->nodes()->Get(i);
    printf("  %u: %s \"%s\"\n", i, Str(n->op_type()), Str(n->name()));
    for (uint32_t a = 0; a < Size(n->attributes()); ++a) {
      printf("      %s = %s\n", Str(n->attributes()->Get(a)->name()), Str(n->attributes()->Get(a)->value()));
    }
    printf("      inputs:  %s\n      outputs: %s\n", NameList(b, n->inputs()).c_str(),
           NameList(b, n->outputs()).c_str());
  }

  printf("\nlibraries (%u):\n", Size(b->libraries()));
  for (uint32_t i = 0; i < Size(b->libraries()); ++i) {
    const fb::KernelLibrary* l = b->libraries()->Get(i);
    printf("  %u: %s %s cpu=%s features=%s, %" PRIu64 " bytes at %" PRIu64 "\n", i,
           FormatName(l->format()), Str(l->target_triple()), Str(l->cpu()), Str(l->features()),
           l->size(), l->offset());
  }
  printf("\nkernels (%u):\n", Size(b->kernels()));
  for (uint32_t i = 0; i < Size(b->kernels()); ++i) {
    const fb::Kernel* k = b->kernels()->Get(i);
    printf("  %u: %s (library %u, ordinal %u)\n", i, Str(k->name()), k->library(), k->ordinal());
  }
  printf("\ndispatches (%u):\n", Size(b->dispatches()));
  for (uint32_t i = 0; i < Size(b->dispatches()); ++i) {
    const fb::Dispatch* d = b->dispatches()->Get(i);
    printf("  %u: [%s] %s workgroups=(%u,%u,%u)", i, DispatchDevice(b, d), Str(b->kernels()->Get(d->kernel())->name()),
           d->workgroup_count()->Get(0), d->workgroup_count()->Get(1), d->workgroup_count()->Get(2));
    if (Size(d->push_constants())) {
      printf(" push=[");
      for (uint32_t x = 0; x < Size(d->push_constants()); ++x) {
        printf("%s%u", x ? "," : "", d->push_constants()->Get(x));
      }
      printf("]");
    }
    printf("\n");
    for (uint32_t x = 0; x < Size(d->bindings()); ++x) {
      const fb::Binding* binding = d->bindings()->Get(x);
      printf("      binding %u: %-9s %s\n", x, AccessName(binding->access()),
             TensorText(b, binding->tensor()).c_str());
    }
    for (int up = 0; up < 2; ++up) {
      const flatbuffers::Vector<uint32_t>* list = up ? d->host_uploads() : d->host_downloads();
      if (!Size(list)) continue;
      printf("      %s:", up ? "then upload to the device" : "first download to the host");
      for (uint32_t x = 0; x < Size(list); ++x) printf(" %s", Str(b->tensors()->Get(list->Get(x))->name()));
      printf("\n");
    }
    if (Size(d->source_nodes())) {
      printf("      from nodes:");
      for (uint32_t x = 0; x < Size(d->source_nodes()); ++x) {
        printf(" \"%s\"", Str(b->nodes()->Get(d->source_nodes()->Get(x))->name()));
      }
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
  const void* data = nullptr;
  size_t size = 0;
  status = kiln::Status(kiln_model_bundle_data(model.get(), &data, &size));
  if (!status.ok()) return FailStatus(status);
  const fb::Bundle* bundle = fb::GetSizePrefixedBundle(data);
  if (json) {
    PrintJson(bundle);
  } else {
    PrintText(bundle);
  }
  return kExitOk;
}

}  // namespace kiln_tool
