// How a bundle is loaded (kiln_model_load_options_t): the public keys whose
// signature it must carry.
package ai.kiln;

import java.io.ByteArrayOutputStream;

/**
 * Options of {@link Model#load(String, LoadOptions)}. With any trusted key, a
 * bundle must be signed by one of them ({@code kilnc --sign-key=KEY.pem}) and
 * its signature must verify, or the load throws {@link KilnException} with
 * code INVALID_BUNDLE; the check runs before anything else reads the bundle
 * (docs/bundle.md, "Signatures").
 */
public final class LoadOptions {
  private final ByteArrayOutputStream keys = new ByteArrayOutputStream();

  /**
   * Trusts an Ed25519 public key: its 32 raw bytes ({@code kilnc
   * --print-public-key=KEY.pem} prints them; for a Java {@code EdECPublicKey},
   * the last 32 bytes of {@code getEncoded()}).
   */
  public LoadOptions trustPublicKey(byte[] key) {
    if (key == null) throw new NullPointerException("key");
    if (key.length != 32) {
      throw new IllegalArgumentException("an Ed25519 public key has 32 bytes, not " + key.length);
    }
    keys.write(key, 0, key.length);
    return this;
  }

  /** How many keys are trusted. */
  public int trustedKeyCount() {
    return keys.size() / 32;
  }

  // The keys one after another for Native.modelLoad*, or null when none.
  static byte[] keysOf(LoadOptions options) {
    return options == null || options.keys.size() == 0 ? null : options.keys.toByteArray();
  }
}
