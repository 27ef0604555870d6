// The public session API (kiln_session_*): argument checks, picking the
// backend for the model's bundle (CPU or Vulkan), start-up timing, and
// calls through the backend's table (exec/backend.h). Nothing here knows
// what a backend does; the run path adds one indirect call per run.
//
// A session serves one thread at a time. That is checked, not assumed: a
// call that finds the session busy in another thread's call is refused
// with KILN_INVALID_ARGUMENT (one atomic exchange per call), so two
// threads sharing a session by mistake get an error instead of silently
// wrong outputs or a thread pool waiting forever.
#include <stdlib.h>
#include <string.h>

#include "base/allocator.h"
#include "base/clock.h"
#include "base/struct_size.h"
#include "exec/backend.h"
#include "exec/session_shapes.h"

namespace fb = kiln::fb;

struct kiln_session_t {
  const kiln_model_t* model;            // must outlive the session
  const kiln_backend_t* backend;        // the device's functions
  kiln_backend_state_t* state;          // the backend's session state
  uint32_t dispatch_count;              // dispatches a run executes (the bundle's)
  kiln_session_load_stats_t load_stats; // start-up timing (kiln_session_get_load_stats)
  kiln_session_shapes_t shapes;         // current input and output shapes (run-time dimensions)
  uint32_t busy;                        // 1 while a call is inside (atomic; see the top of the file)
};

// Resolves changed input shapes and hands the new values to the backend
// (exec/session_shapes.h); a no-op when nothing changed.
static kiln_status_t kiln_session_update_shapes(kiln_session_t* session) {
  if (!session->shapes.dirty) return NULL;
  KILN_RETURN_IF_ERROR(kiln_session_shapes_resolve(&session->shapes));
  kiln_status_t status = session->backend->update_shapes(session->state, session->shapes.symbols, session->shapes.values);
  if (status) session->shapes.dirty = 1;  // resolve again next time
  return status;
}

// Claims `session` for the calling thread's call, or refuses when another
// call holds it. Every successful enter is paired with kiln_session_leave.
static kiln_status_t kiln_session_enter(const kiln_session_t* session, const char* what) {
  uint32_t* busy = (uint32_t*)&session->busy;  // the one field a const call may change
  if (__atomic_exchange_n(busy, 1u, __ATOMIC_ACQUIRE)) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "%s: the session is in use by another thread; a session serves one "
                            "thread at a time (create one session per thread)",
                            what);
  }
  return NULL;
}

static kiln_status_t kiln_session_leave(const kiln_session_t* session, kiln_status_t status) {
  __atomic_store_n((uint32_t*)&session->busy, 0u, __ATOMIC_RELEASE);
  return status;
}

kiln_status_t kiln_session_create(const kiln_model_t* model,
                                  const kiln_session_options_t* options,
                                  kiln_session_t** out_session) {
  uint64_t start = kiln_now_nanoseconds();
  if (!model || !out_session) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "session: NULL model or out_session");
  }
  if (model->flags & KILN_MODEL_LOAD_VERIFY_ONLY) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "session: the model was loaded with KILN_MODEL_LOAD_VERIFY_ONLY "
                            "and has no kernels");
  }
  // The caller's options as this library's struct: fields the caller's
  // kiln.h lacks (or NULL options) are zero, their default.
  kiln_session_options_t complete;
  kiln_session_options_init(&complete);
  if (options) {
    kiln_status_t status = kiln_struct_read(options, sizeof(complete), KILN_SESSION_OPTIONS_MIN_SIZE,
                                            "kiln_session_options_t", &complete);
    if (status) return kiln_status_annotate(status, "session");
  }
  options = &complete;
  uint32_t device = options->device;
  if (device > KILN_DEVICE_VULKAN) {  // KILN_DEVICE_HOST describes dispatches only
    return kiln_make_status(KILN_INVALID_ARGUMENT, "session: unknown device kind %u", device);
  }
  // A bundle without kernel libraries (nothing to run) runs anywhere.
  const fb::Bundle* bundle = model->view.bundle;
  bool has_kernels = bundle->libraries() && bundle->libraries()->size() > 0;
  if (device != KILN_DEVICE_AUTO && has_kernels &&
      (device == KILN_DEVICE_VULKAN) != (model->view.spirv != 0)) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "session: the bundle was compiled for %s and cannot run on %s",
                            model->view.spirv ? "Vulkan" : "the CPU",
                            device == KILN_DEVICE_VULKAN ? "Vulkan" : "the CPU");
  }
  const uint64_t max_arena = options->max_arena_bytes ? options->max_arena_bytes : KILN_DEFAULT_MAX_ARENA_BYTES;
  if (model->view.arena_bytes > max_arena) {  // before any allocation, on every device
    return kiln_make_status(KILN_OUT_OF_MEMORY,
                            "session: the model's arena needs %llu bytes, more than the limit of "
                            "%llu (kiln_session_options_t.max_arena_bytes)",
                            (unsigned long long)model->view.arena_bytes, (unsigned long long)max_arena);
  }
  if (options->thread_count > KILN_SESSION_MAX_THREADS) {  // rejected on every device
    return kiln_make_status(KILN_INVALID_ARGUMENT, "session: thread_count %u exceeds %u",
                            options->thread_count, KILN_SESSION_MAX_THREADS);
  }
  const kiln_backend_t* backend = model->view.spirv ? &kiln_vulkan_backend : &kiln_cpu_backend;
  if (model->view.dynamic && !backend->update_shapes) {
    return kiln_make_status(KILN_UNSUPPORTED,
                            "session: the bundle has dimensions known only at run time, which the %s backend does "
                            "not support yet",
                            model->view.spirv ? "Vulkan" : "CPU");
  }
  kiln_session_t* session = NULL;
  KILN_RETURN_IF_ERROR(kiln_calloc_array(1, &session));
  session->model = model;
  session->backend = backend;
  session->dispatch_count = model->dispatch_count;
  session->load_stats = model->load_stats;
  kiln_status_t status = kiln_session_shapes_create(model, &session->shapes);
  if (!status) status = session->backend->create(model, options, &session->load_stats, &session->state);
  if (status) {
    kiln_session_shapes_free(&session->shapes);
    free(session);
    return status;
  }
  session->load_stats.session_create_ns = kiln_nanoseconds_since(start);
  *out_session = session;
  return NULL;
}

void kiln_session_free(kiln_session_t* session) {
  if (!session) return;
  session->backend->free(session->state);
  kiln_session_shapes_free(&session->shapes);
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
  const kiln_tensor_info_t* input = &model->inputs[index];
  if (byte_size != session->shapes.input_bytes[index]) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "set_input: input '%.64s' takes %zu bytes, got %zu",
                            input->name, session->shapes.input_bytes[index], byte_size);
  }
  if (byte_size && !data) return kiln_make_status(KILN_INVALID_ARGUMENT, "set_input: NULL data");
  KILN_RETURN_IF_ERROR(kiln_session_enter(session, "set_input"));
  return kiln_session_leave(session, session->backend->write_input(session->state, input, data, byte_size));
}

kiln_status_t kiln_session_set_input_shape(kiln_session_t* session, size_t index, const int64_t* shape,
                                           uint32_t rank) {
  if (!session || (rank && !shape)) return kiln_make_status(KILN_INVALID_ARGUMENT, "set_input_shape: NULL argument");
  if (index >= session->model->input_count) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "set_input_shape: index %zu out of range (%zu inputs)", index,
                            session->model->input_count);
  }
  KILN_RETURN_IF_ERROR(kiln_session_enter(session, "set_input_shape"));
  return kiln_session_leave(session, kiln_session_shapes_set_input(&session->shapes, index, shape, rank));
}

// Input or output `index` (`output`: which) at the session's current shapes.
static kiln_status_t kiln_session_get_io_info(kiln_session_t* session, size_t index, bool output,
                                              kiln_tensor_info_t* out_info) {
  const char* what = output ? "get_output_info" : "get_input_info";
  if (!session || !out_info) return kiln_make_status(KILN_INVALID_ARGUMENT, "%s: NULL argument", what);
  size_t count = output ? session->model->output_count : session->model->input_count;
  if (index >= count) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "%s: index %zu out of range (%zu)", what, index, count);
  }
  KILN_RETURN_IF_ERROR(kiln_session_enter(session, what));
  kiln_status_t status = output ? kiln_session_update_shapes(session) : NULL;
  if (status) return kiln_session_leave(session, status);
  kiln_tensor_info_t info = output ? session->model->outputs[index] : session->model->inputs[index];
  info.shape = output ? session->shapes.output_shapes[index] : session->shapes.input_shapes[index];
  info.byte_size = output ? session->shapes.output_bytes[index] : session->shapes.input_bytes[index];
  return kiln_session_leave(session, kiln_struct_write(&info, sizeof(info), KILN_TENSOR_INFO_MIN_SIZE,
                                                       "kiln_tensor_info_t", out_info));
}

kiln_status_t kiln_session_get_input_info(kiln_session_t* session, size_t index, kiln_tensor_info_t* out_info) {
  return kiln_session_get_io_info(session, index, false, out_info);
}

kiln_status_t kiln_session_get_output_info(kiln_session_t* session, size_t index, kiln_tensor_info_t* out_info) {
  return kiln_session_get_io_info(session, index, true, out_info);
}

kiln_status_t kiln_session_run(kiln_session_t* session) {
  if (!session) return kiln_make_status(KILN_INVALID_ARGUMENT, "run: NULL session");
  KILN_RETURN_IF_ERROR(kiln_session_enter(session, "run"));
  // The first successful run ends the start-up (kiln_session_get_load_stats).
  const bool first = session->load_stats.first_run_ns == 0;
  uint64_t start = first ? kiln_now_nanoseconds() : 0;
  kiln_status_t status = kiln_session_update_shapes(session);
  if (status) return kiln_session_leave(session, kiln_status_annotate(status, "run"));
  kiln_session_shapes_begin_run(&session->shapes);
  status = session->backend->run(session->state, &session->shapes);
  if (first && !status) {
    uint64_t end = kiln_now_nanoseconds();
    session->load_stats.first_run_ns = end - start ? end - start : 1;
    session->load_stats.load_to_first_run_ns = end - session->model->load_start_ns;
  }
  return kiln_session_leave(session, status);
}

kiln_status_t kiln_session_get_load_stats(const kiln_session_t* session,
                                          kiln_session_load_stats_t* out_stats) {
  if (!session || !out_stats) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "load_stats: NULL session or out_stats");
  }
  KILN_RETURN_IF_ERROR(kiln_session_enter(session, "load_stats"));
  return kiln_session_leave(session, kiln_struct_write(&session->load_stats, sizeof(session->load_stats),
                                                       KILN_SESSION_LOAD_STATS_MIN_SIZE,
                                                       "kiln_session_load_stats_t", out_stats));
}

kiln_status_t kiln_session_set_profiling(kiln_session_t* session, int enabled) {
  if (!session) return kiln_make_status(KILN_INVALID_ARGUMENT, "set_profiling: NULL session");
  KILN_RETURN_IF_ERROR(kiln_session_enter(session, "set_profiling"));
  return kiln_session_leave(session, session->backend->set_profiling(session->state, enabled));
}

size_t kiln_session_dispatch_count(const kiln_session_t* session) {
  return session ? session->dispatch_count : 0;
}

kiln_status_t kiln_session_get_dispatch_profile(const kiln_session_t* session, size_t dispatch,
                                                uint64_t* out_nanoseconds) {
  if (!session || !out_nanoseconds) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "dispatch_profile: NULL session or out_nanoseconds");
  }
  if (dispatch >= session->dispatch_count) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "dispatch_profile: dispatch %zu out of range (%u dispatches)",
                            dispatch, session->dispatch_count);
  }
  KILN_RETURN_IF_ERROR(kiln_session_enter(session, "dispatch_profile"));
  const uint64_t* times = session->backend->dispatch_profile(session->state);
  if (!times) {
    return kiln_session_leave(session, kiln_make_status(KILN_INVALID_ARGUMENT,
                                                        "dispatch_profile: the last run was not profiled "
                                                        "(kiln_session_set_profiling)"));
  }
  *out_nanoseconds = times[dispatch];
  return kiln_session_leave(session, NULL);
}

kiln_status_t kiln_session_get_output(kiln_session_t* session, size_t index, void* data,
                                      size_t byte_size) {
  if (!session) return kiln_make_status(KILN_INVALID_ARGUMENT, "get_output: NULL session");
  if (index >= session->model->output_count) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "output: index %zu out of range (%zu outputs)",
                            index, session->model->output_count);
  }
  KILN_RETURN_IF_ERROR(kiln_session_enter(session, "get_output"));
  kiln_status_t status = kiln_session_update_shapes(session);
  if (status) return kiln_session_leave(session, status);
  kiln_tensor_info_t output = session->model->outputs[index];
  output.byte_size = session->shapes.output_bytes[index];  // the current shape's bytes
  if (byte_size != output.byte_size) {
    return kiln_session_leave(session, kiln_make_status(KILN_INVALID_ARGUMENT,
                                                        "get_output: output '%.64s' has %zu bytes, buffer has %zu",
                                                        output.name, output.byte_size, byte_size));
  }
  if (byte_size && !data) {
    return kiln_session_leave(session, kiln_make_status(KILN_INVALID_ARGUMENT, "get_output: NULL data"));
  }
  return kiln_session_leave(session, session->backend->read_output(session->state, &output, data));
}

kiln_status_t kiln_session_get_output_view(kiln_session_t* session, size_t index,
                                           const void** out_data) {
  if (!session || !out_data) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "output: NULL session or out_data");
  }
  if (index >= session->model->output_count) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "output: index %zu out of range (%zu outputs)",
                            index, session->model->output_count);
  }
  KILN_RETURN_IF_ERROR(kiln_session_enter(session, "get_output_view"));
  return kiln_session_leave(session, session->backend->get_output_view(session->state, index, out_data));
}

const char* kiln_session_device_name(const kiln_session_t* session) {
  if (!session) return "none";
  return session->backend->device_name(session->state);
}

kiln_status_t kiln_session_get_vulkan_pipeline_cache(kiln_session_t* session, void* data,
                                                     size_t capacity, size_t* out_size) {
  if (!session || !out_size) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "pipeline_cache: NULL argument");
  }
  if (!session->backend->get_pipeline_cache) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "pipeline_cache: not a Vulkan session");
  }
  KILN_RETURN_IF_ERROR(kiln_session_enter(session, "pipeline_cache"));
  return kiln_session_leave(session, session->backend->get_pipeline_cache(session->state, data, capacity, out_size));
}
