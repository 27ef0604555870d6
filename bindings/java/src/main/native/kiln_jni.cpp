// libkiln_jni: the native side of the Java binding (ai.kiln.Native), over the
// public C API (kiln/kiln.h) only. Rules kept throughout:
//   - every kiln_status_t that is not OK becomes a thrown ai.kiln.KilnException
//     (code, kiln_status_code_name, message) and is freed; JNI failures become
//     the usual Java errors (OutOfMemoryError, IllegalArgumentException);
//   - no local reference outlives its call except the one returned, and the
//     only global reference is the exception class (JNI_OnLoad/OnUnload);
//   - native memory belongs to a handle (ModelHandle, SessionHandle) that the
//     matching *Free releases.
// Built like libkiln (no exceptions, RTTI or C++ library; linked as C).
#include <jni.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kiln/kiln.h"

namespace {

// A loaded model and, when it was loaded from a Java array, the 64-byte
// aligned copy of the bytes (kiln_model_load_memory uses them in place).
struct ModelHandle {
  kiln_model_t* model;
  void* bytes;  // owned (free), or NULL
};

// A session and the model it came from (for its outputs' sizes).
struct SessionHandle {
  kiln_session_t* session;
  const kiln_model_t* model;
};

jclass g_exception_class = NULL;       // global reference to ai.kiln.KilnException
jmethodID g_exception_init = NULL;     // KilnException(int, byte[], byte[])

ModelHandle* AsModel(jlong handle) { return reinterpret_cast<ModelHandle*>(static_cast<intptr_t>(handle)); }
SessionHandle* AsSession(jlong handle) { return reinterpret_cast<SessionHandle*>(static_cast<intptr_t>(handle)); }
jlong ToHandle(void* p) { return static_cast<jlong>(reinterpret_cast<intptr_t>(p)); }

// A new byte[] holding the bytes of `s` (NULL with OutOfMemoryError pending on failure).
jbyteArray Utf8Bytes(JNIEnv* env, const char* s) {
  if (!s) s = "";
  jsize length = static_cast<jsize>(strlen(s));
  jbyteArray array = env->NewByteArray(length);
  if (array) env->SetByteArrayRegion(array, 0, length, reinterpret_cast<const jbyte*>(s));
  return array;
}

void ThrowNamed(JNIEnv* env, const char* class_name, const char* message) {
  jclass cls = env->FindClass(class_name);
  if (cls) {
    env->ThrowNew(cls, message);
    env->DeleteLocalRef(cls);
  }
}

// Throws KilnException(code, message). Leaves an OutOfMemoryError instead if
// making it fails.
void ThrowKiln(JNIEnv* env, kiln_status_code_t code, const char* message) {
  jbyteArray name = Utf8Bytes(env, kiln_status_code_name(code));
  if (!name) return;
  jbyteArray text = Utf8Bytes(env, message);
  if (!text) {
    env->DeleteLocalRef(name);
    return;
  }
  jobject exception = env->NewObject(g_exception_class, g_exception_init, static_cast<jint>(code),
                                     name, text);
  env->DeleteLocalRef(name);
  env->DeleteLocalRef(text);
  if (exception) {
    env->Throw(static_cast<jthrowable>(exception));
    env->DeleteLocalRef(exception);
  }
}

// Throws a non-OK status as a KilnException and frees it. Returns true when
// the status was OK (nothing thrown).
bool Check(JNIEnv* env, kiln_status_t status) {
  if (!status) return true;
  ThrowKiln(env, kiln_status_code(status), kiln_status_message(status));
  kiln_status_free(status);
  return false;
}

// The bytes [position, position + length) of a direct buffer, or NULL with an
// IllegalArgumentException pending.
uint8_t* DirectRange(JNIEnv* env, jobject buffer, jint position, jint length) {
  uint8_t* base = static_cast<uint8_t*>(env->GetDirectBufferAddress(buffer));
  jlong capacity = env->GetDirectBufferCapacity(buffer);
  if (!base || capacity < 0) {
    ThrowNamed(env, "java/lang/IllegalArgumentException", "not a direct buffer");
    return NULL;
  }
  if (position < 0 || length < 0 || static_cast<jlong>(position) + length > capacity) {
    ThrowNamed(env, "java/lang/IndexOutOfBoundsException", "range outside the buffer");
    return NULL;
  }
  return base + position;
}

// Checks [offset, offset + length) against the byte length of a primitive
// array of `elements` elements of `element_size` bytes; throws if outside.
bool ArrayRangeOk(JNIEnv* env, jsize elements, jint element_size, jint offset, jint length) {
  jlong bytes = static_cast<jlong>(elements) * element_size;
  if (offset < 0 || length < 0 || static_cast<jlong>(offset) + length > bytes) {
    ThrowNamed(env, "java/lang/IndexOutOfBoundsException", "range outside the array");
    return false;
  }
  return true;
}

// Index as the C API's size_t (a negative one becomes out of range there).
size_t Index(jint index) { return index < 0 ? SIZE_MAX : static_cast<size_t>(index); }

kiln_status_t GetTensorInfo(const kiln_model_t* model, jboolean output, jint index,
                            kiln_tensor_info_t* info) {
  kiln_tensor_info_init(info);
  return output ? kiln_model_get_output_info(model, Index(index), info)
                : kiln_model_get_input_info(model, Index(index), info);
}

// Wraps the model a kiln_model_load_* call returned (with `status`) in a
// handle that owns `bytes`; on failure throws and frees `bytes`.
jlong FinishLoad(JNIEnv* env, kiln_status_t status, kiln_model_t* model, void* bytes) {
  if (!Check(env, status)) {
    free(bytes);
    return 0;
  }
  ModelHandle* handle = static_cast<ModelHandle*>(malloc(sizeof(ModelHandle)));
  if (!handle) {
    kiln_model_free(model);
    free(bytes);
    ThrowNamed(env, "java/lang/OutOfMemoryError", "ai.kiln: model handle");
    return 0;
  }
  handle->model = model;
  handle->bytes = bytes;
  return ToHandle(handle);
}

// The load options of one model load: the trusted public keys (32 bytes
// each, one after another; NULL: none) copied out of the Java array for the
// call (the runtime reads them only during the load).
struct LoadOptions {
  kiln_model_load_options_t options;  // what the load is given
  uint8_t* keys = NULL;               // the keys' bytes (malloc), freed with this
  bool ok = true;                     // false: an exception is pending
  LoadOptions(JNIEnv* env, jbyteArray key_array) {
    kiln_model_load_options_init(&options);
    if (!key_array) return;
    jsize length = env->GetArrayLength(key_array);
    keys = static_cast<uint8_t*>(malloc(length > 0 ? static_cast<size_t>(length) : 1));
    if (!keys) {
      ThrowNamed(env, "java/lang/OutOfMemoryError", "ai.kiln: trusted keys");
      ok = false;
      return;
    }
    env->GetByteArrayRegion(key_array, 0, length, reinterpret_cast<jbyte*>(keys));
    options.trusted_public_keys = keys;
    options.trusted_public_key_count = static_cast<size_t>(length) / 32;
  }
  ~LoadOptions() { free(keys); }
};

// Calls `copy(bytes)` (a kiln_session_* call that copies into or out of
// them) with bytes [offset, offset + length) of a primitive array of
// elements of `element_size` bytes, pinned (usually without a copy) for just
// that call: no JNI call inside the critical region. `writes`: whether the
// call fills the bytes (then a JVM's copy is written back). Throws the
// call's status.
template <typename Copy>
void WithPinnedArray(JNIEnv* env, jarray array, jint element_size, jint offset, jint length,
                     bool writes, Copy copy) {
  if (!ArrayRangeOk(env, env->GetArrayLength(array), element_size, offset, length)) return;
  void* base = env->GetPrimitiveArrayCritical(array, NULL);
  if (!base) return;  // OutOfMemoryError pending
  kiln_status_t status = copy(static_cast<uint8_t*>(base) + offset);
  env->ReleasePrimitiveArrayCritical(array, base, writes && !status ? 0 : JNI_ABORT);
  Check(env, status);
}

}  // namespace

extern "C" {

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM* vm, void*) {
  JNIEnv* env = NULL;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_6) != JNI_OK) return JNI_ERR;
  jclass cls = env->FindClass("ai/kiln/KilnException");
  if (!cls) return JNI_ERR;
  g_exception_init = env->GetMethodID(cls, "<init>", "(I[B[B)V");
  g_exception_class = static_cast<jclass>(env->NewGlobalRef(cls));
  env->DeleteLocalRef(cls);
  if (!g_exception_init || !g_exception_class) return JNI_ERR;
  return JNI_VERSION_1_6;
}

JNIEXPORT void JNICALL JNI_OnUnload(JavaVM* vm, void*) {
  JNIEnv* env = NULL;
  if (vm->GetEnv(reinterpret_cast<void**>(&env), JNI_VERSION_1_6) != JNI_OK) return;
  if (g_exception_class) env->DeleteGlobalRef(g_exception_class);
  g_exception_class = NULL;
}

JNIEXPORT jbyteArray JNICALL Java_ai_kiln_Native_version(JNIEnv* env, jclass) {
  return Utf8Bytes(env, kiln_version());
}

JNIEXPORT jint JNICALL Java_ai_kiln_Native_abiVersion(JNIEnv*, jclass) {
  return static_cast<jint>(kiln_abi_version());
}

//===--- Models ---------------------------------------------------------===//

JNIEXPORT jlong JNICALL Java_ai_kiln_Native_modelLoadFile(JNIEnv* env, jclass, jbyteArray path,
                                                          jbyteArray keys) {
  jsize length = env->GetArrayLength(path);
  char* cpath = static_cast<char*>(malloc(static_cast<size_t>(length) + 1));
  if (!cpath) {
    ThrowNamed(env, "java/lang/OutOfMemoryError", "ai.kiln: path");
    return 0;
  }
  env->GetByteArrayRegion(path, 0, length, reinterpret_cast<jbyte*>(cpath));
  cpath[length] = '\0';  // the Java side ends it with a NUL too
  LoadOptions options(env, keys);
  kiln_model_t* model = NULL;
  kiln_status_t status = options.ok ? kiln_model_load_file_ex(cpath, &options.options, &model) : NULL;
  free(cpath);
  if (!options.ok) return 0;
  return FinishLoad(env, status, model, NULL);
}

JNIEXPORT jlong JNICALL Java_ai_kiln_Native_modelLoadArray(JNIEnv* env, jclass, jbyteArray data,
                                                           jint offset, jint length, jbyteArray keys) {
  if (!ArrayRangeOk(env, env->GetArrayLength(data), 1, offset, length)) return 0;
  LoadOptions options(env, keys);
  if (!options.ok) return 0;
  // The runtime reads the bytes for the model's whole life: a copy of our
  // own, aligned so that the runtime does not copy it again.
  void* bytes = NULL;
  if (posix_memalign(&bytes, 64, length > 0 ? static_cast<size_t>(length) : 1) != 0) {
    ThrowNamed(env, "java/lang/OutOfMemoryError", "ai.kiln: bundle bytes");
    return 0;
  }
  env->GetByteArrayRegion(data, offset, length, static_cast<jbyte*>(bytes));
  kiln_model_t* model = NULL;
  kiln_status_t status =
      kiln_model_load_memory_ex(bytes, static_cast<size_t>(length), &options.options, &model);
  return FinishLoad(env, status, model, bytes);
}

JNIEXPORT jlong JNICALL Java_ai_kiln_Native_modelLoadDirect(JNIEnv* env, jclass, jobject buffer,
                                                            jint position, jint length, jbyteArray keys) {
  uint8_t* bytes = DirectRange(env, buffer, position, length);
  if (!bytes) return 0;
  LoadOptions options(env, keys);
  if (!options.ok) return 0;
  kiln_model_t* model = NULL;
  kiln_status_t status =
      kiln_model_load_memory_ex(bytes, static_cast<size_t>(length), &options.options, &model);
  return FinishLoad(env, status, model, NULL);
}

JNIEXPORT void JNICALL Java_ai_kiln_Native_modelFree(JNIEnv*, jclass, jlong handle) {
  ModelHandle* model = AsModel(handle);
  if (!model) return;
  kiln_model_free(model->model);
  free(model->bytes);
  free(model);
}

JNIEXPORT jint JNICALL Java_ai_kiln_Native_modelTensorCount(JNIEnv*, jclass, jlong handle,
                                                            jboolean output) {
  const kiln_model_t* model = AsModel(handle)->model;
  return static_cast<jint>(output ? kiln_model_output_count(model) : kiln_model_input_count(model));
}

JNIEXPORT jbyteArray JNICALL Java_ai_kiln_Native_modelTensorName(JNIEnv* env, jclass, jlong handle,
                                                                 jboolean output, jint index) {
  kiln_tensor_info_t info;
  if (!Check(env, GetTensorInfo(AsModel(handle)->model, output, index, &info))) return NULL;
  return Utf8Bytes(env, info.name);
}

// {dtype, byte_size, bundle index, string_bytes, shape..., min_shape...} of `info`.
jlongArray TensorMeta(JNIEnv* env, const kiln_tensor_info_t& info) {
  const jsize kHead = 4;
  jsize length = static_cast<jsize>(kHead + 2 * info.rank);
  jlongArray meta = env->NewLongArray(length);
  if (!meta) return NULL;
  jlong head[kHead] = {static_cast<jlong>(info.dtype), static_cast<jlong>(info.byte_size),
                       static_cast<jlong>(info.index), static_cast<jlong>(info.string_bytes)};
  env->SetLongArrayRegion(meta, 0, kHead, head);
  for (uint32_t d = 0; d < info.rank; ++d) {
    jlong dims[2] = {static_cast<jlong>(info.shape[d]),
                     static_cast<jlong>(info.min_shape ? info.min_shape[d] : info.shape[d])};
    env->SetLongArrayRegion(meta, static_cast<jsize>(kHead + d), 1, &dims[0]);
    env->SetLongArrayRegion(meta, static_cast<jsize>(kHead + info.rank + d), 1, &dims[1]);
  }
  return meta;
}

JNIEXPORT jlongArray JNICALL Java_ai_kiln_Native_modelTensorMeta(JNIEnv* env, jclass, jlong handle,
                                                                 jboolean output, jint index) {
  kiln_tensor_info_t info;
  if (!Check(env, GetTensorInfo(AsModel(handle)->model, output, index, &info))) return NULL;
  return TensorMeta(env, info);
}

JNIEXPORT jlongArray JNICALL Java_ai_kiln_Native_modelInfo(JNIEnv* env, jclass, jlong handle) {
  kiln_model_info_t info;
  kiln_model_info_init(&info);
  if (!Check(env, kiln_model_get_info(AsModel(handle)->model, &info))) return NULL;
  // The order ai.kiln.Native.modelInfo documents.
  jlong values[] = {info.version_major, info.version_minor, info.min_runtime_minor,
                    info.device, static_cast<jlong>(info.content_hash),
                    static_cast<jlong>(info.arena_bytes), info.constant_count,
                    static_cast<jlong>(info.constant_bytes), info.tensor_count,
                    info.node_count, info.kernel_count, info.dispatch_count,
                    info.signature, info.signature_verified};
  jsize length = static_cast<jsize>(sizeof(values) / sizeof(values[0]));
  jlongArray array = env->NewLongArray(length);
  if (array) env->SetLongArrayRegion(array, 0, length, values);
  return array;
}

JNIEXPORT jbyteArray JNICALL Java_ai_kiln_Native_modelProducer(JNIEnv* env, jclass, jlong handle) {
  kiln_model_info_t info;
  kiln_model_info_init(&info);
  if (!Check(env, kiln_model_get_info(AsModel(handle)->model, &info))) return NULL;
  return Utf8Bytes(env, info.producer);
}

//===--- Sessions -------------------------------------------------------===//

JNIEXPORT jlong JNICALL Java_ai_kiln_Native_sessionCreate(JNIEnv* env, jclass, jlong model_handle,
                                                          jint threads, jint device) {
  const kiln_model_t* model = AsModel(model_handle)->model;
  kiln_session_options_t options;
  kiln_session_options_init(&options);
  options.thread_count = static_cast<uint32_t>(threads);
  options.device = static_cast<uint32_t>(device);
  SessionHandle* handle = static_cast<SessionHandle*>(malloc(sizeof(SessionHandle)));
  if (!handle) {
    ThrowNamed(env, "java/lang/OutOfMemoryError", "ai.kiln: session handle");
    return 0;
  }
  kiln_session_t* session = NULL;
  if (!Check(env, kiln_session_create(model, &options, &session))) {
    free(handle);
    return 0;
  }
  handle->session = session;
  handle->model = model;
  return ToHandle(handle);
}

JNIEXPORT void JNICALL Java_ai_kiln_Native_sessionFree(JNIEnv*, jclass, jlong handle) {
  SessionHandle* session = AsSession(handle);
  if (!session) return;
  kiln_session_free(session->session);
  free(session);
}

JNIEXPORT void JNICALL Java_ai_kiln_Native_sessionSetInputDirect(JNIEnv* env, jclass, jlong handle,
                                                                 jint index, jobject buffer,
                                                                 jint position, jint length) {
  const uint8_t* data = DirectRange(env, buffer, position, length);
  if (!data) return;
  Check(env, kiln_session_set_input(AsSession(handle)->session, Index(index), data,
                                    static_cast<size_t>(length)));
}

JNIEXPORT void JNICALL Java_ai_kiln_Native_sessionSetInputArray(JNIEnv* env, jclass, jlong handle,
                                                                jint index, jarray array,
                                                                jint element_size, jint offset,
                                                                jint length) {
  kiln_session_t* session = AsSession(handle)->session;
  WithPinnedArray(env, array, element_size, offset, length, false, [&](uint8_t* bytes) {
    return kiln_session_set_input(session, Index(index), bytes, static_cast<size_t>(length));
  });
}

JNIEXPORT void JNICALL Java_ai_kiln_Native_sessionSetInputShape(JNIEnv* env, jclass, jlong handle,
                                                                jint index, jlongArray shape) {
  jsize rank = env->GetArrayLength(shape);
  if (rank > 64) {  // no bundle has more dimensions (the runtime refuses the rank anyway)
    ThrowKiln(env, KILN_INVALID_ARGUMENT, "set_input_shape: more than 64 dimensions");
    return;
  }
  int64_t dims[64];
  jlong* elements = env->GetLongArrayElements(shape, NULL);
  if (!elements) return;
  for (jsize d = 0; d < rank; ++d) dims[d] = static_cast<int64_t>(elements[d]);
  env->ReleaseLongArrayElements(shape, elements, JNI_ABORT);
  Check(env, kiln_session_set_input_shape(AsSession(handle)->session, Index(index), dims,
                                          static_cast<uint32_t>(rank)));
}

// As modelTensorMeta, at the session's current shapes.
JNIEXPORT jlongArray JNICALL Java_ai_kiln_Native_sessionTensorMeta(JNIEnv* env, jclass, jlong handle,
                                                                   jboolean output, jint index) {
  kiln_session_t* session = AsSession(handle)->session;
  kiln_tensor_info_t info;
  kiln_tensor_info_init(&info);
  kiln_status_t status = output ? kiln_session_get_output_info(session, Index(index), &info)
                                : kiln_session_get_input_info(session, Index(index), &info);
  if (!Check(env, status)) return NULL;
  return TensorMeta(env, info);
}

JNIEXPORT void JNICALL Java_ai_kiln_Native_sessionRun(JNIEnv* env, jclass, jlong handle) {
  Check(env, kiln_session_run(AsSession(handle)->session));
}

JNIEXPORT jobject JNICALL Java_ai_kiln_Native_sessionOutputView(JNIEnv* env, jclass, jlong handle,
                                                                jint index) {
  SessionHandle* session = AsSession(handle);
  kiln_tensor_info_t info;  // at the session's current shapes (the last run's)
  kiln_tensor_info_init(&info);
  if (!Check(env, kiln_session_get_output_info(session->session, Index(index), &info))) return NULL;
  if (info.byte_size > static_cast<size_t>(INT32_MAX)) {
    ThrowKiln(env, KILN_UNSUPPORTED, "output is larger than a Java ByteBuffer (2 GiB - 1 bytes)");
    return NULL;
  }
  const void* data = NULL;
  if (!Check(env, kiln_session_get_output_view(session->session, Index(index), &data))) return NULL;
  // The Java side makes it read-only; the memory is the session's arena.
  return env->NewDirectByteBuffer(const_cast<void*>(data), static_cast<jlong>(info.byte_size));
}

JNIEXPORT void JNICALL Java_ai_kiln_Native_sessionGetOutputDirect(JNIEnv* env, jclass, jlong handle,
                                                                  jint index, jobject buffer,
                                                                  jint position, jint length) {
  uint8_t* data = DirectRange(env, buffer, position, length);
  if (!data) return;
  Check(env, kiln_session_get_output(AsSession(handle)->session, Index(index), data,
                                     static_cast<size_t>(length)));
}

JNIEXPORT void JNICALL Java_ai_kiln_Native_sessionGetOutputArray(JNIEnv* env, jclass, jlong handle,
                                                                 jint index, jarray array,
                                                                 jint element_size, jint offset,
                                                                 jint length) {
  kiln_session_t* session = AsSession(handle)->session;
  WithPinnedArray(env, array, element_size, offset, length, true, [&](uint8_t* bytes) {
    return kiln_session_get_output(session, Index(index), bytes, static_cast<size_t>(length));
  });
}

JNIEXPORT jbyteArray JNICALL Java_ai_kiln_Native_sessionDeviceName(JNIEnv* env, jclass, jlong handle) {
  return Utf8Bytes(env, kiln_session_device_name(AsSession(handle)->session));
}

JNIEXPORT jlong JNICALL Java_ai_kiln_Native_bufferAddress(JNIEnv* env, jclass, jobject buffer) {
  return ToHandle(env->GetDirectBufferAddress(buffer));
}

}  // extern "C"
