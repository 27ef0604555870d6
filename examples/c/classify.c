// Classifies an image with a Kiln bundle through the C API (kiln.h) and
// prints the top class:
//
//   classify MODEL.kiln IMAGE.npy LABELS.txt
//   -> top: triangle (class 2, p=0.993)
//
// The image is a float32 .npy of the model's input shape (e.g.
// demo/example_triangle.npy); LABELS.txt has one class name per line.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"

// Prints a failed status, frees it and returns 1 (0 for success).
static int failed(kiln_status_t status, const char* what) {
  if (!status) return 0;
  fprintf(stderr, "classify: %s: %s: %s\n", what, kiln_status_code_name(kiln_status_code(status)),
          kiln_status_message(status));
  kiln_status_free(status);
  return 1;
}

// Reads a little-endian float32 C-order .npy file (format 1.0-3.0) into a
// malloc'd buffer; sets *size to its data's bytes. NULL on error.
static void* read_npy(const char* path, size_t* size) {
  FILE* f = fopen(path, "rb");
  if (!f) return NULL;
  unsigned char head[12];
  void* data = NULL;
  if (fread(head, 1, 10, f) == 10 && memcmp(head, "\x93NUMPY", 6) == 0) {
    size_t header = head[8] | (size_t)head[9] << 8;  // version 1: u16 length
    if (head[6] >= 2 && fread(head + 10, 1, 2, f) == 2) header |= (size_t)head[10] << 16 | (size_t)head[11] << 24;
    char* dict = malloc(header + 1);
    if (dict && fread(dict, 1, header, f) == header) {
      dict[header] = '\0';
      if (strstr(dict, "'descr': '<f4'") && strstr(dict, "'fortran_order': False")) {
        long start = ftell(f);
        fseek(f, 0, SEEK_END);
        *size = (size_t)(ftell(f) - start);
        fseek(f, start, SEEK_SET);
        data = malloc(*size ? *size : 1);
        if (data && fread(data, 1, *size, f) != *size) {
          free(data);
          data = NULL;
        }
      }
    }
    free(dict);
  }
  fclose(f);
  return data;
}

// Copies line `index` (0-based) of a text file into `out`; "?" if missing.
static void read_label(const char* path, size_t index, char* out, size_t capacity) {
  snprintf(out, capacity, "?");
  FILE* f = fopen(path, "r");
  if (!f) return;
  char line[256];
  for (size_t i = 0; fgets(line, sizeof(line), f); ++i) {
    if (i == index) {
      line[strcspn(line, "\r\n")] = '\0';
      snprintf(out, capacity, "%s", line);
      break;
    }
  }
  fclose(f);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: classify MODEL.kiln IMAGE.npy LABELS.txt\n");
    return 2;
  }
  size_t image_size = 0;
  float* image = read_npy(argv[2], &image_size);
  if (!image) {
    fprintf(stderr, "classify: cannot read %s (a float32 .npy in C order)\n", argv[2]);
    return 1;
  }
  kiln_model_t* model = NULL;
  kiln_session_t* session = NULL;
  int status = 1;
  const void* view = NULL;
  kiln_tensor_info_t output;
  kiln_tensor_info_init(&output);
  if (failed(kiln_model_load_file(argv[1], &model), "loading the model") ||
      failed(kiln_session_create(model, NULL, &session), "creating a session") ||
      failed(kiln_session_set_input(session, 0, image, image_size), "setting the input") ||
      failed(kiln_session_run(session), "running") ||
      failed(kiln_model_get_output_info(model, 0, &output), "output 0") ||
      failed(kiln_session_get_output_view(session, 0, &view), "reading output 0")) {
    goto done;
  }
  if (output.dtype != KILN_DTYPE_FLOAT32 || output.byte_size < sizeof(float)) {
    fprintf(stderr, "classify: output 0 is not float32 scores\n");
    goto done;
  }
  // Softmax over the scores: the top class and its probability.
  const float* scores = view;
  size_t classes = output.byte_size / sizeof(float), best = 0;
  for (size_t i = 1; i < classes; ++i) {
    if (scores[i] > scores[best]) best = i;
  }
  double sum = 0;
  for (size_t i = 0; i < classes; ++i) sum += exp((double)scores[i] - scores[best]);
  char label[256];
  read_label(argv[3], best, label, sizeof(label));
  printf("top: %s (class %zu, p=%.3f)\n", label, best, 1.0 / sum);
  status = 0;
done:
  kiln_session_free(session);
  kiln_model_free(model);
  free(image);
  return status;
}
