// Vulkan sessions in a runtime built without the Vulkan headers: creating
// one fails with KILN_UNSUPPORTED, so nothing else is ever called.
#include "exec/vulkan_session.h"

kiln_status_t kiln_vulkan_session_create(const kiln_model_t*, const kiln_session_options_t*,
                                         kiln_session_load_stats_t*, kiln_vulkan_session_t**) {
  return kiln_make_status(KILN_UNSUPPORTED,
                          "vulkan: this libkiln was built without Vulkan support "
                          "(the Vulkan headers were missing)");
}

void kiln_vulkan_session_free(kiln_vulkan_session_t*) {}

static kiln_status_t kiln_vulkan_session_unreachable(void) {
  return kiln_make_status(KILN_INTERNAL, "vulkan: no Vulkan support in this libkiln");
}

kiln_status_t kiln_vulkan_session_write(kiln_vulkan_session_t*, const kiln_model_io_t*, const void*,
                                        size_t) {
  return kiln_vulkan_session_unreachable();
}

kiln_status_t kiln_vulkan_session_read(kiln_vulkan_session_t*, const kiln_model_io_t*, void*) {
  return kiln_vulkan_session_unreachable();
}

kiln_status_t kiln_vulkan_session_output_data(kiln_vulkan_session_t*, size_t, const void**) {
  return kiln_vulkan_session_unreachable();
}

kiln_status_t kiln_vulkan_session_run(kiln_vulkan_session_t*) {
  return kiln_vulkan_session_unreachable();
}

kiln_status_t kiln_vulkan_session_set_profiling(kiln_vulkan_session_t*, int) {
  return kiln_vulkan_session_unreachable();
}

kiln_status_t kiln_vulkan_session_dispatch_profile(const kiln_vulkan_session_t*, size_t, uint64_t*) {
  return kiln_vulkan_session_unreachable();
}

const char* kiln_vulkan_session_device_name(const kiln_vulkan_session_t*) { return "none"; }

kiln_status_t kiln_vulkan_session_pipeline_cache(kiln_vulkan_session_t*, void**, size_t*) {
  return kiln_vulkan_session_unreachable();
}
