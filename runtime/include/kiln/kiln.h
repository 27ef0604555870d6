// libkiln: load a Kiln bundle and run it.
//
// Two objects:
//   kiln_model_t    a loaded, verified bundle with its kernels mapped.
//                   Immutable after load; may be shared by many sessions.
//   kiln_session_t  the state of one execution: the arena, the inputs and
//                   outputs, and the dispatch list bound to them at creation.
//                   One thread at a time per session (calls on it are not
//                   synchronized); a session may own worker threads that
//                   run each dispatch in parallel (thread_count).
//
// Every fallible call returns kiln_status_t: NULL means success, anything
// else is an error the caller owns and frees with kiln_status_free.
// Out-parameters are named out_*; they are written only on success.
#ifndef KILN_KILN_H_
#define KILN_KILN_H_

#include <stddef.h>
#include <stdint.h>

// Marks the exported API (the library is built with -fvisibility=hidden).
#if defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

//===----------------------------------------------------------------------===//
// Status
//===----------------------------------------------------------------------===//

typedef enum kiln_status_code_e {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 1,   // the caller passed something wrong
  KILN_INVALID_BUNDLE = 2,     // the bundle failed verification
  KILN_UNSUPPORTED = 3,        // valid, but not runnable here (version, arch)
  KILN_NOT_FOUND = 4,          // a name or file does not exist
  KILN_OUT_OF_MEMORY = 5,
  KILN_IO_ERROR = 6,           // open/read/mmap failed
  KILN_INTERNAL = 7,           // a kernel failed or a runtime invariant broke
} kiln_status_code_t;

typedef struct kiln_status_impl_t* kiln_status_t;  // NULL == OK

KILN_API kiln_status_code_t kiln_status_code(kiln_status_t status);
// The message; valid until kiln_status_free. "OK" for NULL.
KILN_API const char* kiln_status_message(kiln_status_t status);
KILN_API void kiln_status_free(kiln_status_t status);
// Name of a code: "OK", "INVALID_ARGUMENT", ... ("UNKNOWN" otherwise).
KILN_API const char* kiln_status_code_name(kiln_status_code_t code);

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

typedef enum kiln_dtype_e {  // same values as kiln.fb.DType
  KILN_DTYPE_FLOAT32 = 0,
  KILN_DTYPE_FLOAT16 = 1,
  KILN_DTYPE_FLOAT64 = 2,
  KILN_DTYPE_INT8 = 3,
  KILN_DTYPE_INT16 = 4,
  KILN_DTYPE_INT32 = 5,
  KILN_DTYPE_INT64 = 6,
  KILN_DTYPE_UINT8 = 7,
  KILN_DTYPE_BOOL = 8,
} kiln_dtype_t;

KILN_API const char* kiln_dtype_name(kiln_dtype_t dtype);  // "float32", ...
KILN_API size_t kiln_dtype_size(kiln_dtype_t dtype);       // bytes per element; 0 if unknown

typedef struct kiln_tensor_info_t {
  const char* name;       // owned by the model
  kiln_dtype_t dtype;     // element type
  uint32_t rank;          // number of dimensions
  const int64_t* shape;   // `rank` dimensions, owned by the model
  size_t byte_size;       // total bytes
} kiln_tensor_info_t;

//===----------------------------------------------------------------------===//
// Model
//===----------------------------------------------------------------------===//

typedef struct kiln_model_t kiln_model_t;

// Maps the file read-only and verifies it; constants are used in place.
KILN_API kiln_status_t kiln_model_load_file(const char* path, kiln_model_t** out_model);
// Verifies `data`, which the caller keeps alive and unchanged until
// kiln_model_free. If `data` is not 64-byte aligned it is copied.
KILN_API kiln_status_t kiln_model_load_memory(const void* data, size_t size,
                                     kiln_model_t** out_model);
KILN_API void kiln_model_free(kiln_model_t* model);

// Flags for the *_ex loaders.
// Verify the bundle but do not map its kernel libraries: the model can be
// inspected (kiln_model_bundle_data, infos) but kiln_session_create fails.
// Lets tools inspect bundles compiled for another architecture.
#define KILN_MODEL_LOAD_VERIFY_ONLY 1u

// Like kiln_model_load_file / kiln_model_load_memory, with KILN_MODEL_LOAD_* flags.
KILN_API kiln_status_t kiln_model_load_file_ex(const char* path, uint32_t flags,
                                               kiln_model_t** out_model);
KILN_API kiln_status_t kiln_model_load_memory_ex(const void* data, size_t size,
                                                 uint32_t flags,
                                                 kiln_model_t** out_model);

// The verified bundle: the size-prefixed FlatBuffer (starting at its u32 size
// prefix, `*out_size` = 4 + prefix) for read-only use with the generated
// schema API (kiln::fb::GetSizePrefixedBundle). Every index and range in it
// has been checked by the loader. Valid until kiln_model_free.
KILN_API kiln_status_t kiln_model_bundle_data(const kiln_model_t* model,
                                              const void** out_data,
                                              size_t* out_size);
// The data segment (constants, kernel blobs) the bundle's offsets refer to.
KILN_API kiln_status_t kiln_model_data_segment(const kiln_model_t* model,
                                               const void** out_data,
                                               size_t* out_size);

KILN_API size_t kiln_model_input_count(const kiln_model_t* model);
KILN_API size_t kiln_model_output_count(const kiln_model_t* model);
KILN_API kiln_status_t kiln_model_input_info(const kiln_model_t* model, size_t index,
                                    kiln_tensor_info_t* out_info);
KILN_API kiln_status_t kiln_model_output_info(const kiln_model_t* model, size_t index,
                                     kiln_tensor_info_t* out_info);
KILN_API kiln_status_t kiln_model_find_input(const kiln_model_t* model, const char* name,
                                    size_t* out_index);
KILN_API kiln_status_t kiln_model_find_output(const kiln_model_t* model, const char* name,
                                     size_t* out_index);

//===----------------------------------------------------------------------===//
// Session
//===----------------------------------------------------------------------===//

// Most threads a session may use (kiln_session_options_t.thread_count).
#define KILN_SESSION_MAX_THREADS 1024u

// Where a session runs (kiln_session_options_t.device).
typedef enum kiln_device_kind_e {
  KILN_DEVICE_AUTO = 0,    // where the bundle was compiled for: CPU, or Vulkan (kilnc --target=vulkan)
  KILN_DEVICE_CPU = 1,     // a CPU bundle on the calling thread and the session's pool
  KILN_DEVICE_VULKAN = 2,  // a Vulkan bundle on a Vulkan device (libvulkan is loaded at run time)
} kiln_device_kind_t;

// Vulkan validation levels (kiln_session_options_t.vulkan_validation); they
// need the Khronos validation layer installed (else KILN_UNSUPPORTED).
typedef enum kiln_vulkan_validate_e {
  KILN_VULKAN_VALIDATE_OFF = 0,              // production
  KILN_VULKAN_VALIDATE_ON = 1,               // VK_LAYER_KHRONOS_validation
  KILN_VULKAN_VALIDATE_SYNCHRONIZATION = 2,  // the layer plus its synchronization checks
} kiln_vulkan_validate_t;

// Receives each warning (severity 1) and error (severity 2) the Vulkan
// validation layer or driver reports, on the thread that made the call.
typedef void (*kiln_vulkan_message_callback_t)(void* user_data, int severity,
                                               const char* message);

// Called once at the start of each pool thread a session creates, on that
// thread, with its worker index (1..thread_count-1; the caller of
// kiln_session_run is worker 0). Use it to set CPU affinity (e.g. to the big
// cores), priority or a name. It must not call back into the session.
typedef void (*kiln_thread_init_fn_t)(uint32_t worker_index, void* user_data);

// Session options. Compatibility rule: every field's zero value is its
// default, and fields are only ever added at the end. Zero-initialize the
// whole struct (`kiln_session_options_t options = {0};` in C, `= {}` in C++,
// or memset) and set the fields you need; code written against an older
// kiln.h then keeps its meaning when recompiled. Passing NULL means all
// defaults. (The struct has no size field: libkiln is 0.x, and a binary
// built against an older kiln.h must be recompiled, not just relinked.)
typedef struct kiln_session_options_t {
  // Threads that run each dispatch, the calling thread included: 0 or 1 runs
  // everything on the calling thread (no threads, no locks); N > 1 starts
  // N - 1 pool threads at kiln_session_create (joined by kiln_session_free)
  // and splits each dispatch's workgroups into N contiguous ranges.
  // At most KILN_SESSION_MAX_THREADS.
  uint32_t thread_count;
  // Optional (NULL: none): run first on every pool thread; see
  // kiln_thread_init_fn_t. kiln_session_create returns after all have returned.
  kiln_thread_init_fn_t thread_init;
  void* thread_init_user_data;  // passed to `thread_init`
  // Where the session runs (kiln_device_kind_t): 0 is the device the bundle
  // was compiled for; any other kind than that is KILN_INVALID_ARGUMENT.
  // Vulkan sessions ignore the thread fields.
  uint32_t device;
  // Vulkan: which physical device (among those with a compute queue, in the
  // loader's order). 0 picks the first discrete GPU, else integrated, else
  // virtual, else CPU implementation (e.g. Mesa's lavapipe); i + 1 picks
  // device i.
  uint32_t vulkan_device;
  // Vulkan: a kiln_vulkan_validate_t (0: off).
  uint32_t vulkan_validation;
  // Vulkan: optional; receives the validation layer's and driver's messages.
  kiln_vulkan_message_callback_t vulkan_message;
  void* vulkan_message_user_data;  // passed to `vulkan_message`
  // Vulkan: optional pipeline cache contents saved from
  // kiln_session_vulkan_pipeline_cache (e.g. a file next to the bundle).
  // Used only when made by the same device and driver; read during
  // kiln_session_create only.
  const void* vulkan_pipeline_cache;
  size_t vulkan_pipeline_cache_size;  // bytes at `vulkan_pipeline_cache`
  // Vulkan: the longest a run may take, in milliseconds (0: 60000); past it
  // kiln_session_run fails with KILN_INTERNAL.
  uint32_t vulkan_timeout_ms;
} kiln_session_options_t;

typedef struct kiln_session_t kiln_session_t;

// Allocates the arena and binds every dispatch. `options` may be NULL.
// Vulkan: creates the device, the pipelines (through the optional pipeline
// cache), the arena and constant buffers (constants are uploaded once) and
// records the dispatch list once; no libvulkan, no device or a missing
// shader feature is KILN_UNSUPPORTED.
KILN_API kiln_status_t kiln_session_create(const kiln_model_t* model,
                                  const kiln_session_options_t* options,
                                  kiln_session_t** out_session);
KILN_API void kiln_session_free(kiln_session_t* session);

// Copies `byte_size` bytes (must equal the input's byte_size) into the input.
KILN_API kiln_status_t kiln_session_set_input(kiln_session_t* session, size_t index,
                                     const void* data, size_t byte_size);
// Runs the dispatch list once: dispatches in order, each one's workgroups
// spread over the session's threads, with a barrier after each dispatch. A
// kernel failing stops the run with KILN_INTERNAL naming the dispatch, the
// kernel and the workgroup (with several threads: the first failure seen).
KILN_API kiln_status_t kiln_session_run(kiln_session_t* session);
// Profiling. When enabled, kiln_session_run times every dispatch
// (CLOCK_MONOTONIC, around the whole dispatch: all its workgroups on all
// threads, barrier included; on a Vulkan device, the device's timestamps
// after each dispatch, from a copy of the command lists recorded with them
// the first time profiling is enabled: KILN_UNSUPPORTED where the compute
// queue has no timestamps). Disabled (the default) it costs nothing but a
// predictable branch per dispatch.
KILN_API kiln_status_t kiln_session_set_profiling(kiln_session_t* session, int enabled);
// Number of dispatches a run executes, in order (same as the bundle's
// dispatch list). 0 for NULL.
KILN_API size_t kiln_session_dispatch_count(const kiln_session_t* session);
// Time dispatch `dispatch` took in the last run, in nanoseconds (at least 1
// for a dispatch that ran; 0 for one the run did not reach because an earlier
// dispatch failed). KILN_INVALID_ARGUMENT if the index is out of range or the
// last run was made with profiling disabled (or there was no run yet).
KILN_API kiln_status_t kiln_session_dispatch_profile(const kiln_session_t* session,
                                                     size_t dispatch,
                                                     uint64_t* out_nanoseconds);

// Copies the output into `data` (`byte_size` must equal its byte_size).
KILN_API kiln_status_t kiln_session_get_output(kiln_session_t* session, size_t index,
                                      void* data, size_t byte_size);
// Zero-copy view of an output, valid until the next run or free (Vulkan:
// a host copy, downloaded by this call).
KILN_API kiln_status_t kiln_session_output_data(kiln_session_t* session, size_t index,
                                       const void** out_data);

// The device the session runs on: "cpu", or the Vulkan device's name
// (owned by the session).
KILN_API const char* kiln_session_device_name(const kiln_session_t* session);
// Vulkan: the pipeline cache's contents, for
// kiln_session_options_t.vulkan_pipeline_cache next time. *out_data is
// allocated: release it with kiln_free. KILN_INVALID_ARGUMENT for CPU sessions.
KILN_API kiln_status_t kiln_session_vulkan_pipeline_cache(kiln_session_t* session,
                                                          void** out_data, size_t* out_size);
// Frees memory libkiln allocated for the caller (NULL is ignored).
KILN_API void kiln_free(void* data);

// Start-up timing: how long each stage of loading the model, creating the
// session and its first run took, in nanoseconds (CLOCK_MONOTONIC). A stage
// the session's device does not have is 0. Stages are measured inside
// libkiln's calls; the caller's own work between them (filling inputs, ...)
// is only in load_to_first_run_ns. Like the options, fields are only ever
// added at the end.
typedef struct kiln_session_load_stats_t {
  // From the start of the kiln_model_load_* call that made the session's
  // model to the end of the session's first successful kiln_session_run
  // (0 until then). For a later session of the same model it also covers
  // the time before that session was created.
  uint64_t load_to_first_run_ns;
  // kiln_model_load_*: the whole call (the three stages below and the
  // input/output descriptions).
  uint64_t model_load_ns;
  // Mapping the file read-only (or wrapping or copying the caller's memory).
  uint64_t bundle_map_ns;
  // Verifying and parsing the bundle (FlatBuffers verifier, bundle checks,
  // content hash; SPIR-V module checks for Vulkan bundles).
  uint64_t bundle_verify_ns;
  // CPU bundles: loading the kernel libraries (ELF loader) and resolving
  // the kernels. 0 for Vulkan bundles (their pipelines are made per session).
  uint64_t kernel_load_ns;
  // kiln_session_create: the whole call (the stages below).
  uint64_t session_create_ns;
  // Vulkan: loading libvulkan, creating the instance, listing the devices.
  uint64_t instance_create_ns;
  // Vulkan: the logical device with its queue, command pool and fence.
  uint64_t device_create_ns;
  // Vulkan: the pipeline cache and every compute pipeline (shader modules,
  // layouts, the driver compiling the shaders): usually the largest stage.
  uint64_t pipeline_create_ns;
  // Vulkan: the number of pipelines made (one per bundle kernel).
  uint32_t pipeline_count;
  // Vulkan: 1 when options.vulkan_pipeline_cache was given and seeded the
  // cache (made by the same device and driver), else 0.
  uint32_t pipeline_cache_used;
  // Allocating memory: CPU: the arena; Vulkan: the arena, constant and
  // staging buffers.
  uint64_t buffer_create_ns;
  // Vulkan: uploading the constants (weights) to the device. 0 on the CPU,
  // which uses them in place in the mapped bundle.
  uint64_t parameter_upload_ns;
  // Binding the dispatch list: CPU: each dispatch's buffer pointers;
  // Vulkan: descriptor sets and recording the command buffer.
  uint64_t record_ns;
  // CPU: starting the pool threads (thread_count > 1).
  uint64_t thread_start_ns;
  // The session's first successful kiln_session_run (0 until then). It
  // includes one-time costs a later run does not pay (first touch of the
  // arena's pages, a driver's lazy work).
  uint64_t first_run_ns;
} kiln_session_load_stats_t;

// The session's start-up timing (see kiln_session_load_stats_t).
KILN_API kiln_status_t kiln_session_load_stats(const kiln_session_t* session,
                                               kiln_session_load_stats_t* out_stats);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // KILN_KILN_H_
