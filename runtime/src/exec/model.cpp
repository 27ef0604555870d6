// Model loading: bundle memory -> verification -> kernel libraries ->
// kernels -> tensor shapes and input/output descriptions. See exec/model.h.
#include "exec/model.h"

#include <stdlib.h>
#include <string.h>

#include "base/allocator.h"
#include "base/clock.h"
#include "base/struct_size.h"

namespace fb = kiln::fb;

// Maps every ELF kernel library (or finds the registered static one) and
// resolves each of its kernels to its entry point. SPIR-V modules become
// pipelines on each session's device (vulkan/vulkan_backend.cpp): their
// libraries stay unloaded, their kernels NULL.
static kiln_status_t kiln_model_load_kernels(kiln_model_t* model) {
  const fb::Bundle* bundle = model->view.bundle;
  uint32_t library_count = bundle->libraries() ? bundle->libraries()->size() : 0;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(library_count, &model->libraries));
  for (uint32_t i = 0; i < library_count; ++i) {
    const fb::KernelLibrary* library = bundle->libraries()->Get(i);
    model->library_count = i + 1;  // for kiln_model_free (unloading an unloaded one is a no-op)
    if (!kiln_library_format_is_cpu(library->format())) continue;
    const char* triple = library->target_triple() ? library->target_triple()->c_str() : "?";
    kiln_status_t status =
        library->format() == fb::LibraryFormat::StaticLinked
            ? kiln_kernel_library_load_static(library->kernel_hash(), library->static_symbol()->c_str(),
                                              &model->libraries[i])
            : kiln_kernel_library_load(model->view.data_segment + library->offset(),
                                       (size_t)library->size(), &model->libraries[i]);
    if (status) return kiln_status_annotate(status, "library %u (%.64s)", i, triple);
  }
  uint32_t kernel_count = bundle->kernels() ? bundle->kernels()->size() : 0;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(kernel_count, &model->kernels));
  model->kernel_count = kernel_count;
  for (uint32_t i = 0; i < kernel_count; ++i) {
    const fb::Kernel* kernel = bundle->kernels()->Get(i);
    if (!kiln_library_format_is_cpu(bundle->libraries()->Get(kernel->library())->format())) continue;
    kiln_status_t status = kiln_kernel_library_find(&model->libraries[kernel->library()],
                                                    kernel->ordinal(), kernel->name()->c_str(),
                                                    &model->kernels[i]);
    if (status) {
      return kiln_status_annotate(status, "bundle: kernel %u ('%.64s') in library %u", i,
                                  kernel->name()->c_str(), kernel->library());
    }
  }
  return NULL;
}

// Whether the bundle has a CPU library, ELF or static (a Vulkan bundle has
// one only when some kernels run on the host).
static int kiln_model_has_cpu_library(const fb::Bundle* bundle) {
  uint32_t count = bundle->libraries() ? bundle->libraries()->size() : 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (kiln_library_format_is_cpu(bundle->libraries()->Get(i)->format())) return 1;
  }
  return 0;
}

// The bundle's dimension lists, copied once: FlatBuffers vectors are only
// 4-byte aligned, so int64_t shapes cannot be handed out in place.
// Tensors with run-time dimensions also get their least sizes (min_shape).
static kiln_status_t kiln_model_copy_shapes(kiln_model_t* model) {
  const fb::Bundle* bundle = model->view.bundle;
  size_t dims = 0;  // bounded by the buffer size, so no overflow
  for (uint32_t i = 0; i < model->tensor_count; ++i) {
    const fb::Tensor* tensor = bundle->tensors()->Get(i);
    dims += tensor->shape() ? tensor->shape()->size() : 0;
    dims += tensor->min_shape() ? tensor->min_shape()->size() : 0;
  }
  KILN_RETURN_IF_ERROR(kiln_calloc_array(dims, &model->shapes));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(model->tensor_count, &model->tensor_shapes));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(model->tensor_count, &model->tensor_min_shapes));
  int64_t* cursor = model->shapes;
  for (uint32_t i = 0; i < model->tensor_count; ++i) {
    const flatbuffers::Vector<int64_t>* shape = bundle->tensors()->Get(i)->shape();
    model->tensor_shapes[i] = cursor;
    for (uint32_t d = 0; shape && d < shape->size(); ++d) *cursor++ = kiln_bundle_dim(shape, d);
    const flatbuffers::Vector<int64_t>* least = bundle->tensors()->Get(i)->min_shape();
    model->tensor_min_shapes[i] = least ? cursor : model->tensor_shapes[i];  // verified: the shape's length
    for (uint32_t d = 0; least && d < least->size(); ++d) *cursor++ = kiln_bundle_dim(least, d);
  }
  return NULL;
}

// Fills `ios` from a list of tensor indices.
static void kiln_model_describe_io(const kiln_model_t* model,
                                   const flatbuffers::Vector<uint32_t>* list,
                                   kiln_tensor_info_t* ios) {
  for (uint32_t i = 0; list && i < list->size(); ++i) {
    kiln_model_describe_tensor(model, list->Get(i), &ios[i]);
  }
}

static kiln_status_t kiln_model_describe(kiln_model_t* model) {
  const fb::Bundle* bundle = model->view.bundle;
  model->tensor_count = bundle->tensors() ? bundle->tensors()->size() : 0;
  model->dispatch_count = bundle->dispatches() ? bundle->dispatches()->size() : 0;
  KILN_RETURN_IF_ERROR(kiln_model_copy_shapes(model));
  model->input_count = bundle->inputs() ? bundle->inputs()->size() : 0;
  model->output_count = bundle->outputs() ? bundle->outputs()->size() : 0;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(model->input_count, &model->inputs));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(model->output_count, &model->outputs));
  kiln_model_describe_io(model, bundle->inputs(), model->inputs);
  kiln_model_describe_io(model, bundle->outputs(), model->outputs);
  return NULL;
}

// The caller's load options (NULL: defaults) as this library's struct, every
// 0 limit replaced by its default.
static kiln_status_t kiln_model_read_options(const kiln_model_load_options_t* options,
                                             kiln_model_load_options_t* out) {
  kiln_model_load_options_init(out);
  if (options) {
    KILN_RETURN_IF_ERROR(kiln_struct_read(options, sizeof(*out), KILN_MODEL_LOAD_OPTIONS_MIN_SIZE,
                                          "kiln_model_load_options_t", out));
  }
  if (!out->max_bundle_bytes) out->max_bundle_bytes = KILN_DEFAULT_MAX_BUNDLE_BYTES;
  if (!out->max_constant_bytes) out->max_constant_bytes = KILN_DEFAULT_MAX_CONSTANT_BYTES;
  if (!out->max_workgroups) out->max_workgroups = KILN_DEFAULT_MAX_WORKGROUPS;
  if ((out->trusted_public_key_count && !out->trusted_public_keys) ||
      out->trusted_public_key_count > SIZE_MAX / 32) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "model: kiln_model_load_options_t.trusted_public_key_count is %zu, "
                            "trusted_public_keys is %s",
                            out->trusted_public_key_count,
                            out->trusted_public_keys ? "set" : "NULL");
  }
  return NULL;
}

// The load limits on a verified bundle, before any of its code is mapped.
static kiln_status_t kiln_model_check_limits(const kiln_bundle_view_t* view,
                                             const kiln_model_load_options_t* options) {
  if (view->data_segment_size > options->max_constant_bytes) {
    return kiln_make_status(KILN_OUT_OF_MEMORY,
                            "bundle: its data segment (constants and kernels) is %zu bytes, more "
                            "than the limit of %llu (kiln_model_load_options_t.max_constant_bytes)",
                            view->data_segment_size, (unsigned long long)options->max_constant_bytes);
  }
  const fb::Bundle* bundle = view->bundle;
  uint32_t count = bundle->dispatches() ? bundle->dispatches()->size() : 0;
  for (uint32_t i = 0; i < count; ++i) {
    // With tensors sized per run a run-time count has no meaningful largest
    // value: each run's is checked against the limit (exec/cpu_backend.cpp).
    if (view->sized_per_run && bundle->dispatches()->Get(i)->workgroup_count_exprs()) continue;
    const auto* n = bundle->dispatches()->Get(i)->workgroup_count();  // 3 entries, verified
    uint64_t total = (uint64_t)n->Get(0) * n->Get(1) * n->Get(2);     // at most 2^32 - 1, verified
    if (total > options->max_workgroups) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: dispatch %u has %llu workgroups, more than the limit of %llu "
                              "(kiln_model_load_options_t.max_workgroups)",
                              i, (unsigned long long)total, (unsigned long long)options->max_workgroups);
    }
  }
  return NULL;
}

// Takes ownership of `memory` (released on failure too). `start` is when the
// load call began, `map_ns` how long getting `memory` took.
static kiln_status_t kiln_model_load(kiln_bundle_memory_t memory, const kiln_model_load_options_t* options,
                                     uint64_t start, uint64_t map_ns, kiln_model_t** out_model) {
  const uint32_t flags = options->flags;
  kiln_model_t* model = NULL;
  kiln_status_t status = kiln_calloc_array(1, &model);
  if (status) {
    kiln_bundle_memory_release(&memory);
    return status;
  }
  model->memory = memory;
  model->flags = flags;
  model->load_start_ns = start;
  model->load_stats.bundle_map_ns = map_ns;
  uint64_t stage = kiln_now_nanoseconds();
  // The signature first, on the raw bytes: with trusted keys set, nothing
  // below reads an unsigned or tampered bundle.
  status = kiln_bundle_signature_check(memory.data, memory.size, options->trusted_public_keys,
                                       options->trusted_public_key_count, &model->signature);
  const size_t bundle_size = model->signature.present ? model->signature.signed_size : memory.size;
  if (!status) status = kiln_bundle_verify(memory.data, bundle_size, &model->view);
  if (!status) status = kiln_model_check_limits(&model->view, options);
  model->max_workgroups = options->max_workgroups;
  model->load_stats.bundle_verify_ns = kiln_nanoseconds_since(stage);
  if (!status && !(flags & KILN_MODEL_LOAD_VERIFY_ONLY) &&
      (!model->view.spirv || kiln_model_has_cpu_library(model->view.bundle))) {
    stage = kiln_now_nanoseconds();
    status = kiln_model_load_kernels(model);
    model->load_stats.kernel_load_ns = kiln_nanoseconds_since(stage);
  }
  if (!status) status = kiln_model_describe(model);
  if (status) {
    kiln_model_free(model);
    return status;
  }
  model->load_stats.model_load_ns = kiln_nanoseconds_since(start);
  *out_model = model;
  return NULL;
}

kiln_status_t kiln_model_load_file_ex(const char* path, const kiln_model_load_options_t* options,
                                      kiln_model_t** out_model) {
  if (!path || !out_model) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "load: NULL path or out_model");
  }
  uint64_t start = kiln_now_nanoseconds();
  kiln_model_load_options_t complete;
  KILN_RETURN_IF_ERROR(kiln_model_read_options(options, &complete));
  kiln_bundle_memory_t memory;
  memset(&memory, 0, sizeof(memory));
  KILN_RETURN_IF_ERROR(kiln_bundle_memory_map_file(path, complete.max_bundle_bytes, &memory));
  return kiln_model_load(memory, &complete, start, kiln_nanoseconds_since(start), out_model);
}

kiln_status_t kiln_model_load_memory_ex(const void* data, size_t size,
                                        const kiln_model_load_options_t* options,
                                        kiln_model_t** out_model) {
  if (!out_model) return kiln_make_status(KILN_INVALID_ARGUMENT, "load: NULL out_model");
  uint64_t start = kiln_now_nanoseconds();
  kiln_model_load_options_t complete;
  KILN_RETURN_IF_ERROR(kiln_model_read_options(options, &complete));
  kiln_bundle_memory_t memory;
  memset(&memory, 0, sizeof(memory));
  KILN_RETURN_IF_ERROR(kiln_bundle_memory_wrap(data, size, complete.max_bundle_bytes, &memory));
  return kiln_model_load(memory, &complete, start, kiln_nanoseconds_since(start), out_model);
}

kiln_status_t kiln_model_load_file(const char* path, kiln_model_t** out_model) {
  return kiln_model_load_file_ex(path, NULL, out_model);
}

kiln_status_t kiln_model_load_memory(const void* data, size_t size,
                                     kiln_model_t** out_model) {
  return kiln_model_load_memory_ex(data, size, NULL, out_model);
}

void kiln_model_free(kiln_model_t* model) {
  if (!model) return;
  for (uint32_t i = 0; i < model->library_count; ++i) {
    kiln_kernel_library_unload(&model->libraries[i]);
  }
  free(model->libraries);
  free(model->kernels);
  free(model->inputs);
  free(model->outputs);
  free(model->shapes);
  free(model->tensor_shapes);
  free(model->tensor_min_shapes);
  kiln_bundle_memory_release(&model->memory);
  free(model);
}

uint32_t kiln_model_bind_dispatch(const kiln_model_t* model, uint32_t index, uint8_t* arena, void** slots,
                                  kiln_kernel_dispatch_state_t* out_state) {
  const fb::Bundle* bundle = model->view.bundle;
  const fb::Dispatch* dispatch = bundle->dispatches()->Get(index);
  uint32_t count = dispatch->bindings() ? dispatch->bindings()->size() : 0;
  for (uint32_t b = 0; b < count; ++b) {
    const fb::Tensor* tensor = bundle->tensors()->Get(dispatch->bindings()->Get(b)->tensor());
    // (A Dynamic tensor has no bytes yet: the backend binds them once it has allocated them.)
    slots[b] = tensor->storage() == fb::Storage::Constant  ? (void*)(model->view.data_segment + tensor->offset())
               : tensor->storage() == fb::Storage::Dynamic ? NULL
                                                           : (void*)(arena + tensor->offset());
  }
  out_state->binding_count = count;
  out_state->bindings = slots;
  for (uint32_t d = 0; d < 3; ++d) out_state->workgroup_count[d] = dispatch->workgroup_count()->Get(d);
  const flatbuffers::Vector<uint32_t>* constants = dispatch->push_constants();
  out_state->push_constant_count = constants ? constants->size() : 0;
  out_state->push_constants = constants ? constants->data() : NULL;
  return count;
}
