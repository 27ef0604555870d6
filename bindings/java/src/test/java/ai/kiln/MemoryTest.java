// Leaks: 10,000 load/create/run/close cycles must keep the process's resident
// memory (VmRSS), the Java heap in use and the thread count flat after a
// warm-up. Prints the numbers.
package ai.kiln;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Paths;
import org.junit.jupiter.api.Test;

class MemoryTest {
  // Allowed growth of VmRSS (and of the heap in use) over the measured
  // cycles: JIT and allocator noise. A leaked arena, bundle copy or thread per
  // cycle is gigabytes; the slack hides leaks below ~200 bytes a cycle.
  private static final long SLACK_KB = 2048;

  // A field of /proc/self/status in kB (VmRSS) or as a count (Threads).
  static long status(String field) throws IOException {
    for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
      if (line.startsWith(field + ":")) {
        return Long.parseLong(line.substring(field.length() + 1).replace("kB", "").trim());
      }
    }
    throw new IllegalStateException("/proc/self/status has no " + field);
  }

  private static long heapUsed() {
    Runtime runtime = Runtime.getRuntime();
    return runtime.totalMemory() - runtime.freeMemory();
  }

  private static void settle() throws InterruptedException {
    for (int i = 0; i < 3; ++i) {
      System.gc();
      Thread.sleep(20);
    }
  }

  // One cycle: a model from bytes (every `modelEvery` cycles, else the shared
  // one), a session (with 2 threads every 100th), input from a direct buffer,
  // run, the output's view (its first value checked) and a copy into a
  // reused buffer, everything closed.
  private static void cycles(int count, Model shared, byte[] bundle, ByteBuffer input,
                             ByteBuffer output, int modelEvery, float first) {
    for (int i = 0; i < count; ++i) {
      Model model = i % modelEvery == 0 ? Model.load(bundle) : shared;
      try (Session session = model.newSession(new SessionOptions().threads(i % 100 == 0 ? 2 : 1))) {
        session.setInput(0, input);
        session.run();
        if (session.output(0).buffer().getFloat(0) != first) throw new AssertionError("cycle " + i);
        session.getOutput(0, output);
      } finally {
        if (model != shared) model.close();
      }
    }
  }

  @Test
  void cyclesKeepResidentMemoryFlat() throws Exception {
    int measured = Integer.getInteger("kiln.test.cycles", 10000);
    int warmup = Math.max(2000, measured / 5);
    byte[] bundle = TestData.bundleBytes();
    ByteBuffer input = TestData.direct(TestData.image());
    float first = TestData.referenceLogits()[0];
    try (Model shared = Model.load(TestData.bundlePath())) {
      ByteBuffer output = ByteBuffer.allocateDirect((int) shared.outputs().get(0).byteSize())
                                    .order(ByteOrder.nativeOrder());
      long t0 = System.nanoTime();
      cycles(warmup, shared, bundle, input, output, 4, first);
      settle();
      long rssBefore = status("VmRSS");
      long heapBefore = heapUsed();
      long threadsBefore = status("Threads");
      long t1 = System.nanoTime();
      cycles(measured, shared, bundle, input, output, 4, first);
      long t2 = System.nanoTime();
      settle();
      long rssAfter = status("VmRSS");
      long heapAfter = heapUsed();
      long threadsAfter = status("Threads");
      float[] logits = new float[output.capacity() / 4];
      output.asFloatBuffer().get(logits);
      assertArrayEquals(TestData.referenceLogits(), logits);  // the cycles really ran the model
      System.out.printf("memory: %d cycles (a model loaded from bytes in every 4th, 2 threads in "
          + "every 100th) after %d warm-up cycles: VmRSS %d kB -> %d kB (%+d kB, slack %d kB), "
          + "Java heap in use %d kB -> %d kB, threads %d -> %d; %.1f us/cycle (warm-up %.1f s)%n",
          measured, warmup, rssBefore, rssAfter, rssAfter - rssBefore, SLACK_KB, heapBefore >> 10,
          heapAfter >> 10, threadsBefore, threadsAfter, (t2 - t1) / 1e3 / measured, (t1 - t0) / 1e9);
      assertTrue(rssAfter - rssBefore <= SLACK_KB, "VmRSS grew by " + (rssAfter - rssBefore)
          + " kB over " + measured + " cycles");
      assertEquals(threadsBefore, threadsAfter, "threads");
      // A leaked global reference would keep its object (a buffer, a Tensor) alive.
      assertTrue(heapAfter - heapBefore <= SLACK_KB << 10, "Java heap in use grew by "
          + ((heapAfter - heapBefore) >> 10) + " kB");
    }
  }

  // The measurement itself sees memory: 16 MiB touched shows in VmRSS.
  @Test
  void residentSizeSeesAllocations() throws Exception {
    long before = status("VmRSS");
    ByteBuffer block = ByteBuffer.allocateDirect(16 << 20);
    for (int i = 0; i < block.capacity(); i += 4096) block.put(i, (byte) 1);
    long after = status("VmRSS");
    System.out.printf("memory: 16 MiB touched: VmRSS %d kB -> %d kB%n", before, after);
    assertTrue(after - before >= 12 << 10, "VmRSS grew by only " + (after - before) + " kB");
    assertEquals(1, block.get(4096));
  }
}
