// kiln.hpp: a thin C++ layer over kiln.h. RAII ownership, no exceptions:
// fallible methods return kiln::Status, which owns a kiln_status_t.
//
//   kiln::Model model;
//   kiln::Status status = kiln::Model::LoadFile("model.kiln", &model);
//   if (!status.ok()) { fprintf(stderr, "%s\n", status.message()); return 1; }
//   kiln::Session session;
//   status = kiln::Session::Create(model, nullptr, &session);
#ifndef KILN_KILN_HPP_
#define KILN_KILN_HPP_

#include <stddef.h>

#include "kiln/kiln.h"

namespace kiln {

// Owns a kiln_status_t; OK when empty.
class Status {
 public:
  Status() = default;
  explicit Status(kiln_status_t status) : status_(status) {}
  Status(Status&& other) noexcept : status_(other.status_) { other.status_ = nullptr; }
  Status& operator=(Status&& other) noexcept {
    if (this != &other) {
      kiln_status_free(status_);
      status_ = other.status_;
      other.status_ = nullptr;
    }
    return *this;
  }
  Status(const Status&) = delete;
  Status& operator=(const Status&) = delete;
  ~Status() { kiln_status_free(status_); }

  bool ok() const { return status_ == nullptr; }
  kiln_status_code_t code() const { return kiln_status_code(status_); }
  const char* message() const { return kiln_status_message(status_); }
  // Gives up ownership of the C status.
  kiln_status_t release() {
    kiln_status_t status = status_;
    status_ = nullptr;
    return status;
  }

 private:
  kiln_status_t status_ = nullptr;  // NULL == OK
};

// Owns a kiln_model_t.
class Model {
 public:
  Model() = default;
  Model(Model&& other) noexcept : model_(other.model_) { other.model_ = nullptr; }
  Model& operator=(Model&& other) noexcept {
    if (this != &other) {
      kiln_model_free(model_);
      model_ = other.model_;
      other.model_ = nullptr;
    }
    return *this;
  }
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
  ~Model() { kiln_model_free(model_); }

  static Status LoadFile(const char* path, Model* out, uint32_t flags = 0) {
    kiln_model_t* model = nullptr;
    Status status(kiln_model_load_file_ex(path, flags, &model));
    if (status.ok()) *out = Model(model);
    return status;
  }
  static Status LoadMemory(const void* data, size_t size, Model* out, uint32_t flags = 0) {
    kiln_model_t* model = nullptr;
    Status status(kiln_model_load_memory_ex(data, size, flags, &model));
    if (status.ok()) *out = Model(model);
    return status;
  }

  const kiln_model_t* get() const { return model_; }
  size_t input_count() const { return kiln_model_input_count(model_); }
  size_t output_count() const { return kiln_model_output_count(model_); }
  Status input_info(size_t index, kiln_tensor_info_t* out) const {
    return Status(kiln_model_input_info(model_, index, out));
  }
  Status output_info(size_t index, kiln_tensor_info_t* out) const {
    return Status(kiln_model_output_info(model_, index, out));
  }
  Status find_input(const char* name, size_t* out_index) const {
    return Status(kiln_model_find_input(model_, name, out_index));
  }
  Status find_output(const char* name, size_t* out_index) const {
    return Status(kiln_model_find_output(model_, name, out_index));
  }

 private:
  explicit Model(kiln_model_t* model) : model_(model) {}
  kiln_model_t* model_ = nullptr;  // owned
};

// Owns a kiln_session_t. The Model must outlive it.
class Session {
 public:
  Session() = default;
  Session(Session&& other) noexcept : session_(other.session_) { other.session_ = nullptr; }
  Session& operator=(Session&& other) noexcept {
    if (this != &other) {
      kiln_session_free(session_);
      session_ = other.session_;
      other.session_ = nullptr;
    }
    return *this;
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() { kiln_session_free(session_); }

  static Status Create(const Model& model, const kiln_session_options_t* options,
                       Session* out) {
    kiln_session_t* session = nullptr;
    Status status(kiln_session_create(model.get(), options, &session));
    if (status.ok()) *out = Session(session);
    return status;
  }

  kiln_session_t* get() const { return session_; }
  Status set_input(size_t index, const void* data, size_t byte_size) {
    return Status(kiln_session_set_input(session_, index, data, byte_size));
  }
  Status run() { return Status(kiln_session_run(session_)); }
  Status set_profiling(bool enabled) {
    return Status(kiln_session_set_profiling(session_, enabled ? 1 : 0));
  }
  size_t dispatch_count() const { return kiln_session_dispatch_count(session_); }
  Status dispatch_profile(size_t dispatch, uint64_t* out_nanoseconds) const {
    return Status(kiln_session_dispatch_profile(session_, dispatch, out_nanoseconds));
  }
  Status get_output(size_t index, void* data, size_t byte_size) {
    return Status(kiln_session_get_output(session_, index, data, byte_size));
  }
  Status output_data(size_t index, const void** out_data) {
    return Status(kiln_session_output_data(session_, index, out_data));
  }
  Status load_stats(kiln_session_load_stats_t* out_stats) const {
    return Status(kiln_session_load_stats(session_, out_stats));
  }

 private:
  explicit Session(kiln_session_t* session) : session_(session) {}
  kiln_session_t* session_ = nullptr;  // owned
};

}  // namespace kiln

#endif  // KILN_KILN_HPP_
