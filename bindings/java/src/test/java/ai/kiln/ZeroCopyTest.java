// Zero copy: an output view is the session's memory (same address every run,
// live values, read-only, stale after the next run), copies are not.
package ai.kiln;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.ReadOnlyBufferException;
import org.junit.jupiter.api.Test;

class ZeroCopyTest {
  private static float[] floats(ByteBuffer buffer) {
    float[] values = new float[buffer.remaining() / 4];
    buffer.duplicate().order(ByteOrder.nativeOrder()).asFloatBuffer().get(values);
    return values;
  }

  @Test
  void outputViewIsTheSessionsMemory() throws IOException {
    float[] image = TestData.image();
    float[] other = TestData.otherImage(image);
    try (Model model = Model.load(TestData.bundlePath()); Session session = model.newSession()) {
      session.setInput(0, TestData.direct(image));
      session.run();
      Tensor first = session.output(0);
      assertTrue(first.isView() && first.isValid());
      ByteBuffer raw = first.buffer();  // kept past the next run on purpose (the session stays open)
      assertTrue(raw.isDirect() && raw.isReadOnly());
      assertEquals(ByteOrder.nativeOrder(), raw.order());
      assertEquals(model.outputs().get(0).byteSize(), raw.capacity());
      long address = Native.bufferAddress(raw);
      assertTrue(address != 0);
      assertEquals(address, Native.bufferAddress(session.output(0).buffer()));
      Tensor copy = session.outputCopy(0);
      float[] firstValues = floats(raw);
      assertArrayEquals(TestData.referenceLogits(), firstValues);
      assertNotEquals(address, Native.bufferAddress(copy.buffer()));
      assertThrows(ReadOnlyBufferException.class, () -> raw.duplicate().put(0, (byte) 1));

      // Run again on another image: the old Tensor is stale, the memory under
      // it now holds the new outputs, at the same address; the copy kept the old.
      session.setInput(0, other);
      session.run();
      assertFalse(first.isValid());
      IllegalStateException stale = assertThrows(IllegalStateException.class, first::buffer);
      assertTrue(stale.getMessage().contains("ran again"), stale.getMessage());
      Tensor second = session.output(0);
      assertEquals(address, Native.bufferAddress(second.buffer()));
      float[] secondValues = second.toFloatArray();
      assertFalse(java.util.Arrays.equals(firstValues, secondValues), "the two images give the same logits");
      assertArrayEquals(secondValues, floats(raw));
      assertArrayEquals(firstValues, copy.toFloatArray());

      // And the address stays put over many runs.
      for (int i = 0; i < 100; ++i) {
        session.run();
        assertEquals(address, Native.bufferAddress(session.output(0).buffer()));
      }
    }
  }

  @Test
  void viewIsStaleAfterClose() throws IOException {
    try (Model model = Model.load(TestData.bundlePath())) {
      Session session = model.newSession();
      session.setInput(0, TestData.image());
      session.run();
      Tensor view = session.output(0);
      Tensor copy = view.copy();
      session.close();
      IllegalStateException e = assertThrows(IllegalStateException.class, view::buffer);
      assertTrue(e.getMessage().contains("closed"), e.getMessage());
      assertArrayEquals(TestData.referenceLogits(), copy.toFloatArray());  // copies outlive it
    }
  }

  // A direct input is read where it is, from its position.
  @Test
  void directInputsAreReadInPlace() throws IOException {
    float[] image = TestData.image();
    ByteBuffer big = ByteBuffer.allocateDirect(image.length * 4 + 64).order(ByteOrder.nativeOrder());
    big.position(64);
    ByteBuffer input = big.slice().order(ByteOrder.nativeOrder());
    input.asFloatBuffer().put(image);
    big.position(64);
    try (Model model = Model.load(TestData.bundlePath()); Session session = model.newSession()) {
      session.setInput(0, big);
      session.run();
      assertArrayEquals(TestData.referenceLogits(), session.output(0).toFloatArray());
      assertEquals(64, big.position());
      assertEquals(Native.bufferAddress(big) + 64, Native.bufferAddress(input));
    }
  }
}
