// Element types of tensors (kiln_dtype_t), with their sizes (strings: none).
package ai.kiln;

/** A tensor's element type (kiln_dtype_t). */
public enum DType {
  FLOAT32(0, 4, "float32"), FLOAT16(1, 2, "float16"), FLOAT64(2, 8, "float64"),
  INT8(3, 1, "int8"), INT16(4, 2, "int16"), INT32(5, 4, "int32"), INT64(6, 8, "int64"),
  UINT8(7, 1, "uint8"), BOOL(8, 1, "bool"), UINT16(9, 2, "uint16"), UINT32(10, 4, "uint32"),
  UINT64(11, 8, "uint64"), BFLOAT16(12, 2, "bfloat16"),
  /**
   * UTF-8 strings, passed as a string table (no element size: {@link #size} is
   * 0): {@link Session#setInput(int, String[])}, {@link Tensor#toStringArray}.
   */
  STRING(13, 0, "string");

  private final int value;
  private final int size;
  private final String label;

  DType(int value, int size, String label) {
    this.value = value;
    this.size = size;
    this.label = label;
  }

  /** The C enum's number. */
  public int value() {
    return value;
  }

  /** Bytes per element (0 for {@link #STRING}: a string table has no fixed element size). */
  public int size() {
    return size;
  }

  /** The runtime's name, e.g. "float32" (kiln_dtype_name). */
  @Override
  public String toString() {
    return label;
  }

  static DType of(int value) {
    for (DType dtype : values()) {
      if (dtype.value == value) return dtype;
    }
    throw new KilnException(KilnException.Code.UNSUPPORTED,
        "dtype " + value + " is unknown to this version of the Java binding");
  }
}
