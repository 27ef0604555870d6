// GPU schedules (Vulkan target). The default one maps the output's spatial
// axes onto invocations: they are fused into one loop, split by the
// workgroup size, the outer part bound to workgroup x (and y when it needs
// more than 65535 groups, the count every Vulkan device supports) and the
// inner part to local x. Reductions run per invocation, innermost (correct
// first; shared-memory tiles come later).
#pragma once

#include <cstdint>

#include "te/schedule.h"

namespace kiln::lower {

// Invocations per workgroup of the default GPU schedule (at most 128: the
// portable maxComputeWorkGroupInvocations).
constexpr int64_t kGpuWorkgroupSize = 64;
// Workgroups per dimension every Vulkan device supports.
constexpr int64_t kGpuMaxWorkgroupCount = 65535;

void default_gpu_schedule(te::Stage& s);

}  // namespace kiln::lower
