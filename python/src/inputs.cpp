// Input values for kiln_session_set_input, without a copy where the dtype
// and layout allow: a C-contiguous buffer (buffer protocol: numpy, bytes,
// array.array, memoryview) or DLPack tensor (__dlpack__: torch, numpy, ...)
// on the CPU with the input's dtype goes straight to the runtime, which
// copies it into the session's arena. Anything else is converted by
// kiln._convert.convert_input (numpy, same_kind casting) and counted in
// kiln._stats()["input_copies"]. The shape must be the input's, or, for a
// bundle with run-time dimensions, within its range. A string input is
// always packed into a new string table (kiln._convert.string_table).
#include "common.h"
#include "dlpack.h"

namespace kilnpy {

namespace {

bool little_endian() {
  const uint16_t one = 1;
  return *reinterpret_cast<const uint8_t*>(&one) == 1;
}

// Does a buffer-protocol element (struct module syntax) have `want`'s type?
bool format_matches(const char* format, Py_ssize_t itemsize, const DtypeInfo& want) {
  const char* f = format ? format : "B";
  if (*f == '@' || *f == '=') {
    f++;
  } else if (*f == '<' || *f == '>' || *f == '!') {
    bool little = *f == '<';
    if (itemsize > 1 && little != little_endian()) return false;
    f++;
  }
  if (!f[0] || f[1]) return false;  // one element character, no counts or structs
  char kind;
  switch (f[0]) {
    case 'e': case 'f': case 'd': kind = 'f'; break;
    case 'b': case 'h': case 'i': case 'l': case 'q': case 'n': kind = 'i'; break;
    case 'B': case 'H': case 'I': case 'L': case 'Q': case 'N': kind = 'u'; break;
    case '?': kind = 'b'; break;
    default: return false;
  }
  return kind == want.kind && (size_t)itemsize == want.size;
}

bool dlpack_dtype_matches(const DLDataType& dtype, kiln_dtype_t kiln_dtype, const DtypeInfo& want) {
  if (kiln_dtype == KILN_DTYPE_BFLOAT16 && dtype.code == kDLBfloat) return dtype.bits == 16 && dtype.lanes == 1;
  uint8_t code = want.kind == 'f' ? kDLFloat : want.kind == 'i' ? kDLInt : want.kind == 'u' ? kDLUInt : kDLBool;
  return dtype.code == code && dtype.bits == want.size * 8 && dtype.lanes == 1;
}

// Whether the value's shape is one the input takes (each dimension within
// [min_shape, shape]); records it in `out`.
template <typename Dim>
bool shape_matches(int ndim, const Dim* dims, const TensorDesc& desc, InputBuffer* out) {
  if (ndim < 0 || (size_t)ndim != desc.shape.size()) return false;
  for (int d = 0; d < ndim; d++)
    if ((int64_t)dims[d] < desc.min_shape[d] || (int64_t)dims[d] > desc.shape[d]) return false;
  out->dims.assign(dims, dims + ndim);
  return true;
}

template <typename Dim>
void shape_error(int ndim, const Dim* dims, const TensorDesc& desc) {
  std::vector<int64_t> got(dims, dims + (ndim > 0 ? ndim : 0));
  std::string want = shape_text(desc.shape.data(), desc.shape.size());
  if (desc.dynamic()) {  // "(1, 8..128)"
    want = "(";
    for (size_t d = 0; d < desc.shape.size(); d++) {
      if (d) want += ", ";
      want += std::to_string(desc.min_shape[d]);
      if (desc.min_shape[d] != desc.shape[d]) want += ".." + std::to_string(desc.shape[d]);
    }
    want += desc.shape.size() == 1 ? ",)" : ")";
  }
  raise_error(false, "input '" + desc.name + "' has shape " + shape_text(got.data(), got.size()) +
                         (desc.dynamic() ? ", outside the model's range " : ", but the model's is ") + want,
              "INVALID_ARGUMENT");
}

// 1: taken as it is; 0: needs converting; -1: error set.
int try_buffer(PyObject* value, const TensorDesc& desc, InputBuffer* out) {
  if (!PyObject_CheckBuffer(value)) return 0;
  if (PyObject_GetBuffer(value, &out->view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
    PyErr_Clear();  // not C-contiguous
    return 0;
  }
  out->has_view = true;
  int taken = 1;
  if (!format_matches(out->view.format, out->view.itemsize, *desc.info)) {
    taken = 0;
  } else if (!shape_matches(out->view.ndim, out->view.shape, desc, out)) {
    shape_error(out->view.ndim, out->view.shape, desc);
    taken = -1;
  }
  if (taken != 1) {
    PyBuffer_Release(&out->view);
    out->has_view = false;
    return taken;
  }
  out->data = out->view.buf;
  out->size = (size_t)out->view.len;
  return 1;
}

// Row-major without gaps (dimensions of extent 1 may have any stride).
bool compact(const DLTensor& t) {
  int64_t expected = 1;
  for (int d = t.ndim - 1; d >= 0; d--) {
    if (t.shape[d] == 0) return true;
    if (t.shape[d] != 1 && t.strides[d] != expected) return false;
    expected *= t.shape[d];
  }
  return true;
}

int try_dlpack(PyObject* value, const TensorDesc& desc, InputBuffer* out) {
  Ref method(PyObject_GetAttrString(value, "__dlpack__"));
  if (!method) {
    PyErr_Clear();
    return 0;
  }
  // The capsule keeps its name: when it is released, its producer's
  // destructor calls the tensor's deleter (the DLPack rule for a capsule
  // never renamed "used_dltensor").
  Ref capsule(PyObject_CallNoArgs(method.get()));
  auto* managed = capsule ? static_cast<DLManagedTensor*>(PyCapsule_GetPointer(capsule.get(), "dltensor")) : nullptr;
  if (!managed) {
    PyErr_Clear();  // e.g. a tensor that requires grad: converting says why
    return 0;
  }
  const DLTensor& t = managed->dl_tensor;
  if (t.device.device_type != kDLCPU || !dlpack_dtype_matches(t.dtype, desc.dtype, *desc.info)) return 0;
  if (!shape_matches(t.ndim, t.shape, desc, out)) {
    shape_error(t.ndim, t.shape, desc);
    return -1;
  }
  if (t.strides && !compact(t)) return 0;
  out->data = static_cast<const char*>(t.data) + t.byte_offset;
  out->size = desc.info->size;
  for (int64_t d : out->dims) out->size *= (size_t)d;  // within the input's largest shape: no overflow
  out->keep = std::move(capsule);
  return 1;
}

// kiln._convert.convert_input(value, dtype name, input name) -> a
// C-contiguous numpy array of that dtype.
bool convert(PyObject* value, const TensorDesc& desc, InputBuffer* out) {
  static PyObject* converter = nullptr;
  if (!converter) {
    Ref module(PyImport_ImportModule("kiln._convert"));
    if (!module || !(converter = PyObject_GetAttrString(module.get(), "convert_input"))) return false;
  }
  Ref array(PyObject_CallFunction(converter, "Oss", value, desc.info->numpy, desc.name.c_str()));
  if (!array) return false;
  int taken = try_buffer(array.get(), desc, out);
  if (taken == 0)
    PyErr_Format(PyExc_SystemError, "kiln: input '%s' converted to %.100s is still not usable", desc.name.c_str(),
                 Py_TYPE(array.get())->tp_name);
  if (taken != 1) return false;
  out->keep = std::move(array);
  out->copied = true;
  return true;
}

// A string input's table: kiln._convert.string_table(value, input name) ->
// (table bytes, shape).
bool string_input(PyObject* value, const TensorDesc& desc, InputBuffer* out) {
  static PyObject* packer = nullptr;
  if (!packer) {
    Ref module(PyImport_ImportModule("kiln._convert"));
    if (!module || !(packer = PyObject_GetAttrString(module.get(), "string_table"))) return false;
  }
  Ref result(PyObject_CallFunction(packer, "Os", value, desc.name.c_str()));
  if (!result) return false;
  PyObject* table = PyTuple_GetItem(result.get(), 0);
  PyObject* shape = PyTuple_GetItem(result.get(), 1);
  if (!table || !shape || !PyBytes_Check(table) || !PyTuple_Check(shape)) {
    if (!PyErr_Occurred()) PyErr_SetString(PyExc_SystemError, "kiln: string_table gave no (bytes, shape)");
    return false;
  }
  std::vector<int64_t> dims((size_t)PyTuple_GET_SIZE(shape));
  for (size_t d = 0; d < dims.size(); d++) {
    dims[d] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape, (Py_ssize_t)d));
    if (dims[d] == -1 && PyErr_Occurred()) return false;
  }
  if (!shape_matches((int)dims.size(), dims.data(), desc, out)) {
    shape_error((int)dims.size(), dims.data(), desc);
    return false;
  }
  out->data = PyBytes_AS_STRING(table);
  out->size = (size_t)PyBytes_GET_SIZE(table);
  out->keep = std::move(result);  // holds the bytes
  out->copied = true;
  return true;
}

}  // namespace

bool acquire_input(PyObject* value, const TensorDesc& desc, InputBuffer* out) {
  if (desc.strings()) {  // always a new table (numpy's strings are UTF-32)
    if (!string_input(value, desc, out)) return false;
    g_stats.input_copies++;
    return true;
  }
  int taken = try_buffer(value, desc, out);
  if (taken == 0) taken = try_dlpack(value, desc, out);
  if (taken < 0) return false;
  if (taken == 1) {
    g_stats.inputs_direct++;
    return true;
  }
  if (!convert(value, desc, out)) return false;
  g_stats.input_copies++;
  return true;
}

}  // namespace kilnpy
