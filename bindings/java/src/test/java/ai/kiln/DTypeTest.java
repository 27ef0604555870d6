// The element types (kiln_dtype_t): the C enum's numbers in order, each
// once, and 0.10's narrow types (decision 62) one byte an element.
package ai.kiln;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

class DTypeTest {
  @Test
  void valuesAreTheCEnumInOrder() {
    DType[] all = DType.values();
    for (int i = 0; i < all.length; i++) {
      assertEquals(i, all[i].value());
      assertEquals(all[i], DType.of(i));
    }
    assertEquals(24, all.length);
    assertThrows(KilnException.class, () -> DType.of(24));
  }

  @Test
  void narrowTypesTakeOneByte() {
    for (int v = DType.FLOAT8E4M3FN.value(); v <= DType.INT2.value(); v++) assertEquals(1, DType.of(v).size());
    assertEquals("float8e4m3fn", DType.FLOAT8E4M3FN.toString());
    assertEquals("int4", DType.INT4.toString());
    assertEquals(19, DType.INT4.value());
    assertEquals(23, DType.INT2.value());
  }
}
