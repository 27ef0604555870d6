// Vulkan sessions; see vulkan_session.h.
#include "exec/vulkan_session.h"

#include <stdlib.h>
#include <string.h>

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

struct kiln_vulkan_session_t {
  const kiln_model_t* model;            // must outlive the session
  kiln_vulkan_instance_t* instance;     // libvulkan, the instance, the device list
  kiln_vulkan_device_t* device;         // the chosen device
  VkPipelineCache cache;                // pipelines are created through it
  kiln_vulkan_pipeline_t* pipelines;    // one per bundle kernel
  uint32_t pipeline_count;              // entries in `pipelines` created so far
  kiln_vulkan_buffer_t arena;           // every Arena tensor
  kiln_vulkan_buffer_t constants;       // every Constant tensor (the data segment's start)
  kiln_vulkan_buffer_t staging;         // inputs and outputs go through it
  kiln_vulkan_command_list_t* list;     // the bundle's dispatches, recorded once
  uint64_t timeout_ns;                  // longest wait for one run
  void** output_copies;                 // per output: host copy for output_data (lazily allocated)
  kiln_vulkan_message_callback_t message;  // the application's callback (kiln.h)
  void* message_user_data;              // passed to `message`
};

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
    const fb::SpirvKernel* module = kernel->spirv();  // verified present
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
    session->pipeline_count = i + 1;
    stats->pipeline_count = i + 1;
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
    const kiln_model_io_t* io = i < model->input_count ? &model->inputs[i]
                                                       : &model->outputs[i - model->input_count];
    if (io->info.byte_size > staging_size) staging_size = io->info.byte_size;
  }
  if (model->view.arena_bytes > arena_size) arena_size = model->view.arena_bytes;
  if (staging_size > KILN_VULKAN_SESSION_STAGING_LIMIT) staging_size = KILN_VULKAN_SESSION_STAGING_LIMIT;
  kiln_align_up(arena_size ? arena_size : 1, KILN_VULKAN_SESSION_SLOT, &arena_size);
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

// Every dispatch of the bundle, bound to the session's buffers, recorded once.
static kiln_status_t kiln_vulkan_session_record(kiln_vulkan_session_t* session) {
  const fb::Bundle* bundle = session->model->view.bundle;
  uint32_t count = bundle->dispatches() ? bundle->dispatches()->size() : 0;
  size_t total_bindings = 0;  // bounded by the bundle size
  for (uint32_t i = 0; i < count; ++i) {
    const fb::Dispatch* dispatch = bundle->dispatches()->Get(i);
    total_bindings += dispatch->bindings() ? dispatch->bindings()->size() : 0;
  }
  kiln_vulkan_dispatch_t* dispatches = NULL;
  kiln_vulkan_binding_t* bindings = NULL;
  kiln_status_t status = kiln_calloc_array(count, &dispatches);
  if (!status) status = kiln_calloc_array(total_bindings, &bindings);
  kiln_vulkan_binding_t* cursor = bindings;
  for (uint32_t i = 0; !status && i < count; ++i) {
    const fb::Dispatch* dispatch = bundle->dispatches()->Get(i);
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
  if (!status) {
    status = kiln_vulkan_command_list_create(session->device, dispatches, count, NULL, &session->list);
  }
  free(dispatches);
  free(bindings);
  return status;
}

kiln_status_t kiln_vulkan_session_create(const kiln_model_t* model,
                                         const kiln_session_options_t* options,
                                         kiln_session_load_stats_t* stats,
                                         kiln_vulkan_session_t** out_session) {
  kiln_vulkan_session_t* session = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(1, &session));
  session->model = model;
  session->message = options->vulkan_message;
  session->message_user_data = options->vulkan_message_user_data;
  uint32_t timeout_ms = options->vulkan_timeout_ms ? options->vulkan_timeout_ms
                                                   : KILN_VULKAN_SESSION_DEFAULT_TIMEOUT_MS;
  session->timeout_ns = (uint64_t)timeout_ms * 1000000ull;
  kiln_status_t status = kiln_calloc_array(model->output_count, &session->output_copies);
  if (!status) status = kiln_vulkan_session_open_device(session, options, stats);
  uint64_t start = kiln_now_nanoseconds();
  if (!status) {
    status = kiln_vulkan_session_create_pipelines(session, options, stats);
    stats->pipeline_create_ns = kiln_nanoseconds_since(start);
  }
  if (!status) {
    start = kiln_now_nanoseconds();
    status = kiln_vulkan_session_create_buffers(session, stats);
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
    kiln_vulkan_session_free(session);
    return status;
  }
  *out_session = session;
  return NULL;
}

void kiln_vulkan_session_free(kiln_vulkan_session_t* session) {
  if (!session) return;
  kiln_vulkan_command_list_free(session->list);  // waits for a pending run
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
  free(session);
}

kiln_status_t kiln_vulkan_session_write(kiln_vulkan_session_t* session, const kiln_model_io_t* io,
                                        const void* data, size_t size) {
  if (size == 0) return NULL;
  return kiln_vulkan_buffer_upload(session->device, &session->staging, &session->arena,
                                   io->arena_offset, data, size);
}

kiln_status_t kiln_vulkan_session_read(kiln_vulkan_session_t* session, const kiln_model_io_t* io,
                                       void* data) {
  if (io->info.byte_size == 0) return NULL;
  return kiln_vulkan_buffer_download(session->device, &session->staging, &session->arena,
                                     io->arena_offset, data, io->info.byte_size);
}

kiln_status_t kiln_vulkan_session_output_data(kiln_vulkan_session_t* session, size_t index,
                                              const void** out_data) {
  const kiln_model_io_t* output = &session->model->outputs[index];
  if (!session->output_copies[index]) {
    KILN_RETURN_IF_ERROR(kiln_calloc(output->info.byte_size ? output->info.byte_size : 1, 1,
                                     &session->output_copies[index]));
  }
  KILN_RETURN_IF_ERROR(kiln_vulkan_session_read(session, output, session->output_copies[index]));
  *out_data = session->output_copies[index];
  return NULL;
}

kiln_status_t kiln_vulkan_session_run(kiln_vulkan_session_t* session) {
  KILN_RETURN_IF_ERROR(kiln_vulkan_command_list_submit(session->list));
  kiln_status_t status = kiln_vulkan_command_list_wait(session->list, session->timeout_ns);
  return kiln_status_annotate(status, "run on '%.256s'", kiln_vulkan_session_device_name(session));
}

const char* kiln_vulkan_session_device_name(const kiln_vulkan_session_t* session) {
  return session->device->physical->properties.deviceName;
}

kiln_status_t kiln_vulkan_session_pipeline_cache(kiln_vulkan_session_t* session, void** out_data,
                                                 size_t* out_size) {
  return kiln_vulkan_pipeline_cache_serialize(session->device, session->cache, out_data, out_size);
}
