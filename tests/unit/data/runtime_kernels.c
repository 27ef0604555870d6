// A tiny kernel library for the runtime's unit tests, built with
//   cc -shared -fPIC -nostdlib -O2 -Wl,--hash-style=both -Wl,-z,now
// It calls nothing outside itself, like compiler-generated libraries.
#include "kiln_kernel_abi.h"

// out[i] = a[i] + b[i] for the push_constants[0] elements of this workgroup.
// Bindings: 0 = a, 1 = b, 2 = out (float32).
static int32_t vector_add(const kiln_kernel_dispatch_state_t* dispatch,
                          const kiln_kernel_workgroup_state_t* workgroup) {
  if (dispatch->binding_count != 3 || dispatch->push_constant_count != 1) return 1;
  const float* a = (const float*)dispatch->bindings[0];
  const float* b = (const float*)dispatch->bindings[1];
  float* out = (float*)dispatch->bindings[2];
  uint32_t n = dispatch->push_constants[0];
  uint32_t base = workgroup->workgroup_id[0] * n;
  for (uint32_t i = 0; i < n; ++i) out[base + i] = a[base + i] + b[base + i];
  return 0;
}

// out[i] = in[i] * factor; push_constants = {elements per workgroup, factor bits}.
// Bindings: 0 = in, 1 = out (float32).
static int32_t scale(const kiln_kernel_dispatch_state_t* dispatch,
                     const kiln_kernel_workgroup_state_t* workgroup) {
  if (dispatch->binding_count != 2 || dispatch->push_constant_count != 2) return 1;
  const float* in = (const float*)dispatch->bindings[0];
  float* out = (float*)dispatch->bindings[1];
  uint32_t n = dispatch->push_constants[0];
  union { uint32_t bits; float value; } factor;
  factor.bits = dispatch->push_constants[1];
  uint32_t base = workgroup->workgroup_id[0] * n;
  for (uint32_t i = 0; i < n; ++i) out[base + i] = in[base + i] * factor.value;
  return 0;
}

// Always reports failure (tests the executor's error path).
static int32_t always_fail(const kiln_kernel_dispatch_state_t* dispatch,
                           const kiln_kernel_workgroup_state_t* workgroup) {
  (void)dispatch;
  (void)workgroup;
  return 7;
}

static const char* const kernel_names[] = {"vector_add", "scale", "always_fail"};
static const kiln_kernel_fn_t kernels[] = {vector_add, scale, always_fail};
static const kiln_kernel_library_t library = {KILN_KERNEL_ABI_VERSION, 3, kernel_names, kernels};

__attribute__((visibility("default"))) const kiln_kernel_library_t* kiln_kernel_library_query(
    uint32_t abi_version) {
  return abi_version == KILN_KERNEL_ABI_VERSION ? &library : 0;
}
