// The JNI entry points of libkiln_jni (src/main/native/kiln_jni.cpp) and the
// code that loads it. Package-private: the public classes check arguments and
// closed handles before calling in. Handles are the addresses of native
// structs (0 = none); strings cross as UTF-8 byte arrays (decoded here, so an
// odd byte in a bundle's tensor name cannot upset the JVM's modified UTF-8).
package ai.kiln;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

final class Native {
  private Native() {}

  static {
    load();
  }

  // Loads libkiln_jni: from the path in the system property kiln.jni, else the
  // environment variable KILN_JNI, else by name (kiln_jni) from
  // java.library.path, which is how Android finds it in the app's jniLibs.
  private static void load() {
    String path = System.getProperty(Kiln.JNI_PROPERTY);
    String from = "the system property " + Kiln.JNI_PROPERTY;
    if (path == null || path.isEmpty()) {
      path = System.getenv(Kiln.JNI_ENV);
      from = "the environment variable " + Kiln.JNI_ENV;
    }
    if (path != null && !path.isEmpty()) {
      if (!new java.io.File(path).isFile()) {
        throw new UnsatisfiedLinkError("ai.kiln: " + from + " names " + path
            + ", which is not a file; build it with `ninja -C build` (build/bindings/java/"
            + System.mapLibraryName("kiln_jni") + ")");
      }
      try {
        System.load(new java.io.File(path).getAbsolutePath());
      } catch (UnsatisfiedLinkError e) {
        throw new UnsatisfiedLinkError("ai.kiln: cannot load " + path + " (from " + from + "): "
            + e.getMessage());
      }
      return;
    }
    try {
      System.loadLibrary("kiln_jni");
    } catch (UnsatisfiedLinkError e) {
      throw new UnsatisfiedLinkError("ai.kiln: the JNI library " + System.mapLibraryName("kiln_jni")
          + " was not found: set the system property " + Kiln.JNI_PROPERTY
          + " (or the environment variable " + Kiln.JNI_ENV + ") to its path, e.g. -D"
          + Kiln.JNI_PROPERTY + "=build/bindings/java/" + System.mapLibraryName("kiln_jni")
          + ", or put its folder on java.library.path (" + e.getMessage() + ")");
    }
  }

  static String string(byte[] utf8) {
    return utf8 == null ? "" : new String(utf8, StandardCharsets.UTF_8);
  }

  static byte[] cString(String s) {
    byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
    byte[] out = new byte[utf8.length + 1];  // NUL-terminated
    System.arraycopy(utf8, 0, out, 0, utf8.length);
    return out;
  }

  // Versions (kiln_version, kiln_abi_version).
  static native byte[] version();
  static native int abiVersion();

  // Models: each returns a handle that modelFree releases. Errors throw
  // KilnException (the runtime's status).
  // `keys`: the trusted public keys, 32 bytes each (LoadOptions), or null.
  static native long modelLoadFile(byte[] pathUtf8z, byte[] keys);
  // Copies length bytes from data[offset..] into 64-byte aligned native memory
  // the handle owns.
  static native long modelLoadArray(byte[] data, int offset, int length, byte[] keys);
  // Uses the direct buffer's bytes in place (the caller keeps it reachable and
  // unchanged until modelFree).
  static native long modelLoadDirect(ByteBuffer data, int position, int length, byte[] keys);
  static native void modelFree(long model);
  // Inputs (output = false) or outputs: count, and per tensor its name and
  // {dtype, byte_size, bundle index, string_bytes, shape..., min_shape...}.
  static native int modelTensorCount(long model, boolean output);
  static native byte[] modelTensorName(long model, boolean output, int index);
  static native long[] modelTensorMeta(long model, boolean output, int index);
  // {version_major, version_minor, min_runtime_minor, device, content_hash,
  //  arena_bytes, constant_count, constant_bytes, tensor_count, node_count,
  //  kernel_count, dispatch_count, signature, signature_verified}
  static native long[] modelInfo(long model);
  static native byte[] modelProducer(long model);

  // Sessions.
  static native long sessionCreate(long model, int threads, int device);
  static native void sessionFree(long session);
  static native void sessionSetInputDirect(long session, int index, ByteBuffer data, int position,
                                           int length);
  // `array` is a primitive array of elements of `elementSize` bytes; offset
  // and length are in bytes.
  static native void sessionSetInputArray(long session, int index, Object array, int elementSize,
                                          int byteOffset, int byteLength);
  // kiln_session_set_input_shape.
  static native void sessionSetInputShape(long session, int index, long[] shape);
  // As modelTensorMeta, at the session's current shapes (kiln_session_get_*_info).
  static native long[] sessionTensorMeta(long session, boolean output, int index);
  static native void sessionRun(long session);
  // A read-write direct buffer over the output's bytes (the caller makes it
  // read-only).
  static native ByteBuffer sessionOutputView(long session, int index);
  static native void sessionGetOutputDirect(long session, int index, ByteBuffer data, int position,
                                            int length);
  static native void sessionGetOutputArray(long session, int index, Object array, int elementSize,
                                           int byteOffset, int byteLength);
  static native byte[] sessionDeviceName(long session);

  // The address of a direct buffer's first byte (tests: zero copy).
  static native long bufferAddress(ByteBuffer data);
}
