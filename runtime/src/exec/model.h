// The loaded model (kiln_model_t): the verified bundle, its mapped kernel
// libraries and resolved kernels, and the input/output descriptions the API
// hands out. Immutable after kiln_model_load_*; shared by sessions. Loading
// is exec/model.cpp; the accessors (kiln_model_get_*) exec/model_info.cpp.
#ifndef KILN_EXEC_MODEL_H_
#define KILN_EXEC_MODEL_H_

#include <stddef.h>
#include <stdint.h>

#include "bundle/bundle_memory.h"
#include "bundle/bundle_signature.h"
#include "bundle/bundle_verify.h"
#include "cpu/kernel_library.h"
#include "kiln/kiln.h"

struct kiln_model_t {
  kiln_bundle_memory_t memory;               // the bundle's bytes and their owner
  kiln_bundle_view_t view;                   // the verified bundle inside `memory`
  kiln_bundle_signature_t signature;         // its signature trailer, if any, and whether it was checked
  uint32_t flags;                            // KILN_MODEL_LOAD_* flags used at load
  uint64_t max_workgroups;                   // kiln_model_load_options_t.max_workgroups (per-run counts too)
  kiln_kernel_library_handle_t* libraries;   // one per bundle library (NULL if verify-only)
  uint32_t library_count;                    // entries in `libraries`
  kiln_kernel_fn_t* kernels;                 // entry point of each bundle kernel (NULL for SpirV ones)
  uint32_t kernel_count;                     // entries in `kernels`
  uint32_t tensor_count;                     // the bundle's tensors
  uint32_t dispatch_count;                   // the bundle's dispatches
  const int64_t** tensor_shapes;             // per tensor: its dimensions, inside `shapes`
  const int64_t** tensor_min_shapes;         // per tensor: its least dimensions (run-time ones), inside `shapes`
  int64_t* shapes;                           // aligned copies of every tensor's shape and min_shape
  kiln_tensor_info_t* inputs;                // model inputs, in bundle order (struct_size: the library's)
  size_t input_count;                        // entries in `inputs`
  kiln_tensor_info_t* outputs;               // model outputs, in bundle order
  size_t output_count;                       // entries in `outputs`
  uint64_t load_start_ns;                    // kiln_now_nanoseconds() when the load call began
  kiln_session_load_stats_t load_stats;      // the model_load_ns .. kernel_load_ns fields
};

// Describes tensor `index` (< tensor_count) of the model's bundle.
void kiln_model_describe_tensor(const kiln_model_t* model, uint32_t index, kiln_tensor_info_t* out_info);

// Binds dispatch `index` of the model's bundle for a host kernel: sets
// `out_state`'s workgroup counts and push constants (pointing into the
// bundle) and its bindings to `slots` (room for the dispatch's binding
// count), each the tensor's address: constants in the data segment, the
// others at their offset in `arena`. Returns the binding count. Shared by
// CPU sessions and the host steps of heterogeneous Vulkan sessions.
uint32_t kiln_model_bind_dispatch(const kiln_model_t* model, uint32_t index, uint8_t* arena, void** slots,
                                  kiln_kernel_dispatch_state_t* out_state);

#endif  // KILN_EXEC_MODEL_H_
