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
  STRING(13, 0, "string"),
  /*
   * Since 0.10 bundles: ONNX's narrow types, one byte an element, passed as
   * byte buffers of their codes or values (kiln.h describes each format;
   * ONNX packs the 4- and 2-bit ones, kiln never does).
   */
  /** float8 E4M3FN: the 8-bit code (NaN 0x7F/0xFF, no infinity). */
  FLOAT8E4M3FN(14, 1, "float8e4m3fn"),
  /** float8 E4M3FNUZ: the 8-bit code (NaN 0x80 only, no infinity or -0). */
  FLOAT8E4M3FNUZ(15, 1, "float8e4m3fnuz"),
  /** float8 E5M2: the 8-bit code (IEEE-like, with infinity and NaN). */
  FLOAT8E5M2(16, 1, "float8e5m2"),
  /** float8 E5M2FNUZ: the 8-bit code (NaN 0x80 only, no infinity or -0). */
  FLOAT8E5M2FNUZ(17, 1, "float8e5m2fnuz"),
  /** 0..15 in a byte (the low 4 bits are read). */
  UINT4(18, 1, "uint4"),
  /** -8..7 in a byte, sign-extended (the low 4 bits are read). */
  INT4(19, 1, "int4"),
  /** float4 E2M1: the 4-bit code in the low bits of a byte (no infinity or NaN). */
  FLOAT4E2M1(20, 1, "float4e2m1"),
  /** float8 E8M0: 2^(code - 127), 0xFF is NaN. */
  FLOAT8E8M0(21, 1, "float8e8m0"),
  /** 0..3 in a byte (the low 2 bits are read). */
  UINT2(22, 1, "uint2"),
  /** -2..1 in a byte, sign-extended (the low 2 bits are read). */
  INT2(23, 1, "int2");

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
