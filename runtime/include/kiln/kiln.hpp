// kiln.hpp: a thin C++ layer over kiln.h. RAII ownership, no exceptions:
// fallible methods return kiln::Status, which owns a kiln_status_t. Methods
// mirror the C functions without their kiln_<noun>_ prefix, and set the
// struct_size of the info structs they fill (to this header's sizeof).
// String tensors: kiln::PackStrings / kiln::UnpackStrings convert between
// strings and the string tables the C API passes.
//
//   kiln::Model model;
//   kiln::Status status = kiln::Model::LoadFile("model.kiln", &model);
//   if (!status.ok()) { fprintf(stderr, "%s\n", status.message()); return 1; }
//   kiln::Session session;
//   status = kiln::Session::Create(model, nullptr, &session);
#ifndef KILN_KILN_HPP_
#define KILN_KILN_HPP_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln {

//===----------------------------------------------------------------------===//
// String tables (KILN_DTYPE_STRING): what kiln_session_set_input takes and
// kiln_session_get_output gives for a string tensor of n elements,
//   uint32_t offsets[n + 1];  // native order; offsets[0] = 0, non-decreasing
//   uint8_t bytes[offsets[n]];  // string i is bytes[offsets[i] .. offsets[i + 1])
// (kiln.h, at KILN_DTYPE_STRING; docs/bundle.md#string-tensors).
//===----------------------------------------------------------------------===//

// Packs `count` strings, string i being the sizes[i] bytes at data[i], into
// a table in *out (replacing it). False (and *out empty) when the strings
// hold 2^32 bytes or more, which no table can.
inline bool PackStrings(const char* const* data, const size_t* sizes, size_t count, std::vector<uint8_t>* out) {
  out->clear();
  uint64_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    total += sizes[i];
    if (total > UINT32_MAX) return false;
  }
  if (count >= (SIZE_MAX - total) / 4) return false;
  out->resize(4 * (count + 1) + (size_t)total);
  uint8_t* offsets = out->data();
  uint8_t* bytes = offsets + 4 * (count + 1);
  uint32_t offset = 0;
  memcpy(offsets, &offset, 4);
  for (size_t i = 0; i < count; ++i) {
    if (sizes[i]) memcpy(bytes + offset, data[i], sizes[i]);
    offset += (uint32_t)sizes[i];
    memcpy(offsets + 4 * (i + 1), &offset, 4);
  }
  return true;
}

inline bool PackStrings(const std::vector<std::string>& strings, std::vector<uint8_t>* out) {
  std::vector<const char*> data(strings.size());
  std::vector<size_t> sizes(strings.size());
  for (size_t i = 0; i < strings.size(); ++i) {
    data[i] = strings[i].data();
    sizes[i] = strings[i].size();
  }
  return PackStrings(data.data(), sizes.data(), strings.size(), out);
}

// Unpacks the table of `count` strings in the `size` bytes at `table` (any
// alignment) into *out. False (and *out empty) when the bytes are no such
// table: too few for the offsets, offsets[0] not 0, an offset decreasing or
// past the end, or bytes left after the last string.
inline bool UnpackStrings(const void* table, size_t size, size_t count, std::vector<std::string>* out) {
  out->clear();
  if (count >= SIZE_MAX / 4 || size < 4 * (count + 1)) return false;
  const uint8_t* offsets = static_cast<const uint8_t*>(table);
  const char* bytes = reinterpret_cast<const char*>(offsets + 4 * (count + 1));
  const size_t room = size - 4 * (count + 1);
  uint32_t begin = 0;
  memcpy(&begin, offsets, 4);
  if (begin != 0) return false;
  std::vector<std::string> strings(count);
  for (size_t i = 0; i < count; ++i) {
    uint32_t end;
    memcpy(&end, offsets + 4 * (i + 1), 4);
    if (end < begin || end > room) return false;
    strings[i].assign(bytes + begin, end - begin);
    begin = end;
  }
  if (begin != room) return false;
  *out = std::move(strings);
  return true;
}

// The element count of a tensor's `rank` dimensions (a string table's n).
inline size_t ElementCount(const int64_t* shape, uint32_t rank) {
  size_t count = 1;
  for (uint32_t d = 0; d < rank; ++d) count *= (size_t)shape[d];
  return count;
}

// Owns one handle of a C object and frees it with `Free` (which accepts
// NULL): move-only, empty (nullptr) by default. Status, Model and Session
// are Owners with methods for their C functions.
template <typename Handle, void (*Free)(Handle)>
class Owner {
 public:
  Owner() = default;
  explicit Owner(Handle handle) : handle_(handle) {}
  Owner(Owner&& other) noexcept : handle_(other.release()) {}
  Owner& operator=(Owner&& other) noexcept {
    if (this != &other) {
      Free(handle_);
      handle_ = other.release();
    }
    return *this;
  }
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;
  ~Owner() { Free(handle_); }

  // The C handle (still owned).
  Handle get() const { return handle_; }
  // Gives up ownership of the C handle.
  Handle release() {
    Handle handle = handle_;
    handle_ = nullptr;
    return handle;
  }

 private:
  Handle handle_ = nullptr;  // owned; nullptr when empty
};

// Owns a kiln_status_t; OK when empty.
class Status : public Owner<kiln_status_t, kiln_status_free> {
 public:
  using Owner::Owner;

  bool ok() const { return get() == nullptr; }
  kiln_status_code_t code() const { return kiln_status_code(get()); }
  const char* message() const { return kiln_status_message(get()); }
};

// Owns a kiln_model_t.
class Model : public Owner<kiln_model_t*, kiln_model_free> {
 public:
  using Owner::Owner;

  // `flags`: KILN_MODEL_LOAD_* (the other load options at their defaults).
  static Status LoadFile(const char* path, Model* out, uint32_t flags = 0) {
    kiln_model_load_options_t options;
    kiln_model_load_options_init(&options);
    options.flags = flags;
    return LoadFile(path, options, out);
  }
  static Status LoadFile(const char* path, const kiln_model_load_options_t& options, Model* out) {
    kiln_model_t* model = nullptr;
    Status status(kiln_model_load_file_ex(path, &options, &model));
    if (status.ok()) *out = Model(model);
    return status;
  }
  static Status LoadMemory(const void* data, size_t size, Model* out, uint32_t flags = 0) {
    kiln_model_load_options_t options;
    kiln_model_load_options_init(&options);
    options.flags = flags;
    return LoadMemory(data, size, options, out);
  }
  static Status LoadMemory(const void* data, size_t size, const kiln_model_load_options_t& options,
                           Model* out) {
    kiln_model_t* model = nullptr;
    Status status(kiln_model_load_memory_ex(data, size, &options, &model));
    if (status.ok()) *out = Model(model);
    return status;
  }

  size_t input_count() const { return kiln_model_input_count(get()); }
  size_t output_count() const { return kiln_model_output_count(get()); }
  size_t composite_count() const { return kiln_model_composite_count(get()); }
  Status get_composite_info(size_t index, kiln_composite_info_t* out_info) const {
    kiln_composite_info_init(out_info);
    return Status(kiln_model_get_composite_info(get(), index, out_info));
  }
  Status get_input_info(size_t index, kiln_tensor_info_t* out) const {
    return Get(kiln_model_get_input_info, out, index);
  }
  Status get_output_info(size_t index, kiln_tensor_info_t* out) const {
    return Get(kiln_model_get_output_info, out, index);
  }
  Status find_input(const char* name, size_t* out_index) const {
    return Status(kiln_model_find_input(get(), name, out_index));
  }
  Status find_output(const char* name, size_t* out_index) const {
    return Status(kiln_model_find_output(get(), name, out_index));
  }

  // The bundle's contents (kiln.h, "Model contents"); counts are in get_info.
  Status get_info(kiln_model_info_t* out) const { return Get(kiln_model_get_info, out); }
  Status get_tensor_info(size_t tensor, kiln_tensor_info_t* out) const {
    return Get(kiln_model_get_tensor_info, out, tensor);
  }
  Status get_node_info(size_t node, kiln_node_info_t* out) const {
    return Get(kiln_model_get_node_info, out, node);
  }
  Status get_attribute_info(size_t node, size_t attribute, kiln_attribute_info_t* out) const {
    return Get(kiln_model_get_attribute_info, out, node, attribute);
  }
  Status get_library_info(size_t library, kiln_library_info_t* out) const {
    return Get(kiln_model_get_library_info, out, library);
  }
  Status get_kernel_info(size_t kernel, kiln_kernel_info_t* out) const {
    return Get(kiln_model_get_kernel_info, out, kernel);
  }
  Status get_dispatch_info(size_t dispatch, kiln_dispatch_info_t* out) const {
    return Get(kiln_model_get_dispatch_info, out, dispatch);
  }
  Status get_binding_info(size_t dispatch, size_t binding, kiln_binding_info_t* out) const {
    return Get(kiln_model_get_binding_info, out, dispatch, binding);
  }

 private:
  // Calls a kiln_model_get_*(model, indices..., out) accessor with `out`'s
  // struct_size set to this header's sizeof.
  template <typename Accessor, typename Info, typename... Indices>
  Status Get(Accessor accessor, Info* out, Indices... indices) const {
    if (out) out->struct_size = sizeof(*out);
    return Status(accessor(get(), indices..., out));
  }
};

// Owns a kiln_session_t. The Model must outlive it.
class Session : public Owner<kiln_session_t*, kiln_session_free> {
 public:
  using Owner::Owner;

  // `options` may be nullptr (all defaults); else start from
  // kiln_session_options_init.
  static Status Create(const Model& model, const kiln_session_options_t* options,
                       Session* out) {
    kiln_session_t* session = nullptr;
    Status status(kiln_session_create(model.get(), options, &session));
    if (status.ok()) *out = Session(session);
    return status;
  }

  Status set_input(size_t index, const void* data, size_t byte_size) {
    return Status(kiln_session_set_input(get(), index, data, byte_size));
  }
  // A string input (KILN_DTYPE_STRING) from strings, one per element of its
  // current shape (in row-major order). A total of 2^32 bytes or more is
  // refused by the runtime (the table is then empty).
  Status set_input_strings(size_t index, const std::vector<std::string>& strings) {
    std::vector<uint8_t> table;
    PackStrings(strings, &table);
    return set_input(index, table.data(), table.size());
  }
  Status set_input_shape(size_t index, const int64_t* shape, uint32_t rank) {
    return Status(kiln_session_set_input_shape(get(), index, shape, rank));
  }
  Status get_input_info(size_t index, kiln_tensor_info_t* out_info) {
    kiln_tensor_info_init(out_info);
    return Status(kiln_session_get_input_info(get(), index, out_info));
  }
  Status get_output_info(size_t index, kiln_tensor_info_t* out_info) {
    kiln_tensor_info_init(out_info);
    return Status(kiln_session_get_output_info(get(), index, out_info));
  }
  Status run() { return Status(kiln_session_run(get())); }
  Status get_output(size_t index, void* data, size_t byte_size) {
    return Status(kiln_session_get_output(get(), index, data, byte_size));
  }
  Status get_output_view(size_t index, const void** out_data) {
    return Status(kiln_session_get_output_view(get(), index, out_data));
  }
  // A string output (KILN_DTYPE_STRING) as strings, one per element of its
  // current shape (row-major), read from the table the runtime checked.
  Status get_output_strings(size_t index, std::vector<std::string>* out) {
    kiln_tensor_info_t info;
    Status status = get_output_info(index, &info);
    const void* table = nullptr;
    if (status.ok()) status = get_output_view(index, &table);
    out->clear();
    if (status.ok()) UnpackStrings(table, info.byte_size, ElementCount(info.shape, info.rank), out);
    return status;
  }
  Status set_profiling(bool enabled) {
    return Status(kiln_session_set_profiling(get(), enabled ? 1 : 0));
  }
  size_t dispatch_count() const { return kiln_session_dispatch_count(get()); }
  Status get_dispatch_profile(size_t dispatch, uint64_t* out_nanoseconds) const {
    return Status(kiln_session_get_dispatch_profile(get(), dispatch, out_nanoseconds));
  }
  const char* device_name() const { return kiln_session_device_name(get()); }
  // Two calls: `data` nullptr gives the size in *out_size, then a buffer of
  // `capacity` bytes receives the contents.
  Status get_vulkan_pipeline_cache(void* data, size_t capacity, size_t* out_size) {
    return Status(kiln_session_get_vulkan_pipeline_cache(get(), data, capacity, out_size));
  }
  Status get_load_stats(kiln_session_load_stats_t* out_stats) const {
    if (out_stats) out_stats->struct_size = sizeof(*out_stats);
    return Status(kiln_session_get_load_stats(get(), out_stats));
  }
};

}  // namespace kiln

#endif  // KILN_KILN_HPP_
