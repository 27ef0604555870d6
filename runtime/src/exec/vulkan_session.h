// The Vulkan side of a session (kiln_session_t with device Vulkan): a
// bundle whose kernels are SPIR-V modules, run through the Vulkan layer
// (src/vulkan, docs/vulkan.md).
//
// At creation: the instance and device (the bundle's shader features
// enabled), one pipeline per kernel (through the optional pipeline cache),
// one device buffer for the constants (uploaded once) and one for the
// arena, a staging buffer, and the bundle's whole dispatch list recorded
// once into a command list. A run is: submit, wait. Inputs are uploaded
// by set_input, outputs downloaded when read. Bindings cover a tensor's
// bytes rounded up to 4 (shaders address 32-bit words; the memory plan's
// 256-byte slots leave room).
//
// Without the Vulkan headers at build time, vulkan_session_unavailable.cpp
// provides these functions and creation fails with KILN_UNSUPPORTED.
#ifndef KILN_EXEC_VULKAN_SESSION_H_
#define KILN_EXEC_VULKAN_SESSION_H_

#include <stddef.h>

#include "exec/model.h"
#include "kiln/kiln.h"

typedef struct kiln_vulkan_session_t kiln_vulkan_session_t;

// Writes the Vulkan stages of `stats` (instance_create_ns .. record_ns,
// pipeline_count, pipeline_cache_used) as they run, on failure too.
kiln_status_t kiln_vulkan_session_create(const kiln_model_t* model,
                                         const kiln_session_options_t* options,
                                         kiln_session_load_stats_t* stats,
                                         kiln_vulkan_session_t** out_session);
// NULL is ignored.
void kiln_vulkan_session_free(kiln_vulkan_session_t* session);

// `io` is one of the model's inputs; `size` equals its byte size.
kiln_status_t kiln_vulkan_session_write(kiln_vulkan_session_t* session, const kiln_model_io_t* io,
                                        const void* data, size_t size);
// Copies an input's or output's bytes (its byte size) into `data`.
kiln_status_t kiln_vulkan_session_read(kiln_vulkan_session_t* session, const kiln_model_io_t* io,
                                       void* data);
// Output `index` downloaded into the session's host copy of it.
kiln_status_t kiln_vulkan_session_output_data(kiln_vulkan_session_t* session, size_t index,
                                              const void** out_data);
kiln_status_t kiln_vulkan_session_run(kiln_vulkan_session_t* session);
// Turns per-dispatch timing on or off. The first time it is turned on, each
// device segment is recorded again with a timestamp after each dispatch
// (KILN_UNSUPPORTED where the compute queue has no timestamps); host steps
// are timed on the CPU.
kiln_status_t kiln_vulkan_session_set_profiling(kiln_vulkan_session_t* session, int enabled);
// Dispatch `dispatch`'s time in the last run (which must have been
// profiled); `dispatch` is in range.
kiln_status_t kiln_vulkan_session_dispatch_profile(const kiln_vulkan_session_t* session, size_t dispatch,
                                                   uint64_t* out_nanoseconds);

const char* kiln_vulkan_session_device_name(const kiln_vulkan_session_t* session);
kiln_status_t kiln_vulkan_session_pipeline_cache(kiln_vulkan_session_t* session, void** out_data,
                                                 size_t* out_size);

#endif  // KILN_EXEC_VULKAN_SESSION_H_
