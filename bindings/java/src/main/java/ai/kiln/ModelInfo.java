// A loaded bundle's header facts and memory plan (kiln_model_info_t).
package ai.kiln;

/** A bundle's format version, producer, device and memory plan (kiln_model_info_t). */
public final class ModelInfo {
  private final long[] v;
  private final String producer;

  // v: the array Native.modelInfo returns (its order is documented there).
  ModelInfo(long[] v, String producer) {
    this.v = v.clone();
    this.producer = producer;
  }

  /** The bundle format version it was written with, e.g. "0.4". */
  public String formatVersion() {
    return v[0] + "." + v[1];
  }

  /** The lowest runtime format minor that runs it. */
  public int minRuntimeMinor() {
    return (int) v[2];
  }

  /** What it was compiled for: {@link Device#CPU} or {@link Device#VULKAN}. */
  public Device device() {
    return Device.of((int) v[3]);
  }

  /** The XXH64 of the file, verified at load. */
  public long contentHash() {
    return v[4];
  }

  /** Bytes of each session's arena. */
  public long arenaBytes() {
    return v[5];
  }

  /** Tensors with constant storage (weights). */
  public int constantCount() {
    return (int) v[6];
  }

  /** Bytes of the constants. */
  public long constantBytes() {
    return v[7];
  }

  /** All tensors of the bundle (inputs, outputs, intermediates, constants). */
  public int tensorCount() {
    return (int) v[8];
  }

  /** Nodes of the optimized graph kept for inspection. */
  public int nodeCount() {
    return (int) v[9];
  }

  /** Kernels. */
  public int kernelCount() {
    return (int) v[10];
  }

  /** Kernel launches a run executes. */
  public int dispatchCount() {
    return (int) v[11];
  }

  /** Whether the bundle carries a signature (kilnc --sign-key; Ed25519). */
  public boolean signed() {
    return v[12] != 0;
  }

  /** Whether its signature was checked against a key of {@link LoadOptions} at load. */
  public boolean signatureVerified() {
    return v[13] != 0;
  }

  /** Who wrote the bundle, e.g. "kilnc 0.1.0". */
  public String producer() {
    return producer;
  }

  @Override
  public String toString() {
    return "bundle " + formatVersion() + " by \"" + producer + "\" for " + device() + ", arena "
        + arenaBytes() + " bytes, " + dispatchCount() + " dispatches";
  }
}
