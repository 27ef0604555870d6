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

// Linear index of the workgroup (x fastest) and the total count.
static uint32_t linear_id(const kiln_kernel_dispatch_state_t* dispatch,
                          const kiln_kernel_workgroup_state_t* workgroup) {
  const uint32_t* count = dispatch->workgroup_count;
  const uint32_t* id = workgroup->workgroup_id;
  return (id[2] * count[1] + id[1]) * count[0] + id[0];
}

static uint32_t total_count(const kiln_kernel_dispatch_state_t* dispatch) {
  return dispatch->workgroup_count[0] * dispatch->workgroup_count[1] *
         dispatch->workgroup_count[2];
}

// Records each workgroup (one uint32 element per workgroup, at its linear
// index): ids = (x + 1) | (y + 1) << 10 | (z + 1) << 20, counts += 1 (how
// many times it ran, across runs), workers = worker_index.
// Bindings: 0 = ids, 1 = counts (read-write), 2 = workers.
static int32_t workgroup_ids(const kiln_kernel_dispatch_state_t* dispatch,
                             const kiln_kernel_workgroup_state_t* workgroup) {
  if (dispatch->binding_count != 3) return 1;
  const uint32_t* id = workgroup->workgroup_id;
  const uint32_t* count = dispatch->workgroup_count;
  if (id[0] >= count[0] || id[1] >= count[1] || id[2] >= count[2]) return 2;
  uint32_t i = linear_id(dispatch, workgroup);
  ((uint32_t*)dispatch->bindings[0])[i] = (id[0] + 1) | (id[1] + 1) << 10 | (id[2] + 1) << 20;
  ((uint32_t*)dispatch->bindings[1])[i] += 1;
  ((uint32_t*)dispatch->bindings[2])[i] = workgroup->worker_index;
  return 0;
}

// out[i] = in[total - 1 - i] + 1: reads what other workgroups of the previous
// dispatch wrote (a missing barrier shows). Bindings: 0 = in, 1 = out (uint32).
static int32_t reverse_plus_one(const kiln_kernel_dispatch_state_t* dispatch,
                                const kiln_kernel_workgroup_state_t* workgroup) {
  if (dispatch->binding_count != 2) return 1;
  uint32_t i = linear_id(dispatch, workgroup);
  const uint32_t* in = (const uint32_t*)dispatch->bindings[0];
  ((uint32_t*)dispatch->bindings[1])[i] = in[total_count(dispatch) - 1 - i] + 1;
  return 0;
}

// Fails with 9 in the workgroup whose linear index is control[0]; others
// write out[i] = 1. Bindings: 0 = control (uint32[1]), 1 = out (uint32).
static int32_t fail_at(const kiln_kernel_dispatch_state_t* dispatch,
                       const kiln_kernel_workgroup_state_t* workgroup) {
  if (dispatch->binding_count != 2) return 1;
  uint32_t i = linear_id(dispatch, workgroup);
  if (i == ((const uint32_t*)dispatch->bindings[0])[0]) return 9;
  ((uint32_t*)dispatch->bindings[1])[i] = 1;
  return 0;
}

// Waits until flag[0] (a constant the test changes in its own copy of the
// bundle) is nonzero, then writes out[0] = flag[0]; gives up with 3 after
// about 2^36 polls. Bindings: 0 = flag (uint32[1]), 1 = out (uint32[1]).
static int32_t wait_for_flag(const kiln_kernel_dispatch_state_t* dispatch,
                             const kiln_kernel_workgroup_state_t* workgroup) {
  (void)workgroup;
  if (dispatch->binding_count != 2) return 1;
  const uint32_t* flag = (const uint32_t*)dispatch->bindings[0];
  for (uint64_t polls = 0; polls < (1ull << 36); ++polls) {
    uint32_t value = __atomic_load_n(flag, __ATOMIC_ACQUIRE);
    if (value) {
      ((uint32_t*)dispatch->bindings[1])[0] = value;
      return 0;
    }
  }
  return 3;
}

// Writes to the address in push_constants[0] (an unmapped one: the process
// gets SIGSEGV). The RPC server's test of a crashing candidate.
static int32_t crash(const kiln_kernel_dispatch_state_t* dispatch,
                     const kiln_kernel_workgroup_state_t* workgroup) {
  (void)workgroup;
  if (dispatch->push_constant_count < 1) return 1;
  volatile uint32_t* target = (volatile uint32_t*)(uintptr_t)dispatch->push_constants[0];
  *target = 1;
  return 0;
}

// Polls binding 0 until it holds 0xdeadbeef (a float32 of -6e18, which the
// RPC server's pseudo-random inputs never are): a candidate that hangs.
static int32_t spin_forever(const kiln_kernel_dispatch_state_t* dispatch,
                            const kiln_kernel_workgroup_state_t* workgroup) {
  (void)workgroup;
  if (dispatch->binding_count < 1) return 1;
  const uint32_t* flag = (const uint32_t*)dispatch->bindings[0];
  while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != 0xdeadbeefu) {
  }
  return 0;
}

static const char* const kernel_names[] = {"vector_add",    "scale",            "always_fail",
                                           "workgroup_ids", "reverse_plus_one", "fail_at",
                                           "wait_for_flag", "crash",            "spin_forever"};
static const kiln_kernel_fn_t kernels[] = {vector_add,    scale,            always_fail,
                                           workgroup_ids, reverse_plus_one, fail_at,
                                           wait_for_flag, crash,            spin_forever};
// The kernel ABI version the library speaks (the build makes a copy that
// speaks another, -DRUNTIME_TEST_ABI_VERSION=2, for the mismatch test).
#ifndef RUNTIME_TEST_ABI_VERSION
#define RUNTIME_TEST_ABI_VERSION KILN_KERNEL_ABI_VERSION
#endif
static const kiln_kernel_library_t library = {RUNTIME_TEST_ABI_VERSION, 9, kernel_names, kernels};

__attribute__((visibility("default"))) const kiln_kernel_library_t* kiln_kernel_library_query(
    uint32_t abi_version) {
  return abi_version == RUNTIME_TEST_ABI_VERSION ? &library : 0;
}
