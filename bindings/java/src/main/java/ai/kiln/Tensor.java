// A tensor's description and bytes in a direct ByteBuffer: either a zero-copy
// view of a session's output (valid until its next run or close) or memory
// of its own (a copy, or a buffer allocated for an input).
package ai.kiln;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * Name, element type, shape and bytes of a tensor, the bytes in a direct
 * {@link ByteBuffer} in native byte order (a {@link DType#STRING} tensor's:
 * its string table, read with {@link #toStringArray}).
 *
 * <p>A <em>view</em> ({@link Session#output}) is read-only and shows the
 * session's output in place: {@link #buffer} throws
 * {@link IllegalStateException} once the session has run again or was
 * closed. A tensor with memory of its own ({@link Session#outputCopy},
 * {@link #allocate}, {@link #copy}) stays valid until closed. Closing only
 * detaches the buffer (the JVM frees a direct buffer's memory when it is
 * collected); it is idempotent.
 */
public final class Tensor implements AutoCloseable {
  private final TensorInfo info;
  private ByteBuffer data;         // position 0, limit = byte size; null once closed
  private final Session session;   // the session whose output this views; null if owned
  private final long generation;   // the session's run count when the view was made

  Tensor(TensorInfo info, ByteBuffer data, Session session, long generation) {
    this.info = info;
    this.data = data;
    this.session = session;
    this.generation = generation;
  }

  /**
   * A zeroed, writable tensor of the given description in a new direct
   * buffer: fill {@link #buffer()} and pass it to {@link Session#setInput(int, ByteBuffer)}.
   */
  public static Tensor allocate(TensorInfo info) {
    if (info.byteSize() > Integer.MAX_VALUE) {
      throw new IllegalArgumentException(info + " is " + info.byteSize()
          + " bytes: more than a ByteBuffer holds");
    }
    ByteBuffer data = ByteBuffer.allocateDirect((int) info.byteSize()).order(ByteOrder.nativeOrder());
    return new Tensor(info, data, null, 0);
  }

  /** The description (name, dtype, shape, byte size). */
  public TensorInfo info() {
    return info;
  }

  /** The tensor's name. */
  public String name() {
    return info.name();
  }

  /** Element type. */
  public DType dtype() {
    return info.dtype();
  }

  /** Dimensions (a copy). */
  public long[] shape() {
    return info.shape();
  }

  /** Total bytes. */
  public long byteSize() {
    return info.byteSize();
  }

  /** Whether this is a view of a session's output (else it owns its memory). */
  public boolean isView() {
    return session != null;
  }

  /** Whether {@link #buffer} may be used: not closed and, for a view, the session has not run again or closed. */
  public boolean isValid() {
    return data != null && (session == null || session.viewValid(generation));
  }

  /**
   * The bytes: a new buffer object over the same memory (position 0, limit
   * the byte size, native order), read-only for a view. For a view, valid only
   * until the session's next run or close.
   */
  public ByteBuffer buffer() {
    if (data == null) throw new IllegalStateException("ai.kiln.Tensor '" + name() + "' is closed");
    if (session != null && !session.viewValid(generation)) {
      throw new IllegalStateException("the view of output '" + name() + "' is stale: its session "
          + (session.isClosed() ? "was closed" : "ran again") + " (copy() a view to keep its values)");
    }
    return data.duplicate().order(ByteOrder.nativeOrder());
  }

  /** A copy with memory of its own (a new direct buffer), writable. */
  public Tensor copy() {
    ByteBuffer source = buffer();
    Tensor copy = allocate(info);
    copy.data.put(source);
    copy.data.clear();
    return copy;
  }

  /** The elements of a float32 tensor, copied into an array. */
  public float[] toFloatArray() {
    if (dtype() != DType.FLOAT32) {
      throw new IllegalStateException("'" + name() + "' is " + dtype() + ", not float32");
    }
    float[] values = new float[(int) info.elementCount()];
    buffer().asFloatBuffer().get(values);
    return values;
  }

  /**
   * The strings of a {@link DType#STRING} tensor (row-major), decoded from its
   * string table's UTF-8 (an ill-formed sequence reads as U+FFFD).
   */
  public String[] toStringArray() {
    if (dtype() != DType.STRING) {
      throw new IllegalStateException("'" + name() + "' is " + dtype() + ", not string");
    }
    return StringTable.unpack(buffer(), info.elementCount());
  }

  /** Detaches the buffer; later calls to {@link #buffer} throw. Idempotent. */
  @Override
  public void close() {
    data = null;
  }

  @Override
  public String toString() {
    return info + (session != null ? " (view)" : "");
  }
}
