// Device-independent SPIR-V checks; see spirv_inspect.h.
#include "bundle/spirv_inspect.h"

#include <stdbool.h>
#include <string.h>

// The few SPIR-V enumerants the checks need (from the SPIR-V specification).
enum {
  kSpirvHeaderWords = 5,            // magic, version, generator, bound, schema
  kSpirvOpEntryPoint = 15,          // model, function id, name, interface ids
  kSpirvOpExecutionMode = 16,       // entry point id, mode, literals
  kSpirvOpConstant = 43,            // type, id, value
  kSpirvOpConstantComposite = 44,   // type, id, constituent ids
  kSpirvOpSpecConstant = 50,        // type, id, default value (used: nothing is specialized)
  kSpirvOpSpecConstantComposite = 51,  // type, id, constituent ids
  kSpirvOpDecorate = 71,            // target id, decoration, literals
  kSpirvModelGLCompute = 5,         // ExecutionModel of compute shaders
  kSpirvModeLocalSize = 17,         // ExecutionMode with x, y, z literals
  kSpirvDecorationBuiltIn = 11,     // Decoration with a BuiltIn literal
  kSpirvBuiltInWorkgroupSize = 25,  // BuiltIn that overrides LocalSize
};

// What the first walk over a module found.
typedef struct kiln_spirv_scan_t {
  bool has_entry;                 // the GLCompute entry point was found
  uint32_t entry_id;              // its function id
  bool has_local_size;            // OpExecutionMode LocalSize of the entry point was found
  uint32_t local_size[3];         // its literals
  bool has_builtin_size;          // some id is decorated BuiltIn WorkgroupSize
  uint32_t builtin_size_id;       // that id (a constant composite)
  bool has_builtin_parts;         // the composite was found
  uint32_t builtin_part_ids[3];   // its x, y, z constants
} kiln_spirv_scan_t;

// Does the string literal in `words` (`count` words) equal `name`?
static bool kiln_spirv_literal_equals(const uint32_t* words, uint32_t count, const char* name) {
  const char* text = (const char*)words;
  size_t bytes = (size_t)count * 4;
  return memchr(text, '\0', bytes) != NULL && strcmp(text, name) == 0;
}

// Notes what one instruction tells about the entry point and its size.
static void kiln_spirv_scan_instruction(uint32_t opcode, const uint32_t* operands,
                                        uint32_t operand_count, const char* entry_point,
                                        kiln_spirv_scan_t* scan) {
  if (opcode == kSpirvOpEntryPoint && operand_count >= 3 && !scan->has_entry &&
      operands[0] == kSpirvModelGLCompute &&
      kiln_spirv_literal_equals(operands + 2, operand_count - 2, entry_point)) {
    scan->has_entry = true;
    scan->entry_id = operands[1];
  } else if (opcode == kSpirvOpExecutionMode && operand_count >= 5 && scan->has_entry &&
             operands[0] == scan->entry_id && operands[1] == kSpirvModeLocalSize) {
    memcpy(scan->local_size, operands + 2, sizeof(scan->local_size));
    scan->has_local_size = true;
  } else if (opcode == kSpirvOpDecorate && operand_count >= 3 &&
             operands[1] == kSpirvDecorationBuiltIn &&
             operands[2] == kSpirvBuiltInWorkgroupSize) {
    scan->has_builtin_size = true;
    scan->builtin_size_id = operands[0];
  } else if ((opcode == kSpirvOpConstantComposite || opcode == kSpirvOpSpecConstantComposite) &&
             operand_count == 5 && scan->has_builtin_size &&
             operands[1] == scan->builtin_size_id) {
    memcpy(scan->builtin_part_ids, operands + 2, sizeof(scan->builtin_part_ids));
    scan->has_builtin_parts = true;
  }
}

// Resolves the WorkgroupSize built-in's three constants into `size`.
static kiln_status_t kiln_spirv_builtin_size(const uint32_t* words, uint32_t count,
                                             const kiln_spirv_scan_t* scan, uint32_t size[3]) {
  uint32_t resolved = 0;  // bit d: size[d] found
  for (uint32_t at = kSpirvHeaderWords; scan->has_builtin_parts && at < count;) {
    const uint32_t length = words[at] >> 16, opcode = words[at] & 0xFFFFu;  // framing checked
    if ((opcode == kSpirvOpConstant || opcode == kSpirvOpSpecConstant) && length == 4) {
      for (int d = 0; d < 3; ++d) {
        if (words[at + 2] == scan->builtin_part_ids[d]) {
          size[d] = words[at + 3];
          resolved |= 1u << d;
        }
      }
    }
    at += length;
  }
  if (resolved != 7) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "spirv: the WorkgroupSize built-in is not a composite of three "
                            "32-bit constants");
  }
  return NULL;
}

kiln_status_t kiln_spirv_inspect(const void* code, size_t size, const char* entry_point,
                                 kiln_spirv_info_t* out_info) {
  memset(out_info, 0, sizeof(*out_info));
  if (!entry_point) entry_point = "main";
  if (!code || ((uintptr_t)code % 4) != 0) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "spirv: code is NULL or not 4-byte aligned");
  }
  if (size % 4 != 0 || size < kSpirvHeaderWords * 4 || size / 4 > UINT32_MAX) {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "spirv: size %zu bytes is not a multiple of 4 of at least %d",
                            size, kSpirvHeaderWords * 4);
  }
  const uint32_t* words = (const uint32_t*)code;
  const uint32_t count = (uint32_t)(size / 4);
  if (words[0] != KILN_SPIRV_MAGIC) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "spirv: magic number 0x%08x, expected 0x%08x%s",
                            words[0], KILN_SPIRV_MAGIC,
                            words[0] == __builtin_bswap32(KILN_SPIRV_MAGIC)
                                ? " (the module is in the other byte order)"
                                : "");
  }
  kiln_spirv_scan_t scan;
  memset(&scan, 0, sizeof(scan));
  for (uint32_t at = kSpirvHeaderWords; at < count;) {
    const uint32_t length = words[at] >> 16, opcode = words[at] & 0xFFFFu;
    if (length == 0 || length > count - at) {
      return kiln_make_status(KILN_INVALID_BUNDLE,
                              "spirv: instruction at word %u (opcode %u) has word count %u, "
                              "%u words are left",
                              at, opcode, length, count - at);
    }
    kiln_spirv_scan_instruction(opcode, words + at + 1, length - 1, entry_point, &scan);
    at += length;
  }
  if (!scan.has_entry) {
    return kiln_make_status(KILN_INVALID_BUNDLE, "spirv: no GLCompute entry point '%.64s'",
                            entry_point);
  }
  if (scan.has_builtin_size) {
    // The built-in, when present, is the workgroup size (glslang emits it).
    KILN_RETURN_IF_ERROR(kiln_spirv_builtin_size(words, count, &scan, out_info->workgroup_size));
  } else if (scan.has_local_size) {
    memcpy(out_info->workgroup_size, scan.local_size, sizeof(scan.local_size));
  } else {
    return kiln_make_status(KILN_INVALID_BUNDLE,
                            "spirv: entry point '%.64s' has no OpExecutionMode LocalSize",
                            entry_point);
  }
  out_info->word_count = count;
  return NULL;
}
