// kiln._kiln: the module itself: versions, errors, the dtype table, the
// debug counters and the tensor descriptions the other files use.
#include "common.h"

namespace kilnpy {

Stats g_stats;

namespace {

PyObject* g_error = nullptr;          // kiln.Error (a strong reference for the process)
PyObject* g_compile_error = nullptr;  // kiln.CompileError
PyObject* g_compile_warning = nullptr;  // kiln.CompileWarning

const DtypeInfo kDtypes[] = {
    {'f', 4, "float32", "f"},  // KILN_DTYPE_FLOAT32
    {'f', 2, "float16", "e"},  // KILN_DTYPE_FLOAT16
    {'f', 8, "float64", "d"},  // KILN_DTYPE_FLOAT64
    {'i', 1, "int8", "b"},     // KILN_DTYPE_INT8
    {'i', 2, "int16", "h"},    // KILN_DTYPE_INT16
    {'i', 4, "int32", "i"},    // KILN_DTYPE_INT32
    {'i', 8, "int64", "q"},    // KILN_DTYPE_INT64
    {'u', 1, "uint8", "B"},    // KILN_DTYPE_UINT8
    {'b', 1, "bool", "?"},     // KILN_DTYPE_BOOL
    {'u', 2, "uint16", "H"},   // KILN_DTYPE_UINT16
    {'u', 4, "uint32", "I"},   // KILN_DTYPE_UINT32
    {'u', 8, "uint64", "Q"},   // KILN_DTYPE_UINT64
    {'u', 2, "uint16", "H"},   // KILN_DTYPE_BFLOAT16: numpy has none; its bits as uint16 (docs/python.md)
    {'U', 0, "str", nullptr},  // KILN_DTYPE_STRING: a string table, to and from numpy str arrays (_convert.py)
    // The narrow types: their bytes (uint8; int8 for the signed integers),
    // ml_dtypes' arrays in Python when it is installed (docs/python.md).
    {'u', 1, "uint8", "B", "float8_e4m3fn"},    // KILN_DTYPE_FLOAT8E4M3FN
    {'u', 1, "uint8", "B", "float8_e4m3fnuz"},  // KILN_DTYPE_FLOAT8E4M3FNUZ
    {'u', 1, "uint8", "B", "float8_e5m2"},      // KILN_DTYPE_FLOAT8E5M2
    {'u', 1, "uint8", "B", "float8_e5m2fnuz"},  // KILN_DTYPE_FLOAT8E5M2FNUZ
    {'u', 1, "uint8", "B", "uint4"},            // KILN_DTYPE_UINT4
    {'i', 1, "int8", "b", "int4"},              // KILN_DTYPE_INT4
    {'u', 1, "uint8", "B", "float4_e2m1fn"},    // KILN_DTYPE_FLOAT4E2M1
    {'u', 1, "uint8", "B", "float8_e8m0fnu"},   // KILN_DTYPE_FLOAT8E8M0
    {'u', 1, "uint8", "B", "uint2"},            // KILN_DTYPE_UINT2
    {'i', 1, "int8", "b", "int2"},              // KILN_DTYPE_INT2
};

PyObject* version(PyObject*, PyObject*) { return PyUnicode_FromString(kiln_version()); }

PyObject* abi_version(PyObject*, PyObject*) { return PyLong_FromUnsignedLong(kiln_abi_version()); }

PyObject* stats(PyObject*, PyObject*) {
  return Py_BuildValue("{s:K,s:K}", "inputs_direct", (unsigned long long)g_stats.inputs_direct,
                       "input_copies", (unsigned long long)g_stats.input_copies);
}

PyMethodDef kMethods[] = {
    {"compile", (PyCFunction)(void (*)(void))compile, METH_VARARGS | METH_KEYWORDS,
     "compile(...) -> (bundle, kernels_object, kernels_header): kilnc in process (see kiln.compile)"},
    {"runtime_version", version, METH_NOARGS, "libkiln's version (kiln_version())"},
    {"abi_version", abi_version, METH_NOARGS, "libkiln's ABI number (kiln_abi_version())"},
    {"stats", stats, METH_NOARGS, "the debug counters: inputs_direct, input_copies"},
    {nullptr, nullptr, 0, nullptr},
};

PyModuleDef kModule = {
    PyModuleDef_HEAD_INIT, "kiln._kiln",
    "Kiln's compiler and runtime (the extension under the kiln package).", -1, kMethods,
    nullptr, nullptr, nullptr, nullptr,
};

}  // namespace

PyTypeObject make_type(const char* name, size_t basicsize, destructor dealloc, const char* doc,
                       PyMethodDef* methods, PyGetSetDef* getset, newfunc new_object, PyBufferProcs* buffer) {
  PyTypeObject t{PyVarObject_HEAD_INIT(nullptr, 0)};
  t.tp_name = name;
  t.tp_basicsize = (Py_ssize_t)basicsize;
  t.tp_dealloc = dealloc;
  t.tp_flags = Py_TPFLAGS_DEFAULT;
  t.tp_doc = doc;
  t.tp_methods = methods;
  t.tp_getset = getset;
  t.tp_new = new_object;
  t.tp_as_buffer = buffer;
  return t;
}

bool add_type(PyObject* module, PyTypeObject* type, const char* name) {
  if (PyType_Ready(type) < 0) return false;
  Py_INCREF(type);
  if (PyModule_AddObject(module, name, reinterpret_cast<PyObject*>(type)) == 0) return true;
  Py_DECREF(type);
  return false;
}

bool init_errors() {
  Ref errors(PyImport_ImportModule("kiln._errors"));
  if (!errors) return false;
  g_error = PyObject_GetAttrString(errors.get(), "Error");
  g_compile_error = g_error ? PyObject_GetAttrString(errors.get(), "CompileError") : nullptr;
  g_compile_warning = g_compile_error ? PyObject_GetAttrString(errors.get(), "CompileWarning") : nullptr;
  return g_compile_warning != nullptr;
}

bool warn_compile(const std::string& message) {
  return PyErr_WarnEx(g_compile_warning, message.c_str(), 2) == 0;  // (at kiln.compile's caller)
}

PyObject* raise_error(bool compile_error, const std::string& message, const char* code) {
  PyObject* cls = compile_error ? g_compile_error : g_error;
  Ref text(PyUnicode_DecodeUTF8(message.data(), (Py_ssize_t)message.size(), "replace"));
  if (!text) return nullptr;
  Ref exc(PyObject_CallFunction(cls, "Os", text.get(), code));
  if (exc) PyErr_SetObject(cls, exc.get());
  return nullptr;
}

PyObject* raise_status(kiln_status_t status) {
  std::string message = kiln_status_message(status);
  const char* code = kiln_status_code_name(kiln_status_code(status));
  kiln_status_free(status);
  return raise_error(false, message, code);
}

const DtypeInfo* dtype_info(kiln_dtype_t dtype) {
  size_t i = (size_t)dtype;
  return i < sizeof(kDtypes) / sizeof(kDtypes[0]) ? &kDtypes[i] : nullptr;
}

PyObject* dims_tuple(const std::vector<int64_t>& dims) {
  Ref tuple(PyTuple_New((Py_ssize_t)dims.size()));
  if (!tuple) return nullptr;
  for (size_t d = 0; d < dims.size(); d++) {
    PyObject* dim = PyLong_FromLongLong(dims[d]);
    if (!dim) return nullptr;
    PyTuple_SET_ITEM(tuple.get(), (Py_ssize_t)d, dim);
  }
  return tuple.release();
}

std::string shape_text(const int64_t* dims, size_t rank) {
  std::string text = "(";
  for (size_t i = 0; i < rank; i++) {
    if (i) text += ", ";
    text += std::to_string(dims[i]);
  }
  return text + (rank == 1 ? ",)" : ")");
}

bool describe_tensors(const kiln_model_t* model, bool outputs, std::vector<TensorDesc>* out) {
  size_t count = outputs ? kiln_model_output_count(model) : kiln_model_input_count(model);
  out->clear();
  out->reserve(count);
  for (size_t i = 0; i < count; i++) {
    kiln_tensor_info_t info;
    kiln_tensor_info_init(&info);
    kiln_status_t status = outputs ? kiln_model_get_output_info(model, i, &info)
                                   : kiln_model_get_input_info(model, i, &info);
    if (status) {
      raise_status(status);
      return false;
    }
    const DtypeInfo* dtype = dtype_info(info.dtype);
    if (!dtype) {
      raise_error(false, std::string(outputs ? "output '" : "input '") + info.name + "' has element type " +
                             kiln_dtype_name(info.dtype) + ", which the Python binding does not know",
                  "UNSUPPORTED");
      return false;
    }
    std::vector<int64_t> shape(info.shape, info.shape + info.rank);
    std::vector<int64_t> least = info.min_shape ? std::vector<int64_t>(info.min_shape, info.min_shape + info.rank) : shape;
    out->push_back(TensorDesc{info.name, info.dtype, dtype, shape, least, info.byte_size, info.string_bytes});
  }
  return true;
}

}  // namespace kilnpy

PyMODINIT_FUNC PyInit__kiln(void) {
  using namespace kilnpy;
  Ref module(PyModule_Create(&kModule));
  if (!module || !init_errors() || !add_model_type(module.get()) || !add_session_types(module.get()))
    return nullptr;
  if (PyModule_AddStringConstant(module.get(), "__version__", KILN_PYTHON_VERSION) < 0 ||
      PyModule_AddIntConstant(module.get(), "HEADER_ABI_VERSION", KILN_ABI_VERSION) < 0)
    return nullptr;
  return module.release();
}
