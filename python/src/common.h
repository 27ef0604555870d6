// kiln._kiln: what the extension's files share: owned references, raising
// kiln.Error / kiln.CompileError, the dtype table, the debug counters, and
// the model and session state that Python objects and output arrays share.
#pragma once

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kilnpy {

// An owned reference (Py_XDECREF when destroyed; needs the GIL).
class Ref {
 public:
  Ref() = default;
  explicit Ref(PyObject* object) : object_(object) {}
  Ref(Ref&& other) noexcept : object_(other.release()) {}
  Ref& operator=(Ref&& other) noexcept {
    if (this != &other) reset(other.release());
    return *this;
  }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  ~Ref() { Py_XDECREF(object_); }

  PyObject* get() const { return object_; }
  explicit operator bool() const { return object_ != nullptr; }
  PyObject* release() {
    PyObject* object = object_;
    object_ = nullptr;
    return object;
  }
  void reset(PyObject* object = nullptr) {
    PyObject* old = object_;
    object_ = object;
    Py_XDECREF(old);
  }

 private:
  PyObject* object_ = nullptr;
};

//===----------------------------------------------------------------------===//
// Errors (module.cpp): the classes come from kiln._errors (pure Python).
//===----------------------------------------------------------------------===//

// Imports kiln._errors and keeps Error and CompileError; false with an
// exception set.
bool init_errors();
// Raises `cls(message, code)` (kiln.Error or kiln.CompileError); returns nullptr.
PyObject* raise_error(bool compile_error, const std::string& message, const char* code);
// Issues kiln.CompileWarning(message); false when that raised (warnings as errors).
bool warn_compile(const std::string& message);
// Raises kiln.Error with the status's message and code name, frees it;
// returns nullptr.
PyObject* raise_status(kiln_status_t status);

//===----------------------------------------------------------------------===//
// Element types
//===----------------------------------------------------------------------===//

struct DtypeInfo {
  char kind;           // 'f' float, 'i' signed, 'u' unsigned, 'b' bool, 'U' strings (numpy's kinds)
  size_t size;         // bytes per element (0 for strings: a string table, kiln.h)
  const char* numpy;   // numpy's name ("float32"; "uint16" for bfloat16's bits; "str")
  const char* format;  // the buffer protocol's format character ("f"; nullptr for strings)
  // The narrow types (float8, int4, ...: one byte an element): ml_dtypes'
  // name, which model.inputs/outputs give (kiln/__init__.py maps it to the
  // ml_dtypes dtype, or to `numpy`'s bytes without ml_dtypes); nullptr else.
  const char* narrow = nullptr;
};
// nullptr for a dtype this binding does not know.
const DtypeInfo* dtype_info(kiln_dtype_t dtype);

//===----------------------------------------------------------------------===//
// Debug counters (kiln._stats()), updated with the GIL held.
//===----------------------------------------------------------------------===//

struct Stats {
  uint64_t inputs_direct = 0;  // inputs whose memory went straight to kiln_session_set_input
  uint64_t input_copies = 0;   // inputs converted by numpy first (dtype or layout)
};
extern Stats g_stats;

//===----------------------------------------------------------------------===//
// Shared state. Python objects and output arrays hold these through
// shared_ptr, so a closed Model or Session is freed only when nothing uses it
// any more (a session needs its model; an output view needs its session).
// The last reference is always dropped with the GIL held.
//===----------------------------------------------------------------------===//

struct ModelCore {
  kiln_model_t* model = nullptr;
  // kiln_model_load_memory's bytes (64-byte aligned, so used in place);
  // must outlive the model.
  std::unique_ptr<unsigned char, void (*)(void*)> memory{nullptr, free};
  ~ModelCore() { kiln_model_free(model); }
};

struct SessionCore {
  std::shared_ptr<ModelCore> model;
  kiln_session_t* session = nullptr;
  // A session is used by one thread at a time (kiln.h); run() holds this
  // while it runs without the GIL.
  std::mutex run_mutex;
  ~SessionCore() { kiln_session_free(session); }
};

// One input or output of the model, as the binding needs it.
struct TensorDesc {
  std::string name;             // the model's name for it
  kiln_dtype_t dtype;           // its element type
  const DtypeInfo* info;        // never nullptr (unknown dtypes are refused at load)
  std::vector<int64_t> shape;   // its largest shape (the only one where static)
  std::vector<int64_t> min_shape;  // its least shape (equal to `shape` where static)
  size_t byte_size;             // bytes at `shape` (strings: the largest table)
  uint64_t string_bytes;        // strings: what the table's strings may hold in all (else 0)
  // Whether some dimension is known only at run time (a bundle compiled with
  // input_shapes ranges): inputs then take any shape in [min_shape, shape].
  bool dynamic() const { return min_shape != shape; }
  bool strings() const { return dtype == KILN_DTYPE_STRING; }
};

// The descriptions of a model's inputs or outputs; false with kiln.Error set.
bool describe_tensors(const kiln_model_t* model, bool outputs, std::vector<TensorDesc>* out);
// "(1, 3, 224, 224)"
std::string shape_text(const int64_t* dims, size_t rank);
// (d0, d1, ...) as a new tuple of ints; nullptr with an exception set.
PyObject* dims_tuple(const std::vector<int64_t>& dims);

//===----------------------------------------------------------------------===//
// Types and functions of the module
//===----------------------------------------------------------------------===//

// A Python object owning one C++ value: made by box() (the value moved in
// place), destroyed by boxed_dealloc<T> (the type's tp_dealloc).
template <typename T>
struct Boxed {
  PyObject_HEAD
  T value;
};
template <typename T>
T& unbox(PyObject* self) {
  return reinterpret_cast<Boxed<T>*>(self)->value;
}
template <typename T>
void boxed_dealloc(PyObject* self) {
  unbox<T>(self).~T();
  Py_TYPE(self)->tp_free(self);
}
// A new object of `type` (whose tp_basicsize is sizeof(Boxed<T>)); nullptr
// with an exception set.
template <typename T>
PyObject* box(PyTypeObject* type, T&& value) {
  PyObject* self = type->tp_alloc(type, 0);
  if (self) new (&unbox<T>(self)) T(std::move(value));
  return self;
}
// False with ValueError("the <what> is closed") when `core` is empty.
template <typename Core>
bool check_open(const std::shared_ptr<Core>& core, const char* what) {
  if (core) return true;
  PyErr_Format(PyExc_ValueError, "the %s is closed", what);
  return false;
}

// A static type of the module (module.cpp); add_type readies it and adds it
// as `name` (false with an exception set).
PyTypeObject make_type(const char* name, size_t basicsize, destructor dealloc, const char* doc,
                       PyMethodDef* methods = nullptr, PyGetSetDef* getset = nullptr, newfunc new_object = nullptr,
                       PyBufferProcs* buffer = nullptr);
bool add_type(PyObject* module, PyTypeObject* type, const char* name);

// compile.cpp: kiln._kiln.compile(...)
PyObject* compile(PyObject* self, PyObject* args, PyObject* kwargs);

// model.cpp: kiln._kiln.Model; session.cpp: kiln._kiln.Session and the
// output views. Each adds its types to the module; false with an exception set.
bool add_model_type(PyObject* module);
bool add_session_types(PyObject* module);
// A new kiln._kiln.Session over `model` (session.cpp).
PyObject* new_session(const std::shared_ptr<ModelCore>& model, unsigned long threads,
                      const char* device);

// inputs.cpp: one input value made ready for kiln_session_set_input.
struct InputBuffer {
  const void* data = nullptr;
  size_t size = 0;
  std::vector<int64_t> dims;  // the value's shape (within the input's range)
  bool copied = false;   // numpy converted it first
  Py_buffer view{};      // held while `data` is used (buffer protocol)
  bool has_view = false;
  Ref keep;              // a DLPack capsule or the converted array, held likewise
  InputBuffer() = default;
  InputBuffer(const InputBuffer&) = delete;
  InputBuffer& operator=(const InputBuffer&) = delete;
  ~InputBuffer() {
    if (has_view) PyBuffer_Release(&view);
  }
};
// Fills `out` from `value` for input `desc`: its memory as it is when it is
// C-contiguous with the input's dtype (buffer protocol or DLPack), else
// converted by kiln._convert.convert_input; a string input's table made by
// kiln._convert.string_table. false with an exception set (kiln.Error
// INVALID_ARGUMENT for a wrong shape or an impossible dtype).
bool acquire_input(PyObject* value, const TensorDesc& desc, InputBuffer* out);

}  // namespace kilnpy
