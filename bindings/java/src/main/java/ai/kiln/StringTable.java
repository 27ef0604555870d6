// String tables (kiln.h, KILN_DTYPE_STRING): how a string tensor's strings
// reach the runtime and come back, packed and unpacked here.
package ai.kiln;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * A string tensor of n elements as the runtime passes it: n + 1 offsets
 * (uint32, native order; the first 0, never decreasing), then the strings'
 * UTF-8 bytes, string i from offset i to offset i + 1.
 */
final class StringTable {
  private StringTable() {}

  /** The table of {@code strings}, encoded as UTF-8 (unpaired surrogates become '?'). */
  static byte[] pack(String[] strings) {
    byte[][] encoded = new byte[strings.length][];
    long total = 0;
    for (int i = 0; i < strings.length; ++i) {
      if (strings[i] == null) throw new NullPointerException("string " + i);
      encoded[i] = strings[i].getBytes(StandardCharsets.UTF_8);
      total += encoded[i].length;
    }
    long size = 4L * (strings.length + 1) + total;
    if (size > Integer.MAX_VALUE - 8) {
      throw new IllegalArgumentException("strings of " + total + " bytes exceed what a Java array holds");
    }
    ByteBuffer table = ByteBuffer.allocate((int) size).order(ByteOrder.nativeOrder());
    int offset = 0;
    table.putInt(offset);
    for (byte[] bytes : encoded) {
      offset += bytes.length;
      table.putInt(offset);
    }
    for (byte[] bytes : encoded) table.put(bytes);
    return table.array();
  }

  /**
   * The {@code count} strings of the table in {@code table}'s remaining bytes
   * (ill-formed UTF-8 reads as U+FFFD); {@link IllegalStateException} when the
   * bytes are no such table (the runtime checks its tables: not expected).
   */
  static String[] unpack(ByteBuffer table, long count) {
    ByteBuffer t = table.duplicate().order(ByteOrder.nativeOrder());
    int base = t.position();
    int size = t.remaining();
    if (count < 0 || 4 * (count + 1) > size) throw new IllegalStateException("no string table of " + count + " strings");
    int start = base + 4 * (int) (count + 1);  // where the strings begin
    long room = size - 4 * (count + 1);
    String[] strings = new String[(int) count];
    long begin = Integer.toUnsignedLong(t.getInt(base));
    if (begin != 0) throw new IllegalStateException("string table: offset 0 is " + begin);
    for (int i = 0; i < count; ++i) {
      long end = Integer.toUnsignedLong(t.getInt(base + 4 * (i + 1)));
      if (end < begin || end > room) throw new IllegalStateException("string table: bad offset " + (i + 1));
      byte[] bytes = new byte[(int) (end - begin)];
      t.position(start + (int) begin);
      t.get(bytes);
      strings[i] = new String(bytes, StandardCharsets.UTF_8);
      begin = end;
    }
    return strings;
  }
}
