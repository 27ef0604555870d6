// Options of a new session (kiln_session_options_t): threads and device.
package ai.kiln;

/**
 * How a session runs. Every field's default is the runtime's: the calling
 * thread only, on the bundle's own device.
 * <pre>{@code new SessionOptions().threads(4).device(Device.CPU)}</pre>
 */
public final class SessionOptions {
  private int threads;
  private Device device = Device.AUTO;

  /**
   * Threads that run each dispatch, the calling thread included: 0 or 1 runs
   * everything on the thread that calls {@link Session#run}; N &gt; 1 starts N - 1
   * pool threads with the session (at most 1024).
   */
  public SessionOptions threads(int threads) {
    if (threads < 0) throw new IllegalArgumentException("threads must be >= 0, got " + threads);
    this.threads = threads;
    return this;
  }

  /** Where the session runs: AUTO (the default) is the device the bundle was compiled for. */
  public SessionOptions device(Device device) {
    if (device == null) throw new NullPointerException("device");
    this.device = device;
    return this;
  }

  /** The thread count. */
  public int threads() {
    return threads;
  }

  /** The device. */
  public Device device() {
    return device;
  }
}
