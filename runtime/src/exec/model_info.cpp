// The model's accessors (kiln.h, "Model" and "Model contents"): inputs and
// outputs, and everything the bundle describes (header facts, tensors,
// nodes, libraries, kernels, dispatches), so tools and language bindings
// never read the FlatBuffer. The bundle was verified at load, so only the
// caller's indices and structs are checked here; strings and uint32_t
// arrays point into the verified bundle, shapes into the model's copies.
#include <string.h>

#include "base/struct_size.h"
#include "exec/model.h"

namespace fb = kiln::fb;

// Writes `value` into the caller's versioned struct `out` (see struct_size.h).
template <typename T>
static kiln_status_t kiln_model_write_info(const T& value, size_t min_size, const char* type_name,
                                           T* out) {
  return kiln_struct_write(&value, sizeof(T), min_size, type_name, out);
}

static kiln_status_t kiln_model_null(const char* what) {
  return kiln_make_status(KILN_INVALID_ARGUMENT, "NULL %s", what);
}

// KILN_INVALID_ARGUMENT for an index past `count` `what`s.
static kiln_status_t kiln_model_index(size_t index, size_t count, const char* what) {
  if (index < count) return NULL;
  return kiln_make_status(KILN_INVALID_ARGUMENT, "%s index %zu out of range (%zu %ss)", what, index,
                          count, what);
}

// NULL model or out parameter, or an index past `count` `what`s.
static kiln_status_t kiln_model_check(const kiln_model_t* model, const void* out, size_t index,
                                      size_t count, const char* what) {
  if (!model) return kiln_model_null("model");
  if (!out) return kiln_model_null("out_info");
  return kiln_model_index(index, count, what);
}

// The number of entries in one of the bundle's lists (0 when absent).
template <typename T>
static size_t kiln_model_count(const flatbuffers::Vector<T>* list) {
  return list ? list->size() : 0;
}

// A list of the bundle's tables (Bundle::nodes, ::libraries, ...).
template <typename T>
using kiln_model_table_list_t =
    const flatbuffers::Vector<flatbuffers::Offset<T>>* (fb::Bundle::*)() const;

// Entry `index` of the bundle's list `list` of `what`s, after the checks of
// kiln_model_check.
template <typename T>
static kiln_status_t kiln_model_entry(const kiln_model_t* model, const void* out, size_t index,
                                      kiln_model_table_list_t<T> list, const char* what,
                                      const T** out_entry) {
  size_t count = model ? kiln_model_count((model->view.bundle->*list)()) : 0;
  KILN_RETURN_IF_ERROR(kiln_model_check(model, out, index, count, what));
  *out_entry = (model->view.bundle->*list)()->Get((uint32_t)index);
  return NULL;
}

// Entry `index` of `list`, a list inside one of the bundle's tables (a
// node's attributes, a dispatch's bindings); KILN_INVALID_ARGUMENT past its end.
template <typename List, typename Entry>
static kiln_status_t kiln_model_item(const List* list, size_t index, const char* what,
                                     Entry* out_entry) {
  KILN_RETURN_IF_ERROR(kiln_model_index(index, kiln_model_count(list), what));
  *out_entry = list->Get((uint32_t)index);
  return NULL;
}

static const char* kiln_model_string(const flatbuffers::String* string) {
  return string ? string->c_str() : "";
}

// A uint32_t list of the bundle as (count, pointer); NULL when absent.
static const uint32_t* kiln_model_list(const flatbuffers::Vector<uint32_t>* list,
                                       uint32_t* out_count) {
  *out_count = list ? list->size() : 0;
  return list ? list->data() : NULL;
}

void kiln_model_describe_tensor(const kiln_model_t* model, uint32_t index,
                                kiln_tensor_info_t* out_info) {
  const fb::Tensor* tensor = model->view.bundle->tensors()->Get(index);
  memset(out_info, 0, sizeof(*out_info));
  out_info->struct_size = sizeof(*out_info);
  out_info->name = kiln_model_string(tensor->name());
  out_info->dtype = (kiln_dtype_t)tensor->dtype();
  out_info->rank = (uint32_t)kiln_model_count(tensor->shape());
  out_info->shape = model->tensor_shapes[index];
  out_info->byte_size = (size_t)tensor->byte_size();  // verified to fit (bundle_verify.cpp)
  out_info->index = index;
  out_info->storage = (kiln_storage_t)tensor->storage();
  out_info->offset = tensor->offset();
  out_info->data = tensor->storage() == fb::Storage::Constant
                       ? model->view.data_segment + tensor->offset() : NULL;
  out_info->dynamic = tensor->dynamic_dims() != NULL;
  out_info->min_shape = model->tensor_min_shapes[index];
  out_info->string_bytes = tensor->string_bytes();  // 0 unless a string tensor (verified)
}

//===----------------------------------------------------------------------===//
// Inputs and outputs
//===----------------------------------------------------------------------===//

size_t kiln_model_input_count(const kiln_model_t* model) {
  return model ? model->input_count : 0;
}

size_t kiln_model_output_count(const kiln_model_t* model) {
  return model ? model->output_count : 0;
}

kiln_status_t kiln_model_get_input_info(const kiln_model_t* model, size_t index,
                                        kiln_tensor_info_t* out_info) {
  size_t count = model ? model->input_count : 0;
  KILN_RETURN_IF_ERROR(kiln_model_check(model, out_info, index, count, "input"));
  return kiln_model_write_info(model->inputs[index], KILN_TENSOR_INFO_MIN_SIZE,
                               "kiln_tensor_info_t", out_info);
}

kiln_status_t kiln_model_get_output_info(const kiln_model_t* model, size_t index,
                                         kiln_tensor_info_t* out_info) {
  size_t count = model ? model->output_count : 0;
  KILN_RETURN_IF_ERROR(kiln_model_check(model, out_info, index, count, "output"));
  return kiln_model_write_info(model->outputs[index], KILN_TENSOR_INFO_MIN_SIZE,
                               "kiln_tensor_info_t", out_info);
}

size_t kiln_model_composite_count(const kiln_model_t* model) {
  return model ? kiln_model_count(model->view.bundle->composites()) : 0;
}

kiln_status_t kiln_model_get_composite_info(const kiln_model_t* model, size_t index,
                                            kiln_composite_info_t* out_info) {
  const fb::Composite* source = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_model_entry(model, out_info, index, &fb::Bundle::composites, "composite", &source));
  kiln_composite_info_t info = {};
  info.name = kiln_model_string(source->name());
  info.kind = (kiln_composite_kind_t)source->kind();
  info.is_output = source->output() ? 1 : 0;
  uint32_t count = 0;
  info.elements = kiln_model_list(source->elements(), &count);
  info.element_count = count;
  info.presence = source->kind() == fb::CompositeKind::Optional ? source->presence() : -1;
  info.holds_sequence = source->kind() == fb::CompositeKind::Optional && source->sequence() ? 1 : 0;
  return kiln_model_write_info(info, KILN_COMPOSITE_INFO_MIN_SIZE, "kiln_composite_info_t",
                               out_info);
}

static kiln_status_t kiln_model_find_io(const kiln_model_t* model, const kiln_tensor_info_t* ios,
                                        size_t count, const char* name, const char* what,
                                        size_t* out_index) {
  if (!model) return kiln_model_null("model");
  if (!name || !out_index) return kiln_model_null("name");
  for (size_t i = 0; i < count; ++i) {
    if (strcmp(ios[i].name, name) == 0) {
      *out_index = i;
      return NULL;
    }
  }
  return kiln_make_status(KILN_NOT_FOUND, "model has no %s named '%.128s'", what, name);
}

kiln_status_t kiln_model_find_input(const kiln_model_t* model, const char* name,
                                    size_t* out_index) {
  return kiln_model_find_io(model, model ? model->inputs : NULL, model ? model->input_count : 0,
                            name, "input", out_index);
}

kiln_status_t kiln_model_find_output(const kiln_model_t* model, const char* name,
                                     size_t* out_index) {
  return kiln_model_find_io(model, model ? model->outputs : NULL, model ? model->output_count : 0,
                            name, "output", out_index);
}

//===----------------------------------------------------------------------===//
// Header facts and memory plan
//===----------------------------------------------------------------------===//

kiln_status_t kiln_model_get_info(const kiln_model_t* model, kiln_model_info_t* out_info) {
  KILN_RETURN_IF_ERROR(kiln_model_check(model, out_info, 0, 1, "model"));
  const fb::Bundle* bundle = model->view.bundle;
  kiln_model_info_t info = {};
  info.version_major = bundle->version_major();
  info.version_minor = bundle->version_minor();
  info.min_runtime_minor = bundle->min_runtime_minor();
  info.device = model->view.spirv ? KILN_DEVICE_VULKAN : KILN_DEVICE_CPU;
  info.producer = kiln_model_string(bundle->producer());
  info.content_hash = bundle->content_hash();
  info.arena_bytes = bundle->memory() ? bundle->memory()->arena_bytes() : 0;
  info.arena_alignment = bundle->memory() ? bundle->memory()->alignment() : 0;
  for (uint32_t i = 0; i < model->tensor_count; ++i) {
    const fb::Tensor* tensor = bundle->tensors()->Get(i);
    if (tensor->storage() != fb::Storage::Constant) continue;
    info.constant_count++;
    info.constant_bytes += tensor->byte_size();  // each inside the data segment: no overflow
  }
  info.data_segment_offset = bundle->data_segment_offset();
  info.data_segment_size = bundle->data_segment_size();
  info.tensor_count = model->tensor_count;
  info.node_count = (uint32_t)kiln_model_count(bundle->nodes());
  info.library_count = (uint32_t)kiln_model_count(bundle->libraries());
  info.kernel_count = (uint32_t)kiln_model_count(bundle->kernels());
  info.dispatch_count = model->dispatch_count;
  if (model->signature.present) {
    info.signature = (kiln_signature_t)model->signature.algorithm;  // checked: a known one
    info.signature_verified = model->signature.verified ? 1 : 0;
    memcpy(info.signer_public_key, model->signature.public_key, sizeof(info.signer_public_key));
  }
  return kiln_model_write_info(info, KILN_MODEL_INFO_MIN_SIZE, "kiln_model_info_t", out_info);
}

//===----------------------------------------------------------------------===//
// Tensors and nodes
//===----------------------------------------------------------------------===//

kiln_status_t kiln_model_get_tensor_info(const kiln_model_t* model, size_t tensor,
                                         kiln_tensor_info_t* out_info) {
  size_t count = model ? model->tensor_count : 0;
  KILN_RETURN_IF_ERROR(kiln_model_check(model, out_info, tensor, count, "tensor"));
  kiln_tensor_info_t info;
  kiln_model_describe_tensor(model, (uint32_t)tensor, &info);
  return kiln_model_write_info(info, KILN_TENSOR_INFO_MIN_SIZE, "kiln_tensor_info_t", out_info);
}

kiln_status_t kiln_model_get_node_info(const kiln_model_t* model, size_t node,
                                       kiln_node_info_t* out_info) {
  const fb::Node* source = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_model_entry(model, out_info, node, &fb::Bundle::nodes, "node", &source));
  kiln_node_info_t info = {};
  info.name = kiln_model_string(source->name());
  info.op_type = kiln_model_string(source->op_type());
  info.attribute_count = (uint32_t)kiln_model_count(source->attributes());
  info.inputs = kiln_model_list(source->inputs(), &info.input_count);
  info.outputs = kiln_model_list(source->outputs(), &info.output_count);
  return kiln_model_write_info(info, KILN_NODE_INFO_MIN_SIZE, "kiln_node_info_t", out_info);
}

kiln_status_t kiln_model_get_attribute_info(const kiln_model_t* model, size_t node,
                                            size_t attribute, kiln_attribute_info_t* out_info) {
  const fb::Node* source = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_model_entry(model, out_info, node, &fb::Bundle::nodes, "node", &source));
  const fb::Attribute* entry = NULL;
  KILN_RETURN_IF_ERROR(kiln_model_item(source->attributes(), attribute, "attribute", &entry));
  kiln_attribute_info_t info = {};
  info.name = kiln_model_string(entry->name());
  info.kind = KILN_ATTRIBUTE_TEXT;
  info.value = kiln_model_string(entry->value());
  return kiln_model_write_info(info, KILN_ATTRIBUTE_INFO_MIN_SIZE, "kiln_attribute_info_t",
                               out_info);
}

//===----------------------------------------------------------------------===//
// Libraries and kernels
//===----------------------------------------------------------------------===//

kiln_status_t kiln_model_get_library_info(const kiln_model_t* model, size_t library,
                                          kiln_library_info_t* out_info) {
  const fb::KernelLibrary* source = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_model_entry(model, out_info, library, &fb::Bundle::libraries, "library", &source));
  kiln_library_info_t info = {};
  info.format = (kiln_library_format_t)source->format();
  info.vulkan_features = (uint32_t)source->vulkan_features();
  info.target_triple = kiln_model_string(source->target_triple());
  info.cpu = kiln_model_string(source->cpu());
  info.features = kiln_model_string(source->features());
  info.offset = source->offset();
  info.size = source->size();
  info.data = model->view.data_segment + source->offset();  // verified inside the segment
  info.kernel_hash = source->kernel_hash();
  info.static_symbol = kiln_model_string(source->static_symbol());
  return kiln_model_write_info(info, KILN_LIBRARY_INFO_MIN_SIZE, "kiln_library_info_t", out_info);
}

kiln_status_t kiln_model_get_kernel_info(const kiln_model_t* model, size_t kernel,
                                         kiln_kernel_info_t* out_info) {
  const fb::Kernel* source = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_model_entry(model, out_info, kernel, &fb::Bundle::kernels, "kernel", &source));
  const fb::Bundle* bundle = model->view.bundle;
  kiln_kernel_info_t info = {};
  info.name = kiln_model_string(source->name());
  info.library = source->library();
  info.ordinal = source->ordinal();
  info.format = (kiln_library_format_t)bundle->libraries()->Get(source->library())->format();
  info.entry_point = "";
  const fb::SpirvKernel* module = source->spirv();
  if (module) {
    info.entry_point = module->entry_point() ? module->entry_point()->c_str() : "main";
    info.spirv_offset = module->offset();
    info.spirv_size = module->size();
    for (uint32_t d = 0; d < 3; ++d) info.workgroup_size[d] = module->workgroup_size()->Get(d);
    info.binding_count = module->binding_count();
    info.push_constant_size = module->push_constant_size();
  }
  return kiln_model_write_info(info, KILN_KERNEL_INFO_MIN_SIZE, "kiln_kernel_info_t", out_info);
}

//===----------------------------------------------------------------------===//
// Dispatches
//===----------------------------------------------------------------------===//

kiln_status_t kiln_model_get_dispatch_info(const kiln_model_t* model, size_t dispatch,
                                           kiln_dispatch_info_t* out_info) {
  const fb::Dispatch* source = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_model_entry(model, out_info, dispatch, &fb::Bundle::dispatches, "dispatch", &source));
  const fb::Bundle* bundle = model->view.bundle;
  kiln_dispatch_info_t info = {};
  info.kernel = source->kernel();
  // A SpirV kernel runs on the device; an ELF one on the CPU, which in a
  // bundle with SpirV libraries is the host of a Vulkan session.
  const fb::Kernel* kernel = bundle->kernels()->Get(source->kernel());
  if (bundle->libraries()->Get(kernel->library())->format() == fb::LibraryFormat::SpirV) {
    info.device = KILN_DEVICE_VULKAN;
  } else {
    info.device = model->view.spirv ? KILN_DEVICE_HOST : KILN_DEVICE_CPU;
  }
  for (uint32_t d = 0; d < 3; ++d) info.workgroup_count[d] = source->workgroup_count()->Get(d);
  info.binding_count = (uint32_t)kiln_model_count(source->bindings());
  info.push_constants = kiln_model_list(source->push_constants(), &info.push_constant_count);
  info.source_nodes = kiln_model_list(source->source_nodes(), &info.source_node_count);
  info.host_downloads = kiln_model_list(source->host_downloads(), &info.host_download_count);
  info.host_uploads = kiln_model_list(source->host_uploads(), &info.host_upload_count);
  return kiln_model_write_info(info, KILN_DISPATCH_INFO_MIN_SIZE, "kiln_dispatch_info_t", out_info);
}

kiln_status_t kiln_model_get_binding_info(const kiln_model_t* model, size_t dispatch,
                                          size_t binding, kiln_binding_info_t* out_info) {
  const fb::Dispatch* source = NULL;
  KILN_RETURN_IF_ERROR(
      kiln_model_entry(model, out_info, dispatch, &fb::Bundle::dispatches, "dispatch", &source));
  const fb::Binding* entry = NULL;
  KILN_RETURN_IF_ERROR(kiln_model_item(source->bindings(), binding, "binding", &entry));
  kiln_binding_info_t info = {};
  info.tensor = entry->tensor();
  info.access = (kiln_access_t)entry->access();
  return kiln_model_write_info(info, KILN_BINDING_INFO_MIN_SIZE, "kiln_binding_info_t", out_info);
}
