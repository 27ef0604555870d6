// Bundle verification; see bundle_verify.h. Checks run in file order:
// prefix, identifier, FlatBuffers structure, version, data segment, memory
// plan, tensors, inputs/outputs, nodes, libraries, kernels, dispatches, the
// run-time dimensions (bundle_verify_shapes.cpp), and the SpirV parts of
// Vulkan bundles (bundle_verify_spirv.cpp).
#include "bundle/bundle_verify.h"

#include <stdlib.h>
#include <string.h>

#include "base/address_space.h"
#include "base/allocator.h"
#include "base/checked_math.h"
#include "base/dtype.h"
#include "base/hash.h"
#include "base/string_table.h"
#include "bundle/bundle_verify_shapes.h"
#include "bundle/bundle_verify_spirv.h"
#include "kiln/kiln.h"
#include "kiln_bundle_version.h"

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "libkiln reads bundle data in place and supports little-endian hosts only"
#endif

namespace fb = kiln::fb;

// Names in messages are cut to this many characters.
#define KILN_NAME_FMT "%.64s"

static const char* kiln_name_or_unnamed(const flatbuffers::String* name) {
  return name ? name->c_str() : "<unnamed>";
}

static kiln_status_t kiln_bundle_invalid(const char* what) {
  return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: %s", what);
}

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

// Size prefix, identifier and the FlatBuffers verifier.
static kiln_status_t kiln_bundle_verify_structure(const uint8_t* data, size_t size,
                                                  size_t* out_flatbuffer_size) {
  if (size < 12) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: file is %zu bytes, too small to be a bundle "
                            "(size prefix, root offset and identifier need 12)",
                            size);
  }
  uint32_t prefix;
  memcpy(&prefix, data, sizeof(prefix));  // little-endian host (checked above)
  uint64_t flatbuffer_size = (uint64_t)prefix + 4;
  if (flatbuffer_size > size) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: size prefix says %u bytes of FlatBuffer follow "
                            "but the file has only %zu (truncated?)",
                            prefix, size - 4);
  }
  if (prefix < 8) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: size prefix %u is too small for a FlatBuffer", prefix);
  }
  if (flatbuffer_size >= FLATBUFFERS_MAX_BUFFER_SIZE) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: FlatBuffer of %u bytes exceeds the 2 GiB limit",
                            prefix);
  }
  const uint8_t* identifier = data + 8;  // after the size prefix and root offset
  if (memcmp(identifier, fb::BundleIdentifier(), 4) != 0) {
    char shown[5];
    for (int i = 0; i < 4; ++i) {
      shown[i] = (identifier[i] >= 0x20 && identifier[i] < 0x7f) ? (char)identifier[i] : '?';
    }
    shown[4] = '\0';
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: wrong file identifier '%s' (expected 'KILN'): "
                            "not a Kiln bundle",
                            shown);
  }
  flatbuffers::Verifier verifier(data, (size_t)flatbuffer_size, KILN_BUNDLE_MAX_DEPTH,
                                 KILN_BUNDLE_MAX_TABLES, /*check_alignment=*/true);
  if (!fb::VerifySizePrefixedBundleBuffer(verifier)) {
    return kiln_bundle_invalid(
        "FlatBuffer verification failed (corrupt or truncated bundle)");
  }
  *out_flatbuffer_size = (size_t)flatbuffer_size;
  return NULL;
}

// Format version, then the data segment's placement in the file.
static kiln_status_t kiln_bundle_verify_header(const fb::Bundle* bundle,
                                               size_t flatbuffer_size, size_t size) {
  if (bundle->version_major() != KILN_BUNDLE_VERSION_MAJOR) {
    return kiln_make_status(KILN_UNSUPPORTED,
                            "bundle: format version %u.%u, but this runtime reads "
                            "version %d.x (recompile the model with a matching kilnc)",
                            bundle->version_major(), bundle->version_minor(),
                            KILN_BUNDLE_VERSION_MAJOR);
  }
  if (bundle->min_runtime_minor() > KILN_BUNDLE_VERSION_MINOR) {
    return kiln_make_status(KILN_UNSUPPORTED,
                            "bundle: needs runtime version >= %d.%u, this runtime is "
                            "%d.%d",
                            KILN_BUNDLE_VERSION_MAJOR, bundle->min_runtime_minor(),
                            KILN_BUNDLE_VERSION_MAJOR, KILN_BUNDLE_VERSION_MINOR);
  }
  uint64_t offset = bundle->data_segment_offset();
  uint64_t seg_size = bundle->data_segment_size();
  if (seg_size == 0 && offset == 0) return NULL;  // no data segment at all
  if (!kiln_is_aligned(offset, KILN_BUNDLE_ALIGNMENT)) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: data_segment_offset %llu is not a multiple of %d",
                            (unsigned long long)offset, KILN_BUNDLE_ALIGNMENT);
  }
  if (offset < flatbuffer_size) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: data_segment_offset %llu overlaps the FlatBuffer "
                            "(which ends at %zu)",
                            (unsigned long long)offset, flatbuffer_size);
  }
  if (!kiln_range_within(offset, seg_size, size)) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: data segment [%llu, +%llu) extends beyond the "
                            "file size %zu (truncated?)",
                            (unsigned long long)offset, (unsigned long long)seg_size,
                            size);
  }
  return NULL;
}

// Bundle.content_hash: XXH64 over the file up to the end of the data segment
// (or of the FlatBuffer), with the hash field itself read as zero. Catches
// corruption the structural checks cannot see (kernel code, dispatch sizes).
static kiln_status_t kiln_bundle_verify_hash(const uint8_t* data, const fb::Bundle* bundle,
                                             size_t flatbuffer_size) {
  const uint8_t* field = reinterpret_cast<const flatbuffers::Table*>(bundle)->GetAddressOf(
      fb::Bundle::VT_CONTENT_HASH);
  if (!field) {
    return kiln_bundle_invalid(
        "no content_hash: the writer must record the bundle's XXH64 (see bundle.fbs)");
  }
  uint64_t end = bundle->data_segment_offset() + bundle->data_segment_size();  // checked
  if (end < flatbuffer_size) end = flatbuffer_size;
  uint64_t actual = kiln_xxh64(data, (size_t)end, (size_t)(field - data), 8);
  if (actual != bundle->content_hash()) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: content_hash mismatch (stored 0x%016llx, computed "
                            "0x%016llx): the file is corrupted",
                            (unsigned long long)bundle->content_hash(),
                            (unsigned long long)actual);
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

// Largest string_bytes of a string tensor (its offsets are uint32_t).
#define KILN_BUNDLE_MAX_STRING_BYTES 0xFFFFFFFFull

// A tensor's dtype and byte_size: a known dtype, dimensions >= 0, and
// byte_size equal to what dtype and shape make (a string table's: its
// offsets and string_bytes; docs/bundle.md#string-tensors). Sets
// *out_elements to the element count.
static kiln_status_t kiln_bundle_verify_tensor_size(const fb::Tensor* tensor, uint32_t index, const char* name,
                                                    uint64_t* out_elements) {
  const uint32_t dtype = (uint32_t)tensor->dtype();
  if (!kiln_dtype_code_known(dtype)) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: tensor %u ('" KILN_NAME_FMT "'): unknown dtype %u", index,
                            name, dtype);
  }
  const bool string = dtype == KILN_DTYPE_STRING;
  if (string && tensor->string_bytes() > KILN_BUNDLE_MAX_STRING_BYTES) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: tensor %u ('" KILN_NAME_FMT "'): string_bytes %llu is not below 2^32", index,
                            name, (unsigned long long)tensor->string_bytes());
  }
  if (!string && tensor->string_bytes() != 0) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: tensor %u ('" KILN_NAME_FMT "'): string_bytes %llu on a %s tensor (only string "
                            "tensors have a bytes area)",
                            index, name, (unsigned long long)tensor->string_bytes(),
                            kiln_dtype_name((kiln_dtype_t)dtype));
  }
  uint64_t elements = 1, expected = 0;
  bool fits = true;
  for (uint32_t d = 0; tensor->shape() && d < tensor->shape()->size(); ++d) {
    int64_t dim = kiln_bundle_dim(tensor->shape(), d);
    if (dim < 0) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: tensor %u ('" KILN_NAME_FMT "'): dimension %u is negative (%lld)", index, name,
                              d, (long long)dim);
    }
    fits = fits && kiln_mul_u64(elements, (uint64_t)dim, &elements);  // (a later 0 does not make it fit)
  }
  // Sized per run: no size here (its largest may overflow); a string
  // table's from its element count and string_bytes (StringSplit's pieces).
  if (tensor->storage() == fb::Storage::Dynamic) {
    if (tensor->byte_size() != 0) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: tensor %u ('" KILN_NAME_FMT "'): a Dynamic tensor has byte_size 0", index, name);
    }
    *out_elements = 0;
    return NULL;
  }
  if (!fits || !kiln_dtype_tensor_bytes(dtype, elements, tensor->string_bytes(), &expected)) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: tensor %u ('" KILN_NAME_FMT "'): shape size overflows 64 bits",
                            index, name);
  }
  if (expected != tensor->byte_size()) {
    if (string) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: tensor %u ('" KILN_NAME_FMT "'): byte_size %llu does not match its string table "
                              "(4 * (%llu + 1) offsets + %llu string_bytes = %llu)",
                              index, name, (unsigned long long)tensor->byte_size(), (unsigned long long)elements,
                              (unsigned long long)tensor->string_bytes(), (unsigned long long)expected);
    }
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: tensor %u ('" KILN_NAME_FMT "'): byte_size %llu does not match dtype and shape (%llu)",
                            index, name, (unsigned long long)tensor->byte_size(), (unsigned long long)expected);
  }
  *out_elements = elements;
  return NULL;
}

static kiln_status_t kiln_bundle_verify_tensor(const fb::Tensor* tensor, uint32_t index, uint32_t tensor_count,
                                               const kiln_bundle_view_t* view) {
  const char* name = kiln_name_or_unnamed(tensor->name());
  if (!tensor->name()) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: tensor %u has no name", index);
  }
  uint64_t elements = 0;
  KILN_RETURN_IF_ERROR(kiln_bundle_verify_tensor_size(tensor, index, name, &elements));
  // The API hands byte_size out as a size_t (kiln_tensor_info_t).
  kiln_status_t status = kiln_size_from_u64(tensor->byte_size(), "byte_size", NULL);
  if (status) return kiln_status_annotate(status, "bundle: tensor %u ('" KILN_NAME_FMT "')", index, name);
  if (tensor->storage() == fb::Storage::Dynamic) {  // `offset` is its slot; dynamic_dims give its size
    // (Vulkan sessions refuse bundles with run-time dimensions: exec/session.cpp.)
    if (tensor->offset() >= tensor_count || !tensor->dynamic_dims()) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: tensor %u ('" KILN_NAME_FMT "'): a Dynamic tensor needs run-time dimensions and "
                              "a slot below the tensor count (slot %llu)",
                              index, name, (unsigned long long)tensor->offset());
    }
    return NULL;
  }
  if (!kiln_is_aligned(tensor->offset(), KILN_BUNDLE_ALIGNMENT)) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: tensor %u ('" KILN_NAME_FMT
                            "'): offset %llu is not a multiple of %d",
                            index, name, (unsigned long long)tensor->offset(),
                            KILN_BUNDLE_ALIGNMENT);
  }
  switch (tensor->storage()) {
    case fb::Storage::Arena:
      if (!kiln_range_within(tensor->offset(), tensor->byte_size(), view->arena_bytes)) {
        return kiln_make_status(KILN_INVALID_BUNDLE,
                                "bundle: tensor %u ('" KILN_NAME_FMT
                                "'): arena range [%llu, +%llu) exceeds arena_bytes %llu",
                                index, name, (unsigned long long)tensor->offset(),
                                (unsigned long long)tensor->byte_size(),
                                (unsigned long long)view->arena_bytes);
      }
      return NULL;
    case fb::Storage::Constant:
      if (!kiln_range_within(tensor->offset(), tensor->byte_size(),
                             view->data_segment_size)) {
        return kiln_make_status(KILN_INVALID_BUNDLE,
                                "bundle: tensor %u ('" KILN_NAME_FMT
                                "'): constant range [%llu, +%llu) is outside the data "
                                "segment (%zu bytes)",
                                index, name, (unsigned long long)tensor->offset(),
                                (unsigned long long)tensor->byte_size(),
                                view->data_segment_size);
      }
      if (tensor->dtype() == fb::DType::String) {  // its table, exactly byte_size bytes
        size_t used = 0;
        kiln_status_t table =
            kiln_string_table_check(view->data_segment + tensor->offset(), (size_t)tensor->byte_size(), elements,
                                    true, KILN_INVALID_BUNDLE, &used);
        if (table) {
          return kiln_status_annotate(table, "bundle: tensor %u ('" KILN_NAME_FMT "'): string constant", index, name);
        }
      }
      return NULL;
    default:  // (Dynamic returned above; anything else is unknown)
      break;
  }
  return kiln_make_status(KILN_INVALID_BUNDLE,
                          "bundle: tensor %u ('" KILN_NAME_FMT "'): unknown storage %u",
                          index, name, (unsigned)tensor->storage());
}

// Model inputs or outputs (`what`): indices in range, Arena or Dynamic storage.
static kiln_status_t kiln_bundle_verify_io(const flatbuffers::Vector<uint32_t>* list,
                                           const char* what, uint32_t tensor_count,
                                           const fb::Bundle* bundle) {
  if (!list) return NULL;
  for (uint32_t i = 0; i < list->size(); ++i) {
    uint32_t t = list->Get(i);
    if (t >= tensor_count) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: %s %u: tensor index %u out of range (%u tensors)",
                              what, i, t, tensor_count);
    }
    const fb::Tensor* tensor = bundle->tensors()->Get(t);
    if (tensor->storage() != fb::Storage::Arena && tensor->storage() != fb::Storage::Dynamic) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: %s %u: tensor %u ('" KILN_NAME_FMT
                              "') must have Arena or Dynamic storage",
                              what, i, t, kiln_name_or_unnamed(tensor->name()));
    }
  }
  return NULL;
}

static kiln_status_t kiln_bundle_verify_tensors(const fb::Bundle* bundle,
                                                kiln_bundle_view_t* view) {
  uint32_t tensor_count = bundle->tensors() ? bundle->tensors()->size() : 0;
  for (uint32_t i = 0; i < tensor_count; ++i) {
    const fb::Tensor* tensor = bundle->tensors()->Get(i);
    KILN_RETURN_IF_ERROR(kiln_bundle_verify_tensor(tensor, i, tensor_count, view));
    // A dtype newer than the first minor must be announced (format 0.10's
    // narrow types): a runtime of that minor or later reads them.
    const unsigned need = kiln_dtype_code_min_minor((uint32_t)tensor->dtype());
    if (bundle->min_runtime_minor() < need) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: tensor %u ('" KILN_NAME_FMT "'): dtype %s needs min_runtime_minor >= %u, the "
                              "bundle says %u",
                              i, kiln_name_or_unnamed(tensor->name()), kiln_dtype_name((kiln_dtype_t)tensor->dtype()),
                              need, bundle->min_runtime_minor());
    }
    view->sized_per_run |= tensor->storage() == fb::Storage::Dynamic;
    if (tensor->storage() == fb::Storage::Dynamic && bundle->min_runtime_minor() < 10) {  // format 0.10
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: tensor %u ('" KILN_NAME_FMT "'): Dynamic storage needs min_runtime_minor >= 10, "
                              "the bundle says %u",
                              i, kiln_name_or_unnamed(tensor->name()), bundle->min_runtime_minor());
    }
  }
  KILN_RETURN_IF_ERROR(kiln_bundle_verify_io(bundle->inputs(), "input", tensor_count, bundle));
  KILN_RETURN_IF_ERROR(kiln_bundle_verify_io(bundle->outputs(), "output", tensor_count, bundle));
  return NULL;
}

// Composite inputs and outputs (sequences): a name, a known kind, elements
// that are model inputs (or outputs) in range, none in two composites.
static kiln_status_t kiln_bundle_verify_composites(const fb::Bundle* bundle) {
  const auto* composites = bundle->composites();
  if (!composites) return NULL;
  uint32_t input_count = bundle->inputs() ? bundle->inputs()->size() : 0;
  uint32_t output_count = bundle->outputs() ? bundle->outputs()->size() : 0;
  // Which inputs and outputs are some composite's element already (each may be one once).
  uint8_t *used_inputs = NULL, *used_outputs = NULL;
  kiln_status_t status = kiln_calloc_array(input_count + 1u, &used_inputs);
  if (!status) status = kiln_calloc_array(output_count + 1u, &used_outputs);
  for (uint32_t c = 0; !status && c < composites->size(); ++c) {
    const fb::Composite* composite = composites->Get(c);
    if (!composite->name()) {
      status = kiln_make_status(KILN_INVALID_BUNDLE, "bundle: composite %u has no name", c);
      break;
    }
    const bool optional = composite->kind() == fb::CompositeKind::Optional;
    if (!optional && composite->kind() != fb::CompositeKind::Sequence) {
      status = kiln_make_status(KILN_INVALID_BUNDLE, "bundle: composite %u: unknown kind %u", c,
                                (unsigned)composite->kind());
      break;
    }
    uint32_t count = composite->output() ? output_count : input_count;
    const uint32_t elements_count = composite->elements() ? composite->elements()->size() : 0;
    if (optional && !composite->sequence() && elements_count > 1) {
      status = kiln_make_status(KILN_INVALID_BUNDLE,
                                "bundle: composite %u: an optional tensor has %u elements", c,
                                elements_count);
      break;
    }
    // An optional's presence: a bool scalar among the same list, no element of anything.
    int32_t presence = composite->presence();
    if (optional != (presence >= 0) || (optional && (uint32_t)presence >= count)) {
      status = kiln_make_status(KILN_INVALID_BUNDLE, "bundle: composite %u: bad presence %d", c,
                                presence);
      break;
    }
    if (optional) {
      const auto* list = composite->output() ? bundle->outputs() : bundle->inputs();
      const fb::Tensor* flag = bundle->tensors()->Get(list->Get((uint32_t)presence));
      if (flag->dtype() != fb::DType::Bool || (flag->shape() && flag->shape()->size() != 0)) {
        status = kiln_make_status(KILN_INVALID_BUNDLE,
                                  "bundle: composite %u: its presence is no bool scalar", c);
        break;
      }
      uint8_t* used = composite->output() ? used_outputs : used_inputs;
      if (used[presence]) {
        status = kiln_make_status(KILN_INVALID_BUNDLE,
                                  "bundle: composite %u: its presence is used twice", c);
        break;
      }
      used[presence] = 1;
    }
    const auto* elements = composite->elements();
    for (uint32_t e = 0; elements && e < elements->size(); ++e) {
      uint32_t at = elements->Get(e);
      if (at >= count) {
        status = kiln_make_status(KILN_INVALID_BUNDLE,
                                  "bundle: composite %u, element %u: %s %u out of range (%u %ss)", c,
                                  e, composite->output() ? "output" : "input", at, count,
                                  composite->output() ? "output" : "input");
        break;
      }
      uint8_t* used = composite->output() ? used_outputs : used_inputs;
      if (used[at]) {
        status = kiln_make_status(KILN_INVALID_BUNDLE,
                                  "bundle: composite %u, element %u: %s %u is an element twice", c, e,
                                  composite->output() ? "output" : "input", at);
        break;
      }
      used[at] = 1;
    }
    if (status) break;
  }
  free(used_inputs);
  free(used_outputs);
  return status;
}

//===----------------------------------------------------------------------===//
// Graph nodes (kept for inspection only)
//===----------------------------------------------------------------------===//

static kiln_status_t kiln_bundle_verify_node_list(const flatbuffers::Vector<uint32_t>* list,
                                                  uint32_t node_index, const char* what,
                                                  uint32_t tensor_count) {
  if (!list) return NULL;
  for (uint32_t i = 0; i < list->size(); ++i) {
    if (list->Get(i) >= tensor_count) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: node %u: %s %u: tensor index %u out of range "
                              "(%u tensors)",
                              node_index, what, i, list->Get(i), tensor_count);
    }
  }
  return NULL;
}

static kiln_status_t kiln_bundle_verify_nodes(const fb::Bundle* bundle) {
  uint32_t tensor_count = bundle->tensors() ? bundle->tensors()->size() : 0;
  uint32_t node_count = bundle->nodes() ? bundle->nodes()->size() : 0;
  for (uint32_t i = 0; i < node_count; ++i) {
    const fb::Node* node = bundle->nodes()->Get(i);
    KILN_RETURN_IF_ERROR(kiln_bundle_verify_node_list(node->inputs(), i, "input", tensor_count));
    KILN_RETURN_IF_ERROR(kiln_bundle_verify_node_list(node->outputs(), i, "output", tensor_count));
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// Kernel libraries and kernels
//===----------------------------------------------------------------------===//

static kiln_status_t kiln_bundle_verify_libraries(const fb::Bundle* bundle,
                                                  const kiln_bundle_view_t* view) {
  uint32_t library_count = bundle->libraries() ? bundle->libraries()->size() : 0;
  for (uint32_t i = 0; i < library_count; ++i) {
    const fb::KernelLibrary* library = bundle->libraries()->Get(i);
    if (library->format() != fb::LibraryFormat::ElfSharedObject &&
        library->format() != fb::LibraryFormat::SpirV &&
        library->format() != fb::LibraryFormat::StaticLinked) {
      return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: library %u: unknown format %u",
                              i, (unsigned)library->format());
    }
    if (library->format() == fb::LibraryFormat::StaticLinked) {
      // Kernels linked into the application: no blob, a hash to find them by.
      if (library->offset() != 0 || library->size() != 0 || library->kernel_hash() == 0 ||
          !library->static_symbol()) {
        return kiln_make_status(KILN_INVALID_BUNDLE,
                                "bundle: library %u: static kernels need offset 0, size 0, a "
                                "kernel hash and a symbol",
                                i);
      }
      if (bundle->min_runtime_minor() < 4) {
        return kiln_make_status(KILN_INVALID_BUNDLE,
                                "bundle: library %u: static kernels need min_runtime_minor >= 4", i);
      }
      continue;
    }
    // A Vulkan bundle whose every kernel runs on the host (since 0.9: string
    // tables) keeps an empty SpirV library, which no kernel can use (a
    // module is at least its 20-byte header inside the blob).
    if (library->size() == 0 && (library->format() != fb::LibraryFormat::SpirV || bundle->min_runtime_minor() < 9)) {
      return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: library %u: empty blob", i);
    }
    if (!kiln_is_aligned(library->offset(), KILN_BUNDLE_ALIGNMENT)) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: library %u: offset %llu is not a multiple of %d", i,
                              (unsigned long long)library->offset(), KILN_BUNDLE_ALIGNMENT);
    }
    if (!kiln_range_within(library->offset(), library->size(), view->data_segment_size)) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: library %u: blob [%llu, +%llu) is outside the data "
                              "segment (%zu bytes)",
                              i, (unsigned long long)library->offset(),
                              (unsigned long long)library->size(), view->data_segment_size);
    }
  }
  uint32_t kernel_count = bundle->kernels() ? bundle->kernels()->size() : 0;
  for (uint32_t i = 0; i < kernel_count; ++i) {
    const fb::Kernel* kernel = bundle->kernels()->Get(i);
    if (!kernel->name()) {
      return kiln_make_status(KILN_INVALID_BUNDLE, "bundle: kernel %u has no name", i);
    }
    if (kernel->library() >= library_count) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: kernel %u ('" KILN_NAME_FMT
                              "'): library index %u out of range (%u libraries)",
                              i, kernel->name()->c_str(), kernel->library(), library_count);
    }
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// Dispatches
//===----------------------------------------------------------------------===//

static kiln_status_t kiln_bundle_verify_dispatch(const fb::Bundle* bundle, const kiln_bundle_view_t* view,
                                                 const fb::Dispatch* dispatch, uint32_t index) {
  uint32_t kernel_count = bundle->kernels() ? bundle->kernels()->size() : 0;
  uint32_t tensor_count = bundle->tensors() ? bundle->tensors()->size() : 0;
  uint32_t node_count = bundle->nodes() ? bundle->nodes()->size() : 0;
  if (dispatch->kernel() >= kernel_count) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: dispatch %u: kernel index %u out of range (%u kernels)",
                            index, dispatch->kernel(), kernel_count);
  }
  const flatbuffers::Vector<uint32_t>* counts = dispatch->workgroup_count();
  if (!counts || counts->size() != 3) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: dispatch %u: workgroup_count must have exactly 3 "
                            "entries (x, y, z), has %u",
                            index, counts ? counts->size() : 0);
  }
  uint64_t total = 1;
  for (uint32_t d = 0; d < 3; ++d) {
    if (counts->Get(d) == 0) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: dispatch %u: workgroup_count[%u] is 0 (must be >= 1)",
                              index, d);
    }
    // (Run-time counts in a bundle with tensors sized per run are checked
    // each run: over a dimension with no bound their largest values may
    // multiply past 2^32.)
    if (view->sized_per_run && dispatch->workgroup_count_exprs()) continue;
    if (!kiln_mul_u64(total, counts->Get(d), &total) || total > KILN_BUNDLE_MAX_WORKGROUPS) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: dispatch %u: more than %llu workgroups", index,
                              (unsigned long long)KILN_BUNDLE_MAX_WORKGROUPS);
    }
  }
  uint32_t binding_count = dispatch->bindings() ? dispatch->bindings()->size() : 0;
  for (uint32_t b = 0; b < binding_count; ++b) {
    const fb::Binding* binding = dispatch->bindings()->Get(b);
    if (binding->tensor() >= tensor_count) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: dispatch %u: binding %u: tensor index %u out of range "
                              "(%u tensors)",
                              index, b, binding->tensor(), tensor_count);
    }
    fb::Access access = binding->access();
    if (access != fb::Access::Read && access != fb::Access::Write &&
        access != fb::Access::ReadWrite) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: dispatch %u: binding %u: unknown access %u", index, b,
                              (unsigned)access);
    }
    const fb::Tensor* tensor = bundle->tensors()->Get(binding->tensor());
    if (access != fb::Access::Read && tensor->storage() == fb::Storage::Constant) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "bundle: dispatch %u: binding %u: write access to constant "
                              "tensor %u ('" KILN_NAME_FMT "') (only Arena and Dynamic tensors are writable)",
                              index, b, binding->tensor(),
                              kiln_name_or_unnamed(tensor->name()));
    }
  }
  if (dispatch->push_constants() &&
      dispatch->push_constants()->size() > KILN_BUNDLE_MAX_PUSH_CONSTANTS) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "bundle: dispatch %u: %u push constants (at most %d)", index,
                            dispatch->push_constants()->size(),
                            KILN_BUNDLE_MAX_PUSH_CONSTANTS);
  }
  if (dispatch->source_nodes()) {
    for (uint32_t n = 0; n < dispatch->source_nodes()->size(); ++n) {
      if (dispatch->source_nodes()->Get(n) >= node_count) {
        return kiln_make_status(KILN_INVALID_BUNDLE,
                                "bundle: dispatch %u: source_nodes[%u] = %u out of range "
                                "(%u nodes)",
                                index, n, dispatch->source_nodes()->Get(n), node_count);
      }
    }
  }
  return NULL;
}

static kiln_status_t kiln_bundle_verify_dispatches(const fb::Bundle* bundle, const kiln_bundle_view_t* view) {
  uint32_t dispatch_count = bundle->dispatches() ? bundle->dispatches()->size() : 0;
  for (uint32_t i = 0; i < dispatch_count; ++i) {
    KILN_RETURN_IF_ERROR(kiln_bundle_verify_dispatch(bundle, view, bundle->dispatches()->Get(i), i));
  }
  return NULL;
}

//===----------------------------------------------------------------------===//
// Entry point
//===----------------------------------------------------------------------===//

kiln_status_t kiln_bundle_verify(const uint8_t* data, size_t size,
                                 kiln_bundle_view_t* out_view) {
  if (!data || !out_view) {
    return kiln_make_status(KILN_INVALID_ARGUMENT, "bundle: NULL data");
  }
  size_t flatbuffer_size = 0;
  KILN_RETURN_IF_ERROR(kiln_bundle_verify_structure(data, size, &flatbuffer_size));
  const fb::Bundle* bundle = fb::GetSizePrefixedBundle(data);
  KILN_RETURN_IF_ERROR(kiln_bundle_verify_header(bundle, flatbuffer_size, size));
  KILN_RETURN_IF_ERROR(kiln_bundle_verify_hash(data, bundle, flatbuffer_size));

  kiln_bundle_view_t view;
  memset(&view, 0, sizeof(view));
  view.bundle = bundle;
  view.flatbuffer = data;
  view.flatbuffer_size = flatbuffer_size;
  view.data_segment_size = (size_t)bundle->data_segment_size();
  view.data_segment = view.data_segment_size ? data + bundle->data_segment_offset() : NULL;
  view.arena_bytes = bundle->memory() ? bundle->memory()->arena_bytes() : 0;
  // A CPU session maps the arena (exec/cpu_backend.cpp): it must fit a size_t.
  KILN_RETURN_IF_ERROR(kiln_size_from_u64(view.arena_bytes, "bundle: the arena (memory.arena_bytes)", NULL));

  KILN_RETURN_IF_ERROR(kiln_bundle_verify_tensors(bundle, &view));
  KILN_RETURN_IF_ERROR(kiln_bundle_verify_composites(bundle));
  KILN_RETURN_IF_ERROR(kiln_bundle_verify_nodes(bundle));
  KILN_RETURN_IF_ERROR(kiln_bundle_verify_libraries(bundle, &view));
  KILN_RETURN_IF_ERROR(kiln_bundle_verify_dispatches(bundle, &view));
  KILN_RETURN_IF_ERROR(kiln_bundle_verify_shapes(bundle, &view));
  KILN_RETURN_IF_ERROR(kiln_bundle_verify_spirv(bundle, &view));
  *out_view = view;
  return NULL;
}
