// kiln._kiln.Model: a loaded bundle (kiln_model_t), from a file or from
// memory, with its inputs' and outputs' descriptions; makes sessions.
#include <cstdlib>
#include <cstring>

#include "common.h"

namespace kilnpy {

namespace {

struct ModelState {
  std::shared_ptr<ModelCore> core;  // empty once closed
  std::vector<TensorDesc> inputs;
  std::vector<TensorDesc> outputs;
};

PyObject* model_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
  static const char* kKeywords[] = {"source", "verify_only", "trusted_keys", nullptr};
  PyObject* source = nullptr;
  int verify_only = 0;
  Py_buffer keys = {};  // the trusted public keys, 32 bytes each, one after another
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|py*", (char**)kKeywords, &source, &verify_only, &keys))
    return nullptr;
  std::string trusted_keys;
  if (keys.obj) {
    trusted_keys.assign(static_cast<const char*>(keys.buf), (size_t)keys.len);
    PyBuffer_Release(&keys);
  }
  auto core = std::make_shared<ModelCore>();
  kiln_model_load_options_t options;
  kiln_model_load_options_init(&options);
  options.flags = verify_only ? KILN_MODEL_LOAD_VERIFY_ONLY : 0u;
  options.trusted_public_keys = reinterpret_cast<const uint8_t*>(trusted_keys.data());
  options.trusted_public_key_count = trusted_keys.size() / 32;
  kiln_status_t status = nullptr;
  if (PyUnicode_Check(source)) {
    PyObject* encoded = nullptr;  // bytes, in the file system's encoding
    if (!PyUnicode_FSConverter(source, &encoded)) return nullptr;
    std::string file = PyBytes_AS_STRING(encoded);
    Py_DECREF(encoded);
    Py_BEGIN_ALLOW_THREADS
    status = kiln_model_load_file_ex(file.c_str(), &options, &core->model);
    Py_END_ALLOW_THREADS
  } else {
    // Bytes: copied once into 64-byte aligned memory the model then uses in
    // place (kiln_model_load_memory would copy unaligned bytes itself, and
    // the caller's object could change while the model lives).
    Py_buffer view;
    if (PyObject_GetBuffer(source, &view, PyBUF_C_CONTIGUOUS) < 0) {
      PyErr_Clear();
      PyErr_Format(PyExc_TypeError, "Model.load takes a path or bytes, not %.100s", Py_TYPE(source)->tp_name);
      return nullptr;
    }
    size_t size = (size_t)view.len;
    core->memory.reset(static_cast<unsigned char*>(aligned_alloc(64, (size + 63) / 64 * 64 + 64)));
    if (!core->memory) {
      PyBuffer_Release(&view);
      return PyErr_NoMemory();
    }
    memcpy(core->memory.get(), view.buf, size);
    PyBuffer_Release(&view);
    Py_BEGIN_ALLOW_THREADS
    status = kiln_model_load_memory_ex(core->memory.get(), size, &options, &core->model);
    Py_END_ALLOW_THREADS
  }
  if (status) return raise_status(status);

  ModelState state;
  if (!describe_tensors(core->model, false, &state.inputs) || !describe_tensors(core->model, true, &state.outputs))
    return nullptr;
  state.core = std::move(core);
  return box(type, std::move(state));
}

// ((name, dtype name, shape, byte size, min shape, string bytes), ...); a narrow
// type's dtype name is ml_dtypes' ("float8_e4m3fn")
PyObject* describe(const std::vector<TensorDesc>& tensors) {
  Ref tuple(PyTuple_New((Py_ssize_t)tensors.size()));
  if (!tuple) return nullptr;
  for (size_t i = 0; i < tensors.size(); i++) {
    const TensorDesc& t = tensors[i];
    Ref shape(dims_tuple(t.shape)), least(dims_tuple(t.min_shape));
    if (!shape || !least) return nullptr;
    const char* dtype = t.info->narrow ? t.info->narrow : t.info->numpy;  // kiln/__init__.py maps a narrow one
    PyObject* item = Py_BuildValue("(ssOnOK)", t.name.c_str(), dtype, shape.get(), (Py_ssize_t)t.byte_size,
                                   least.get(), (unsigned long long)t.string_bytes);
    if (!item) return nullptr;
    PyTuple_SET_ITEM(tuple.get(), (Py_ssize_t)i, item);
  }
  return tuple.release();
}

PyObject* model_inputs(PyObject* self, void*) { return describe(unbox<ModelState>(self).inputs); }

PyObject* model_outputs(PyObject* self, void*) { return describe(unbox<ModelState>(self).outputs); }

// ((name, 'sequence' | 'optional', is_output, (tensor names...), presence
// name or None, holds_sequence), ...): kiln_model_get_composite_info, with
// input or output indices as names.
PyObject* model_composites(PyObject* self, void*) {
  const ModelState& state = unbox<ModelState>(self);
  if (!check_open(state.core, "model")) return nullptr;
  const size_t count = kiln_model_composite_count(state.core->model);
  Ref tuple(PyTuple_New((Py_ssize_t)count));
  if (!tuple) return nullptr;
  for (size_t i = 0; i < count; i++) {
    kiln_composite_info_t c;
    kiln_composite_info_init(&c);
    if (kiln_status_t status = kiln_model_get_composite_info(state.core->model, i, &c)) return raise_status(status);
    const std::vector<TensorDesc>& among = c.is_output ? state.outputs : state.inputs;
    Ref names(PyTuple_New((Py_ssize_t)c.element_count));
    if (!names) return nullptr;
    for (size_t k = 0; k < c.element_count; k++) {  // indices the runtime verified
      PyObject* name = PyUnicode_FromString(among.at(c.elements[k]).name.c_str());
      if (!name) return nullptr;
      PyTuple_SET_ITEM(names.get(), (Py_ssize_t)k, name);
    }
    if (c.presence < 0) Py_INCREF(Py_None);
    Ref presence(c.presence >= 0 ? PyUnicode_FromString(among.at((size_t)c.presence).name.c_str()) : Py_None);
    if (!presence) return nullptr;
    PyObject* item = Py_BuildValue("(ssOOOO)", c.name, c.kind == KILN_COMPOSITE_OPTIONAL ? "optional" : "sequence",
                                   c.is_output ? Py_True : Py_False, names.get(), presence.get(),
                                   c.holds_sequence ? Py_True : Py_False);
    if (!item) return nullptr;
    PyTuple_SET_ITEM(tuple.get(), (Py_ssize_t)i, item);
  }
  return tuple.release();
}

PyObject* model_closed(PyObject* self, void*) { return PyBool_FromLong(!unbox<ModelState>(self).core); }

// "cpu" or "vulkan": what the bundle was compiled for.
PyObject* model_device(PyObject* self, void*) {
  const std::shared_ptr<ModelCore>& core = unbox<ModelState>(self).core;
  if (!check_open(core, "model")) return nullptr;
  kiln_model_info_t info;
  kiln_model_info_init(&info);
  if (kiln_status_t status = kiln_model_get_info(core->model, &info)) return raise_status(status);
  return PyUnicode_FromString(info.device == KILN_DEVICE_VULKAN ? "vulkan" : "cpu");
}

PyObject* model_session(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* kKeywords[] = {"threads", "device", nullptr};
  unsigned long threads = 1;
  const char* device = "auto";
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|ks", (char**)kKeywords, &threads, &device)) return nullptr;
  const std::shared_ptr<ModelCore>& core = unbox<ModelState>(self).core;
  if (!check_open(core, "model")) return nullptr;
  return new_session(core, threads, device);
}

// Drops this object's hold on the model; it is freed once its sessions are.
PyObject* model_close(PyObject* self, PyObject*) {
  unbox<ModelState>(self).core.reset();
  Py_RETURN_NONE;
}

PyMethodDef kModelMethods[] = {
    {"session", (PyCFunction)(void (*)(void))model_session, METH_VARARGS | METH_KEYWORDS,
     "session(threads=1, device='auto') -> Session"},
    {"close", model_close, METH_NOARGS, "close(): release the model (freed when its last session is)"},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kModelGetSet[] = {
    {"inputs", model_inputs, nullptr, "((name, dtype, shape, nbytes), ...)", nullptr},
    {"outputs", model_outputs, nullptr, "((name, dtype, shape, nbytes), ...)", nullptr},
    {"composites", model_composites, nullptr,
     "((name, 'sequence'|'optional', is_output, tensor names, presence name|None, holds_sequence), ...)", nullptr},
    {"closed", model_closed, nullptr, "True after close()", nullptr},
    {"device", model_device, nullptr, "'cpu' or 'vulkan': what the bundle was compiled for", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject kModelType =
    make_type("kiln._kiln.Model", sizeof(Boxed<ModelState>), boxed_dealloc<ModelState>,
              "Model(source, verify_only=False): a bundle loaded from a path (str) or bytes", kModelMethods,
              kModelGetSet, model_new);

}  // namespace

bool add_model_type(PyObject* module) { return add_type(module, &kModelType, "Model"); }

}  // namespace kilnpy
