// Sessions and the executor. Everything is bound at creation: the arena is
// allocated once and each dispatch gets its kiln_kernel_dispatch_state_t with
// final buffer pointers, so kiln_session_run is a flat loop over kernels.
#include <stdlib.h>
#include <string.h>

#include "base/allocator.h"
#include "exec/model.h"
#include "kiln_bundle_version.h"

namespace fb = kiln::fb;

// One dispatch, ready to run.
typedef struct kiln_bound_dispatch_t {
  kiln_kernel_dispatch_state_t state;  // what the kernel sees (counts, bindings, constants)
  kiln_kernel_fn_t kernel;             // entry point
  uint32_t kernel_index;               // index into Bundle.kernels (for messages)
} kiln_bound_dispatch_t;

struct kiln_session_t {
  const kiln_model_t* model;            // must outlive the session
  uint8_t* arena;                       // every Arena tensor; zeroed pages (page aligned)
  size_t arena_size;                    // bytes in `arena`
  kiln_bound_dispatch_t* dispatches;    // in execution order
  uint32_t dispatch_count;              // entries in `dispatches`
  void** bindings;                      // storage for all dispatches' binding pointers
  uint32_t thread_count;                // requested threads (not used yet: runs serially)
};

// Base pointer of tensor `index`: in the arena or in the data segment.
static void* kiln_session_tensor_pointer(const kiln_session_t* session, uint32_t index) {
  const fb::Tensor* tensor = session->model->view.bundle->tensors()->Get(index);
  if (tensor->storage() == fb::Storage::Constant) {
    return (void*)(session->model->view.data_segment + tensor->offset());
  }
  return session->arena + tensor->offset();
}

static kiln_status_t kiln_session_bind(kiln_session_t* session) {
  const fb::Bundle* bundle = session->model->view.bundle;
  uint32_t count = bundle->dispatches() ? bundle->dispatches()->size() : 0;
  size_t total_bindings = 0;  // bounded by the bundle size, so no overflow
  for (uint32_t i = 0; i < count; ++i) {
    const fb::Dispatch* dispatch = bundle->dispatches()->Get(i);
    total_bindings += dispatch->bindings() ? dispatch->bindings()->size() : 0;
  }
  KILN_RETURN_IF_ERROR(kiln_calloc_array(count, &session->dispatches));
  KILN_RETURN_IF_ERROR(kiln_calloc_array(total_bindings, &session->bindings));
  session->dispatch_count = count;
  void** cursor = session->bindings;
  for (uint32_t i = 0; i < count; ++i) {
    const fb::Dispatch* dispatch = bundle->dispatches()->Get(i);
    kiln_bound_dispatch_t* bound = &session->dispatches[i];
    bound->kernel_index = dispatch->kernel();
    bound->kernel = session->model->kernels[dispatch->kernel()];
    for (uint32_t d = 0; d < 3; ++d) {
      bound->state.workgroup_count[d] = dispatch->workgroup_count()->Get(d);
    }
    uint32_t binding_count = dispatch->bindings() ? dispatch->bindings()->size() : 0;
    for (uint32_t b = 0; b < binding_count; ++b) {
      cursor[b] = kiln_session_tensor_pointer(session, dispatch->bindings()->Get(b)->tensor());
    }
    bound->state.binding_count = binding_count;
    bound->state.bindings = cursor;
    cursor += binding_count;
    const flatbuffers::Vector<uint32_t>* constants = dispatch->push_constants();
    bound->state.push_constant_count = constants ? constants->size() : 0;
    bound->state.push_constants = constants ? constants->data() : NULL;
  }
  return NULL;
}

kiln_status_t kiln_session_create(const kiln_model_t* model,
                                  const kiln_session_options_t* options,
                                  kiln_session_t** out_session) {
  if (!model || !out_session) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "session: NULL model or out_session");
  }
  if (model->flags & KILN_MODEL_LOAD_VERIFY_ONLY) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "session: the model was loaded with KILN_MODEL_LOAD_VERIFY_ONLY "
                            "and has no kernels");
  }
  kiln_session_t* session = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(1, &session));
  session->model = model;
  session->thread_count = options ? options->thread_count : 0;
  session->arena_size = (size_t)model->view.arena_bytes;  // verified to fit
  void* arena = NULL;
  kiln_status_t status = kiln_pages_alloc(session->arena_size, &arena);
  session->arena = (uint8_t*)arena;
  if (!status) status = kiln_session_bind(session);
  if (status) {
    kiln_session_free(session);
    return kiln_status_annotate(status, "session: creating (arena of %zu bytes)",
                                (size_t)model->view.arena_bytes);
  }
  *out_session = session;
  return NULL;
}

void kiln_session_free(kiln_session_t* session) {
  if (!session) return;
  kiln_pages_free(session->arena, session->arena_size);
  free(session->dispatches);
  free(session->bindings);
  free(session);
}

kiln_status_t kiln_session_set_input(kiln_session_t* session, size_t index, const void* data,
                                     size_t byte_size) {
  if (!session) return kiln_make_status(KILN_INVALID_ARGUMENT, "set_input: NULL session");
  const kiln_model_t* model = session->model;
  if (index >= model->input_count) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "set_input: index %zu out of range (%zu inputs)", index,
                            model->input_count);
  }
  const kiln_model_io_t* input = &model->inputs[index];
  if (byte_size != input->info.byte_size) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "set_input: input '%.64s' takes %zu bytes, got %zu",
                            input->info.name, input->info.byte_size, byte_size);
  }
  if (byte_size && !data) return kiln_make_status(KILN_INVALID_ARGUMENT, "set_input: NULL data");
  if (byte_size) memcpy(session->arena + input->arena_offset, data, byte_size);
  return NULL;
}

// The executor: dispatches in order, workgroups serially in (z, y, x) order.
kiln_status_t kiln_session_run(kiln_session_t* session) {
  if (!session) return kiln_make_status(KILN_INVALID_ARGUMENT, "run: NULL session");
  for (uint32_t i = 0; i < session->dispatch_count; ++i) {
    const kiln_bound_dispatch_t* dispatch = &session->dispatches[i];
    const uint32_t* count = dispatch->state.workgroup_count;
    kiln_kernel_workgroup_state_t workgroup;
    workgroup.worker_index = 0;
    for (uint32_t z = 0; z < count[2]; ++z) {
      for (uint32_t y = 0; y < count[1]; ++y) {
        for (uint32_t x = 0; x < count[0]; ++x) {
          workgroup.workgroup_id[0] = x;
          workgroup.workgroup_id[1] = y;
          workgroup.workgroup_id[2] = z;
          int32_t result = dispatch->kernel(&dispatch->state, &workgroup);
          if (result != 0) {
            const fb::Kernel* kernel =
                session->model->view.bundle->kernels()->Get(dispatch->kernel_index);
            return kiln_make_status(KILN_INTERNAL,
                                    "run: dispatch %u (kernel '%.64s') failed with code %d "
                                    "at workgroup (%u, %u, %u)",
                                    i, kernel->name()->c_str(), result, x, y, z);
          }
        }
      }
    }
  }
  return NULL;
}

kiln_status_t kiln_session_get_output(kiln_session_t* session, size_t index, void* data,
                                      size_t byte_size) {
  const void* source = NULL;
  KILN_RETURN_IF_ERROR(kiln_session_output_data(session, index, &source));
  const kiln_model_io_t* output = &session->model->outputs[index];
  if (byte_size != output->info.byte_size) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "get_output: output '%.64s' has %zu bytes, buffer has %zu",
                            output->info.name, output->info.byte_size, byte_size);
  }
  if (byte_size && !data) return kiln_make_status(KILN_INVALID_ARGUMENT, "get_output: NULL data");
  if (byte_size) memcpy(data, source, byte_size);
  return NULL;
}

kiln_status_t kiln_session_output_data(kiln_session_t* session, size_t index,
                                       const void** out_data) {
  if (!session || !out_data) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "output: NULL session or out_data");
  }
  if (index >= session->model->output_count) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "output: index %zu out of range (%zu outputs)",
                            index, session->model->output_count);
  }
  *out_data = session->arena + session->model->outputs[index].arena_offset;
  return NULL;
}
