// A kernel library that calls a function it does not define; linked with
// -Wl,--unresolved-symbols=ignore-all. The loader must reject it by name.
#include "kiln_kernel_abi.h"

extern int32_t external_helper(uint32_t value);

static int32_t calls_outside(const kiln_kernel_dispatch_state_t* dispatch,
                             const kiln_kernel_workgroup_state_t* workgroup) {
  (void)dispatch;
  return external_helper(workgroup->workgroup_id[0]);
}

static const char* const kernel_names[] = {"calls_outside"};
static const kiln_kernel_fn_t kernels[] = {calls_outside};
static const kiln_kernel_library_t library = {KILN_KERNEL_ABI_VERSION, 1, kernel_names, kernels};

__attribute__((visibility("default"))) const kiln_kernel_library_t* kiln_kernel_library_query(
    uint32_t abi_version) {
  return abi_version == KILN_KERNEL_ABI_VERSION ? &library : 0;
}
