// User errors vs compiler bugs (the Halide user_assert / internal_assert split).
//
// A UserError is the user's to fix: an unsupported operator, a dynamic shape,
// a malformed model. Its message names the ONNX node and says what to do.
// An InternalError is a bug in kilnc: an invariant of our own IR broke.
// kilnc's main catches both and prints them differently.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace kiln {

struct UserError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct InternalError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A kernel that needs static extents met a tensor whose extents are only
// known at run time (docs/dynamic-shapes.md). A user error: lowering
// reports it naming the node, and the user can give the input static
// dimensions instead.
struct DynamicShapeError : UserError {
  using UserError::UserError;
};

// Collects a message with operator<< and throws when destroyed.
class ErrorBuilder {
 public:
  ErrorBuilder(bool internal, const char* file, int line) : internal_(internal) {
    if (internal_) msg_ << "internal compiler error at " << file << ":" << line << ": ";
  }
  ErrorBuilder(const ErrorBuilder&) = delete;
  template <typename T>
  ErrorBuilder& operator<<(const T& v) {
    msg_ << v;
    return *this;
  }
  [[noreturn]] ~ErrorBuilder() noexcept(false) {
    if (internal_) throw InternalError(msg_.str());
    throw UserError(msg_.str());
  }

 private:
  bool internal_;
  std::ostringstream msg_;
};

}  // namespace kiln

// user_error << "Conv node 'x': ...";  (always throws)
#define user_error ::kiln::ErrorBuilder(false, __FILE__, __LINE__)
#define internal_error ::kiln::ErrorBuilder(true, __FILE__, __LINE__)
#define user_assert(c) \
  if (c) {             \
  } else               \
    user_error
#define internal_assert(c) \
  if (c) {                 \
  } else                   \
    internal_error << "condition failed: " #c ": "
