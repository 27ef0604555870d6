/* kiln.h from C (C11): the header compiles as C, its inline initializers
 * work, and a model's contents can be walked with the accessors alone.
 * Called by runtime_api_test.cpp; returns 0, or 1 with a message. */
#include <stdio.h>
#include <string.h>

#include "kiln/kiln.h"

int kiln_test_c_api(const void* bundle, size_t size, char* message, size_t message_size);

/* Records `status` (or `what` failing) in `message`; returns 1. */
static int fail(kiln_status_t status, const char* what, char* message, size_t message_size) {
  snprintf(message, message_size, "%s: %s", what, status ? kiln_status_message(status) : "wrong value");
  kiln_status_free(status);
  return 1;
}

int kiln_test_c_api(const void* bundle, size_t size, char* message, size_t message_size) {
  kiln_model_t* model = NULL;
  kiln_model_load_options_t load;
  kiln_model_load_options_init(&load);
  load.flags = KILN_MODEL_LOAD_VERIFY_ONLY;
  kiln_status_t status = kiln_model_load_memory_ex(bundle, size, &load, &model);
  if (status) return fail(status, "load", message, message_size);
  int result = 0;
  kiln_model_info_t info;
  kiln_model_info_init(&info);
  status = kiln_model_get_info(model, &info);
  if (status) result = fail(status, "get_info", message, message_size);
  for (uint32_t d = 0; !result && d < info.dispatch_count; ++d) {
    kiln_dispatch_info_t dispatch;
    kiln_kernel_info_t kernel;
    kiln_dispatch_info_init(&dispatch);
    kiln_kernel_info_init(&kernel);
    status = kiln_model_get_dispatch_info(model, d, &dispatch);
    if (!status) status = kiln_model_get_kernel_info(model, dispatch.kernel, &kernel);
    if (status) result = fail(status, "dispatch", message, message_size);
    else if (kernel.name[0] == '\0') result = fail(NULL, "kernel name", message, message_size);
  }
  kiln_tensor_info_t tensor;
  kiln_tensor_info_init(&tensor);
  if (!result && (status = kiln_model_get_input_info(model, 0, &tensor)) != NULL) {
    result = fail(status, "get_input_info", message, message_size);
  }
  if (!result && tensor.storage != KILN_STORAGE_ARENA) result = fail(NULL, "input storage", message, message_size);
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  if (!result && (options.struct_size != sizeof(options) || options.thread_count != 0)) {
    result = fail(NULL, "kiln_session_options_init", message, message_size);
  }
  kiln_model_free(model);
  return result;
}
