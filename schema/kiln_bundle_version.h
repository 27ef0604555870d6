// Version of the bundle format (schema/bundle.fbs) this tree writes and reads.
// See docs/bundle.md for the compatibility rules.
#ifndef KILN_BUNDLE_VERSION_H_
#define KILN_BUNDLE_VERSION_H_

#define KILN_BUNDLE_VERSION_MAJOR 0
#define KILN_BUNDLE_VERSION_MINOR 10
#define KILN_BUNDLE_ALIGNMENT 64  // alignment of constants, kernel blobs, arena offsets
// Vulkan targets: tensor offsets (arena and constants) are multiples of this
// (the largest minStorageBufferOffsetAlignment Vulkan allows).
#define KILN_BUNDLE_VULKAN_ALIGNMENT 256

#endif  // KILN_BUNDLE_VERSION_H_
