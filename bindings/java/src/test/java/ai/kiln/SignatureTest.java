// Signed bundles through LoadOptions: the demo bundle is signed here with the
// JDK's own Ed25519 (the trailer written from docs/bundle.md), then loaded
// with the right key, a foreign key, unsigned, and tampered.
package ai.kiln;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyPair;
import java.security.KeyPairGenerator;
import java.security.Signature;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SignatureTest {
  static final class Signer {
    final KeyPair pair;
    final byte[] publicKey;

    Signer() throws Exception {
      pair = KeyPairGenerator.getInstance("Ed25519").generateKeyPair();
      byte[] encoded = pair.getPublic().getEncoded();  // X.509: the raw key comes last
      publicKey = Arrays.copyOfRange(encoded, encoded.length - 32, encoded.length);
    }

    // The bundle followed by its 128-byte signature trailer.
    byte[] sign(byte[] bundle) throws Exception {
      ByteBuffer trailer = ByteBuffer.allocate(128).order(ByteOrder.LITTLE_ENDIAN);
      trailer.position(64);
      trailer.put(publicKey).putLong(bundle.length).putInt(1).putInt(1).putLong(0);
      trailer.put("KILNSIG1".getBytes(StandardCharsets.US_ASCII));
      Signature ed = Signature.getInstance("Ed25519");
      ed.initSign(pair.getPrivate());
      ed.update(bundle);
      ed.update(trailer.array(), 64, 64);
      byte[] signature = ed.sign();
      byte[] out = Arrays.copyOf(bundle, bundle.length + 128);
      System.arraycopy(signature, 0, out, bundle.length, 64);
      System.arraycopy(trailer.array(), 64, out, bundle.length + 64, 64);
      return out;
    }
  }

  @Test
  void onlyBundlesSignedByATrustedKeyLoad(@TempDir Path dir) throws Exception {
    Signer signer = new Signer(), other = new Signer();
    byte[] bundle = TestData.bundleBytes();
    byte[] signed = signer.sign(bundle);
    LoadOptions trusting = new LoadOptions().trustPublicKey(other.publicKey).trustPublicKey(signer.publicKey);
    assertEquals(2, trusting.trustedKeyCount());

    try (Model model = Model.load(signed, trusting)) {
      assertTrue(model.info().signed());
      assertTrue(model.info().signatureVerified());
      try (Session session = model.newSession()) {
        session.run();  // it runs
      }
    }
    Path file = dir.resolve("signed.kiln");
    Files.write(file, signed);
    try (Model model = Model.load(file, trusting)) {
      assertTrue(model.info().signatureVerified());
    }
    ByteBuffer direct = ByteBuffer.allocateDirect(signed.length);
    direct.put(signed).flip();
    try (Model model = Model.load(direct, trusting)) {
      assertTrue(model.info().signatureVerified());
    }
    try (Model model = Model.load(signed)) {  // no keys: loads, not verified
      assertTrue(model.info().signed());
      assertFalse(model.info().signatureVerified());
    }

    LoadOptions foreign = new LoadOptions().trustPublicKey(other.publicKey);
    KilnException e = assertThrows(KilnException.class, () -> Model.load(signed, foreign));
    assertEquals("INVALID_BUNDLE", e.codeName());
    assertTrue(e.getMessage().contains("not among"), e.getMessage());
    e = assertThrows(KilnException.class, () -> Model.load(bundle, trusting));
    assertTrue(e.getMessage().contains("not signed"), e.getMessage());
    byte[] tampered = signed.clone();
    tampered[bundle.length / 2] ^= 1;
    e = assertThrows(KilnException.class, () -> Model.load(tampered, trusting));
    assertEquals("INVALID_BUNDLE", e.codeName());
    assertThrows(IllegalArgumentException.class, () -> new LoadOptions().trustPublicKey(new byte[31]));
  }
}
