// GPU schedules (Vulkan target). The default one maps the output's spatial
// axes onto invocations: they are fused into one loop, split by the
// workgroup size, the outer part bound to workgroup x (and y when it needs
// more than 65535 groups, the count every Vulkan device supports) and the
// inner part to local x. Reductions run per invocation, innermost;
// convolutions and matrix products get register tiles (below).
#pragma once

#include <cstdint>
#include <string>

#include "te/schedule.h"
#include "tune/space.h"

namespace kiln::lower {

// Invocations per workgroup of the default GPU schedule (at most 128: the
// portable maxComputeWorkGroupInvocations).
constexpr int64_t kGpuWorkgroupSize = 64;
// Workgroups per dimension every Vulkan device supports.
constexpr int64_t kGpuMaxWorkgroupCount = 65535;
// What a desktop-class GPU (kilnc --vulkan-shared-memory=on) needs in flight
// to be busy: an H200 runs 132 x 2048 invocations at once; below these
// counts its convolutions were latency-bound (docs/vulkan.md).
constexpr int64_t kGpuMinInvocations = 32768;
constexpr int64_t kGpuMinWorkgroups = 256;

void default_gpu_schedule(te::Stage& s);

// Reductions with reuse (conv, matmul): each invocation computes a tile of
// ta outputs along spatial axis a times tb along axis b (each the largest
// divisor of the axis up to that size), unrolled, with its accumulators in
// registers: per reduction step it loads ta + tb operands for ta * tb
// multiply-adds instead of two loads for each. The remaining spatial loops
// spread over invocations as in the default schedule.
// With min_invocations, the tiles shrink (the larger first) until the
// invocations number at least that many, or are 1 x 1.
void schedule_register_tile_gpu(te::Stage& s, size_t a, int64_t ta, size_t b, int64_t tb, int64_t min_invocations = 0);

// 2-D convolutions [N, M, OH, OW] over [C/group, KH, KW] reading the padded
// input xpad and weights w. With `shared` memory (group 1, channels in
// multiples of 16 out and 8 in, maps of 8x8 or more): a workgroup computes 16 channels x 8x8 pixels,
// 64 invocations of 4 channels x 4 pixels of a row each, and copies the
// input and weight slices of every 8 input channels into shared memory
// first, where that makes kGpuMinWorkgroups workgroups. Otherwise register
// tiles of 4 channels x 4 pixels (a depthwise conv shares nothing across
// channels: 4 pixels only), with `shared` shrunk to kGpuMinInvocations.
// Knobs (tune/space.h, workload "conv2d_gpu"; `variant`: what else its key
// names): shared (where the block could run), tile_m, tile_w.
void schedule_conv2d_gpu(te::Stage& s, const te::Tensor& xpad, const te::Tensor& w, bool shared, bool depthwise,
                         tune::Tuning* tuning, const std::string& variant);

// Reductions with few outputs (at most 16384) over 128 elements or more:
// a workgroup per output, its 64 invocations each accumulating every 64th
// element (consecutive invocations read consecutive elements) and combining
// their partial results in shared memory. Returns false (nothing changed)
// elsewhere.
bool schedule_reduce_shared_gpu(te::Stage& s);
// Whether schedule_reduce_shared_gpu applies to `s` (it changes nothing).
bool reduce_fits_shared_gpu(const te::Stage& s);

// Matrix products [batch..., i, j] over k: a workgroup of 8 x 8 invocations
// computes a 32 x 32 block, 4 x 4 per invocation in registers; for each
// slice of 16 along k the invocations copy the slices of a and b the block
// needs into shared memory together (cache_shared), so each element is read
// from global memory once per workgroup instead of once per invocation.
// Small products (under 8 x 8 x 16), and all without `shared` memory, get
// register tiles only. Knobs (workload "matmul_gpu"): shared, tile, side,
// depth (the block), tile_i, tile_j (the register tile).
void schedule_matmul_gpu(te::Stage& s, const te::Tensor& a, const te::Tensor& b, bool shared, tune::Tuning* tuning,
                         const std::string& variant);

}  // namespace kiln::lower
