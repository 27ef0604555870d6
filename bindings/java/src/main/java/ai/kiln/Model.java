// A loaded, verified bundle (kiln_model_t): its inputs, outputs and facts,
// and the sessions made from it. Immutable after loading; thread-safe.
package ai.kiln;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * A Kiln bundle, loaded and verified, with its kernels mapped. Any number of
 * threads may read it and create sessions from it at once.
 *
 * <p>Close it when done (try-with-resources): closing a model closes the
 * sessions made from it first. Using a closed model throws
 * {@link IllegalStateException}; closing twice is harmless.
 *
 * <pre>{@code
 * try (Model model = Model.load("model.kiln");
 *      Session session = model.newSession(new SessionOptions().threads(2))) {
 *   session.setInput(0, image);            // a direct ByteBuffer: no copy in Java
 *   session.run();
 *   FloatBuffer scores = session.output(0).buffer().asFloatBuffer();
 * }
 * }</pre>
 */
public final class Model implements AutoCloseable {
  private long handle;  // guarded by this; 0 once closed
  private boolean closing;  // guarded by this: close() has begun, no new sessions
  // A direct buffer the native model reads in place: kept reachable until close.
  private ByteBuffer pinned;
  private final List<TensorInfo> inputs;
  private final List<TensorInfo> outputs;
  private final ModelInfo info;
  private final Map<Session, Boolean> sessions = new IdentityHashMap<Session, Boolean>();

  private Model(long handle, ByteBuffer pinned) {
    this.handle = handle;
    this.pinned = pinned;
    try {
      this.inputs = describe(handle, false);
      this.outputs = describe(handle, true);
      this.info = new ModelInfo(Native.modelInfo(handle), Native.string(Native.modelProducer(handle)));
    } catch (RuntimeException | Error e) {
      Native.modelFree(handle);
      this.handle = 0;
      throw e;
    }
  }

  private static List<TensorInfo> describe(long handle, boolean output) {
    int count = Native.modelTensorCount(handle, output);
    List<TensorInfo> list = new ArrayList<TensorInfo>(count);
    for (int i = 0; i < count; ++i) {
      list.add(TensorInfo.of(Native.string(Native.modelTensorName(handle, output, i)),
                             Native.modelTensorMeta(handle, output, i)));
    }
    return Collections.unmodifiableList(list);
  }

  /** Loads a bundle file: mapped read-only, verified; constants are used in place. */
  public static Model load(String path) {
    return load(path, null);
  }

  /**
   * Loads a bundle file with {@code options} (null: the defaults), e.g. the
   * public keys whose signature it must carry.
   */
  public static Model load(String path, LoadOptions options) {
    if (path == null) throw new NullPointerException("path");
    if (path.indexOf('\0') >= 0) throw new IllegalArgumentException("path contains a NUL character");
    return new Model(Native.modelLoadFile(Native.cString(path), LoadOptions.keysOf(options)), null);
  }

  /** Loads a bundle file (see {@link #load(String)}). */
  public static Model load(Path path) {
    return load(path, null);
  }

  /** Loads a bundle file with {@code options} (see {@link #load(String, LoadOptions)}). */
  public static Model load(Path path, LoadOptions options) {
    if (path == null) throw new NullPointerException("path");
    return load(path.toString(), options);
  }

  /** Loads a bundle from memory; the bytes are copied, so the array may change afterwards. */
  public static Model load(byte[] bundle) {
    return load(bundle, null);
  }

  /** Loads a bundle from memory with {@code options} (null: the defaults). */
  public static Model load(byte[] bundle, LoadOptions options) {
    if (bundle == null) throw new NullPointerException("bundle");
    return new Model(Native.modelLoadArray(bundle, 0, bundle.length, LoadOptions.keysOf(options)), null);
  }

  /**
   * Loads a bundle from the buffer's remaining bytes. A direct buffer is used in
   * place, without a copy (unless its address is not a multiple of 64, when the
   * runtime copies it): it must stay unchanged until the model is closed (the
   * model keeps it reachable). Other buffers are copied.
   */
  public static Model load(ByteBuffer bundle) {
    return load(bundle, null);
  }

  /** Loads a bundle from a buffer (see {@link #load(ByteBuffer)}) with {@code options}. */
  public static Model load(ByteBuffer bundle, LoadOptions options) {
    if (bundle == null) throw new NullPointerException("bundle");
    byte[] keys = LoadOptions.keysOf(options);
    if (bundle.isDirect()) {
      return new Model(Native.modelLoadDirect(bundle, bundle.position(), bundle.remaining(), keys), bundle);
    }
    if (bundle.hasArray()) {
      return new Model(Native.modelLoadArray(bundle.array(), bundle.arrayOffset() + bundle.position(),
                                             bundle.remaining(), keys), null);
    }
    byte[] copy = new byte[bundle.remaining()];  // a read-only heap buffer
    bundle.duplicate().get(copy);
    return load(copy, options);
  }

  /** The inputs, in order. */
  public List<TensorInfo> inputs() {
    return inputs;
  }

  /** The outputs, in order. */
  public List<TensorInfo> outputs() {
    return outputs;
  }

  /** The index of the input called {@code name}; KilnException NOT_FOUND if there is none. */
  public int inputIndex(String name) {
    return find(inputs, name, "input");
  }

  /** The index of the output called {@code name}; KilnException NOT_FOUND if there is none. */
  public int outputIndex(String name) {
    return find(outputs, name, "output");
  }

  private static int find(List<TensorInfo> list, String name, String what) {
    StringBuilder names = new StringBuilder();
    for (int i = 0; i < list.size(); ++i) {
      if (list.get(i).name().equals(name)) return i;
      names.append(i > 0 ? ", " : "").append('\'').append(list.get(i).name()).append('\'');
    }
    throw new KilnException(KilnException.Code.NOT_FOUND,
                            "no " + what + " named '" + name + "' (" + what + "s: " + names + ")");
  }

  /** The bundle's header facts and memory plan. */
  public ModelInfo info() {
    return info;
  }

  /** A session with default options. */
  public Session newSession() {
    return newSession(new SessionOptions());
  }

  /** A session with the given options (its arena, threads, bound dispatches). */
  public Session newSession(SessionOptions options) {
    if (options == null) throw new NullPointerException("options");
    synchronized (this) {
      checkOpen();
      Session session = new Session(this, Native.sessionCreate(handle, options.threads(),
                                                               options.device().value()));
      sessions.put(session, Boolean.TRUE);
      return session;
    }
  }

  void forget(Session session) {
    synchronized (this) {
      sessions.remove(session);
    }
  }

  /** Whether {@link #close} was called. */
  public synchronized boolean isClosed() {
    return handle == 0 || closing;
  }

  private void checkOpen() {
    if (handle == 0 || closing) throw new IllegalStateException("ai.kiln.Model is closed");
  }

  /** Closes the sessions made from this model, then frees the model. Idempotent. */
  @Override
  public void close() {
    List<Session> open;
    synchronized (this) {
      if (handle == 0 || closing) return;
      closing = true;
      open = new ArrayList<Session>(sessions.keySet());
    }
    for (Session session : open) session.close();
    synchronized (this) {
      Native.modelFree(handle);
      handle = 0;
      pinned = null;
      sessions.clear();
    }
  }
}
