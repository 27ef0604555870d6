// Close semantics: use after close is IllegalStateException, closing twice is
// fine, closing a model closes its sessions first.
package ai.kiln;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import org.junit.jupiter.api.Test;

class CloseTest {
  @Test
  void sessionUseAfterCloseThrows() throws IOException {
    try (Model model = Model.load(TestData.bundlePath())) {
      Session session = model.newSession();
      session.setInput(0, TestData.image());
      session.run();
      session.close();
      assertTrue(session.isClosed());
      assertThrows(IllegalStateException.class, session::run);
      assertThrows(IllegalStateException.class, () -> session.setInput(0, new float[1]));
      assertThrows(IllegalStateException.class, () -> session.output(0));
      assertThrows(IllegalStateException.class, () -> session.outputCopy(0));
      assertThrows(IllegalStateException.class, () -> session.getOutput(0, new float[4]));
      assertThrows(IllegalStateException.class, session::deviceName);
      assertDoesNotThrow(session::close);
      assertDoesNotThrow(session::close);
      // The model is still fine.
      try (Session again = model.newSession()) {
        again.setInput(0, TestData.image());
        again.run();
        assertArrayEquals(TestData.referenceLogits(), again.output(0).toFloatArray());
      }
    }
  }

  @Test
  void modelUseAfterCloseThrows() {
    Model model = Model.load(TestData.bundlePath());
    model.close();
    assertTrue(model.isClosed());
    assertThrows(IllegalStateException.class, model::newSession);
    assertDoesNotThrow(model::close);
    // Metadata was read at load and stays readable.
    assertFalse(model.inputs().isEmpty());
  }

  @Test
  void closingTheModelClosesItsSessions() throws IOException {
    Model model = Model.load(TestData.bundlePath());
    Session a = model.newSession();
    Session b = model.newSession(new SessionOptions().threads(2));
    b.setInput(0, TestData.image());
    b.run();
    Tensor view = b.output(0);
    a.close();
    model.close();
    assertTrue(a.isClosed() && b.isClosed());
    assertThrows(IllegalStateException.class, b::run);
    assertThrows(IllegalStateException.class, view::buffer);
    assertDoesNotThrow(b::close);  // after the model: still harmless
  }

  @Test
  void tensorUseAfterCloseThrows() throws IOException {
    try (Model model = Model.load(TestData.bundlePath()); Session session = model.newSession()) {
      session.setInput(0, TestData.image());
      session.run();
      Tensor copy = session.outputCopy(0);
      Tensor view = session.output(0);
      copy.close();
      view.close();
      assertThrows(IllegalStateException.class, copy::buffer);
      assertThrows(IllegalStateException.class, view::buffer);
      assertFalse(copy.isValid() || view.isValid());
      assertDoesNotThrow(copy::close);
      assertDoesNotThrow(view::close);
    }
  }
}
