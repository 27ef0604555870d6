// Finding libkiln_jni: the kiln.jni property and the KILN_JNI variable, and
// the errors when it is missing, each in a JVM of its own.
package ai.kiln;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;

class LoaderTest {
  // Child JVM entry point: prints the runtime's version, or the error.
  public static void main(String[] args) {
    try {
      System.out.println("version " + Kiln.version());
    } catch (UnsatisfiedLinkError e) {
      System.out.println("error " + e.getMessage());
      System.exit(3);
    }
  }

  private static String[] child(String property, String env) throws IOException, InterruptedException {
    List<String> cmd = new ArrayList<String>(Arrays.asList(
        System.getProperty("java.home") + File.separator + "bin" + File.separator + "java",
        "-cp", System.getProperty("java.class.path"), "-Djava.library.path=/nonexistent"));
    if (property != null) cmd.add("-Dkiln.jni=" + property);
    cmd.add(LoaderTest.class.getName());
    ProcessBuilder builder = new ProcessBuilder(cmd).redirectErrorStream(true);
    builder.environment().remove(Kiln.JNI_ENV);
    if (env != null) builder.environment().put(Kiln.JNI_ENV, env);
    Process process = builder.start();
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    try (InputStream in = process.getInputStream()) {
      byte[] chunk = new byte[4096];
      for (int n; (n = in.read(chunk)) > 0;) out.write(chunk, 0, n);
    }
    return new String[] {Integer.toString(process.waitFor()), out.toString(StandardCharsets.UTF_8.name())};
  }

  @Test
  void loadsFromThePropertyOrTheEnvironment() throws Exception {
    String lib = TestData.property("kiln.jni");
    String[] byProperty = child(lib, null);
    assertEquals("0", byProperty[0], byProperty[1]);
    assertEquals("version " + Kiln.version(), byProperty[1].trim());
    String[] byEnv = child(null, lib);
    assertEquals("0", byEnv[0], byEnv[1]);
    assertEquals("version " + Kiln.version(), byEnv[1].trim());
  }

  @Test
  void missingLibraryIsAClearError() throws Exception {
    String[] wrongPath = child("/nonexistent/libkiln_jni.so", null);
    assertEquals("3", wrongPath[0], wrongPath[1]);
    assertTrue(wrongPath[1].contains("the system property kiln.jni names /nonexistent/libkiln_jni.so"),
               wrongPath[1]);
    String[] none = child(null, null);
    assertEquals("3", none[0], none[1]);
    assertTrue(none[1].contains("was not found: set the system property kiln.jni"), none[1]);
    String[] notALibrary = child(TestData.bundlePath(), null);  // a file, but no library
    assertEquals("3", notALibrary[0], notALibrary[1]);
    assertTrue(notALibrary[1].contains("cannot load " + TestData.bundlePath()), notALibrary[1]);
  }
}
