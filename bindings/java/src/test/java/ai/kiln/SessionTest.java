// Running the demo model through every input and output path: the top class
// and probabilities must be `kiln run`'s; options; run errors as exceptions.
package ai.kiln;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

class SessionTest {
  private static Model model;

  @BeforeAll
  static void load() {
    model = Model.load(TestData.bundlePath());
  }

  @AfterAll
  static void close() {
    model.close();
  }

  @Test
  void topClassAndProbabilitiesMatchKilnRun() throws IOException {
    int[] order = TestData.referenceOrder();
    double[] expected = TestData.softmax(TestData.referenceLogits());
    try (Session session = model.newSession()) {
      assertEquals("cpu", session.deviceName());
      session.setInput(0, TestData.direct(TestData.image()));
      session.run();
      float[] logits = session.output(0).toFloatArray();
      assertEquals(order[0], TestData.argmax(logits), "top class");
      double[] p = TestData.softmax(logits);
      for (int i = 0; i < p.length; ++i) {
        assertEquals(expected[i], p[i], 1e-6, "probability of class " + i);
      }
      // The whole order, as `kiln run --top K` printed it.
      for (int k = 1; k < order.length; ++k) {
        assertTrue(p[order[k - 1]] >= p[order[k]], "class order " + java.util.Arrays.toString(order));
      }
      System.out.printf("demo: top class %d, p=%.4f (kiln run: class %d, p=%.4f)%n",
                        TestData.argmax(logits), p[TestData.argmax(logits)], order[0], expected[order[0]]);
    }
  }

  // Every way in and out gives kiln run's logits, bit for bit.
  @Test
  void everyInputAndOutputPathAgrees() throws IOException {
    float[] image = TestData.image();
    float[] reference = TestData.referenceLogits();
    String inputName = model.inputs().get(0).name();
    String outputName = model.outputs().get(0).name();
    ByteBuffer heap = ByteBuffer.allocate(image.length * 4).order(ByteOrder.nativeOrder());
    heap.asFloatBuffer().put(image);
    ByteBuffer offset = ByteBuffer.allocateDirect(image.length * 4 + 8).order(ByteOrder.nativeOrder());
    offset.position(8);
    offset.slice().order(ByteOrder.nativeOrder()).asFloatBuffer().put(image);
    ByteBuffer[] inputs = {TestData.direct(image), heap, heap.asReadOnlyBuffer(), offset};
    try (Session session = model.newSession()) {
      for (ByteBuffer input : inputs) {
        int position = input.position();
        session.setInput(inputName, input);
        assertEquals(position, input.position());
        session.run();
        assertArrayEquals(reference, session.output(outputName).toFloatArray());
      }
      session.setInput(inputName, image);
      session.run();
      float[] floats = new float[reference.length];
      session.getOutput(0, floats);
      assertArrayEquals(reference, floats);
      ByteBuffer direct = ByteBuffer.allocateDirect(reference.length * 4).order(ByteOrder.nativeOrder());
      session.getOutput(0, direct);
      assertEquals(0, direct.position());
      float[] fromDirect = new float[reference.length];
      direct.asFloatBuffer().get(fromDirect);
      assertArrayEquals(reference, fromDirect);
      ByteBuffer heapOut = ByteBuffer.allocate(reference.length * 4).order(ByteOrder.nativeOrder());
      session.getOutput(0, heapOut);
      float[] fromHeap = new float[reference.length];
      heapOut.asFloatBuffer().get(fromHeap);
      assertArrayEquals(reference, fromHeap);
      try (Tensor copy = session.outputCopy(outputName)) {
        assertTrue(!copy.isView());
        assertEquals(outputName, copy.name());
        assertArrayEquals(reference, copy.toFloatArray());
      }
      byte[] raw = new byte[image.length * 4];
      heap.duplicate().get(raw);
      session.setInput(0, raw);
      session.run();
      assertArrayEquals(reference, session.output(0).toFloatArray());
    }
  }

  @Test
  void threadsGiveTheSameOutputs() throws IOException {
    float[] reference = TestData.referenceLogits();
    for (int threads : new int[] {0, 1, 2, 3}) {
      try (Session session = model.newSession(new SessionOptions().threads(threads).device(Device.CPU))) {
        session.setInput(0, TestData.image());
        session.run();
        assertArrayEquals(reference, session.output(0).toFloatArray(), "threads=" + threads);
      }
    }
  }

  // One model, sessions created and run on several threads at once.
  @Test
  void sessionsRunConcurrently() throws Exception {
    final float[] image = TestData.image();
    final float[] reference = TestData.referenceLogits();
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      List<Future<Integer>> results = new ArrayList<Future<Integer>>();
      for (int t = 0; t < 4; ++t) {
        results.add(pool.submit(new Callable<Integer>() {
          @Override
          public Integer call() {
            int matches = 0;
            for (int i = 0; i < 50; ++i) {
              try (Session session = model.newSession()) {
                session.setInput(0, image);
                session.run();
                if (java.util.Arrays.equals(reference, session.output(0).toFloatArray())) ++matches;
              }
            }
            return matches;
          }
        }));
      }
      for (Future<Integer> result : results) assertEquals(50, result.get().intValue());
    } finally {
      pool.shutdown();
    }
  }

  @Test
  void wrongInputSizeIsInvalidArgument() throws IOException {
    try (Session session = model.newSession()) {
      long bytes = model.inputs().get(0).byteSize();
      KilnException e = assertThrows(KilnException.class, () -> session.setInput(0, new float[3]));
      assertEquals(KilnException.Code.INVALID_ARGUMENT, e.code());
      assertEquals("INVALID_ARGUMENT", e.codeName());
      // The runtime's message names the expected size.
      assertTrue(e.runtimeMessage().contains(Long.toString(bytes)), e.runtimeMessage());
      ByteBuffer tooBig = ByteBuffer.allocateDirect((int) bytes + 4);
      assertEquals(KilnException.Code.INVALID_ARGUMENT,
                   assertThrows(KilnException.class, () -> session.setInput(0, tooBig)).code());
      assertEquals(KilnException.Code.INVALID_ARGUMENT,
                   assertThrows(KilnException.class, () -> session.getOutput(0, new float[1])).code());
      assertEquals(KilnException.Code.INVALID_ARGUMENT,
                   assertThrows(KilnException.class, () -> session.getOutput(0, ByteBuffer.allocateDirect(3))).code());
      // The session stays usable.
      session.setInput(0, TestData.image());
      session.run();
      assertArrayEquals(TestData.referenceLogits(), session.output(0).toFloatArray());
    }
  }

  @Test
  void badIndicesAndNamesAreErrors() {
    try (Session session = model.newSession()) {
      int inputs = model.inputs().size();
      for (int index : new int[] {-1, inputs, Integer.MAX_VALUE}) {
        KilnException e = assertThrows(KilnException.class, () -> session.setInput(index, new float[1]));
        assertEquals(KilnException.Code.INVALID_ARGUMENT, e.code());
        assertEquals(KilnException.Code.INVALID_ARGUMENT,
                     assertThrows(KilnException.class, () -> session.output(index)).code());
      }
      assertEquals(KilnException.Code.NOT_FOUND,
                   assertThrows(KilnException.class, () -> session.setInput("nope", new float[1])).code());
      assertEquals(KilnException.Code.NOT_FOUND,
                   assertThrows(KilnException.class, () -> session.output("nope")).code());
      assertThrows(ReadOnlyBufferException.class,
                   () -> session.getOutput(0, ByteBuffer.allocateDirect(16).asReadOnlyBuffer()));
      assertThrows(NullPointerException.class, () -> session.setInput(0, (ByteBuffer) null));
    }
  }

  @Test
  void badOptionsAreErrors() {
    // A CPU bundle on Vulkan: the runtime refuses the device.
    KilnException e = assertThrows(KilnException.class,
                                   () -> model.newSession(new SessionOptions().device(Device.VULKAN)));
    assertEquals(KilnException.Code.INVALID_ARGUMENT, e.code());
    assertEquals(KilnException.Code.INVALID_ARGUMENT,
                 assertThrows(KilnException.class, () -> model.newSession(new SessionOptions().threads(5000))).code());
    assertThrows(IllegalArgumentException.class, () -> new SessionOptions().threads(-1));
    assertThrows(NullPointerException.class, () -> new SessionOptions().device(null));
  }

  @Test
  void allocatedTensorsFeedInputs() throws IOException {
    TensorInfo info = model.inputs().get(0);
    try (Session session = model.newSession(); Tensor input = Tensor.allocate(info)) {
      assertEquals(info.byteSize(), input.buffer().remaining());
      assertEquals(ByteOrder.nativeOrder(), input.buffer().order());
      input.buffer().asFloatBuffer().put(TestData.image());
      session.setInput(0, input.buffer());
      session.run();
      assertArrayEquals(TestData.referenceLogits(), session.output(0).toFloatArray());
      Tensor copy = input.copy();
      assertTrue(copy.buffer().equals(input.buffer()));
      assertEquals(info.toString(), copy.info().toString());
    }
  }

  private static long[] longs(String csv) {
    String[] parts = csv.split(",");
    long[] values = new long[parts.length];
    for (int i = 0; i < parts.length; ++i) values[i] = Long.parseLong(parts[i]);
    return values;
  }

  // A bundle compiled with ranges (run_tests.py: kilnc --input-shape
  // input=1,3,32..96,32..96): its infos give both ends; at a shape inside,
  // the outputs are kiln run's for that input (views and copies); outside,
  // a clear error, and the session still runs.
  @Test
  void aBundleWithRangesRunsAtAShapeInsideThem() throws IOException {
    long[] shape = longs(TestData.expect("dynamic.input.shape"));
    float[] input = TestData.floats("dynamic.input.values");
    float[] expected = TestData.floats("dynamic.output.values");
    try (Model dynamic = Model.load(TestData.expect("dynamic.bundle"));
         Session session = dynamic.newSession()) {
      TensorInfo info = dynamic.inputs().get(0);
      assertTrue(info.isDynamic());
      assertArrayEquals(new long[] {1, 3, 96, 96}, info.shape());
      assertArrayEquals(new long[] {1, 3, 32, 32}, info.minShape());
      assertTrue(!dynamic.outputs().get(0).isDynamic());  // logits: [1, classes] at every size
      session.setInputShape("input", shape);
      assertArrayEquals(shape, session.inputInfo(0).shape());
      assertEquals(input.length * 4L, session.inputInfo(0).byteSize());
      session.setInput(0, input);
      session.run();
      assertArrayEquals(longs(TestData.expect("dynamic.output.shape")), session.outputInfo(0).shape());
      assertArrayEquals(expected, session.output(0).toFloatArray(), 1e-5f);
      assertArrayEquals(expected, session.outputCopy(0).toFloatArray(), 1e-5f);
      KilnException e = assertThrows(KilnException.class,
                                     () -> session.setInputShape(0, 1, 3, 97, 40));
      assertEquals(KilnException.Code.INVALID_ARGUMENT, e.code());
      assertTrue(e.getMessage().contains("32..96"), e.getMessage());
      // At another shape, the old data's size is refused; back at its shape, it runs.
      session.setInputShape(0, 1, 3, 96, 96);
      assertEquals(KilnException.Code.INVALID_ARGUMENT,
                   assertThrows(KilnException.class, () -> session.setInput(0, input)).code());
      session.setInputShape(0, shape);
      session.setInput(0, input);
      session.run();
      assertArrayEquals(expected, session.output(0).toFloatArray(), 1e-5f);
    }
  }
}
