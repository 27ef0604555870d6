// User errors vs compiler bugs (the Halide user_assert / internal_assert split).
//
// A UserError is the user's to fix: an unsupported operator, a dynamic shape,
// a malformed model. Its message names the ONNX node and says what to do.
// An InternalError is a bug in kilnc: an invariant of our own IR broke.
// kilnc's main catches both and prints them differently.
#pragma once

#include <functional>
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

// Warnings: what kilnc did to a model that it still compiles, which the user
// should know (a declared shape it replaced, ONNX's checker's complaint it
// went past), naming the node or value where one is at fault. A
// compilation's warnings go to the sink its WarningScope installed on this
// thread (kilnc prints them as "kilnc: warning: ...", the Python binding
// issues kiln.CompileWarning); with no sink they are printed to stderr so.
// The same text is reported once per scope (compile_model_bytes opens one).
using WarningFn = std::function<void(const std::string&)>;

void report_warning(const std::string& message);

// `text` on one line: each run of newlines and spaces one space, none at
// either end (a library's exception text, quoted in a message).
inline std::string one_line(const std::string& text) {
  std::string out;
  for (char c : text) {
    bool space = c == '\n' || c == '\r' || c == ' ' || c == '\t';
    if (space && (out.empty() || out.back() == ' ')) continue;
    out.push_back(space ? ' ' : c);
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

// Installs `sink` for this thread until destroyed (scopes nest).
class WarningScope {
 public:
  explicit WarningScope(WarningFn sink);
  ~WarningScope();
  WarningScope(const WarningScope&) = delete;
  WarningScope& operator=(const WarningScope&) = delete;
  struct State;  // (diagnostics.cpp)

 private:
  State* previous_;  // the enclosing scope's (restored when this one ends)
  State* state_;     // this scope's sink and the messages it reported
};

// Collects a message with operator<< and reports it when destroyed.
class WarningBuilder {
 public:
  WarningBuilder() = default;
  WarningBuilder(const WarningBuilder&) = delete;
  template <typename T>
  WarningBuilder& operator<<(const T& v) {
    msg_ << v;
    return *this;
  }
  ~WarningBuilder() { report_warning(msg_.str()); }

 private:
  std::ostringstream msg_;
};

}  // namespace kiln

// user_warning << "value 'y': ...";  (reports, never throws)
#define user_warning ::kiln::WarningBuilder()
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
