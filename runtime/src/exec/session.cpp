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
//
// String inputs and outputs (docs/bundle.md#string-tensors) are tables
// whose size varies: their tables are checked here, an input's before
// anything is copied, an output's (which kernels wrote) before its size is
// handed out. A stale table would give wrong strings (kernels clamp what
// they read to the slot, decision 54, but cannot tell), so a run refuses a
// string input whose slot may no longer hold the table last set (see
// kiln_session_string_inputs_ready).
#include <stdlib.h>
#include <string.h>

#include "base/allocator.h"
#include "base/clock.h"
#include "base/string_table.h"
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
  uint8_t* string_inputs;               // per input: KILN_STRING_INPUT_* bits (0 for other dtypes)
  uint32_t busy;                        // 1 while a call is inside (atomic; see the top of the file)
};

// kiln_session_t.string_inputs: the input is a string table; a run may
// overwrite its slot (another tensor shares its bytes, or a kernel writes
// it); it must be set again before the next run (its shape changed, or a
// run overwrote it).
#define KILN_STRING_INPUT 1u
#define KILN_STRING_INPUT_SHARED 2u
#define KILN_STRING_INPUT_STALE 4u

// Whether a run may overwrite Arena tensor `index`'s bytes: a dispatch
// writes it, or another Arena tensor overlaps it (the memory plan reuses
// the slot once the tensor is dead).
static bool kiln_session_tensor_shared(const fb::Bundle* bundle, uint32_t index) {
  const fb::Tensor* tensor = bundle->tensors()->Get(index);
  uint64_t begin = tensor->offset(), end = begin + tensor->byte_size();  // verified in the arena
  for (uint32_t t = 0; t < bundle->tensors()->size(); ++t) {
    const fb::Tensor* other = bundle->tensors()->Get(t);
    if (t != index && other->storage() == fb::Storage::Arena && other->offset() < end &&
        begin < other->offset() + other->byte_size()) {
      return true;
    }
  }
  uint32_t dispatch_count = bundle->dispatches() ? bundle->dispatches()->size() : 0;
  for (uint32_t d = 0; d < dispatch_count; ++d) {
    const auto* bindings = bundle->dispatches()->Get(d)->bindings();
    for (uint32_t b = 0; bindings && b < bindings->size(); ++b) {
      if (bindings->Get(b)->tensor() == index && bindings->Get(b)->access() != fb::Access::Read) return true;
    }
  }
  return false;
}

// kiln_session_t.string_inputs for `model`.
static kiln_status_t kiln_session_find_string_inputs(const kiln_model_t* model, uint8_t** out_flags) {
  KILN_RETURN_IF_ERROR(kiln_calloc_array(model->input_count, out_flags));
  for (size_t i = 0; i < model->input_count; ++i) {
    if (model->inputs[i].dtype != KILN_DTYPE_STRING) continue;
    (*out_flags)[i] = KILN_STRING_INPUT;
    if (kiln_session_tensor_shared(model->view.bundle, model->inputs[i].index)) (*out_flags)[i] |= KILN_STRING_INPUT_SHARED;
  }
  return NULL;
}

// Before a run: every string input holds the table last set (or the
// zeroed slot's empty strings).
static kiln_status_t kiln_session_string_inputs_ready(const kiln_session_t* session) {
  for (size_t i = 0; i < session->model->input_count; ++i) {
    if (!(session->string_inputs[i] & KILN_STRING_INPUT_STALE)) continue;
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "run: string input '%.64s' must be set (kiln_session_set_input) after a change of its "
                            "shape or a run, which may reuse its memory",
                            session->model->inputs[i].name);
  }
  return NULL;
}

// Checks string input `index`'s table (`byte_size` bytes at `data`) at the
// input's current shape, before anything is copied.
static kiln_status_t kiln_session_check_string_input(const kiln_session_t* session, size_t index, const void* data,
                                                     size_t byte_size) {
  const kiln_tensor_info_t* input = &session->model->inputs[index];
  uint64_t count = kiln_shape_elements(session->shapes.input_shapes[index], input->rank);
  size_t used = 0;
  kiln_status_t status = kiln_string_table_check(data, byte_size, count, true, KILN_INVALID_ARGUMENT, &used);
  if (status) return kiln_status_annotate(status, "set_input: string input '%.64s'", input->name);
  uint64_t bytes = used - 4 * (count + 1);  // offsets[count]
  if (bytes > input->string_bytes) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "set_input: string input '%.64s' holds %llu bytes, more than the %llu the bundle was "
                            "compiled for (kilnc --string-bytes)",
                            input->name, (unsigned long long)bytes, (unsigned long long)input->string_bytes);
  }
  return NULL;
}

// String output `index` after the last run: the backend's view of its
// slot and the used size of the table the kernels wrote there (checked:
// a bad table is KILN_INTERNAL). Shapes are resolved.
static kiln_status_t kiln_session_string_output(kiln_session_t* session, size_t index, const void** out_view,
                                                size_t* out_used) {
  const kiln_tensor_info_t* output = &session->model->outputs[index];
  KILN_RETURN_IF_ERROR(
      session->backend->get_output_view(session->state, index, session->shapes.output_bytes[index], out_view));
  uint64_t count = kiln_shape_elements(session->shapes.output_shapes[index], output->rank);
  kiln_status_t status = kiln_string_table_check(*out_view, session->shapes.output_bytes[index], count, false,
                                                 KILN_INTERNAL, out_used);
  return kiln_status_annotate(status, "string output '%.64s' (a kernel wrote no valid string table)", output->name);
}

// Resolves changed input shapes and hands the new values to the backend
// (exec/session_shapes.h); a no-op when nothing changed.
static kiln_status_t kiln_session_update_shapes(kiln_session_t* session) {
  if (!session->shapes.dirty) return NULL;
  KILN_RETURN_IF_ERROR(kiln_session_shapes_resolve(&session->shapes));
  kiln_status_t status = session->backend->update_shapes(session->state, &session->shapes);
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
  if (!status) status = kiln_session_find_string_inputs(model, &session->string_inputs);
  if (!status) status = session->backend->create(model, options, &session->load_stats, &session->state);
  if (status) {
    kiln_session_shapes_free(&session->shapes);
    free(session->string_inputs);
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
  free(session->string_inputs);
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
  // A table, whose size its offsets say (from the model: nothing of the
  // session is read before kiln_session_enter).
  const bool string = input->dtype == KILN_DTYPE_STRING;
  if (!string && byte_size != session->shapes.input_bytes[index]) {
    return kiln_make_status(KILN_INVALID_ARGUMENT,
                            "set_input: input '%.64s' takes %zu bytes, got %zu",
                            input->name, session->shapes.input_bytes[index], byte_size);
  }
  if ((byte_size || string) && !data) return kiln_make_status(KILN_INVALID_ARGUMENT, "set_input: NULL data");
  KILN_RETURN_IF_ERROR(kiln_session_enter(session, "set_input"));
  kiln_status_t status = string ? kiln_session_check_string_input(session, index, data, byte_size) : NULL;
  if (!status) status = session->backend->write_input(session->state, input, data, byte_size);
  if (!status) session->string_inputs[index] &= (uint8_t)~KILN_STRING_INPUT_STALE;
  return kiln_session_leave(session, status);
}

kiln_status_t kiln_session_set_input_shape(kiln_session_t* session, size_t index, const int64_t* shape,
                                           uint32_t rank) {
  if (!session || (rank && !shape)) return kiln_make_status(KILN_INVALID_ARGUMENT, "set_input_shape: NULL argument");
  if (index >= session->model->input_count) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "set_input_shape: index %zu out of range (%zu inputs)", index,
                            session->model->input_count);
  }
  KILN_RETURN_IF_ERROR(kiln_session_enter(session, "set_input_shape"));
  const int64_t* before = session->shapes.input_shapes[index];
  bool changed = rank == session->model->inputs[index].rank && rank && memcmp(before, shape, rank * sizeof(int64_t));
  kiln_status_t status = kiln_session_shapes_set_input(&session->shapes, index, shape, rank);
  // A string table's offsets depend on its element count: the one set
  // before no longer fits the new shape.
  if (!status && changed && session->string_inputs[index]) session->string_inputs[index] |= KILN_STRING_INPUT_STALE;
  return kiln_session_leave(session, status);
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
  const void* view = NULL;  // a string output: the size of the table the last run wrote
  status = output && info.dtype == KILN_DTYPE_STRING ? kiln_session_string_output(session, index, &view, &info.byte_size)
                                                     : NULL;
  if (status) return kiln_session_leave(session, kiln_status_annotate(status, "%s", what));
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
  status = kiln_session_string_inputs_ready(session);
  if (status) return kiln_session_leave(session, status);
  kiln_session_shapes_begin_run(&session->shapes);
  status = session->backend->run(session->state, &session->shapes);
  for (size_t i = 0; i < session->model->input_count; ++i) {  // (a failed run may have written too)
    if (session->string_inputs[i] & KILN_STRING_INPUT_SHARED) session->string_inputs[i] |= KILN_STRING_INPUT_STALE;
  }
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
  const void* view = NULL;  // a string output: exactly the table the last run wrote
  status = output.dtype == KILN_DTYPE_STRING ? kiln_session_string_output(session, index, &view, &output.byte_size)
                                            : NULL;
  if (status) return kiln_session_leave(session, kiln_status_annotate(status, "get_output"));
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
  if (session->model->outputs[index].dtype == KILN_DTYPE_STRING) {  // its table, checked
    kiln_status_t status = kiln_session_update_shapes(session);
    const void* view = NULL;
    size_t used = 0;
    if (!status) status = kiln_session_string_output(session, index, &view, &used);
    if (!status) *out_data = view;
    return kiln_session_leave(session, kiln_status_annotate(status, "get_output_view"));
  }
  kiln_status_t status = kiln_session_update_shapes(session);
  if (!status) status = session->backend->get_output_view(session->state, index, session->shapes.output_bytes[index], out_data);
  return kiln_session_leave(session, kiln_status_annotate(status, "get_output_view"));
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
