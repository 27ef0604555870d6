// kiln._kiln.compile: kilnc's pipeline in process (driver/pipeline.h),
// without the GIL. kiln/_compile.py checks and normalizes the arguments;
// this file turns them into kiln::CompileOptions and the compiler's
// exceptions into kiln.CompileError.
#include <new>

#include "codegen/static_kernels.h"
#include "common.h"
#include "driver/pipeline.h"
#include "support/diagnostics.h"

namespace kilnpy {

namespace {

// One compilation at a time: the compiler's process-wide state (LLVM's and
// glslang's initialization, the constant folder's host libraries) was written
// for one compilation per process. Taken without the GIL.
std::mutex g_compile_mutex;

bool to_string(PyObject* object, std::string* out) {
  Py_ssize_t size = 0;
  const char* text = PyUnicode_AsUTF8AndSize(object, &size);
  if (!text) return false;
  out->assign(text, (size_t)size);
  return true;
}

// Calls f(name, value) for each entry of a dict with str keys; false with
// an exception set when a key is not a str or f returns false.
template <typename F>
bool each_entry(PyObject* dict, F f) {
  PyObject *key, *value;
  Py_ssize_t pos = 0;
  std::string name;
  while (PyDict_Next(dict, &pos, &key, &value))
    if (!to_string(key, &name) || !f(name, value)) return false;
  return true;
}

// {name: (d0, d1, ...)} -> input_shapes; each d is a size or a (lo, hi)
// pair (kilnc's LO..HI; kiln._compile checked the values).
bool read_shapes(PyObject* dict, kiln::ImportOptions* import) {
  return each_entry(dict, [&](const std::string& name, PyObject* value) {
    Ref dims(PySequence_Fast(value, "input_shapes: each shape must be a sequence"));
    if (!dims) return false;
    std::vector<kiln::DimSpec>& shape = import->input_shapes[name];
    for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(dims.get()); i++) {
      PyObject* item = PySequence_Fast_GET_ITEM(dims.get(), i);
      long long lo, hi;
      if (PyTuple_Check(item)) {
        if (!PyArg_ParseTuple(item, "LL", &lo, &hi)) return false;
      } else {
        lo = hi = PyLong_AsLongLong(item);
        if (lo == -1 && PyErr_Occurred()) return false;
      }
      shape.push_back(kiln::DimSpec(lo, hi));
    }
    return true;
  });
}

// {name: serialized TensorProto bytes} -> frozen_inputs
bool read_frozen(PyObject* dict, kiln::ImportOptions* import) {
  return each_entry(dict, [&](const std::string& name, PyObject* value) {
    char* data = nullptr;
    Py_ssize_t size = 0;
    if (PyBytes_AsStringAndSize(value, &data, &size) < 0) return false;
    import->frozen_inputs[name].assign(data, (size_t)size);
    return true;
  });
}

// {name: (lo, hi)} -> input_values (kiln._compile checked the values)
bool read_values(PyObject* dict, kiln::ImportOptions* import) {
  return each_entry(dict, [&](const std::string& name, PyObject* value) {
    long long lo, hi;
    if (!PyArg_ParseTuple(value, "LL", &lo, &hi)) return false;
    import->input_values[name] = {lo, hi};
    return true;
  });
}

// {name: count} -> sequence_lengths (kiln._compile checked the counts)
bool read_lengths(PyObject* dict, kiln::ImportOptions* import) {
  return each_entry(dict, [&](const std::string& name, PyObject* value) {
    long long n = PyLong_AsLongLong(value);
    if (n == -1 && PyErr_Occurred()) return false;
    import->sequence_lengths[name] = n;
    return true;
  });
}

PyObject* to_bytes(const std::string& s) { return PyBytes_FromStringAndSize(s.data(), (Py_ssize_t)s.size()); }

}  // namespace

PyObject* compile(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kKeywords[] = {"data", "path", "name", "model_dir", "target", "input_shapes",
                                    "frozen_inputs", "static_kernels", "output", "max_arena",
                                    "vulkan_features", "vulkan_shared_memory", "disabled_graph_passes",
                                    "sign_key", "input_values", "string_bytes", "sequence_lengths", nullptr};
  PyObject *data = nullptr, *path = nullptr, *shapes = nullptr, *frozen = nullptr, *disabled = nullptr;
  PyObject *values = nullptr, *lengths = nullptr;
  const char *name = nullptr, *model_dir = nullptr, *target = nullptr, *output = nullptr, *sign_key = "";
  int static_kernels = 0, vulkan_shared_memory = 0;
  unsigned long long max_arena = 0;
  unsigned int vulkan_features = 0, string_bytes = 64;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOsssO!O!psKIpO!|sO!IO!", (char**)kKeywords, &data, &path,
                                   &name, &model_dir, &target, &PyDict_Type, &shapes, &PyDict_Type,
                                   &frozen, &static_kernels, &output, &max_arena, &vulkan_features,
                                   &vulkan_shared_memory, &PyList_Type, &disabled, &sign_key, &PyDict_Type, &values,
                                   &string_bytes, &PyDict_Type, &lengths))
    return nullptr;

  std::string model_bytes, model_path, target_text = target;
  if (path != Py_None) {
    if (!to_string(path, &model_path)) return nullptr;
  } else {
    char* bytes = nullptr;
    Py_ssize_t size = 0;
    if (PyBytes_AsStringAndSize(data, &bytes, &size) < 0) return nullptr;
    model_bytes.assign(bytes, (size_t)size);
  }
  kiln::CompileOptions options;
  if (!read_shapes(shapes, &options.import) || !read_frozen(frozen, &options.import)) return nullptr;
  if (values && !read_values(values, &options.import)) return nullptr;
  if (lengths && !read_lengths(lengths, &options.import)) return nullptr;
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(disabled); i++) {
    std::string pass;
    if (!to_string(PyList_GET_ITEM(disabled, i), &pass)) return nullptr;
    options.disabled_graph_passes.insert(pass);
  }
  options.static_kernels = static_kernels != 0;
  options.max_arena_bytes = max_arena;
  options.vulkan_features = vulkan_features;
  options.vulkan_shared_memory = vulkan_shared_memory != 0;
  options.sign_key = sign_key;
  options.import.string_bytes = string_bytes;  // kilnc --string-bytes (checked by kiln.compile)
  std::string model_name = name, dir = model_dir, output_path = output;

  std::vector<std::string> warnings;  // issued once the GIL is held again
  options.warn = [&warnings](const std::string& message) { warnings.push_back(message); };
  kiln::CompileOutput out;
  std::string error;
  const char* code = nullptr;  // a kiln status code name when the compilation failed
  Py_BEGIN_ALLOW_THREADS
  try {
    std::lock_guard<std::mutex> lock(g_compile_mutex);
    options.target = kiln::TargetSpec::parse(target_text);
    // As kilnc names it: MODEL of kiln_static_library_MODEL, from the output's stem.
    if (!output_path.empty()) options.static_name = kiln::static_library_name(output_path);
    out = model_path.empty() ? kiln::compile_model_bytes(model_bytes, dir, model_name, options)
                             : kiln::compile_model_file(model_path, options);
  } catch (const kiln::UserError& e) {
    code = "INVALID_ARGUMENT";
    error = e.what();
  } catch (const kiln::InternalError& e) {
    code = "INTERNAL";
    error = std::string(e.what()) + " (this is a bug in kilnc; please report it with the model)";
  } catch (const std::bad_alloc&) {
    code = "OUT_OF_MEMORY";
    error = "out of memory while compiling";
  } catch (const std::exception& e) {
    code = "INVALID_ARGUMENT";  // what kilnc reports as "error:" (libonnx, protobuf)
    error = e.what();
  } catch (...) {
    code = "INTERNAL";
    error = "unknown exception in kilnc (this is a bug in kilnc; please report it with the model)";
  }
  Py_END_ALLOW_THREADS
  for (const std::string& w : warnings)
    if (!warn_compile(w)) return nullptr;
  if (code) return raise_error(true, error, code);

  Ref bundle(to_bytes(out.bundle)), object(to_bytes(out.kernels_object)), header(to_bytes(out.kernels_header));
  if (!bundle || !object || !header) return nullptr;
  return PyTuple_Pack(3, bundle.get(), object.get(), header.get());
}

}  // namespace kilnpy
