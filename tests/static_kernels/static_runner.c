// Runs Kiln bundles whose kernels are linked into this program (kilnc
// --kernels=static), through the public C API only, and checks the
// promise of static kernels: loading and running creates no executable
// mapping (read from /proc/self/maps before and after).
//
//   static_runner [--no-register] [--expect-exec] BUNDLE OUTDIR [INPUT.bin ...]
//
// INPUT i holds model input i's raw bytes; output i is written to
// OUTDIR/output<i>.bin. The static libraries are registered by
// kiln_test_register_all(), which the test generates (it includes every
// MODEL.kernels.h and calls kiln_static_library_register on each);
// --no-register skips it (the load must then fail). --expect-exec inverts
// the mapping check, for a control run with a bundle that carries its
// kernels (the check must see the code the loader maps).
//
// Exit status: 0 success; 1 a kiln error (message on stderr); 2 usage or
// file error; 3 the executable-mapping check failed.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"

// Defined by the generated register_all.c: registers every linked library.
int kiln_test_register_all(void);

#define MAX_MAPS 4096

// The executable mappings of this process: `count` [start, end) pairs.
typedef struct exec_maps_t {
  unsigned long start[MAX_MAPS];  // first byte of each mapping
  unsigned long end[MAX_MAPS];    // one past its last byte
  int count;                      // entries used
} exec_maps_t;

static int read_exec_maps(exec_maps_t* maps) {
  FILE* f = fopen("/proc/self/maps", "r");
  if (!f) return 0;
  char line[1024];
  maps->count = 0;
  while (fgets(line, sizeof(line), f) && maps->count < MAX_MAPS) {
    unsigned long start, end;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &start, &end, perms) == 3 && perms[2] == 'x') {
      maps->start[maps->count] = start;
      maps->end[maps->count] = end;
      maps->count++;
    }
  }
  fclose(f);
  return 1;
}

// The executable mappings in `after` that `before` does not have (printed).
static int new_exec_maps(const exec_maps_t* before, const exec_maps_t* after) {
  int fresh = 0;
  for (int i = 0; i < after->count; ++i) {
    int seen = 0;
    for (int j = 0; j < before->count && !seen; ++j)
      seen = before->start[j] == after->start[i] && before->end[j] == after->end[i];
    if (!seen) {
      fprintf(stderr, "static_runner: new executable mapping %lx-%lx\n", after->start[i], after->end[i]);
      fresh++;
    }
  }
  return fresh;
}

static int fail(kiln_status_t status, const char* what) {
  fprintf(stderr, "static_runner: %s: %s: %s\n", what, kiln_status_code_name(kiln_status_code(status)),
          kiln_status_message(status));
  kiln_status_free(status);
  return 1;
}

static void* read_file(const char* path, size_t* out_size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  void* data = malloc(size > 0 ? (size_t)size : 1);
  if (data && fread(data, 1, (size_t)size, f) != (size_t)size) {
    free(data);
    data = NULL;
  }
  fclose(f);
  *out_size = (size_t)size;
  return data;
}

int main(int argc, char** argv) {
  int arg = 1, do_register = 1, expect_exec = 0;
  for (; arg < argc && argv[arg][0] == '-'; ++arg) {
    if (strcmp(argv[arg], "--no-register") == 0) do_register = 0;
    else if (strcmp(argv[arg], "--expect-exec") == 0) expect_exec = 1;
    else break;
  }
  if (argc - arg < 2) {
    fprintf(stderr, "usage: static_runner [--no-register] [--expect-exec] BUNDLE OUTDIR [INPUT.bin ...]\n");
    return 2;
  }
  const char* bundle = argv[arg];
  const char* outdir = argv[arg + 1];
  if (do_register && kiln_test_register_all() != 0) return 1;

  exec_maps_t* before = (exec_maps_t*)calloc(2, sizeof(exec_maps_t));
  if (!before || !read_exec_maps(before)) {
    fprintf(stderr, "static_runner: cannot read /proc/self/maps\n");
    return 2;
  }
  kiln_model_t* model = NULL;
  kiln_status_t status = kiln_model_load_file(bundle, &model);
  if (status) return fail(status, "load");
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.thread_count = 2;
  kiln_session_t* session = NULL;
  status = kiln_session_create(model, &options, &session);
  if (status) return fail(status, "session");
  size_t inputs = kiln_model_input_count(model);
  if ((size_t)(argc - arg - 2) != inputs) {
    fprintf(stderr, "static_runner: the model has %zu inputs, %d given\n", inputs, argc - arg - 2);
    return 2;
  }
  for (size_t i = 0; i < inputs; ++i) {
    size_t size = 0;
    void* data = read_file(argv[arg + 2 + i], &size);
    if (!data) {
      fprintf(stderr, "static_runner: cannot read %s\n", argv[arg + 2 + i]);
      return 2;
    }
    status = kiln_session_set_input(session, i, data, size);
    free(data);
    if (status) return fail(status, "set_input");
  }
  status = kiln_session_run(session);
  if (status) return fail(status, "run");
  for (size_t i = 0; i < kiln_model_output_count(model); ++i) {
    const void* view = NULL;
    kiln_tensor_info_t info;
    kiln_tensor_info_init(&info);
    status = kiln_model_get_output_info(model, i, &info);
    if (!status) status = kiln_session_get_output_view(session, i, &view);
    if (status) return fail(status, "output");
    char path[4096];
    snprintf(path, sizeof(path), "%s/output%zu.bin", outdir, i);
    FILE* f = fopen(path, "wb");
    if (!f || fwrite(view, 1, info.byte_size, f) != info.byte_size) {
      fprintf(stderr, "static_runner: cannot write %s\n", path);
      return 2;
    }
    fclose(f);
  }
  exec_maps_t* after = before + 1;
  if (!read_exec_maps(after)) return 2;
  int fresh = new_exec_maps(before, after);
  kiln_session_free(session);
  kiln_model_free(model);
  if (expect_exec ? fresh == 0 : fresh != 0) {
    fprintf(stderr, "static_runner: %d new executable mappings, expected %s\n", fresh, expect_exec ? "some" : "none");
    return 3;
  }
  printf("static_runner: %s ran, %d new executable mappings\n", bundle, fresh);
  return 0;
}
