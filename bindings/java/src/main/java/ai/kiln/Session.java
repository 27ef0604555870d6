// One execution state of a model (kiln_session_t): set inputs, run, read
// outputs as zero-copy views or copies.
package ai.kiln;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.util.List;

/**
 * The state of one execution of a {@link Model}: its arena, inputs and
 * outputs, and, with {@code threads > 1}, its worker threads. Made by
 * {@link Model#newSession}. Use it from one thread at a time (its methods are
 * synchronized, so misuse is slow rather than unsafe); different sessions run
 * concurrently.
 *
 * <p>Tensor bytes are passed as the runtime reads them: in the platform's
 * byte order ({@link ByteOrder#nativeOrder()}, little-endian on every CPU
 * Kiln supports).
 *
 * <p><b>Zero copy.</b> {@link #setInput(int, ByteBuffer)} hands a direct
 * buffer's memory straight to {@code kiln_session_set_input}, which copies it
 * into the arena (the only copy). {@link #output(int)} returns a read-only view
 * of the output inside the arena ({@code kiln_session_get_output_view}): no
 * copy, the same address after every run, valid <b>until the next
 * {@link #run} or {@link #close}</b>. The view's {@link Tensor#buffer} then
 * throws {@link IllegalStateException}; a ByteBuffer taken from it earlier
 * must not be read any more (after close its memory is unmapped). Use
 * {@link #outputCopy(int)} or {@link #getOutput(int, ByteBuffer)} to keep
 * the values.
 *
 * <p><b>Strings.</b> A {@link DType#STRING} input is set from a
 * {@code String[]} ({@link #setInput(int, String[])}); an output's strings
 * are {@code output(i).toStringArray()}. Their bytes are string tables
 * (kiln.h): a string output's {@link #outputInfo} gives the size of the table
 * the last run wrote.
 *
 * <p>Errors of the runtime are {@link KilnException}s (e.g. a buffer of the
 * wrong size is {@code INVALID_ARGUMENT}); using a closed session is an
 * {@link IllegalStateException}; closing twice is harmless.
 */
public final class Session implements AutoCloseable {
  private final Model model;
  private long handle;  // guarded by this; 0 once closed
  private long runs;    // guarded by this: run() calls so far (output views record it)

  Session(Model model, long handle) {
    this.model = model;
    this.handle = handle;
  }

  /** The model it runs. */
  public Model model() {
    return model;
  }

  /** The device it runs on: "cpu", or the Vulkan device's name. */
  public synchronized String deviceName() {
    checkOpen();
    return Native.string(Native.sessionDeviceName(handle));
  }

  /**
   * Sets input {@code index} from the buffer's remaining bytes (exactly the
   * input's byte size at its current shape; the buffer's position is not changed). A direct buffer
   * is read in place; a heap buffer's array is pinned while the runtime copies it.
   */
  public synchronized void setInput(int index, ByteBuffer data) {
    checkOpen();
    checkInput(index);
    if (data == null) throw new NullPointerException("data");
    if (data.isDirect()) {
      Native.sessionSetInputDirect(handle, index, data, data.position(), data.remaining());
    } else if (data.hasArray()) {
      Native.sessionSetInputArray(handle, index, data.array(), 1,
                                  data.arrayOffset() + data.position(), data.remaining());
    } else {
      byte[] copy = new byte[data.remaining()];  // a read-only heap buffer
      data.duplicate().get(copy);
      Native.sessionSetInputArray(handle, index, copy, 1, 0, copy.length);
    }
  }

  /** Sets the input called {@code name} (see {@link #setInput(int, ByteBuffer)}). */
  public void setInput(String name, ByteBuffer data) {
    setInput(model.inputIndex(name), data);
  }

  /** Sets a float32 input from an array (its length must be the element count). */
  public synchronized void setInput(int index, float[] data) {
    checkOpen();
    checkInput(index);
    if (data == null) throw new NullPointerException("data");
    Native.sessionSetInputArray(handle, index, data, 4, 0, byteLength(data.length, 4));
  }

  /** Sets the float32 input called {@code name} from an array. */
  public void setInput(String name, float[] data) {
    setInput(model.inputIndex(name), data);
  }

  /** Sets an input from raw bytes in native order (e.g. a uint8 image). */
  public synchronized void setInput(int index, byte[] data) {
    checkOpen();
    checkInput(index);
    if (data == null) throw new NullPointerException("data");
    Native.sessionSetInputArray(handle, index, data, 1, 0, data.length);
  }

  /**
   * Sets a {@link DType#STRING} input from strings, one per element of its
   * current shape (row-major), encoded as UTF-8. Their bytes together may be
   * at most the input's {@link TensorInfo#stringBytes} ({@code INVALID_ARGUMENT}
   * naming {@code kilnc --string-bytes} otherwise). When a run may reuse the
   * input's memory, the next run needs it set again ({@code INVALID_ARGUMENT}
   * otherwise).
   */
  public synchronized void setInput(int index, String[] strings) {
    checkOpen();
    TensorInfo info = checkInput(index);
    if (strings == null) throw new NullPointerException("strings");
    if (info.dtype() != DType.STRING) {
      throw new KilnException(KilnException.Code.INVALID_ARGUMENT,
                              "input '" + info.name() + "' is " + info.dtype() + ", not string");
    }
    byte[] table = StringTable.pack(strings);
    Native.sessionSetInputArray(handle, index, table, 1, 0, table.length);
  }

  /** Sets the string input called {@code name} (see {@link #setInput(int, String[])}). */
  public void setInput(String name, String[] strings) {
    setInput(model.inputIndex(name), strings);
  }

  /**
   * Sets input {@code index}'s shape for the next runs, for a model compiled
   * with ranges ({@code kilnc --input-shape x=1,3,32..1280,32..1280};
   * {@link TensorInfo#minShape} .. {@link TensorInfo#shape}); set it before the
   * data, whose size is then the new shape's. A dimension outside its range is
   * {@code INVALID_ARGUMENT} naming the input, the dimension and the range;
   * inputs sharing a dimension must agree (checked at the next run). The
   * outputs' shapes follow: {@link #outputInfo}.
   */
  public synchronized void setInputShape(int index, long... shape) {
    checkOpen();
    checkInput(index);
    if (shape == null) throw new NullPointerException("shape");
    Native.sessionSetInputShape(handle, index, shape);
  }

  /** Sets the shape of the input called {@code name} (see {@link #setInputShape(int, long...)}). */
  public void setInputShape(String name, long... shape) {
    setInputShape(model.inputIndex(name), shape);
  }

  /** Input {@code index} at the session's current shape (see {@link #setInputShape}). */
  public synchronized TensorInfo inputInfo(int index) {
    checkOpen();
    String name = checkInput(index).name();
    return TensorInfo.of(name, Native.sessionTensorMeta(handle, false, index));
  }

  /**
   * Output {@code index} at the session's current input shapes (those of the
   * last run, and of the next): for a model compiled with ranges, its shape
   * depends on them.
   */
  public synchronized TensorInfo outputInfo(int index) {
    checkOpen();
    String name = checkOutput(index).name();
    return TensorInfo.of(name, Native.sessionTensorMeta(handle, true, index));
  }

  /**
   * Runs the model once. Output views taken before become stale, whether the
   * run succeeds or not.
   */
  public synchronized void run() {
    checkOpen();
    ++runs;
    Native.sessionRun(handle);
  }

  /**
   * A zero-copy, read-only view of output {@code index}: valid until the next
   * {@link #run} or {@link #close} (see the class comment).
   */
  public synchronized Tensor output(int index) {
    checkOpen();
    TensorInfo info = outputInfo(index);  // this run's shape
    ByteBuffer view = Native.sessionOutputView(handle, index);
    return new Tensor(info, view.asReadOnlyBuffer().order(ByteOrder.nativeOrder()), this, runs);
  }

  /** A view of the output called {@code name} (see {@link #output(int)}). */
  public Tensor output(String name) {
    return output(model.outputIndex(name));
  }

  /** A copy of output {@code index} in a new direct buffer, which stays valid. */
  public synchronized Tensor outputCopy(int index) {
    checkOpen();
    TensorInfo info = outputInfo(index);  // this run's shape
    Tensor copy = Tensor.allocate(info);
    ByteBuffer data = copy.buffer();
    Native.sessionGetOutputDirect(handle, index, data, 0, data.remaining());
    return copy;
  }

  /** A copy of the output called {@code name} (see {@link #outputCopy(int)}). */
  public Tensor outputCopy(String name) {
    return outputCopy(model.outputIndex(name));
  }

  /**
   * Copies output {@code index} into the buffer's remaining bytes (exactly the
   * output's byte size; the position is not changed).
   */
  public synchronized void getOutput(int index, ByteBuffer data) {
    checkOpen();
    if (data == null) throw new NullPointerException("data");
    if (data.isReadOnly()) throw new ReadOnlyBufferException();
    checkOutput(index);
    if (data.isDirect()) {
      Native.sessionGetOutputDirect(handle, index, data, data.position(), data.remaining());
    } else {
      Native.sessionGetOutputArray(handle, index, data.array(), 1,
                                   data.arrayOffset() + data.position(), data.remaining());
    }
  }

  /** Copies a float32 output into an array (its length must be the element count). */
  public synchronized void getOutput(int index, float[] data) {
    checkOpen();
    if (data == null) throw new NullPointerException("data");
    checkOutput(index);
    Native.sessionGetOutputArray(handle, index, data, 4, 0, byteLength(data.length, 4));
  }

  private TensorInfo checkInput(int index) {
    return checkIndex(model.inputs(), index, "input");
  }

  private TensorInfo checkOutput(int index) {
    return checkIndex(model.outputs(), index, "output");
  }

  private static TensorInfo checkIndex(List<TensorInfo> list, int index, String what) {
    if (index < 0 || index >= list.size()) {
      throw new KilnException(KilnException.Code.INVALID_ARGUMENT,
                              what + " index " + index + " out of range (" + list.size() + " "
                              + what + "s)");
    }
    return list.get(index);
  }

  private static int byteLength(int elements, int size) {
    if (elements > Integer.MAX_VALUE / size) {
      throw new IllegalArgumentException(elements + " elements of " + size + " bytes exceed 2 GiB");
    }
    return elements * size;
  }

  // Whether a view made after `generation` runs still shows the output.
  synchronized boolean viewValid(long generation) {
    return handle != 0 && generation == runs;
  }

  /** Whether {@link #close} was called (directly or by closing the model). */
  public synchronized boolean isClosed() {
    return handle == 0;
  }

  private void checkOpen() {
    if (handle == 0) throw new IllegalStateException("ai.kiln.Session is closed");
  }

  /** Frees the session (its arena and threads); its output views become invalid. Idempotent. */
  @Override
  public void close() {
    synchronized (this) {
      if (handle == 0) return;
      Native.sessionFree(handle);
      handle = 0;
    }
    model.forget(this);
  }
}
