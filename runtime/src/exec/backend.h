// The one interface every session backend implements: a const table of
// functions plus an opaque state. exec/session.cpp owns the public session
// API (argument checks, picking the backend for the bundle, start-up
// timing) and calls through the table, with no backend-specific branches.
//
// Backends: the CPU (exec/cpu_backend.cpp: the arena, bound dispatches and
// the serial/parallel executor) and Vulkan (vulkan/vulkan_backend.cpp, or
// vulkan/vulkan_backend_unavailable.cpp in a build without the Vulkan
// headers). Every function but `create` gets the state `create` made;
// arguments have been checked by session.cpp (indices in range, sizes equal
// to the tensor's, non-NULL pointers). `run` must neither lock nor allocate
// (but for Dynamic tensors whose sizes a data symbol decides: update_shapes).
#ifndef KILN_EXEC_BACKEND_H_
#define KILN_EXEC_BACKEND_H_

#include <stddef.h>
#include <stdint.h>

#include "exec/model.h"
#include "exec/session_shapes.h"
#include "kiln/kiln.h"

// A backend's session state (each backend defines its own and casts).
typedef struct kiln_backend_state_t kiln_backend_state_t;

typedef struct kiln_backend_t {
  // Creates the state for `model` with `options` (complete: every field
  // readable, defaults filled in) and writes the backend's start-up stages
  // into `stats` (on failure too). Failures come back annotated for the
  // caller ("session: ..."), with nothing left allocated.
  kiln_status_t (*create)(const kiln_model_t* model, const kiln_session_options_t* options,
                          kiln_session_load_stats_t* stats, kiln_backend_state_t** out_state);
  // Releases everything `create` made (joins threads, waits for the device).
  void (*free)(kiln_backend_state_t* state);
  // Copies `size` bytes (the input's byte size) into model input `io`.
  kiln_status_t (*write_input)(kiln_backend_state_t* state, const kiln_tensor_info_t* io,
                               const void* data, size_t size);
  // Copies model output `io` (its byte size) into `data`.
  kiln_status_t (*read_output)(kiln_backend_state_t* state, const kiln_tensor_info_t* io,
                               void* data);
  // A view of output `index` (`byte_size` at its current shape), valid
  // until the next run, input or shape change, or free.
  kiln_status_t (*get_output_view)(kiln_backend_state_t* state, size_t index, size_t byte_size,
                                   const void** out_data);
  // Runs every dispatch once, in order. Right after a dispatch that is a
  // data symbol's source (schema/bundle.fbs, Symbol) it reads the value
  // the kernel wrote, calls kiln_session_shapes_define(shapes, ...) and
  // takes the new values as update_shapes does, before the next dispatch.
  // Backends without update_shapes never see data symbols; `shapes` may be
  // NULL for a bundle without data symbols.
  kiln_status_t (*run)(kiln_backend_state_t* state, kiln_session_shapes_t* shapes);
  // Turns per-dispatch timing of later runs on or off.
  kiln_status_t (*set_profiling)(kiln_backend_state_t* state, int enabled);
  // The last run's time per dispatch (nanoseconds, one per bundle
  // dispatch), or NULL when that run was not profiled (or none ran yet).
  const uint64_t* (*dispatch_profile)(const kiln_backend_state_t* state);
  // The device's name: "cpu", or the Vulkan device's (owned by the state).
  const char* (*device_name)(const kiln_backend_state_t* state);
  // Optional (NULL: the device has no pipeline cache): the cache's contents,
  // two-call style: `data` NULL sets *out_size to the bytes needed; else up
  // to `capacity` bytes are copied (too small: KILN_INVALID_ARGUMENT).
  kiln_status_t (*get_pipeline_cache)(kiln_backend_state_t* state, void* data, size_t capacity,
                                      size_t* out_size);
  // Optional (NULL: the backend runs static shapes only, and sessions of
  // bundles with run-time dimensions are KILN_UNSUPPORTED on it): new values
  // of the shape symbols and of every shape expression (exec/session_shapes.h),
  // before the next run: workgroup counts and the kernels' push constants.
  // Allocates only the bytes of Dynamic tensors (schema/bundle.fbs) whose
  // sizes are known now and outgrew what they had (within the session's
  // max_arena_bytes); run calls it too, right after a data symbol's source.
  kiln_status_t (*update_shapes)(kiln_backend_state_t* state, const kiln_session_shapes_t* shapes);
} kiln_backend_t;

// The backends; session.cpp picks one per model.
extern const kiln_backend_t kiln_cpu_backend;
extern const kiln_backend_t kiln_vulkan_backend;

#endif  // KILN_EXEC_BACKEND_H_
