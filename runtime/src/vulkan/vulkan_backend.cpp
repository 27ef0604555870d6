// The Vulkan backend (exec/backend.h): sessions of a bundle whose kernels
// are SPIR-V modules, run through the Vulkan layer (src/vulkan,
// docs/vulkan.md).
//
// At creation: the instance and device (the bundle's shader features
// enabled), one pipeline per kernel (through the optional pipeline cache),
// one device buffer for the constants (uploaded once) and one for the
// arena, a staging buffer, and the bundle's whole dispatch list recorded
// once into a command list. A run is: submit, wait. Inputs are uploaded
// by write_input, outputs downloaded when read. Bindings cover a tensor's
// bytes rounded up to 4 (shaders address 32-bit words; the memory plan's
// 256-byte slots leave room). Heterogeneous bundles: host dispatches run
// between device segments on a host copy of the arena. String inputs and
// outputs (string tables) take the same paths: exec/session.cpp checks
// their tables and sizes each copy; their offsets are zeroed at creation.
//
// Without the Vulkan headers at build time, vulkan_backend_unavailable.cpp
// provides kiln_vulkan_backend instead and creation fails with
// KILN_UNSUPPORTED.
#include "exec/backend.h"

#include <stdlib.h>
#include <string.h>

#include "base/address_space.h"
#include "base/allocator.h"
#include "base/checked_math.h"
#include "base/clock.h"
#include "vulkan/vulkan_command.h"

namespace fb = kiln::fb;

#define KILN_VULKAN_SESSION_DEFAULT_TIMEOUT_MS 60000u
// Staging buffers are at most this large (transfers go through in chunks).
#define KILN_VULKAN_SESSION_STAGING_LIMIT (16u << 20)
// Device buffers are sized in whole slots of the bundle's tensor alignment.
#define KILN_VULKAN_SESSION_SLOT 256u

// One step of a run: a recorded segment of device dispatches, or one host
// dispatch (an ElfSharedObject kernel of a heterogeneous bundle).
typedef struct kiln_vulkan_session_step_t {
  kiln_vulkan_command_list_t* list;     // non-NULL: submit and wait
  kiln_vulkan_command_list_t* profiled; // the same with timestamps (recorded when profiling starts)
  uint32_t dispatch;                    // the host dispatch, or the segment's first
  kiln_kernel_dispatch_state_t state;   // its state (bindings into host_arena / the data segment)
} kiln_vulkan_session_step_t;

// The Vulkan backend's session state.
typedef struct kiln_vulkan_session_t {
  const kiln_model_t* model;            // must outlive the session
  kiln_vulkan_instance_t* instance;     // libvulkan, the instance, the device list
  kiln_vulkan_device_t* device;         // the chosen device
  VkPipelineCache cache;                // pipelines are created through it
  kiln_vulkan_pipeline_t* pipelines;    // one per bundle kernel
  uint32_t pipeline_count;              // entries in `pipelines` created so far
  kiln_vulkan_buffer_t arena;           // every Arena tensor
  kiln_vulkan_buffer_t constants;       // every Constant tensor (the data segment's start)
  kiln_vulkan_buffer_t staging;         // inputs and outputs go through it
  kiln_vulkan_session_step_t* steps;    // the bundle's dispatches: segments recorded once, host dispatches
  uint32_t step_count;                  // entries in `steps`
  uint8_t* host_arena;                  // host copy of the arena (only with host dispatches)
  size_t host_arena_size;               // its bytes (kiln_pages_free)
  void** host_bindings;                 // binding pointers of the host dispatches
  uint64_t timeout_ns;                  // longest wait for one run
  void** output_copies;                 // per output: host copy for get_output_view (lazily allocated)
  int profiling;                        // nonzero: runs use the profiled lists and time every dispatch
  int profile_valid;                    // nonzero: the last run was profiled
  uint64_t* dispatch_ns;                // per bundle dispatch: its time in the last profiled run
  kiln_vulkan_message_callback_t message;  // the application's callback (kiln.h)
  void* message_user_data;              // passed to `message`
} kiln_vulkan_session_t;

static kiln_vulkan_session_t* kiln_vulkan_session(kiln_backend_state_t* state) {
  return (kiln_vulkan_session_t*)state;
}

static const kiln_vulkan_session_t* kiln_vulkan_session(const kiln_backend_state_t* state) {
  return (const kiln_vulkan_session_t*)state;
}

static void kiln_vulkan_session_free(kiln_backend_state_t* state);
static const char* kiln_vulkan_session_device_name(const kiln_backend_state_t* state);

// The layer's message callback → the application's.
static void kiln_vulkan_session_message(void* user_data, kiln_vulkan_message_severity_t severity,
                                        const char* text) {
  kiln_vulkan_session_t* session = (kiln_vulkan_session_t*)user_data;
  if (session->message) session->message(session->message_user_data, (int)severity, text);
}

// The binding range of a tensor: its bytes rounded up to whole words (>= 4).
static uint64_t kiln_vulkan_tensor_range(const fb::Tensor* tensor) {
  uint64_t range = 0;
  kiln_align_up(tensor->byte_size() ? tensor->byte_size() : 1, 4, &range);  // < 2^63: verified
  return range;
}

// Device index: options->vulkan_device - 1, or the best kind of device.
static kiln_status_t kiln_vulkan_session_pick_device(const kiln_vulkan_instance_t* instance,
                                                     uint32_t requested, uint32_t* out_index) {
  uint32_t count = kiln_vulkan_instance_device_count(instance);
  if (count == 0) return kiln_make_status(KILN_UNSUPPORTED, "vulkan: no device with a compute queue");
  if (requested) {
    if (requested - 1 >= count) {
      return kiln_make_status(KILN_INVALID_ARGUMENT,
                              "vulkan: vulkan_device %u asks for device %u, but there are %u",
                              requested, requested - 1, count);
    }
    *out_index = requested - 1;
    return NULL;
  }
  static const VkPhysicalDeviceType preference[] = {
      VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU, VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU,
      VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU, VK_PHYSICAL_DEVICE_TYPE_CPU};
  for (size_t p = 0; p < sizeof(preference) / sizeof(preference[0]); ++p) {
    for (uint32_t i = 0; i < count; ++i) {
      if (instance->devices[i].properties.deviceType == preference[p]) {
        *out_index = i;
        return NULL;
      }
    }
  }
  *out_index = 0;
  return NULL;
}

static kiln_status_t kiln_vulkan_session_open_device(kiln_vulkan_session_t* session,
                                                     const kiln_session_options_t* options,
                                                     kiln_session_load_stats_t* stats) {
  kiln_vulkan_instance_options_t instance_options;
  memset(&instance_options, 0, sizeof(instance_options));
  if (options->vulkan_validation > KILN_VULKAN_VALIDATE_SYNCHRONIZATION) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "vulkan: unknown vulkan_validation %u",
                            options->vulkan_validation);
  }
  instance_options.validation = (kiln_vulkan_validation_t)options->vulkan_validation;
  if (options->vulkan_message) {
    instance_options.message_callback = kiln_vulkan_session_message;
    instance_options.message_user_data = session;
  }
  uint64_t start = kiln_now_nanoseconds();
  kiln_status_t status = kiln_vulkan_instance_create(&instance_options, &session->instance);
  stats->instance_create_ns = kiln_nanoseconds_since(start);
  if (status) return status;
  kiln_vulkan_device_options_t device_options;
  memset(&device_options, 0, sizeof(device_options));
  KILN_RETURN_IF_ERROR(kiln_vulkan_session_pick_device(session->instance, options->vulkan_device,
                                                       &device_options.physical_device_index));
  const fb::Bundle* bundle = session->model->view.bundle;
  uint32_t library_count = bundle->libraries() ? bundle->libraries()->size() : 0;
  for (uint32_t i = 0; i < library_count; ++i) {
    device_options.features |= (uint32_t)bundle->libraries()->Get(i)->vulkan_features();
  }
  start = kiln_now_nanoseconds();
  status = kiln_vulkan_device_create(session->instance, &device_options, &session->device);
  stats->device_create_ns = kiln_nanoseconds_since(start);
  return status;
}

static kiln_status_t kiln_vulkan_session_create_pipelines(kiln_vulkan_session_t* session,
                                                          const kiln_session_options_t* options,
                                                          kiln_session_load_stats_t* stats) {
  int cache_used = 0;
  KILN_RETURN_IF_ERROR(kiln_vulkan_pipeline_cache_create(session->device, options->vulkan_pipeline_cache,
                                                         options->vulkan_pipeline_cache_size,
                                                         &session->cache, &cache_used));
  stats->pipeline_cache_used = cache_used ? 1 : 0;
  const kiln_bundle_view_t* view = &session->model->view;
  uint32_t count = view->bundle->kernels() ? view->bundle->kernels()->size() : 0;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(count, &session->pipelines));
  for (uint32_t i = 0; i < count; ++i) {
    const fb::Kernel* kernel = view->bundle->kernels()->Get(i);
    const fb::SpirvKernel* module = kernel->spirv();  // verified present for SpirV libraries
    session->pipeline_count = i + 1;
    if (!module) continue;                            // a host kernel (heterogeneous bundle)
    const fb::KernelLibrary* library = view->bundle->libraries()->Get(kernel->library());
    kiln_vulkan_pipeline_options_t pipeline_options;
    memset(&pipeline_options, 0, sizeof(pipeline_options));
    pipeline_options.spirv = view->data_segment + library->offset() + module->offset();
    pipeline_options.spirv_size = (size_t)module->size();
    pipeline_options.entry_point = module->entry_point() ? module->entry_point()->c_str() : NULL;
    pipeline_options.binding_count = module->binding_count();
    pipeline_options.push_constant_size = module->push_constant_size();
    for (uint32_t d = 0; d < 3; ++d) pipeline_options.workgroup_size[d] = module->workgroup_size()->Get(d);
    pipeline_options.cache = session->cache;
    kiln_status_t status =
        kiln_vulkan_pipeline_create(session->device, &pipeline_options, &session->pipelines[i]);
    if (status) {
      return kiln_status_annotate(status, "kernel %u ('%.64s')", i, kernel->name()->c_str());
    }
    stats->pipeline_count++;
  }
  return NULL;
}

// The arena, the constants (uploaded now) and the staging buffer.
static kiln_status_t kiln_vulkan_session_create_buffers(kiln_vulkan_session_t* session,
                                                        kiln_session_load_stats_t* stats) {
  const kiln_model_t* model = session->model;
  const fb::Bundle* bundle = model->view.bundle;
  uint64_t arena_size = 0, constants_end = 0, constants_size = 0, staging_size = 4;
  uint32_t tensor_count = bundle->tensors() ? bundle->tensors()->size() : 0;
  for (uint32_t i = 0; i < tensor_count; ++i) {
    const fb::Tensor* tensor = bundle->tensors()->Get(i);
    uint64_t end = tensor->offset() + kiln_vulkan_tensor_range(tensor);  // verified in range
    if (tensor->storage() == fb::Storage::Constant) {
      if (end > constants_size) constants_size = end;
      if (tensor->offset() + tensor->byte_size() > constants_end) {
        constants_end = tensor->offset() + tensor->byte_size();
      }
    } else if (end > arena_size) {
      arena_size = end;
    }
  }
  for (size_t i = 0; i < model->input_count + model->output_count; ++i) {
    const kiln_tensor_info_t* io = i < model->input_count ? &model->inputs[i]
                                                       : &model->outputs[i - model->input_count];
    if (io->byte_size > staging_size) staging_size = io->byte_size;
  }
  uint32_t dispatch_count = bundle->dispatches() ? bundle->dispatches()->size() : 0;
  for (uint32_t i = 0; i < dispatch_count; ++i) {
    const fb::Dispatch* dispatch = bundle->dispatches()->Get(i);
    for (int up = 0; up < 2; ++up) {
      const flatbuffers::Vector<uint32_t>* list = up ? dispatch->host_uploads() : dispatch->host_downloads();
      for (uint32_t t = 0; list && t < list->size(); ++t) {
        uint64_t bytes = bundle->tensors()->Get(list->Get(t))->byte_size();
        if (bytes > staging_size) staging_size = bytes;
      }
    }
  }
  if (model->view.arena_bytes > arena_size) arena_size = model->view.arena_bytes;
  if (staging_size > KILN_VULKAN_SESSION_STAGING_LIMIT) staging_size = KILN_VULKAN_SESSION_STAGING_LIMIT;
  kiln_align_up(arena_size ? arena_size : 1, KILN_VULKAN_SESSION_SLOT, &arena_size);
  if (session->step_count) {  // host dispatches: a host copy of the arena
    size_t host_size = 0;  // the device arena rounded up: may exceed the verified arena_bytes
    KILN_RETURN_IF_ERROR(kiln_size_from_u64(arena_size, "vulkan: the host copy of the arena", &host_size));
    void* pages = NULL;  // page aligned, like a CPU session's arena
    KILN_RETURN_IF_ERROR(kiln_pages_alloc(host_size, &pages));
    session->host_arena = (uint8_t*)pages;
    session->host_arena_size = host_size;
  }
  KILN_RETURN_IF_ERROR(kiln_vulkan_buffer_create(session->device, KILN_VULKAN_BUFFER_DEVICE, arena_size,
                                                 &session->arena));
  KILN_RETURN_IF_ERROR(kiln_vulkan_buffer_create(session->device, KILN_VULKAN_BUFFER_STAGING,
                                                 staging_size, &session->staging));
  if (constants_size == 0) return NULL;
  kiln_align_up(constants_size, KILN_VULKAN_SESSION_SLOT, &constants_size);
  KILN_RETURN_IF_ERROR(kiln_vulkan_buffer_create(session->device, KILN_VULKAN_BUFFER_DEVICE,
                                                 constants_size, &session->constants));
  if (constants_end == 0) return NULL;
  uint64_t start = kiln_now_nanoseconds();
  kiln_status_t status = kiln_vulkan_buffer_upload(session->device, NULL, &session->constants, 0,
                                                   model->view.data_segment, constants_end);
  stats->parameter_upload_ns = kiln_nanoseconds_since(start);
  return status;
}

// String inputs and outputs (string tables, docs/bundle.md#string-tensors)
// start as tables of empty strings, zero offsets, as in a CPU session's
// zeroed arena: device memory starts undefined, and kernels (host ones, of
// a heterogeneous bundle) read an input that was never set.
static kiln_status_t kiln_vulkan_session_clear_strings(kiln_vulkan_session_t* session) {
  const kiln_model_t* model = session->model;
  size_t largest = 0;  // the largest offsets array: byte_size - string_bytes
  for (size_t i = 0; i < model->input_count + model->output_count; ++i) {
    const kiln_tensor_info_t* io = i < model->input_count ? &model->inputs[i] : &model->outputs[i - model->input_count];
    if (io->dtype == KILN_DTYPE_STRING && io->byte_size - io->string_bytes > largest) {
      largest = (size_t)(io->byte_size - io->string_bytes);  // verified: 4 * (elements + 1) + string_bytes
    }
  }
  if (largest == 0) return NULL;
  void* zeros = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc(largest, 1, &zeros));
  kiln_status_t status = NULL;
  for (size_t i = 0; !status && i < model->input_count + model->output_count; ++i) {
    const kiln_tensor_info_t* io = i < model->input_count ? &model->inputs[i] : &model->outputs[i - model->input_count];
    if (io->dtype != KILN_DTYPE_STRING) continue;
    status = kiln_vulkan_buffer_upload(session->device, &session->staging, &session->arena, io->offset, zeros,
                                       (size_t)(io->byte_size - io->string_bytes));
  }
  free(zeros);
  return status;
}

// Whether dispatch `index` runs on the host (its kernel has no SPIR-V module).
static int kiln_vulkan_session_on_host(const fb::Bundle* bundle, uint32_t index) {
  return bundle->kernels()->Get(bundle->dispatches()->Get(index)->kernel())->spirv() == NULL;
}

// The steps: counts the host dispatches (and allocates the steps) before
// the buffers exist, so that the host arena is made with them.
static kiln_status_t kiln_vulkan_session_plan_steps(kiln_vulkan_session_t* session) {
  const fb::Bundle* bundle = session->model->view.bundle;
  uint32_t count = bundle->dispatches() ? bundle->dispatches()->size() : 0;
  uint32_t steps = 0, host = 0;
  int in_segment = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (kiln_vulkan_session_on_host(bundle, i)) {
      ++steps;
      ++host;
      in_segment = 0;
    } else if (!in_segment) {
      ++steps;
      in_segment = 1;
    }
  }
  if (host == 0) return NULL;  // one list, as for every Vulkan-only bundle
  KILN_RETURN_IF_ERROR(kiln_calloc_array(steps, &session->steps));
  session->step_count = steps;
  return NULL;
}

// Device dispatches [first, end) bound to the session's buffers, recorded once.
static kiln_status_t kiln_vulkan_session_record_segment(kiln_vulkan_session_t* session, uint32_t first,
                                                        uint32_t end, int timestamps,
                                                        kiln_vulkan_command_list_t** out_list) {
  const fb::Bundle* bundle = session->model->view.bundle;
  uint32_t count = end - first;
  size_t total_bindings = 0;  // bounded by the bundle size
  for (uint32_t i = first; i < end; ++i) {
    const fb::Dispatch* dispatch = bundle->dispatches()->Get(i);
    total_bindings += dispatch->bindings() ? dispatch->bindings()->size() : 0;
  }
  kiln_vulkan_dispatch_t* dispatches = NULL;
  kiln_vulkan_binding_t* bindings = NULL;
  kiln_status_t status = kiln_calloc_array(count, &dispatches);
  if (!status) status = kiln_calloc_array(total_bindings, &bindings);
  kiln_vulkan_binding_t* cursor = bindings;
  for (uint32_t i = 0; !status && i < count; ++i) {
    const fb::Dispatch* dispatch = bundle->dispatches()->Get(first + i);
    kiln_vulkan_dispatch_t* out = &dispatches[i];
    out->pipeline = &session->pipelines[dispatch->kernel()];
    out->binding_count = dispatch->bindings() ? dispatch->bindings()->size() : 0;
    out->bindings = cursor;
    for (uint32_t b = 0; b < out->binding_count; ++b) {
      const fb::Binding* binding = dispatch->bindings()->Get(b);
      const fb::Tensor* tensor = bundle->tensors()->Get(binding->tensor());
      cursor[b].buffer = tensor->storage() == fb::Storage::Constant ? &session->constants
                                                                      : &session->arena;
      cursor[b].offset = tensor->offset();
      cursor[b].range = kiln_vulkan_tensor_range(tensor);
      cursor[b].writable = binding->access() != fb::Access::Read;
    }
    cursor += out->binding_count;
    const flatbuffers::Vector<uint32_t>* constants = dispatch->push_constants();
    out->push_constant_count = constants ? constants->size() : 0;
    out->push_constants = constants ? constants->data() : NULL;
    for (uint32_t d = 0; d < 3; ++d) out->workgroup_count[d] = dispatch->workgroup_count()->Get(d);
  }
  kiln_vulkan_command_list_options_t options;
  memset(&options, 0, sizeof(options));
  options.timestamps = timestamps != 0;
  if (!status) status = kiln_vulkan_command_list_create(session->device, dispatches, count, &options, out_list);
  free(dispatches);
  free(bindings);
  return status;
}

// A host dispatch: its bindings point into the host arena or the data segment.
static void kiln_vulkan_session_bind_host(kiln_vulkan_session_t* session, uint32_t index,
                                          kiln_vulkan_session_step_t* step, void** cursor) {
  step->dispatch = index;
  kiln_model_bind_dispatch(session->model, index, session->host_arena, cursor, &step->state);
}

// Every dispatch of the bundle: device segments recorded once, host
// dispatches bound to the host arena.
static kiln_status_t kiln_vulkan_session_record(kiln_vulkan_session_t* session) {
  const fb::Bundle* bundle = session->model->view.bundle;
  uint32_t count = bundle->dispatches() ? bundle->dispatches()->size() : 0;
  if (!session->step_count) {
    KILN_RETURN_IF_ERROR(kiln_calloc_array(1, &session->steps));
    session->step_count = 1;
    session->steps[0].dispatch = 0;
    return kiln_vulkan_session_record_segment(session, 0, count, 0, &session->steps[0].list);
  }
  size_t host_bindings = 0;
  for (uint32_t i = 0; i < count; ++i) {
    const fb::Dispatch* dispatch = bundle->dispatches()->Get(i);
    if (kiln_vulkan_session_on_host(bundle, i) && dispatch->bindings()) {
      host_bindings += dispatch->bindings()->size();
    }
  }
  KILN_RETURN_IF_ERROR(kiln_calloc_array(host_bindings ? host_bindings : 1, &session->host_bindings));
  void** cursor = session->host_bindings;
  uint32_t step = 0;
  for (uint32_t i = 0; i < count;) {
    if (kiln_vulkan_session_on_host(bundle, i)) {
      kiln_vulkan_session_bind_host(session, i, &session->steps[step++], cursor);
      cursor += session->steps[step - 1].state.binding_count;
      ++i;
      continue;
    }
    uint32_t end = i;
    while (end < count && !kiln_vulkan_session_on_host(bundle, end)) ++end;
    session->steps[step].dispatch = i;
    KILN_RETURN_IF_ERROR(kiln_vulkan_session_record_segment(session, i, end, 0, &session->steps[step++].list));
    i = end;
  }
  return NULL;
}

static kiln_status_t kiln_vulkan_session_create(const kiln_model_t* model,
                                                const kiln_session_options_t* options,
                                                kiln_session_load_stats_t* stats,
                                                kiln_backend_state_t** out_state) {
  kiln_vulkan_session_t* session = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(1, &session));
  session->model = model;
  session->message = options->vulkan_message;
  session->message_user_data = options->vulkan_message_user_data;
  uint32_t timeout_ms = options->vulkan_timeout_ms ? options->vulkan_timeout_ms
                                                   : KILN_VULKAN_SESSION_DEFAULT_TIMEOUT_MS;
  session->timeout_ns = (uint64_t)timeout_ms * 1000000ull;
  kiln_status_t status = kiln_calloc_array(model->output_count, &session->output_copies);
  if (!status) status = kiln_vulkan_session_plan_steps(session);
  if (!status) status = kiln_vulkan_session_open_device(session, options, stats);
  uint64_t start = kiln_now_nanoseconds();
  if (!status) {
    status = kiln_vulkan_session_create_pipelines(session, options, stats);
    stats->pipeline_create_ns = kiln_nanoseconds_since(start);
  }
  if (!status) {
    start = kiln_now_nanoseconds();
    status = kiln_vulkan_session_create_buffers(session, stats);
    if (!status) status = kiln_vulkan_session_clear_strings(session);
    // Allocation only: the constants' upload is parameter_upload_ns.
    uint64_t elapsed = kiln_nanoseconds_since(start);
    stats->buffer_create_ns = elapsed > stats->parameter_upload_ns
                                  ? elapsed - stats->parameter_upload_ns : 1;
  }
  if (!status) {
    start = kiln_now_nanoseconds();
    status = kiln_vulkan_session_record(session);
    stats->record_ns = kiln_nanoseconds_since(start);
  }
  if (status) {
    kiln_vulkan_session_free((kiln_backend_state_t*)session);
    return kiln_status_annotate(status, "session: creating a Vulkan session");
  }
  *out_state = (kiln_backend_state_t*)session;
  return NULL;
}

static void kiln_vulkan_session_free(kiln_backend_state_t* state) {
  kiln_vulkan_session_t* session = kiln_vulkan_session(state);
  if (!session) return;
  for (uint32_t i = 0; session->steps && i < session->step_count; ++i) {
    kiln_vulkan_command_list_free(session->steps[i].list);  // waits for a pending run
    kiln_vulkan_command_list_free(session->steps[i].profiled);
  }
  free(session->dispatch_ns);
  if (session->device) {
    kiln_vulkan_buffer_release(session->device, &session->staging);
    kiln_vulkan_buffer_release(session->device, &session->constants);
    kiln_vulkan_buffer_release(session->device, &session->arena);
    for (uint32_t i = 0; i < session->pipeline_count; ++i) {
      kiln_vulkan_pipeline_release(session->device, &session->pipelines[i]);
    }
    kiln_vulkan_pipeline_cache_destroy(session->device, session->cache);
  }
  kiln_vulkan_device_free(session->device);
  kiln_vulkan_instance_free(session->instance);
  for (size_t i = 0; session->output_copies && i < session->model->output_count; ++i) {
    free(session->output_copies[i]);
  }
  free(session->output_copies);
  free(session->pipelines);
  free(session->steps);
  free(session->host_bindings);
  if (session->host_arena) kiln_pages_free(session->host_arena, session->host_arena_size);
  free(session);
}

static kiln_status_t kiln_vulkan_session_write_input(kiln_backend_state_t* state,
                                                     const kiln_tensor_info_t* io, const void* data,
                                                     size_t size) {
  kiln_vulkan_session_t* session = kiln_vulkan_session(state);
  if (size == 0) return NULL;
  return kiln_vulkan_buffer_upload(session->device, &session->staging, &session->arena,
                                   io->offset, data, size);
}

static kiln_status_t kiln_vulkan_session_read_output(kiln_backend_state_t* state,
                                                     const kiln_tensor_info_t* io, void* data) {
  kiln_vulkan_session_t* session = kiln_vulkan_session(state);
  if (io->byte_size == 0) return NULL;
  return kiln_vulkan_buffer_download(session->device, &session->staging, &session->arena,
                                     io->offset, data, io->byte_size);
}

static kiln_status_t kiln_vulkan_session_get_output_view(kiln_backend_state_t* state, size_t index,
                                                         size_t /*byte_size: static shapes only*/,
                                                         const void** out_data) {
  kiln_vulkan_session_t* session = kiln_vulkan_session(state);
  const kiln_tensor_info_t* output = &session->model->outputs[index];
  if (!session->output_copies[index]) {
    KILN_RETURN_IF_ERROR(kiln_calloc(output->byte_size ? output->byte_size : 1, 1,
                                     &session->output_copies[index]));
  }
  KILN_RETURN_IF_ERROR(kiln_vulkan_session_read_output(state, output, session->output_copies[index]));
  *out_data = session->output_copies[index];
  return NULL;
}

// Copies the listed arena tensors between the device arena and the host arena.
static kiln_status_t kiln_vulkan_session_host_copies(kiln_vulkan_session_t* session,
                                                     const flatbuffers::Vector<uint32_t>* list,
                                                     int upload) {
  const fb::Bundle* bundle = session->model->view.bundle;
  for (uint32_t i = 0; list && i < list->size(); ++i) {
    const fb::Tensor* tensor = bundle->tensors()->Get(list->Get(i));  // verified: arena
    if (tensor->byte_size() == 0) continue;
    uint8_t* host = session->host_arena + tensor->offset();
    kiln_status_t status =
        upload ? kiln_vulkan_buffer_upload(session->device, &session->staging, &session->arena,
                                           tensor->offset(), host, tensor->byte_size())
               : kiln_vulkan_buffer_download(session->device, &session->staging, &session->arena,
                                             tensor->offset(), host, tensor->byte_size());
    if (status) {
      return kiln_status_annotate(status, "%s tensor %u for a host dispatch",
                                  upload ? "uploading" : "downloading", list->Get(i));
    }
  }
  return NULL;
}

// A host dispatch: downloads, its workgroups serially in (z, y, x) order, uploads.
static kiln_status_t kiln_vulkan_session_run_host(kiln_vulkan_session_t* session,
                                                  const kiln_vulkan_session_step_t* step) {
  const fb::Dispatch* dispatch = session->model->view.bundle->dispatches()->Get(step->dispatch);
  KILN_RETURN_IF_ERROR(kiln_vulkan_session_host_copies(session, dispatch->host_downloads(), 0));
  uint32_t id[3];
  int32_t result = kiln_kernel_run_serial(session->model->kernels[dispatch->kernel()], &step->state, id);
  if (result != 0) {
    const fb::Kernel* kernel = session->model->view.bundle->kernels()->Get(dispatch->kernel());
    return kiln_make_status(KILN_INTERNAL,
                            "run: host dispatch %u (kernel '%.64s') failed with code %d at "
                            "workgroup (%u, %u, %u)",
                            step->dispatch, kernel->name()->c_str(), result, id[0], id[1], id[2]);
  }
  return kiln_vulkan_session_host_copies(session, dispatch->host_uploads(), 1);
}

static kiln_status_t kiln_vulkan_session_run(kiln_backend_state_t* state, kiln_session_shapes_t*) {
  kiln_vulkan_session_t* session = kiln_vulkan_session(state);
  const int profiling = session->profiling;
  session->profile_valid = 0;
  for (uint32_t i = 0; i < session->step_count; ++i) {
    const kiln_vulkan_session_step_t* step = &session->steps[i];
    if (!step->list) {
      uint64_t start = profiling ? kiln_now_nanoseconds() : 0;
      KILN_RETURN_IF_ERROR(kiln_vulkan_session_run_host(session, step));
      if (profiling) {
        uint64_t elapsed = kiln_now_nanoseconds() - start;
        session->dispatch_ns[step->dispatch] = elapsed ? elapsed : 1;
      }
      continue;
    }
    kiln_vulkan_command_list_t* list = profiling ? step->profiled : step->list;
    KILN_RETURN_IF_ERROR(kiln_vulkan_command_list_submit(list));
    kiln_status_t status = kiln_vulkan_command_list_wait(list, session->timeout_ns);
    if (status) {
      return kiln_status_annotate(status, "run on '%.256s'", kiln_vulkan_session_device_name(state));
    }
    if (profiling) KILN_RETURN_IF_ERROR(kiln_vulkan_command_list_timestamps(list, session->dispatch_ns + step->dispatch));
  }
  session->profile_valid = profiling;
  return NULL;
}

static kiln_status_t kiln_vulkan_session_set_profiling(kiln_backend_state_t* state, int enabled) {
  kiln_vulkan_session_t* session = kiln_vulkan_session(state);
  if (enabled && !session->dispatch_ns) {
    // The profiled lists: each device segment again, with timestamps.
    const fb::Bundle* bundle = session->model->view.bundle;
    uint32_t count = bundle->dispatches() ? bundle->dispatches()->size() : 0;
    KILN_RETURN_IF_ERROR(kiln_calloc_array(count ? count : 1, &session->dispatch_ns));
    for (uint32_t i = 0; i < session->step_count; ++i) {
      kiln_vulkan_session_step_t* step = &session->steps[i];
      if (!step->list) continue;
      kiln_status_t status = kiln_vulkan_session_record_segment(
          session, step->dispatch, step->dispatch + step->list->dispatch_count, 1, &step->profiled);
      if (status) {
        for (uint32_t j = 0; j <= i; ++j) {
          kiln_vulkan_command_list_free(session->steps[j].profiled);
          session->steps[j].profiled = NULL;
        }
        free(session->dispatch_ns);
        session->dispatch_ns = NULL;
        return kiln_status_annotate(status, "set_profiling");
      }
    }
  }
  session->profiling = enabled != 0;
  return NULL;
}

static const uint64_t* kiln_vulkan_session_dispatch_profile(const kiln_backend_state_t* state) {
  const kiln_vulkan_session_t* session = kiln_vulkan_session(state);
  return session->profile_valid ? session->dispatch_ns : NULL;
}

static const char* kiln_vulkan_session_device_name(const kiln_backend_state_t* state) {
  return kiln_vulkan_session(state)->device->physical->properties.deviceName;
}

static kiln_status_t kiln_vulkan_session_get_pipeline_cache(kiln_backend_state_t* state, void* data,
                                                           size_t capacity, size_t* out_size) {
  kiln_vulkan_session_t* session = kiln_vulkan_session(state);
  return kiln_vulkan_pipeline_cache_get_data(session->device, session->cache, data, capacity, out_size);
}

const kiln_backend_t kiln_vulkan_backend = {
    kiln_vulkan_session_create,
    kiln_vulkan_session_free,
    kiln_vulkan_session_write_input,
    kiln_vulkan_session_read_output,
    kiln_vulkan_session_get_output_view,
    kiln_vulkan_session_run,
    kiln_vulkan_session_set_profiling,
    kiln_vulkan_session_dispatch_profile,
    kiln_vulkan_session_device_name,
    kiln_vulkan_session_get_pipeline_cache,
    NULL,  // update_shapes: run-time dimensions are CPU-only so far (docs/dynamic-shapes.md)
};
