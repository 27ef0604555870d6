// The Vulkan backend of a runtime built without the Vulkan headers: creating
// a session fails with KILN_UNSUPPORTED, so none of its other functions is
// ever called (they are NULL).
#include "exec/backend.h"

static kiln_status_t kiln_vulkan_session_create(const kiln_model_t*, const kiln_session_options_t*,
                                                kiln_session_load_stats_t*, kiln_backend_state_t**) {
  return kiln_make_status(KILN_UNSUPPORTED,
                          "session: creating a Vulkan session: vulkan: this libkiln was built "
                          "without Vulkan support (the Vulkan headers were missing)");
}

const kiln_backend_t kiln_vulkan_backend = {
    kiln_vulkan_session_create, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
};
