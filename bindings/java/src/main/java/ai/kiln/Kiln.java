// Entry point facts of the Java binding: the runtime's version and where the
// JNI library is looked for. Loading models and running them: Model, Session.
package ai.kiln;

/** The runtime's version and how the binding finds libkiln_jni. */
public final class Kiln {
  private Kiln() {}

  /** System property naming the path of libkiln_jni (checked first). */
  public static final String JNI_PROPERTY = "kiln.jni";
  /** Environment variable naming the path of libkiln_jni (checked second). */
  public static final String JNI_ENV = "KILN_JNI";

  /** The runtime's version, e.g. "0.4.0" (kiln_version). Loads libkiln_jni. */
  public static String version() {
    return Native.string(Native.version());
  }

  /** The runtime's C ABI number (kiln_abi_version). Loads libkiln_jni. */
  public static int abiVersion() {
    return Native.abiVersion();
  }
}
