// kiln._kiln.Session (a kiln_session_t) and its output views. run() takes
// the inputs' memory as it is where it can (inputs.cpp), sets the inputs,
// runs and reads the outputs without the GIL, and returns numpy arrays that
// view the session's arena (kiln_session_get_output_view) through an
// OutputView, which keeps the session alive; or, with copy=True, arrays of
// their own filled by kiln_session_get_output. String outputs are always
// arrays of their own (numpy str arrays, made from the tables).
#include <cstring>
#include <memory>

#include "common.h"

namespace kilnpy {

namespace {

PyObject* g_numpy = nullptr;  // the numpy module, imported on first use

PyObject* numpy_function(const char* name) {
  if (!g_numpy && !(g_numpy = PyImport_ImportModule("numpy"))) return nullptr;
  return PyObject_GetAttrString(g_numpy, name);
}

//===----------------------------------------------------------------------===//
// OutputView: a read-only buffer over one output in a session's arena
//===----------------------------------------------------------------------===//

struct OutputView {
  std::shared_ptr<SessionCore> core;  // the arena's owner
  const void* data = nullptr;
  Py_ssize_t len = 0;
  Py_ssize_t itemsize = 0;
  const char* format = nullptr;
  std::vector<Py_ssize_t> shape;
  std::vector<Py_ssize_t> strides;
};

int view_getbuffer(PyObject* self, Py_buffer* buffer, int flags) {
  const OutputView* view = &unbox<OutputView>(self);
  if ((flags & PyBUF_WRITABLE) == PyBUF_WRITABLE) {
    PyErr_SetString(PyExc_BufferError,
                    "kiln output views are read-only (Session.run(..., copy=True) gives writable arrays)");
    buffer->obj = nullptr;
    return -1;
  }
  Py_INCREF(self);
  buffer->obj = self;
  buffer->buf = const_cast<void*>(view->data);
  buffer->len = view->len;
  buffer->readonly = 1;
  buffer->itemsize = view->itemsize;
  buffer->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(view->format) : nullptr;
  buffer->ndim = (int)view->shape.size();
  buffer->shape = (flags & PyBUF_ND) == PyBUF_ND ? const_cast<Py_ssize_t*>(view->shape.data()) : nullptr;
  buffer->strides =
      (flags & PyBUF_STRIDES) == PyBUF_STRIDES ? const_cast<Py_ssize_t*>(view->strides.data()) : nullptr;
  buffer->suboffsets = nullptr;
  buffer->internal = nullptr;
  return 0;
}

PyBufferProcs kViewBuffer = {view_getbuffer, nullptr};

PyTypeObject kOutputViewType =
    make_type("kiln._kiln.OutputView", sizeof(Boxed<OutputView>), boxed_dealloc<OutputView>,
              "A read-only view of one output in a session's arena (the base of run()'s arrays)", nullptr, nullptr,
              nullptr, &kViewBuffer);

// numpy.asarray(OutputView): an array viewing `data`, whose base keeps the
// session (and so its arena) alive.
// `dims`: the output's shape at this run.
PyObject* view_array(const std::shared_ptr<SessionCore>& core, const void* data, const TensorDesc& desc,
                     const std::vector<int64_t>& dims, PyObject* asarray) {
  OutputView view;
  view.core = core;
  view.data = data;
  view.itemsize = (Py_ssize_t)desc.info->size;
  view.format = desc.info->format;
  view.shape.assign(dims.begin(), dims.end());
  view.strides.resize(dims.size());
  Py_ssize_t stride = view.itemsize;
  for (size_t d = dims.size(); d-- > 0;) {
    view.strides[d] = stride;
    stride *= (Py_ssize_t)dims[d];
  }
  view.len = stride;
  Ref object(box(&kOutputViewType, std::move(view)));
  return object ? PyObject_CallOneArg(asarray, object.get()) : nullptr;
}

//===----------------------------------------------------------------------===//
// Session
//===----------------------------------------------------------------------===//

struct SessionState {
  std::shared_ptr<SessionCore> core;  // empty once closed
  std::vector<TensorDesc> inputs;
  std::vector<TensorDesc> outputs;
  std::vector<uintptr_t> last_inputs;  // what the last run passed to kiln_session_set_input
};

std::string input_names(const std::vector<TensorDesc>& inputs) {
  std::string names;
  for (const TensorDesc& t : inputs) names += (names.empty() ? "'" : ", '") + t.name + "'";
  return names;
}

// Output arrays of their own for run(copy=True), with their buffers.
struct OwnedOutputs {
  std::vector<Ref> arrays;
  std::unique_ptr<Py_buffer[]> buffers;
  size_t held = 0;
  ~OwnedOutputs() {
    for (size_t i = 0; i < held; i++) PyBuffer_Release(&buffers[i]);
  }
  bool make(const std::vector<TensorDesc>& outputs) {
    Ref empty(numpy_function("empty"));
    if (!empty) return false;
    buffers.reset(new Py_buffer[outputs.size()]);
    for (const TensorDesc& t : outputs) {
      // A string output: room for its largest table (StringOutputs makes its array).
      Ref shape(t.strings() ? PyLong_FromSize_t(t.byte_size) : dims_tuple(t.shape));
      if (!shape) return false;
      Ref array(PyObject_CallFunction(empty.get(), "Os", shape.get(), t.strings() ? "uint8" : t.info->numpy));
      if (!array || PyObject_GetBuffer(array.get(), &buffers[held], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0)
        return false;
      held++;
      arrays.push_back(std::move(array));
    }
    return true;
  }
  // Output j as a new reference: its array when `dims` is the shape it was
  // made with, else a compact array of `dims` holding its first bytes (the
  // run filled those).
  PyObject* take(size_t j, const std::vector<int64_t>& dims) {
    const Py_buffer& b = buffers[j];
    bool same = (size_t)b.ndim == dims.size();
    for (size_t d = 0; same && d < dims.size(); d++) same = b.shape[d] == (Py_ssize_t)dims[d];
    if (same) return arrays[j].release();
    Ref shape(dims_tuple(dims));
    if (!shape) return nullptr;
    Py_ssize_t bytes = b.itemsize;
    for (int64_t d : dims) bytes *= (Py_ssize_t)d;
    Ref empty(numpy_function("empty")), dtype(PyObject_GetAttrString(arrays[j].get(), "dtype"));
    if (!empty || !dtype) return nullptr;
    Ref array(PyObject_CallFunctionObjArgs(empty.get(), shape.get(), dtype.get(), nullptr));
    Py_buffer out;
    if (!array || PyObject_GetBuffer(array.get(), &out, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS) < 0) return nullptr;
    if (bytes > b.len) bytes = b.len;  // never: a run's output fits its largest shape
    memcpy(out.buf, b.buf, (size_t)bytes);
    PyBuffer_Release(&out);
    return array.release();
  }
};

// String outputs: each run copies their tables (kiln_session_get_output)
// into buffers made beforehand (at their largest), and
// kiln._convert.string_array makes numpy str arrays of them, copy or not.
struct StringOutputs {
  std::vector<Ref> tables;    // per output: a bytearray for a string output, else empty
  std::vector<size_t> sizes;  // per output: its table's size after the run
  bool make(const std::vector<TensorDesc>& outputs) {
    tables.resize(outputs.size());
    sizes.assign(outputs.size(), 0);
    for (size_t j = 0; j < outputs.size(); j++) {
      if (!outputs[j].strings()) continue;
      tables[j].reset(PyByteArray_FromStringAndSize(nullptr, (Py_ssize_t)outputs[j].byte_size));
      if (!tables[j]) return false;
    }
    return true;
  }
  // Copies output j's table (no GIL needed).
  kiln_status_t read(kiln_session_t* session, size_t j, std::vector<int64_t>* dims) {
    kiln_tensor_info_t info;
    kiln_tensor_info_init(&info);
    kiln_status_t status = kiln_session_get_output_info(session, j, &info);
    if (status) return status;
    dims->assign(info.shape, info.shape + info.rank);
    sizes[j] = info.byte_size;  // at most the largest table (the runtime checked it)
    return kiln_session_get_output(session, j, PyByteArray_AS_STRING(tables[j].get()), info.byte_size);
  }
  // Output j as a new numpy str array of `dims`.
  PyObject* take(size_t j, const std::vector<int64_t>& dims) {
    static PyObject* unpacker = nullptr;
    if (!unpacker) {
      Ref module(PyImport_ImportModule("kiln._convert"));
      if (!module || !(unpacker = PyObject_GetAttrString(module.get(), "string_array"))) return nullptr;
    }
    Ref shape(dims_tuple(dims));
    if (!shape) return nullptr;
    return PyObject_CallFunction(unpacker, "OnO", tables[j].get(), (Py_ssize_t)sizes[j], shape.get());
  }
};

PyObject* session_run(PyObject* self, PyObject* args, PyObject* kwargs) {
  static const char* kKeywords[] = {"inputs", "copy", nullptr};
  PyObject* mapping = nullptr;
  int copy = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|p", (char**)kKeywords, &mapping, &copy)) return nullptr;
  SessionState* s = &unbox<SessionState>(self);
  if (!check_open(s->core, "session")) return nullptr;
  std::shared_ptr<SessionCore> core = s->core;  // alive through the run, even if closed meanwhile
  const kiln_model_t* model = core->model->model;

  // The inputs, by the model's index.
  size_t n = s->inputs.size();
  std::unique_ptr<InputBuffer[]> buffers(new InputBuffer[n]);
  std::vector<bool> given(n, false);
  // A dict, or any mapping with items() (a list has mapping slots too).
  bool is_mapping = PyDict_Check(mapping) || (PyMapping_Check(mapping) && PyObject_HasAttrString(mapping, "items"));
  Ref items(is_mapping ? PyMapping_Items(mapping) : nullptr);
  if (!items) {
    if (!PyErr_Occurred())
      PyErr_Format(PyExc_TypeError, "run takes a mapping of input names to arrays, not %.100s",
                   Py_TYPE(mapping)->tp_name);
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items.get()); i++) {
    PyObject* item = PyList_GET_ITEM(items.get(), i);
    PyObject* key = PyTuple_GetItem(item, 0);
    if (!key) return nullptr;
    const char* name = PyUnicode_Check(key) ? PyUnicode_AsUTF8(key) : nullptr;
    if (!name) {
      if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "input names are str, not %.100s", Py_TYPE(key)->tp_name);
      return nullptr;
    }
    size_t index = 0;
    if (kiln_status_t status = kiln_model_find_input(model, name, &index)) return raise_status(status);
    if (given[index]) return raise_error(false, std::string("input '") + name + "' given twice", "INVALID_ARGUMENT");
    if (!acquire_input(PyTuple_GET_ITEM(item, 1), s->inputs[index], &buffers[index])) return nullptr;
    given[index] = true;
  }
  for (size_t i = 0; i < n; i++)
    if (!given[i])
      return raise_error(false, "missing input '" + s->inputs[i].name + "' (the model's inputs: " +
                                    input_names(s->inputs) + ")", "INVALID_ARGUMENT");

  // Outputs are allocated at their largest shapes (no allocation happens
  // without the GIL); a run at smaller input shapes fills their first bytes.
  OwnedOutputs owned;
  if (copy && !owned.make(s->outputs)) return nullptr;
  StringOutputs strings;
  if (!strings.make(s->outputs)) return nullptr;
  std::vector<const void*> views(s->outputs.size(), nullptr);
  bool dynamic = false;  // outputs' shapes may differ from run to run (input ranges, or sizes a kernel computes)
  for (const TensorDesc& t : s->inputs) dynamic |= t.dynamic();
  for (const TensorDesc& t : s->outputs) dynamic |= t.dynamic();
  std::vector<std::vector<int64_t>> out_dims(s->outputs.size());
  for (size_t j = 0; j < out_dims.size(); j++) out_dims[j] = s->outputs[j].shape;

  kiln_status_t status = nullptr;
  Py_BEGIN_ALLOW_THREADS
  {
    std::lock_guard<std::mutex> lock(core->run_mutex);
    for (size_t i = 0; i < n && !status; i++) {
      if (s->inputs[i].dynamic())
        status = kiln_session_set_input_shape(core->session, i, buffers[i].dims.data(), (uint32_t)buffers[i].dims.size());
      if (!status) status = kiln_session_set_input(core->session, i, buffers[i].data, buffers[i].size);
    }
    if (!status) status = kiln_session_run(core->session);
    for (size_t j = 0; j < views.size() && !status; j++) {
      if (s->outputs[j].strings()) {
        status = strings.read(core->session, j, &out_dims[j]);
        continue;
      }
      size_t bytes = s->outputs[j].byte_size;
      if (dynamic) {  // this run's shape
        kiln_tensor_info_t info;
        kiln_tensor_info_init(&info);
        status = kiln_session_get_output_info(core->session, j, &info);
        if (status) break;
        out_dims[j].assign(info.shape, info.shape + info.rank);
        bytes = info.byte_size;
      }
      status = copy ? kiln_session_get_output(core->session, j, owned.buffers[j].buf, bytes)
                    : kiln_session_get_output_view(core->session, j, &views[j]);
    }
  }
  Py_END_ALLOW_THREADS
  s->last_inputs.assign(n, 0);
  for (size_t i = 0; i < n; i++) s->last_inputs[i] = reinterpret_cast<uintptr_t>(buffers[i].data);
  buffers.reset();
  if (status) return raise_status(status);

  Ref asarray(copy ? nullptr : numpy_function("asarray"));
  if (!copy && !asarray) return nullptr;
  Ref result(PyDict_New());
  if (!result) return nullptr;
  for (size_t j = 0; j < views.size(); j++) {
    Ref array(s->outputs[j].strings() ? strings.take(j, out_dims[j])
              : copy                    ? owned.take(j, out_dims[j])
                                        : view_array(core, views[j], s->outputs[j], out_dims[j], asarray.get()));
    if (!array || PyDict_SetItemString(result.get(), s->outputs[j].name.c_str(), array.get()) < 0) return nullptr;
  }
  return result.release();
}

PyObject* session_close(PyObject* self, PyObject*) {
  unbox<SessionState>(self).core.reset();
  Py_RETURN_NONE;
}

PyObject* session_closed(PyObject* self, void*) {
  return PyBool_FromLong(!unbox<SessionState>(self).core);
}

PyObject* session_device_name(PyObject* self, void*) {
  const std::shared_ptr<SessionCore>& core = unbox<SessionState>(self).core;
  if (!check_open(core, "session")) return nullptr;
  return PyUnicode_FromString(kiln_session_device_name(core->session));
}

PyObject* session_last_inputs(PyObject* self, void*) {
  const SessionState* s = &unbox<SessionState>(self);
  Ref tuple(PyTuple_New((Py_ssize_t)s->last_inputs.size()));
  if (!tuple) return nullptr;
  for (size_t i = 0; i < s->last_inputs.size(); i++) {
    PyObject* address = PyLong_FromSize_t(s->last_inputs[i]);
    if (!address) return nullptr;
    PyTuple_SET_ITEM(tuple.get(), (Py_ssize_t)i, address);
  }
  return tuple.release();
}

PyMethodDef kSessionMethods[] = {
    {"run", (PyCFunction)(void (*)(void))session_run, METH_VARARGS | METH_KEYWORDS,
     "run(inputs, copy=False) -> {output name: numpy.ndarray}"},
    {"close", session_close, METH_NOARGS, "close(): release the session (freed when its last output view is)"},
    {nullptr, nullptr, 0, nullptr},
};

PyGetSetDef kSessionGetSet[] = {
    {"closed", session_closed, nullptr, "True after close()", nullptr},
    {"device_name", session_device_name, nullptr, "'cpu' or the Vulkan device's name", nullptr},
    {"_last_input_addresses", session_last_inputs, nullptr,
     "debug: the addresses the last run passed to kiln_session_set_input, by input index", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr},
};

PyTypeObject kSessionType =
    make_type("kiln._kiln.Session", sizeof(Boxed<SessionState>), boxed_dealloc<SessionState>,
              "A session of a model (Model.session)", kSessionMethods, kSessionGetSet);

}  // namespace

PyObject* new_session(const std::shared_ptr<ModelCore>& model, unsigned long threads, const char* device) {
  std::string kind = device;
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  if (kind == "auto") {
    options.device = KILN_DEVICE_AUTO;
  } else if (kind == "cpu") {
    options.device = KILN_DEVICE_CPU;
  } else if (kind == "vulkan") {
    options.device = KILN_DEVICE_VULKAN;
  } else {
    PyErr_Format(PyExc_ValueError, "device must be 'auto', 'cpu' or 'vulkan', not '%.50s'", device);
    return nullptr;
  }
  // Beyond 32 bits it is still too many: the runtime says so.
  options.thread_count = threads > UINT32_MAX ? UINT32_MAX : (uint32_t)threads;

  auto core = std::make_shared<SessionCore>();
  core->model = model;
  kiln_status_t status = nullptr;
  Py_BEGIN_ALLOW_THREADS
  status = kiln_session_create(model->model, &options, &core->session);
  Py_END_ALLOW_THREADS
  if (status) return raise_status(status);

  SessionState state;
  if (!describe_tensors(model->model, false, &state.inputs) || !describe_tensors(model->model, true, &state.outputs))
    return nullptr;
  state.core = std::move(core);
  return box(&kSessionType, std::move(state));
}

bool add_session_types(PyObject* module) {
  return add_type(module, &kSessionType, "Session") && add_type(module, &kOutputViewType, "OutputView");
}

}  // namespace kilnpy
