// The runtime's errors as an unchecked exception: every kiln_status_t a call
// returns becomes one, with the status code and the runtime's message.
package ai.kiln;

/**
 * An error reported by the Kiln runtime: its status code (e.g.
 * {@code INVALID_BUNDLE}) and message (e.g. {@code bundle: tensor 1 ('y'): ...}).
 * Misuse of the Java objects themselves (a closed model or session, a stale
 * output view) is an {@link IllegalStateException} instead.
 */
public class KilnException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The runtime's status codes (kiln_status_code_t), with their numbers. */
  public enum Code {
    OK(0), INVALID_ARGUMENT(1), INVALID_BUNDLE(2), UNSUPPORTED(3), NOT_FOUND(4),
    OUT_OF_MEMORY(5), IO_ERROR(6), INTERNAL(7),
    /** A code this version of the binding does not know. */
    UNKNOWN(-1);

    private final int value;

    Code(int value) {
      this.value = value;
    }

    /** The C enum's number. */
    public int value() {
      return value;
    }

    static Code of(int value) {
      for (Code code : values()) {
        if (code.value == value) return code;
      }
      return UNKNOWN;
    }
  }

  private final Code code;
  private final int codeValue;
  private final String codeName;
  private final String runtimeMessage;

  /** An error with the given code and message. */
  public KilnException(Code code, String runtimeMessage) {
    this(code.value(), code.name(), runtimeMessage);
  }

  // Called by libkiln_jni: the code, kiln_status_code_name and the message.
  KilnException(int code, byte[] codeName, byte[] message) {
    this(code, Native.string(codeName), Native.string(message));
  }

  private KilnException(int codeValue, String codeName, String runtimeMessage) {
    super(codeName + ": " + runtimeMessage);
    this.code = Code.of(codeValue);
    this.codeValue = codeValue;
    this.codeName = codeName;
    this.runtimeMessage = runtimeMessage;
  }

  /** The status code. */
  public Code code() {
    return code;
  }

  /** The status code's number (kiln_status_code_t). */
  public int codeValue() {
    return codeValue;
  }

  /** The runtime's name of the code, e.g. "INVALID_BUNDLE" (kiln_status_code_name). */
  public String codeName() {
    return codeName;
  }

  /** The runtime's message, without the code. */
  public String runtimeMessage() {
    return runtimeMessage;
  }
}
