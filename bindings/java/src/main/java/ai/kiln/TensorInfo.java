// A model input's or output's description: name, element type, shape, bytes.
package ai.kiln;

import java.util.Arrays;

/** A model input or output: name, element type, shape and size (kiln_tensor_info_t). */
public final class TensorInfo {
  private final String name;
  private final DType dtype;
  private final long[] shape;
  private final long byteSize;
  private final int index;

  TensorInfo(String name, DType dtype, long[] shape, long byteSize, int index) {
    this.name = name;
    this.dtype = dtype;
    this.shape = shape.clone();
    this.byteSize = byteSize;
    this.index = index;
  }

  // From modelTensorMeta: {dtype, byte_size, bundle index, shape...}.
  static TensorInfo of(String name, long[] meta) {
    return new TensorInfo(name, DType.of((int) meta[0]), Arrays.copyOfRange(meta, 3, meta.length),
                          meta[1], (int) meta[2]);
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

  /** Number of dimensions. */
  public int rank() {
    return shape.length;
  }

  /** Total bytes: the element count times the element size. */
  public long byteSize() {
    return byteSize;
  }

  /** Number of elements. */
  public long elementCount() {
    return byteSize / dtype.size();
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
