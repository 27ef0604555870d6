// A model input's or output's description: name, element type, shape, bytes.
package ai.kiln;

import java.util.Arrays;

/** A model input or output: name, element type, shape and size (kiln_tensor_info_t). */
public final class TensorInfo {
  private final String name;
  private final DType dtype;
  private final long[] shape;
  private final long[] minShape;
  private final long byteSize;
  private final int index;
  private final long stringBytes;

  TensorInfo(String name, DType dtype, long[] shape, long[] minShape, long byteSize, int index,
             long stringBytes) {
    this.name = name;
    this.dtype = dtype;
    this.shape = shape.clone();
    this.minShape = minShape.clone();
    this.byteSize = byteSize;
    this.index = index;
    this.stringBytes = stringBytes;
  }

  // From modelTensorMeta / sessionTensorMeta: {dtype, byte_size, bundle index,
  // string_bytes, shape..., min_shape...}.
  static TensorInfo of(String name, long[] meta) {
    int rank = (meta.length - 4) / 2;
    return new TensorInfo(name, DType.of((int) meta[0]), Arrays.copyOfRange(meta, 4, 4 + rank),
                          Arrays.copyOfRange(meta, 4 + rank, meta.length), meta[1], (int) meta[2],
                          meta[3]);
  }

  /** The tensor's name ("" when the bundle gives none). */
  public String name() {
    return name;
  }

  /** Element type. */
  public DType dtype() {
    return dtype;
  }

  /** Dimensions (a copy). */
  public long[] shape() {
    return shape.clone();
  }

  /**
   * The least dimensions (a copy): equal to {@link #shape} where static. For
   * a model compiled with ranges ({@code kilnc --input-shape x=1,3,32..1280,32..1280}),
   * {@link Model#inputs} give the largest shapes in {@link #shape} and the least
   * here; {@link Session#setInputShape} picks one in between.
   */
  public long[] minShape() {
    return minShape.clone();
  }

  /** Whether some dimension is known only at run time ({@link #minShape} differs from {@link #shape}). */
  public boolean isDynamic() {
    return !Arrays.equals(minShape, shape);
  }

  /** Number of dimensions. */
  public int rank() {
    return shape.length;
  }

  /**
   * Total bytes: the element count times the element size. For {@link DType#STRING},
   * the string table's: a model's, the largest; a session output's after a run,
   * the table the run wrote ({@link Session#outputInfo}).
   */
  public long byteSize() {
    return byteSize;
  }

  /**
   * For {@link DType#STRING}: the UTF-8 bytes all the tensor's strings may hold
   * together ({@code kilnc --string-bytes N} gives an input N per element); 0
   * for other element types.
   */
  public long stringBytes() {
    return stringBytes;
  }

  /** Number of elements (the product of the shape). */
  public long elementCount() {
    long count = 1;
    for (long dim : shape) count *= dim;
    return count;
  }

  /** The tensor's index among all tensors of the bundle. */
  public int bundleIndex() {
    return index;
  }

  /** e.g. {@code input:float32[1,3,64,64]}, as {@code kiln inspect} prints it. */
  @Override
  public String toString() {
    StringBuilder s = new StringBuilder(name).append(':').append(dtype).append('[');
    for (int i = 0; i < shape.length; ++i) {
      if (i > 0) s.append(',');
      s.append(shape[i]);
    }
    return s.append(']').toString();
  }
}
