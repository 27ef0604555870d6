// What the tests compare with: the demo bundle and the facts the C tools
// (`kiln run`, `kiln inspect`) gave about it, from the properties file that
// run_tests.py writes (system property kiln.test.expected).
package ai.kiln;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Properties;

final class TestData {
  private TestData() {}

  private static Properties expected;

  static String property(String name) {
    String value = System.getProperty(name);
    if (value == null || value.isEmpty()) {
      throw new IllegalStateException("system property " + name + " is not set: run the tests with "
          + "`meson test -C build java_binding` (bindings/java/run_tests.py), which sets it");
    }
    return value;
  }

  static synchronized Properties expected() {
    if (expected == null) {
      Properties p = new Properties();
      try (InputStream in = Files.newInputStream(Paths.get(property("kiln.test.expected")))) {
        p.load(in);
      } catch (IOException e) {
        throw new IllegalStateException("cannot read kiln.test.expected", e);
      }
      expected = p;
    }
    return expected;
  }

  static String expect(String key) {
    String value = expected().getProperty(key);
    if (value == null) throw new IllegalStateException("kiln.test.expected lacks " + key);
    return value;
  }

  static long expectLong(String key) {
    return Long.parseLong(expect(key));
  }

  static String bundlePath() {
    return property("kiln.test.bundle");
  }

  static byte[] bundleBytes() throws IOException {
    return Files.readAllBytes(Paths.get(bundlePath()));
  }

  static float[] floats(String key) throws IOException {
    ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(Paths.get(expect(key))))
                                 .order(ByteOrder.nativeOrder());
    float[] values = new float[bytes.remaining() / 4];
    bytes.asFloatBuffer().get(values);
    return values;
  }

  // The demo image (input 0), as floats and in a direct buffer.
  static float[] image() throws IOException {
    return floats("input.0.values");
  }

  static ByteBuffer direct(float[] values) {
    ByteBuffer buffer = ByteBuffer.allocateDirect(values.length * 4).order(ByteOrder.nativeOrder());
    buffer.asFloatBuffer().put(values);
    return buffer;
  }

  // `kiln run`'s logits (output 0) and its class order, best first.
  static float[] referenceLogits() throws IOException {
    return floats("output.0.values");
  }

  static int[] referenceOrder() {
    String[] parts = expect("top").split(",");
    int[] order = new int[parts.length];
    for (int i = 0; i < parts.length; ++i) order[i] = Integer.parseInt(parts[i]);
    return order;
  }

  static double[] softmax(float[] logits) {
    double max = Double.NEGATIVE_INFINITY;
    for (float v : logits) max = Math.max(max, v);
    double[] p = new double[logits.length];
    double sum = 0;
    for (int i = 0; i < logits.length; ++i) sum += p[i] = Math.exp(logits[i] - max);
    for (int i = 0; i < logits.length; ++i) p[i] /= sum;
    return p;
  }

  static int argmax(float[] values) {
    int best = 0;
    for (int i = 1; i < values.length; ++i) {
      if (values[i] > values[best]) best = i;
    }
    return best;
  }

  // Another valid input: the image mirrored left to right and darkened.
  static float[] otherImage(float[] image) {
    float[] other = new float[image.length];
    int width = 64;
    for (int i = 0; i < image.length; ++i) {
      int row = i / width, column = i % width;
      other[i] = 0.5f * image[row * width + (width - 1 - column)];
    }
    return other;
  }
}
