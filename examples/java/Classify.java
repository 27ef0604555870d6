// Classifies an image with a Kiln bundle through the Java binding (ai.kiln)
// and prints the top class:
//
//   java -Dkiln.jni=build/bindings/java/libkiln_jni.so -cp build/bindings/java/kiln.jar \
//       examples/java/Classify.java MODEL.kiln IMAGE.npy LABELS.txt
//   -> top: triangle (class 2, p=0.993)
//
// The image is a float32 .npy of the model's input shape; LABELS.txt has one
// class name per line.
import ai.kiln.KilnException;
import ai.kiln.Model;
import ai.kiln.Session;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.List;

public class Classify {
  // The data of a little-endian float32 C-order .npy file (format 1.0-3.0),
  // in a direct buffer: the session reads it in place.
  static ByteBuffer readNpy(String path) throws IOException {
    ByteBuffer file = ByteBuffer.wrap(Files.readAllBytes(Paths.get(path))).order(ByteOrder.LITTLE_ENDIAN);
    byte[] magic = new byte[6];
    file.get(magic);
    if (!new String(magic, StandardCharsets.ISO_8859_1).equals("\u0093NUMPY")) {
      throw new IOException(path + " is not a .npy file");
    }
    int version = file.get();
    file.get();  // minor version
    int header = version >= 2 ? file.getInt() : Short.toUnsignedInt(file.getShort());
    byte[] dict = new byte[header];
    file.get(dict);
    String text = new String(dict, StandardCharsets.ISO_8859_1);
    if (!text.contains("'descr': '<f4'") || !text.contains("'fortran_order': False")) {
      throw new IOException(path + " is not float32 in C order: " + text.trim());
    }
    ByteBuffer data = ByteBuffer.allocateDirect(file.remaining()).order(ByteOrder.nativeOrder());
    data.put(file).flip();
    return data;
  }

  public static void main(String[] args) throws IOException {
    if (args.length != 3) {
      System.err.println("usage: Classify MODEL.kiln IMAGE.npy LABELS.txt");
      System.exit(2);
    }
    ByteBuffer image = readNpy(args[1]);
    List<String> labels = Files.readAllLines(Paths.get(args[2]));
    try (Model model = Model.load(args[0]); Session session = model.newSession()) {
      session.setInput(0, image);
      session.run();
      // A zero-copy view of the scores, read before the next run.
      FloatBuffer scores = session.output(0).buffer().asFloatBuffer();
      int best = 0;
      for (int i = 1; i < scores.limit(); ++i) {
        if (scores.get(i) > scores.get(best)) best = i;
      }
      double sum = 0;
      for (int i = 0; i < scores.limit(); ++i) sum += Math.exp(scores.get(i) - scores.get(best));
      String label = best < labels.size() ? labels.get(best) : "?";
      System.out.printf(java.util.Locale.ROOT, "top: %s (class %d, p=%.3f)%n", label, best, 1.0 / sum);
    } catch (KilnException e) {
      System.err.println("Classify: " + e.getMessage());
      System.exit(1);
    }
  }
}
