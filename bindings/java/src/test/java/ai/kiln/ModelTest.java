// Loading (file, Path, byte[], direct and heap ByteBuffers), the metadata
// against `kiln inspect`, and load errors as KilnExceptions with their codes.
package ai.kiln;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class ModelTest {
  @Test
  void versionIsTheHeaders() {
    assertEquals(TestData.expect("runtime.version"), Kiln.version());
    assertEquals(TestData.expectLong("runtime.abi"), Kiln.abiVersion());
  }

  @Test
  void metadataMatchesKilnInspect() {
    try (Model model = Model.load(TestData.bundlePath())) {
      checkTensors(model.inputs(), "input");
      checkTensors(model.outputs(), "output");
      ModelInfo info = model.info();
      assertEquals(TestData.expect("model.version"), info.formatVersion());
      assertEquals(TestData.expectLong("model.min_runtime_minor"), info.minRuntimeMinor());
      assertEquals(TestData.expect("model.producer"), info.producer());
      assertEquals(TestData.expectLong("model.arena_bytes"), info.arenaBytes());
      assertEquals(TestData.expectLong("model.constant_count"), info.constantCount());
      assertEquals(TestData.expectLong("model.constant_bytes"), info.constantBytes());
      assertEquals(TestData.expectLong("model.tensors.count"), info.tensorCount());
      assertEquals(TestData.expectLong("model.nodes.count"), info.nodeCount());
      assertEquals(TestData.expectLong("model.kernels.count"), info.kernelCount());
      assertEquals(TestData.expectLong("model.dispatches.count"), info.dispatchCount());
      assertEquals(Device.CPU, info.device());
      assertTrue(info.contentHash() != 0);
      assertThrows(UnsupportedOperationException.class, () -> model.inputs().clear());
    }
  }

  private static void checkTensors(List<TensorInfo> tensors, String kind) {
    assertEquals(TestData.expectLong(kind + ".count"), tensors.size());
    for (int i = 0; i < tensors.size(); ++i) {
      TensorInfo t = tensors.get(i);
      // toString() prints name:dtype[shape] as `kiln inspect` does.
      assertEquals(TestData.expect(kind + "." + i), t.toString());
      assertEquals(TestData.expectLong(kind + "." + i + ".bytes"), t.byteSize());
      assertEquals(TestData.expectLong(kind + "." + i + ".tensor"), t.bundleIndex());
      long elements = Arrays.stream(t.shape()).reduce(1, (a, b) -> a * b);
      assertEquals(elements, t.elementCount());
      assertEquals(t.byteSize(), elements * t.dtype().size());
      t.shape()[0] = -5;  // a copy: the model's shape does not change
      assertTrue(t.shape()[0] >= 0);
    }
  }

  @Test
  void findsInputsAndOutputsByName() {
    try (Model model = Model.load(Paths.get(TestData.bundlePath()))) {
      for (int i = 0; i < model.inputs().size(); ++i) {
        assertEquals(i, model.inputIndex(model.inputs().get(i).name()));
      }
      assertEquals(0, model.outputIndex(model.outputs().get(0).name()));
      KilnException e = assertThrows(KilnException.class, () -> model.inputIndex("no such input"));
      assertEquals(KilnException.Code.NOT_FOUND, e.code());
      assertTrue(e.getMessage().contains("no such input"), e.getMessage());
    }
  }

  // The same model from every source: same metadata, same outputs.
  @Test
  void loadsFromEverySource() throws IOException {
    byte[] bytes = TestData.bundleBytes();
    ByteBuffer direct = ByteBuffer.allocateDirect(bytes.length + 3);
    direct.position(3);  // unaligned on purpose: the runtime copies it then
    direct.put(bytes).position(3);
    ByteBuffer heap = ByteBuffer.wrap(new byte[bytes.length + 5], 5, bytes.length).slice();
    heap.duplicate().put(bytes);
    Model[] models = {Model.load(TestData.bundlePath()), Model.load(Paths.get(TestData.bundlePath())),
                      Model.load(bytes), Model.load(direct), Model.load(heap),
                      Model.load(heap.asReadOnlyBuffer())};
    float[] reference = TestData.referenceLogits();
    try {
      for (Model model : models) {
        assertEquals(TestData.expect("input.0"), model.inputs().get(0).toString());
        try (Session session = model.newSession()) {
          session.setInput(0, TestData.image());
          session.run();
          assertArrayEquals(reference, session.output(0).toFloatArray());
        }
      }
    } finally {
      for (Model model : models) model.close();
    }
    assertEquals(3, direct.position());  // loading does not move the buffer
  }

  @Test
  void badBytesAreInvalidBundle() {
    KilnException e = assertThrows(KilnException.class,
                                   () -> Model.load("not a bundle at all".getBytes()));
    assertEquals(KilnException.Code.INVALID_BUNDLE, e.code());
    assertEquals("INVALID_BUNDLE", e.codeName());
    assertEquals(2, e.codeValue());
    assertTrue(!e.runtimeMessage().isEmpty());
    assertEquals("INVALID_BUNDLE: " + e.runtimeMessage(), e.getMessage());
    // Nothing at all: the runtime refuses the argument itself.
    KilnException empty = assertThrows(KilnException.class, () -> Model.load(new byte[0]));
    assertTrue(empty.code() == KilnException.Code.INVALID_ARGUMENT
               || empty.code() == KilnException.Code.INVALID_BUNDLE, empty.toString());
  }

  @Test
  void truncatedBundleIsInvalid() throws IOException {
    byte[] bytes = TestData.bundleBytes();
    KilnException e = assertThrows(KilnException.class,
                                   () -> Model.load(Arrays.copyOf(bytes, bytes.length / 2)));
    assertEquals(KilnException.Code.INVALID_BUNDLE, e.code());
  }

  @Test
  void missingFileIsAnError(@org.junit.jupiter.api.io.TempDir Path dir) {
    KilnException e = assertThrows(KilnException.class,
                                   () -> Model.load(dir.resolve("missing.kiln").toString()));
    assertTrue(e.code() == KilnException.Code.NOT_FOUND || e.code() == KilnException.Code.IO_ERROR,
               e.toString());
    assertTrue(e.getMessage().contains("missing.kiln"), e.getMessage());
  }

  @Test
  void directoryIsAnError(@org.junit.jupiter.api.io.TempDir Path dir) throws IOException {
    Files.createDirectories(dir.resolve("sub"));
    assertThrows(KilnException.class, () -> Model.load(dir.resolve("sub")));
  }

  // Seeded byte flips of the bundle: each loads (and then runs) or throws a
  // KilnException; none may crash the JVM.
  @Test
  void flippedBytesNeverCrash() throws IOException {
    byte[] bytes = TestData.bundleBytes();
    Random random = new Random(1234);
    float[] image = TestData.image();
    int rejected = 0;
    for (int i = 0; i < 200; ++i) {
      byte[] flipped = bytes.clone();
      // half in the header and FlatBuffer (first 4 KiB), half anywhere
      int at = random.nextInt(i % 2 == 0 ? Math.min(4096, bytes.length) : bytes.length);
      flipped[at] ^= (byte) (1 + random.nextInt(255));
      try (Model model = Model.load(flipped); Session session = model.newSession()) {
        session.setInput(0, image);
        session.run();
      } catch (KilnException e) {
        ++rejected;
        assertTrue(!e.runtimeMessage().isEmpty());
      }
    }
    // The content hash covers every byte up to the data segment's end.
    assertTrue(rejected >= 190, "only " + rejected + " of 200 flipped bundles were rejected");
  }

  @Test
  void nullArgumentsAreRejected() {
    assertThrows(NullPointerException.class, () -> Model.load((String) null));
    assertThrows(NullPointerException.class, () -> Model.load((byte[]) null));
    assertThrows(NullPointerException.class, () -> Model.load((ByteBuffer) null));
    // A C string would end at the NUL and name another file.
    assertThrows(IllegalArgumentException.class, () -> Model.load(TestData.bundlePath() + "\0.txt"));
  }
}
