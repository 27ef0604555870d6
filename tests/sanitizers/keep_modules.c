/* LD_PRELOADed into the address-sanitizer suite only (run.py): dlclose does
 * nothing, so every shared library stays mapped until the process exits and
 * LeakSanitizer can name the library a leak comes from. Without it, the
 * allocations Mesa's Vulkan drivers keep for the process's life are reported
 * from an "<unknown module>" (the Vulkan loader unloads the drivers when an
 * instance is destroyed) and cannot be told apart from Kiln's own leaks. */
int dlclose(void* handle) {
  (void)handle;
  return 0;
}
