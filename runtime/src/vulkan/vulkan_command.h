// Command lists: a model's dispatches recorded once into a command buffer
// and replayed by every run.
//
// kiln_vulkan_command_list_create checks every dispatch (bindings inside
// their buffers, offsets aligned, ranges and workgroup counts within the
// device's limits, interface sizes equal to the pipeline's), writes one
// descriptor set per dispatch (buffer + offset + range per binding) and
// records the command buffer: per dispatch, bind the pipeline (when it
// changes), the set and the push constants, then vkCmdDispatch. A
// compute->compute barrier goes before a dispatch that depends on an
// earlier one since the last barrier: one of them writes a range of a buffer
// that the other reads or writes (read-after-write, write-after-read,
// write-after-write). Independent dispatches run without barriers between
// them. The list ends with the barrier every submission ends with
// (KILN_VULKAN_LATER_STAGES), so a download or the next replay sees the
// results.
//
// A run is kiln_vulkan_command_list_submit then kiln_vulkan_command_list_wait
// (with a timeout); nothing is recorded or allocated again. One submission of
// a list may be in flight at a time.
#ifndef KILN_VULKAN_VULKAN_COMMAND_H_
#define KILN_VULKAN_VULKAN_COMMAND_H_

#include <stdint.h>

#include "vulkan/vulkan_memory.h"
#include "vulkan/vulkan_pipeline.h"

// One buffer range bound to a dispatch's binding slot.
typedef struct kiln_vulkan_binding_t {
  const kiln_vulkan_buffer_t* buffer;  // a device buffer; must outlive the list
  uint64_t offset;                     // a multiple of minStorageBufferOffsetAlignment
  uint64_t range;                      // >= 1, at most maxStorageBufferRange, inside the buffer
  int writable;                        // nonzero when the kernel may write it (Write, ReadWrite)
} kiln_vulkan_binding_t;

// One kernel launch.
typedef struct kiln_vulkan_dispatch_t {
  const kiln_vulkan_pipeline_t* pipeline;  // must outlive the list
  const kiln_vulkan_binding_t* bindings;   // slot i is binding i of set 0
  uint32_t binding_count;                  // must equal pipeline->binding_count
  const uint32_t* push_constants;          // copied into the command buffer at creation
  uint32_t push_constant_count;            // words; must equal pipeline->push_constant_size / 4
  uint32_t workgroup_count[3];             // each 1..maxComputeWorkGroupCount[d]
} kiln_vulkan_dispatch_t;

// Zero means the default for every field.
typedef struct kiln_vulkan_command_list_options_t {
  uint32_t debug_no_barriers;  // tests only: omit the barriers between dispatches
  uint32_t timestamps;         // nonzero: a timestamp after each dispatch (profiling)
} kiln_vulkan_command_list_options_t;

typedef struct kiln_vulkan_command_list_t {
  kiln_vulkan_device_t* device;      // must outlive the list
  VkCommandBuffer command_buffer;    // recorded once, submitted by every run
  VkDescriptorPool descriptor_pool;  // holds the sets (VK_NULL_HANDLE if no dispatch binds any)
  VkFence fence;                     // signalled when a submission completes
  uint32_t dispatch_count;           // dispatches recorded
  uint32_t barrier_count;            // barriers recorded between dispatches
  int pending;                       // nonzero: submitted and not yet waited for
  VkQueryPool timestamps;            // with options->timestamps: dispatch_count + 1 timestamps
  uint64_t* ticks;                   // room to read them back (allocated with the pool)
} kiln_vulkan_command_list_t;

// Checks and records `count` dispatches (NULL options: defaults).
kiln_status_t kiln_vulkan_command_list_create(kiln_vulkan_device_t* device,
                                              const kiln_vulkan_dispatch_t* dispatches,
                                              uint32_t count,
                                              const kiln_vulkan_command_list_options_t* options,
                                              kiln_vulkan_command_list_t** out_list);
// Waits for a pending submission (at most the device's transfer timeout)
// and frees the list. If the submission does not finish in time, its Vulkan
// objects are leaked and the device marked wedged (so that freeing it does
// not wait either): freeing never hangs. NULL is ignored.
void kiln_vulkan_command_list_free(kiln_vulkan_command_list_t* list);

// Submits the recorded dispatches. KILN_INVALID_ARGUMENT if the previous
// submission has not been waited for.
kiln_status_t kiln_vulkan_command_list_submit(kiln_vulkan_command_list_t* list);
// Waits at most `timeout_ns` for the submission to complete (NULL at once
// when none is pending). After a timeout the list stays pending: wait again,
// or free it.
kiln_status_t kiln_vulkan_command_list_wait(kiln_vulkan_command_list_t* list,
                                            uint64_t timeout_ns);
// The last completed run's time per dispatch (list->dispatch_count entries,
// each at least 1 ns): the device's timestamps after each dispatch, less
// the one before (dispatches that overlap share time). Needs a list created
// with options->timestamps and waited for.
kiln_status_t kiln_vulkan_command_list_timestamps(const kiln_vulkan_command_list_t* list,
                                                  uint64_t* out_nanoseconds);

#endif  // KILN_VULKAN_VULKAN_COMMAND_H_
