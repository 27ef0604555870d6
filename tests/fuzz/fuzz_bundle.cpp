// Fuzz harness: bundles (runtime/src/bundle, exec/model.cpp, exec/model_info.cpp).
//
// Feeds: byte 0 picks a mode, the rest is a bundle.
//   mode 0  the bytes as they are;
//   mode 1  "rehash": the content_hash field is recomputed the way
//           tests/unit/runtime_bundle_builder.cpp's RehashBundle does, so a
//           mutation gets past the hash check into the rest of the verifier;
//   mode 2  signature with trusted keys: the trailer's own public key (if the
//           input ends like a trailer) and a fixed one, so the Ed25519 and
//           SHA-512 code runs on every input;
//   mode 3  signature with only the fixed key (the "not a trusted signer" path).
// Loads with KILN_MODEL_LOAD_VERIFY_ONLY (no kernel is ever mapped or called),
// from a 64-byte aligned copy (the in-place path).
//
// Must hold: no crash, leak or sanitizer report; a failed load returns a
// status with a message and no model; a loaded model answers every accessor
// (kiln_model_get_info, every tensor, node, attribute, library, kernel,
// dispatch and binding, inputs and outputs, find by name) with OK, strings
// non-NULL and NUL-terminated, indices in range, byte sizes that match
// shapes, blobs and constants inside the bundle; an index one past the end
// is KILN_INVALID_ARGUMENT; a session cannot be created.
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bundle_generated.h"
#include "base/hash.h"
#include "bundle/bundle_signature.h"
#include "kiln/kiln.h"

namespace fb = kiln::fb;

namespace {

// Aborts with a message (libFuzzer records the input as a crash).
#define FUZZ_CHECK(cond)                                                        \
  do {                                                                          \
    if (!(cond)) {                                                              \
      fprintf(stderr, "fuzz_bundle: check failed: %s (line %d)\n", #cond, __LINE__); \
      abort();                                                                  \
    }                                                                           \
  } while (0)

// A public key no bundle is signed with.
const uint8_t kFixedKey[32] = {0xd7, 0x5a, 0x98, 0x01, 0x82, 0xb1, 0x0a, 0xb7, 0xd5, 0x4b, 0xfe,
                               0xd3, 0xc9, 0x64, 0x07, 0x3a, 0x0e, 0xe1, 0x72, 0xf3, 0xda, 0xa6,
                               0x23, 0x25, 0xaf, 0x02, 0x1a, 0x68, 0xf7, 0x07, 0x51, 0x1a};

// Offset of a scalar field of the root Bundle table, or 0 when absent. Only
// called on a buffer the FlatBuffers verifier accepted.
size_t FieldOffset(const uint8_t* file, flatbuffers::voffset_t field) {
  const fb::Bundle* bundle = fb::GetSizePrefixedBundle(file);
  const uint8_t* address = reinterpret_cast<const flatbuffers::Table*>(bundle)->GetAddressOf(field);
  return address ? (size_t)(address - file) : 0;
}

// Recomputes Bundle.content_hash in place (RehashBundle's rule: XXH64 of
// [0, max(4 + prefix, data segment end)) with the hash field read as zero).
void Rehash(uint8_t* file, size_t size) {
  if (size < 8) return;
  uint32_t prefix;
  memcpy(&prefix, file, 4);
  if ((uint64_t)prefix + 4 > size) return;
  flatbuffers::Verifier verifier(file, size, flatbuffers::Verifier::Options());
  if (!fb::VerifySizePrefixedBundleBuffer(verifier)) return;
  size_t hash = FieldOffset(file, fb::Bundle::VT_CONTENT_HASH);
  size_t dso_at = FieldOffset(file, fb::Bundle::VT_DATA_SEGMENT_OFFSET);
  size_t dss_at = FieldOffset(file, fb::Bundle::VT_DATA_SEGMENT_SIZE);
  if (hash == 0 || hash + 8 > size) return;
  uint64_t end = (uint64_t)prefix + 4, dso = 0, dss = 0;
  if (dso_at && dss_at && dso_at + 8 <= size && dss_at + 8 <= size) {
    memcpy(&dso, file + dso_at, 8);
    memcpy(&dss, file + dss_at, 8);
    if (dso + dss >= dso && dso + dss > end) end = dso + dss;
  }
  if (end > size) return;  // the runtime rejects it before hashing
  uint64_t value = kiln_xxh64(file, (size_t)end, hash, 8);
  memcpy(file + hash, &value, 8);
}

// Touches every byte of a string the model returned.
size_t CheckString(const char* s) {
  FUZZ_CHECK(s != NULL);
  return strlen(s);
}

// True when [p, p + n) lies inside [base, base + size).
bool Inside(const void* p, uint64_t n, const uint8_t* base, size_t size) {
  const uint8_t* b = (const uint8_t*)p;
  return b >= base && (uint64_t)(b - base) <= size && n <= size - (size_t)(b - base);
}

// A failed call must say why; frees the status.
void ExpectError(kiln_status_t status, kiln_status_code_t code) {
  FUZZ_CHECK(status != NULL);
  FUZZ_CHECK(kiln_status_code(status) == code);
  CheckString(kiln_status_message(status));
  kiln_status_free(status);
}

volatile uint64_t g_sink;  // keeps reads of returned bytes from being optimized out

void CheckTensor(const kiln_tensor_info_t& t, const kiln_model_info_t& info, const uint8_t* file,
                 size_t size) {
  CheckString(t.name);
  const bool string = t.dtype == KILN_DTYPE_STRING;  // a string table (docs/bundle.md#string-tensors)
  FUZZ_CHECK(string ? t.string_bytes <= 0xFFFFFFFFull : kiln_dtype_size(t.dtype) != 0 && t.string_bytes == 0);
  FUZZ_CHECK(t.index < info.tensor_count);
  uint64_t elements = 1;
  for (uint32_t d = 0; d < t.rank; ++d) {
    FUZZ_CHECK(t.shape != NULL && t.shape[d] >= 0);
    FUZZ_CHECK(!__builtin_mul_overflow(elements, (uint64_t)t.shape[d], &elements));
  }
  uint64_t bytes = 0;
  FUZZ_CHECK(string ? !__builtin_mul_overflow(elements + 1, 4, &bytes) &&
                          !__builtin_add_overflow(bytes, t.string_bytes, &bytes)
                    : !__builtin_mul_overflow(elements, kiln_dtype_size(t.dtype), &bytes));
  FUZZ_CHECK(bytes == t.byte_size);
  if (string && t.storage == KILN_STORAGE_CONSTANT) {  // a verified table: offsets[n] == string_bytes
    uint32_t last;
    memcpy(&last, (const uint8_t*)t.data + 4 * elements, 4);
    FUZZ_CHECK(last == t.string_bytes);
  }
  if (t.storage == KILN_STORAGE_CONSTANT) {
    FUZZ_CHECK(t.byte_size == 0 || Inside(t.data, t.byte_size, file, size));
    FUZZ_CHECK(t.offset <= info.data_segment_size && t.byte_size <= info.data_segment_size - t.offset);
    if (t.byte_size) g_sink += ((const uint8_t*)t.data)[t.byte_size - 1];
  } else {
    FUZZ_CHECK(t.storage == KILN_STORAGE_ARENA && t.data == NULL);
    FUZZ_CHECK(t.offset <= info.arena_bytes && t.byte_size <= info.arena_bytes - t.offset);
  }
}

// Walks every accessor of a loaded model and checks what it returns.
void WalkModel(const kiln_model_t* model, const uint8_t* file, size_t size) {
  kiln_model_info_t info;
  kiln_model_info_init(&info);
  FUZZ_CHECK(kiln_model_get_info(model, &info) == NULL);
  CheckString(info.producer);
  FUZZ_CHECK(info.data_segment_offset <= size && info.data_segment_size <= size - info.data_segment_offset);
  for (uint32_t i = 0; i < info.tensor_count; ++i) {
    kiln_tensor_info_t t;
    kiln_tensor_info_init(&t);
    FUZZ_CHECK(kiln_model_get_tensor_info(model, i, &t) == NULL);
    FUZZ_CHECK(t.index == i);
    CheckTensor(t, info, file, size);
  }
  kiln_tensor_info_t t;
  kiln_tensor_info_init(&t);
  ExpectError(kiln_model_get_tensor_info(model, info.tensor_count, &t), KILN_INVALID_ARGUMENT);

  for (int output = 0; output < 2; ++output) {
    size_t count = output ? kiln_model_output_count(model) : kiln_model_input_count(model);
    for (size_t i = 0; i < count; ++i) {
      kiln_tensor_info_init(&t);
      FUZZ_CHECK((output ? kiln_model_get_output_info(model, i, &t) : kiln_model_get_input_info(model, i, &t)) == NULL);
      CheckTensor(t, info, file, size);
      size_t found = SIZE_MAX;
      FUZZ_CHECK((output ? kiln_model_find_output(model, t.name, &found) : kiln_model_find_input(model, t.name, &found)) == NULL);
      FUZZ_CHECK(found < count);
      kiln_tensor_info_t same;
      kiln_tensor_info_init(&same);
      FUZZ_CHECK((output ? kiln_model_get_output_info(model, found, &same) : kiln_model_get_input_info(model, found, &same)) == NULL);
      FUZZ_CHECK(strcmp(same.name, t.name) == 0);
    }
    kiln_tensor_info_init(&t);
    ExpectError(output ? kiln_model_get_output_info(model, count, &t) : kiln_model_get_input_info(model, count, &t),
                KILN_INVALID_ARGUMENT);
    size_t found;
    kiln_status_t missing = output ? kiln_model_find_output(model, "\x01no such tensor", &found)
                                   : kiln_model_find_input(model, "\x01no such tensor", &found);
    FUZZ_CHECK(missing != NULL);
    kiln_status_free(missing);
  }

  for (uint32_t n = 0; n < info.node_count; ++n) {
    kiln_node_info_t node;
    kiln_node_info_init(&node);
    FUZZ_CHECK(kiln_model_get_node_info(model, n, &node) == NULL);
    CheckString(node.name);
    CheckString(node.op_type);
    for (uint32_t i = 0; i < node.input_count; ++i) FUZZ_CHECK(node.inputs[i] < info.tensor_count);
    for (uint32_t i = 0; i < node.output_count; ++i) FUZZ_CHECK(node.outputs[i] < info.tensor_count);
    for (uint32_t a = 0; a <= node.attribute_count; ++a) {
      kiln_attribute_info_t attribute;
      kiln_attribute_info_init(&attribute);
      kiln_status_t status = kiln_model_get_attribute_info(model, n, a, &attribute);
      if (a == node.attribute_count) {
        ExpectError(status, KILN_INVALID_ARGUMENT);
        break;
      }
      FUZZ_CHECK(status == NULL);
      CheckString(attribute.name);
      CheckString(attribute.value);
    }
  }
  kiln_node_info_t node;
  kiln_node_info_init(&node);
  ExpectError(kiln_model_get_node_info(model, info.node_count, &node), KILN_INVALID_ARGUMENT);

  for (uint32_t l = 0; l <= info.library_count; ++l) {
    kiln_library_info_t library;
    kiln_library_info_init(&library);
    kiln_status_t status = kiln_model_get_library_info(model, l, &library);
    if (l == info.library_count) {
      ExpectError(status, KILN_INVALID_ARGUMENT);
      break;
    }
    FUZZ_CHECK(status == NULL);
    CheckString(library.target_triple);
    CheckString(library.cpu);
    CheckString(library.features);
    CheckString(library.static_symbol);
    if (library.format != KILN_LIBRARY_FORMAT_STATIC) {
      FUZZ_CHECK(Inside(library.data, library.size, file, size));
      FUZZ_CHECK(library.offset <= info.data_segment_size && library.size <= info.data_segment_size - library.offset);
      if (library.size) g_sink += ((const uint8_t*)library.data)[library.size - 1];
    }
  }

  for (uint32_t k = 0; k <= info.kernel_count; ++k) {
    kiln_kernel_info_t kernel;
    kiln_kernel_info_init(&kernel);
    kiln_status_t status = kiln_model_get_kernel_info(model, k, &kernel);
    if (k == info.kernel_count) {
      ExpectError(status, KILN_INVALID_ARGUMENT);
      break;
    }
    FUZZ_CHECK(status == NULL);
    CheckString(kernel.name);
    CheckString(kernel.entry_point);
    FUZZ_CHECK(kernel.library < info.library_count);
    kiln_library_info_t library;
    kiln_library_info_init(&library);
    FUZZ_CHECK(kiln_model_get_library_info(model, kernel.library, &library) == NULL);
    FUZZ_CHECK(library.format == kernel.format);
    if (kernel.format == KILN_LIBRARY_FORMAT_SPIRV) {
      FUZZ_CHECK(kernel.spirv_offset <= library.size && kernel.spirv_size <= library.size - kernel.spirv_offset);
      for (int d = 0; d < 3; ++d) FUZZ_CHECK(kernel.workgroup_size[d] >= 1);
    }
  }

  for (uint32_t d = 0; d <= info.dispatch_count; ++d) {
    kiln_dispatch_info_t dispatch;
    kiln_struct_init(&dispatch, sizeof(dispatch));
    kiln_status_t status = kiln_model_get_dispatch_info(model, d, &dispatch);
    if (d == info.dispatch_count) {
      ExpectError(status, KILN_INVALID_ARGUMENT);
      break;
    }
    FUZZ_CHECK(status == NULL);
    FUZZ_CHECK(dispatch.kernel < info.kernel_count);
    for (int i = 0; i < 3; ++i) FUZZ_CHECK(dispatch.workgroup_count[i] >= 1);
    for (uint32_t i = 0; i < dispatch.push_constant_count; ++i) g_sink += dispatch.push_constants[i];
    for (uint32_t i = 0; i < dispatch.source_node_count; ++i) FUZZ_CHECK(dispatch.source_nodes[i] < info.node_count);
    for (uint32_t i = 0; i < dispatch.host_download_count; ++i) FUZZ_CHECK(dispatch.host_downloads[i] < info.tensor_count);
    for (uint32_t i = 0; i < dispatch.host_upload_count; ++i) FUZZ_CHECK(dispatch.host_uploads[i] < info.tensor_count);
    for (uint32_t b = 0; b <= dispatch.binding_count; ++b) {
      kiln_binding_info_t binding;
      kiln_struct_init(&binding, sizeof(binding));
      kiln_status_t bstatus = kiln_model_get_binding_info(model, d, b, &binding);
      if (b == dispatch.binding_count) {
        ExpectError(bstatus, KILN_INVALID_ARGUMENT);
        break;
      }
      FUZZ_CHECK(bstatus == NULL);
      FUZZ_CHECK(binding.tensor < info.tensor_count);
      FUZZ_CHECK(binding.access <= KILN_ACCESS_READ_WRITE);
    }
  }

  // Verify-only models never run.
  kiln_session_t* session = NULL;
  kiln_status_t status = kiln_session_create(model, NULL, &session);
  FUZZ_CHECK(status != NULL && session == NULL);
  kiln_status_free(status);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const int mode = data[0] % 4;
  ++data;
  --size;
  // A 64-byte aligned copy of exactly `size` bytes: used in place, and ASan
  // sees any read past its end.
  void* copy = NULL;
  if (posix_memalign(&copy, 64, size ? size : 1) != 0) return 0;
  uint8_t* file = (uint8_t*)copy;
  if (size) memcpy(file, data, size);
  if (mode == 1) Rehash(file, size);

  kiln_model_load_options_t options;
  kiln_model_load_options_init(&options);
  options.flags = KILN_MODEL_LOAD_VERIFY_ONLY;
  uint8_t keys[64];
  if (mode >= 2) {
    memcpy(keys, kFixedKey, 32);
    options.trusted_public_keys = keys;
    options.trusted_public_key_count = 1;
    if (mode == 2 && size >= KILN_SIGNATURE_TRAILER_BYTES) {
      memcpy(keys + 32, file + size - KILN_SIGNATURE_TRAILER_BYTES + 64, 32);
      options.trusted_public_key_count = 2;
    }
  }
  kiln_model_t* model = NULL;
  kiln_status_t status = kiln_model_load_memory_ex(file, size, &options, &model);
  if (status) {
    FUZZ_CHECK(model == NULL);
    CheckString(kiln_status_message(status));
    FUZZ_CHECK(kiln_status_code(status) != KILN_OK);
    kiln_status_free(status);
  } else {
    FUZZ_CHECK(model != NULL);
    if (mode >= 2) {
      kiln_model_info_t info;
      kiln_model_info_init(&info);
      FUZZ_CHECK(kiln_model_get_info(model, &info) == NULL);
      // With trusted keys, only a verified signature loads.
      FUZZ_CHECK(info.signature == KILN_SIGNATURE_ED25519 && info.signature_verified == 1);
    }
    WalkModel(model, file, size);
    kiln_model_free(model);
  }
  free(copy);
  return 0;
}
