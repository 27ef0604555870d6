// Where a session runs (kiln_device_kind_t).
package ai.kiln;

/** Where a session runs, or what a bundle was compiled for (kiln_device_kind_t). */
public enum Device {
  /** The bundle's own device (sessions only). */
  AUTO(0),
  /** The CPU: the calling thread and the session's pool. */
  CPU(1),
  /** A Vulkan device (a bundle compiled with kilnc --target=vulkan). */
  VULKAN(2);

  private final int value;

  Device(int value) {
    this.value = value;
  }

  /** The C enum's number. */
  public int value() {
    return value;
  }

  static Device of(int value) {
    for (Device device : values()) {
      if (device.value == value) return device;
    }
    throw new KilnException(KilnException.Code.UNSUPPORTED,
        "device kind " + value + " is unknown to this version of the Java binding");
  }
}
