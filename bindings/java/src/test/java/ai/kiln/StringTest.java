// String tensors (DType.STRING): a String[] in, the same strings out of a
// string Identity model (run_tests.py compiles it with --string-bytes 4);
// capacity and count errors as KilnException; the table layout.
package ai.kiln;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;

class StringTest {
  // 0 to 5 UTF-8 bytes each: 18 in all, within the input's 24.
  private static final String[] STRINGS = {"", "kiln", "\u00e9t\u00e9", "\u4e2d", "\ud83d\ude00", "a\u0000"};

  private static Model load() {
    return Model.load(TestData.expect("strings.bundle"));
  }

  @Test
  void infosDescribeStringTensors() {
    assertEquals(0, DType.STRING.size());
    assertEquals("string", DType.STRING.toString());
    try (Model model = load()) {
      TensorInfo x = model.inputs().get(0);
      assertEquals(DType.STRING, x.dtype());
      assertEquals(24, x.stringBytes());
      assertEquals(4 * 7 + 24, x.byteSize());  // the largest table
      assertEquals(6, x.elementCount());
      assertEquals("x:string[2,3]", x.toString());
    }
  }

  @Test
  void stringsRoundTrip() {
    try (Model model = load(); Session session = model.newSession()) {
      for (int run = 0; run < 2; ++run) {  // each run sets the input again
        session.setInput("x", STRINGS);
        session.run();
        assertEquals(4 * 7 + 18, session.outputInfo(0).byteSize());  // the table the run wrote
        assertArrayEquals(STRINGS, session.output(0).toStringArray());
        assertArrayEquals(STRINGS, session.outputCopy("y").toStringArray());
      }
    }
  }

  @Test
  void badStringInputsAreRefused() {
    try (Model model = load(); Session session = model.newSession()) {
      KilnException e = assertThrows(KilnException.class,
          () -> session.setInput(0, new String[] {"aaaaaaaaaaaaaaaaaaaaaaaaa", "", "", "", "", ""}));
      assertEquals(KilnException.Code.INVALID_ARGUMENT, e.code());
      assertTrue(e.getMessage().contains("kilnc --string-bytes"), e.getMessage());
      e = assertThrows(KilnException.class, () -> session.setInput(0, new String[] {"a", "b"}));
      assertEquals(KilnException.Code.INVALID_ARGUMENT, e.code());
      assertThrows(NullPointerException.class, () -> session.setInput(0, new String[] {"a", null, "", "", "", ""}));
    }
    try (Model demo = Model.load(TestData.bundlePath()); Session session = demo.newSession()) {
      KilnException e = assertThrows(KilnException.class, () -> session.setInput(0, STRINGS));
      assertTrue(e.getMessage().contains("not string"), e.getMessage());
      assertThrows(IllegalStateException.class, () -> session.output(0).toStringArray());
    }
  }

  @Test
  void tablesPackAndUnpack() {
    byte[] table = StringTable.pack(new String[] {"ab", "", "\u20ac"});
    ByteBuffer b = ByteBuffer.wrap(table).order(ByteOrder.nativeOrder());
    assertEquals(4 * 4 + 5, table.length);
    assertEquals(0, b.getInt(0));
    assertEquals(2, b.getInt(4));
    assertEquals(2, b.getInt(8));
    assertEquals(5, b.getInt(12));
    assertArrayEquals(new String[] {"ab", "", "\u20ac"}, StringTable.unpack(b, 3));
    b.putInt(8, 6);  // past the end
    assertThrows(IllegalStateException.class, () -> StringTable.unpack(b, 3));
    byte[] bad = {0, 0, 0, 0, 1, 0, 0, 0, (byte) 0xff};  // one string, ill-formed UTF-8
    assertArrayEquals(new String[] {"\ufffd"}, StringTable.unpack(ByteBuffer.wrap(bad), 1));
  }
}
