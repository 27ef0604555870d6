// libkiln: load a Kiln bundle and run it.
//
// Two objects:
//   kiln_model_t    a loaded, verified bundle with its kernels mapped.
//                   Immutable after load; may be shared by many sessions
//                   and read from any number of threads at once.
//   kiln_session_t  the state of one execution: the arena, the inputs and
//                   outputs, and the dispatch list bound to them at creation.
//                   One thread at a time per session: a call made while
//                   another thread's call on the same session is inside is
//                   refused with KILN_INVALID_ARGUMENT ("in use by another
//                   thread"), never raced (use one session per thread; they
//                   may share a model). A session may own worker threads
//                   that run each dispatch in parallel (thread_count).
//
// Conventions (docs/runtime.md, "C API stability"):
//   - Every fallible call returns kiln_status_t: NULL means success,
//     anything else is an error the caller owns and frees with
//     kiln_status_free. Fallible calls are named kiln_<noun>_<verb>[_<what>]
//     with verbs from one set: create/free, load, get/set, find, run.
//     Results go to parameters named out_*, written only on success.
//   - Infallible accessors return their value directly and are named
//     kiln_<noun>_<property> (kiln_model_input_count,
//     kiln_session_device_name, kiln_status_code).
//   - Structs the API reads or fills start with `size_t struct_size` (see
//     "Versioned structs" below); fields and enum values are only ever
//     added at the end.
//   - Strings and arrays the API returns are owned by the object they came
//     from (the model, the session, the status) and valid until it is freed.
//     Data is never allocated for the caller: variable-size results are
//     copied into the caller's buffer in two calls (ask for the size with
//     NULL data, then pass a buffer).
#ifndef KILN_KILN_H_
#define KILN_KILN_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

// Marks the exported API (the library is built with -fvisibility=hidden).
#if defined(__GNUC__)
#define KILN_API __attribute__((visibility("default")))
#else
#define KILN_API
#endif

#ifdef __cplusplus
extern "C" {
#endif

//===----------------------------------------------------------------------===//
// Versions
//===----------------------------------------------------------------------===//

// The library version this header belongs to (the single source of truth:
// runtime/meson.build reads it from here).
#define KILN_VERSION_STRING "0.6.0"
// The ABI number. It changes when a program built against an older kiln.h
// could misbehave with this library without being recompiled: a function
// removed, renamed or given another signature or meaning, a struct field
// moved, removed or retyped, an enum value changed. It does not change for
// additions (new functions, fields at the end of versioned structs, enum
// values at the end). libkiln.so's SONAME is libkiln.so.<KILN_ABI_VERSION>.
#define KILN_ABI_VERSION 1

// The running library's KILN_VERSION_STRING (which may differ from the
// header's when the program was built against another one).
KILN_API const char* kiln_version(void);
// The running library's KILN_ABI_VERSION.
KILN_API uint32_t kiln_abi_version(void);

//===----------------------------------------------------------------------===//
// Versioned structs
//===----------------------------------------------------------------------===//
// Every struct below that the API reads (options) or fills (infos, stats)
// starts with `size_t struct_size`, which the caller sets to sizeof the
// struct as its own kiln.h declares it; the kiln_*_init functions do that
// and zero the rest. The library reads or writes only the first
// min(struct_size, its own sizeof) bytes:
//   - a caller built against an older, smaller struct: the fields it lacks
//     count as zero (their default) when read, and are not written when
//     filled;
//   - a caller built against a newer, larger struct: the fields the library
//     does not know are neither read nor written (they keep the caller's
//     value: zero after kiln_*_init).
// A struct_size below the struct's first published size (KILN_*_MIN_SIZE)
// is KILN_INVALID_ARGUMENT.

// Bytes of `type` up to and including `field`.
#define KILN_STRUCT_SIZE_THROUGH(type, field) \
  (offsetof(type, field) + sizeof(((type*)0)->field))

// Zeroes the `size` bytes at `s` and stores `size` in its leading
// struct_size. The kiln_*_init functions below call it with the caller's
// sizeof (they are inline so that the size is the one the caller compiled).
static inline void kiln_struct_init(void* s, size_t size) {
  memset(s, 0, size);
  memcpy(s, &size, sizeof(size));
}

//===----------------------------------------------------------------------===//
// Status
//===----------------------------------------------------------------------===//

typedef enum kiln_status_code_e {
  KILN_OK = 0,
  KILN_INVALID_ARGUMENT = 1,   // the caller passed something wrong
  KILN_INVALID_BUNDLE = 2,     // the bundle failed verification
  KILN_UNSUPPORTED = 3,        // valid, but not runnable here (version, arch)
  KILN_NOT_FOUND = 4,          // a name or file does not exist
  KILN_OUT_OF_MEMORY = 5,
  KILN_IO_ERROR = 6,           // open/read/mmap failed
  KILN_INTERNAL = 7,           // a kernel failed or a runtime invariant broke
} kiln_status_code_t;

typedef struct kiln_status_impl_t* kiln_status_t;  // NULL == OK

KILN_API kiln_status_code_t kiln_status_code(kiln_status_t status);
// The message; valid until kiln_status_free. "OK" for NULL.
KILN_API const char* kiln_status_message(kiln_status_t status);
KILN_API void kiln_status_free(kiln_status_t status);
// Name of a code: "OK", "INVALID_ARGUMENT", ... ("UNKNOWN" otherwise).
KILN_API const char* kiln_status_code_name(kiln_status_code_t code);

//===----------------------------------------------------------------------===//
// Tensors
//===----------------------------------------------------------------------===//

typedef enum kiln_dtype_e {  // same values as kiln.fb.DType
  KILN_DTYPE_FLOAT32 = 0,
  KILN_DTYPE_FLOAT16 = 1,
  KILN_DTYPE_FLOAT64 = 2,
  KILN_DTYPE_INT8 = 3,
  KILN_DTYPE_INT16 = 4,
  KILN_DTYPE_INT32 = 5,
  KILN_DTYPE_INT64 = 6,
  KILN_DTYPE_UINT8 = 7,
  KILN_DTYPE_BOOL = 8,
  KILN_DTYPE_UINT16 = 9,   // since 0.6 bundles
  KILN_DTYPE_UINT32 = 10,  // since 0.6 bundles
  KILN_DTYPE_UINT64 = 11,  // since 0.6 bundles
  KILN_DTYPE_BFLOAT16 = 12,  // since 0.7 bundles: the upper 16 bits of a float32
  // Since 0.9 bundles: UTF-8 strings, passed as a *string table* (no fixed
  // element size; kiln_dtype_size gives 0). A table of n strings is
  //   uint32_t offsets[n + 1];  // native (little-endian) order: offsets[0] = 0,
  //                             // non-decreasing; string i is bytes[offsets[i] .. offsets[i + 1])
  //   uint8_t bytes[offsets[n]];  // no terminators; UTF-8 (not checked)
  // and its size is 4 * (n + 1) + offsets[n] bytes. kiln_session_set_input
  // takes exactly such a table (its byte_size is that size, the bytes at most
  // the input's kiln_tensor_info_t.string_bytes); kiln_session_get_output_info
  // gives an output's table size after the run, and kiln_session_get_output
  // copies the table (docs/bundle.md#string-tensors).
  KILN_DTYPE_STRING = 13,
  // Since 0.10 bundles: ONNX's narrow types, stored ONE ELEMENT PER BYTE
  // (as numpy's ml_dtypes holds them; docs/bundle.md#narrow-element-types).
  // kiln_dtype_size gives 1 for each. ONNX's own files pack the 4- and
  // 2-bit ones; tensors of kiln never do.
  KILN_DTYPE_FLOAT8E4M3FN = 14,    // the 8-bit code: sign, 4 exponent bits (bias 7), 3 mantissa bits; NaN 0x7F/0xFF, no inf
  KILN_DTYPE_FLOAT8E4M3FNUZ = 15,  // bias 8; 0x80 is the only NaN; no inf, no negative zero
  KILN_DTYPE_FLOAT8E5M2 = 16,      // sign, 5 exponent bits (bias 15), 2 mantissa bits; inf and NaN as in IEEE 754
  KILN_DTYPE_FLOAT8E5M2FNUZ = 17,  // bias 16; 0x80 is the only NaN; no inf, no negative zero
  KILN_DTYPE_UINT4 = 18,           // 0..15 in a byte; only the low 4 bits are read
  KILN_DTYPE_INT4 = 19,            // -8..7 in a byte (kiln writes it sign-extended); only the low 4 bits are read
  KILN_DTYPE_FLOAT4E2M1 = 20,      // the 4-bit code (sign, 2 exponent bits (bias 1), 1 mantissa bit) in the low
                                   // bits of a byte, the high bits 0; no inf or NaN
  KILN_DTYPE_FLOAT8E8M0 = 21,      // a power of two: 2^(code - 127); 0xFF is NaN; no sign, no zero
  KILN_DTYPE_UINT2 = 22,           // 0..3 in a byte; only the low 2 bits are read
  KILN_DTYPE_INT2 = 23,            // -2..1 in a byte (kiln writes it sign-extended); only the low 2 bits are read
} kiln_dtype_t;

KILN_API const char* kiln_dtype_name(kiln_dtype_t dtype);  // "float32", ...
KILN_API size_t kiln_dtype_size(kiln_dtype_t dtype);       // bytes per element; 0 if unknown or STRING

// Where a tensor's bytes live (same values as kiln.fb.Storage).
typedef enum kiln_storage_e {
  KILN_STORAGE_ARENA = 0,     // in each session's arena, at `offset`
  KILN_STORAGE_CONSTANT = 1,  // in the bundle's data segment, at `offset` (read-only)
  // Since 0.10 bundles: sized per run. A dimension is known only at run time
  // with no bound the bundle gives (a model input's dimension nothing fixed,
  // a size read from data): each session allocates it once its size is known
  // (at most kiln_session_options_t.max_arena_bytes in all, with the arena).
  // `offset` is its slot (tensors of one slot share their bytes), byte_size
  // 0 and `shape` each dimension's largest (2^31 for a dimension with no
  // bound, more for one computed from such, up to 2^62): a
  // session's kiln_session_get_input_info / _get_output_info give the
  // current ones. Set such an input's shape (kiln_session_set_input_shape)
  // before its data.
  KILN_STORAGE_DYNAMIC = 2,
} kiln_storage_t;

// A tensor of the bundle (kiln_model_get_tensor_info), or a model input or
// output (kiln_model_get_input_info / _output_info).
typedef struct kiln_tensor_info_t {
  size_t struct_size;      // sizeof(kiln_tensor_info_t) as the caller compiled it
  const char* name;        // owned by the model ("" when the bundle gives none)
  kiln_dtype_t dtype;      // element type
  uint32_t rank;           // number of dimensions
  const int64_t* shape;    // `rank` dimensions, owned by the model
  size_t byte_size;        // total bytes
  // -- end of the first version (KILN_TENSOR_INFO_MIN_SIZE) --
  uint32_t index;          // the tensor's index in the bundle (kiln_model_get_tensor_info)
  kiln_storage_t storage;  // arena or constant
  uint64_t offset;         // byte offset in the arena or in the data segment (see `storage`)
  const void* data;        // constants: their bytes (read-only, the model's); NULL for arena tensors
  // -- since 0.5: run-time dimensions (docs/dynamic-shapes.md) --
  // Nonzero when some dimension is known only at run time (the bundle was
  // compiled with a range, kilnc --input-shape NAME=..,LO..HI): `shape` then
  // holds each dimension's largest size, `byte_size` the largest byte size.
  uint32_t dynamic;
  const int64_t* min_shape;  // `rank` least sizes (equal to `shape` where static), owned by the model
  // -- since 0.9: string tensors (KILN_DTYPE_STRING) --
  // The capacity of the table's bytes area (0 for other dtypes). For a
  // string tensor `byte_size` is the largest table: 4 * (elements + 1) +
  // string_bytes; a session's output info gives the last run's table size.
  uint64_t string_bytes;
} kiln_tensor_info_t;

#define KILN_TENSOR_INFO_MIN_SIZE KILN_STRUCT_SIZE_THROUGH(kiln_tensor_info_t, byte_size)

// Zeroes `*info` and sets its struct_size.
static inline void kiln_tensor_info_init(kiln_tensor_info_t* s) { kiln_struct_init(s, sizeof(*s)); }

//===----------------------------------------------------------------------===//
// Model
//===----------------------------------------------------------------------===//

typedef struct kiln_model_t kiln_model_t;

// Maps the file read-only and verifies it; constants are used in place.
KILN_API kiln_status_t kiln_model_load_file(const char* path, kiln_model_t** out_model);
// Verifies `data`, which the caller keeps alive and unchanged until
// kiln_model_free. If `data` is not 64-byte aligned it is copied.
KILN_API kiln_status_t kiln_model_load_memory(const void* data, size_t size,
                                              kiln_model_t** out_model);
KILN_API void kiln_model_free(kiln_model_t* model);

// Flags (kiln_model_load_options_t.flags).
// Verify the bundle but do not map its kernel libraries, and never call
// into the bundle's code: the model can be inspected (every kiln_model_*
// accessor) but kiln_session_create fails. Lets tools inspect bundles
// compiled for another architecture.
#define KILN_MODEL_LOAD_VERIFY_ONLY 1u

// Resource limits a model load checks before it allocates or maps anything
// the bundle asks for (a bundle may come from the network). 0 in a field
// means its default, sized for a phone; UINT64_MAX means no limit.
#define KILN_DEFAULT_MAX_BUNDLE_BYTES (4ull << 30)    // 4 GiB
#define KILN_DEFAULT_MAX_CONSTANT_BYTES (2ull << 30)  // 2 GiB
#define KILN_DEFAULT_MAX_WORKGROUPS (1ull << 24)      // per dispatch (x * y * z)

typedef struct kiln_model_load_options_t {
  size_t struct_size;           // sizeof(kiln_model_load_options_t) as the caller compiled it
  uint32_t flags;               // KILN_MODEL_LOAD_* bits
  uint32_t reserved;            // 0
  // The bundle's size (the file, or the caller's memory): a larger one is
  // KILN_OUT_OF_MEMORY before it is mapped or copied.
  uint64_t max_bundle_bytes;
  // The bytes of its data segment (the constant tensors and the kernel
  // code): more is KILN_OUT_OF_MEMORY before any kernel is mapped (they are
  // used in place, but must fit the device).
  uint64_t max_constant_bytes;
  // Workgroups of one dispatch: more is KILN_INVALID_BUNDLE (a run's length
  // stays bounded).
  uint64_t max_workgroups;
  // Ed25519 public keys the application trusts, 32 bytes each
  // (`kilnc --print-public-key=KEY.pem` prints one as a C array). With any,
  // the bundle must be signed by one of them (`kilnc --sign-key=KEY.pem`)
  // and the signature must verify, else KILN_INVALID_BUNDLE; this is checked
  // on the raw bytes before anything else reads the bundle or maps its
  // code. NULL / 0: signatures are not checked.
  const uint8_t* trusted_public_keys;
  size_t trusted_public_key_count;  // keys at `trusted_public_keys`
} kiln_model_load_options_t;

#define KILN_MODEL_LOAD_OPTIONS_MIN_SIZE sizeof(kiln_model_load_options_t)

// Zeroes `*options` (all defaults) and sets its struct_size.
static inline void kiln_model_load_options_init(kiln_model_load_options_t* options) {
  kiln_struct_init(options, sizeof(*options));
}

// Like kiln_model_load_file / kiln_model_load_memory (which use the
// defaults) with `options` (NULL: the defaults).
KILN_API kiln_status_t kiln_model_load_file_ex(const char* path,
                                               const kiln_model_load_options_t* options,
                                               kiln_model_t** out_model);
KILN_API kiln_status_t kiln_model_load_memory_ex(const void* data, size_t size,
                                                 const kiln_model_load_options_t* options,
                                                 kiln_model_t** out_model);

//===----------------------------------------------------------------------===//
// Static kernels (iOS, and platforms that forbid mapping code at run time)
//===----------------------------------------------------------------------===//

// Kernels linked into the application: `kilnc MODEL.onnx -o MODEL.kiln
// --kernels=static` writes the bundle without code plus MODEL.kernels.o and
// MODEL.kernels.h, which declares
//   const kiln_static_library_t* kiln_static_library_MODEL(void);
// Link the object into the application and register its library once,
// before loading the bundle; sessions of such a bundle call the registered
// kernels and never map code. A bundle whose kernels are not registered
// fails to load (KILN_NOT_FOUND, naming the function to call); the bundle
// and the object must come from the same compilation (a kernel hash
// matches them).
typedef struct kiln_static_library_t kiln_static_library_t;

// Most libraries one process can register.
#define KILN_STATIC_LIBRARY_MAX 256u

// Registers `library` (thread-safe; registering it again is a no-op).
// KILN_UNSUPPORTED if it was compiled for another kernel ABI version,
// KILN_INVALID_ARGUMENT for NULL or a malformed library, KILN_OUT_OF_MEMORY
// past KILN_STATIC_LIBRARY_MAX. Registered libraries stay registered for the
// life of the process (they are part of the executable).
KILN_API kiln_status_t kiln_static_library_register(const kiln_static_library_t* library);

// Inputs and outputs. 0 for NULL.
KILN_API size_t kiln_model_input_count(const kiln_model_t* model);
KILN_API size_t kiln_model_output_count(const kiln_model_t* model);
// The input's or output's tensor (the same as kiln_model_get_tensor_info
// of its index).
KILN_API kiln_status_t kiln_model_get_input_info(const kiln_model_t* model, size_t index,
                                                 kiln_tensor_info_t* out_info);
KILN_API kiln_status_t kiln_model_get_output_info(const kiln_model_t* model, size_t index,
                                                  kiln_tensor_info_t* out_info);
KILN_API kiln_status_t kiln_model_find_input(const kiln_model_t* model, const char* name,
                                             size_t* out_index);
KILN_API kiln_status_t kiln_model_find_output(const kiln_model_t* model, const char* name,
                                              size_t* out_index);

//===----------------------------------------------------------------------===//
// Model contents (for tools and bindings: everything `kiln inspect` shows).
// Every index is checked (KILN_INVALID_ARGUMENT when out of range); the
// counts are in kiln_model_info_t. Strings are never NULL ("" for a name the bundle lacks);
// arrays may be NULL when their count is 0. All of it is owned by the
// model and valid until kiln_model_free; uint32_t arrays point into the
// verified bundle.
//===----------------------------------------------------------------------===//

// Where a session of the bundle runs, and where each of its dispatches runs.
typedef enum kiln_device_kind_e {
  KILN_DEVICE_AUTO = 0,    // the bundle's: CPU, or Vulkan (kilnc --target=vulkan)
  KILN_DEVICE_CPU = 1,     // a CPU bundle on the calling thread and the session's pool
  KILN_DEVICE_VULKAN = 2,  // a Vulkan bundle on a Vulkan device (libvulkan is loaded at run time)
  KILN_DEVICE_HOST = 3,    // dispatches only: a CPU kernel of a Vulkan bundle (host copy of the arena)
} kiln_device_kind_t;

// How a bundle is signed (docs/bundle.md, "Signatures").
typedef enum kiln_signature_e {
  KILN_SIGNATURE_NONE = 0,     // no signature trailer
  KILN_SIGNATURE_ED25519 = 1,  // Ed25519 (RFC 8032) over the whole file
} kiln_signature_t;

// The bundle's header facts and memory plan.
typedef struct kiln_model_info_t {
  size_t struct_size;            // sizeof(kiln_model_info_t) as the caller compiled it
  uint32_t version_major;        // bundle format version it was written with
  uint32_t version_minor;        // (docs/bundle.md, "Versioning")
  uint32_t min_runtime_minor;    // the lowest runtime format minor that runs it
  kiln_device_kind_t device;     // KILN_DEVICE_CPU or KILN_DEVICE_VULKAN: what it was compiled for
  const char* producer;          // e.g. "kilnc 0.1.0"
  uint64_t content_hash;         // XXH64 of the file (verified at load)
  uint64_t arena_bytes;          // memory plan: bytes of each session's arena
  uint32_t arena_alignment;      // memory plan: alignment of every arena offset
  uint32_t constant_count;       // tensors with constant storage
  uint64_t constant_bytes;       // their bytes
  uint64_t data_segment_offset;  // file offset of the data segment (constants, kernel code)
  uint64_t data_segment_size;    // its bytes
  uint32_t tensor_count;         // kiln_model_get_tensor_info
  uint32_t node_count;           // kiln_model_get_node_info
  uint32_t library_count;        // kiln_model_get_library_info
  uint32_t kernel_count;         // kiln_model_get_kernel_info
  uint32_t dispatch_count;       // kiln_model_get_dispatch_info
  kiln_signature_t signature;    // how the bundle is signed (KILN_SIGNATURE_NONE: not)
  uint32_t signature_verified;   // 1: checked against a trusted key at load
  uint8_t signer_public_key[32]; // the key the signature names (zeros if unsigned)
} kiln_model_info_t;

// Its first published size (0.3, before the signature fields): callers
// compiled against it still work and get the fields they know.
#define KILN_MODEL_INFO_MIN_SIZE offsetof(kiln_model_info_t, signature)

KILN_API kiln_status_t kiln_model_get_info(const kiln_model_t* model, kiln_model_info_t* out_info);

// Tensors: every tensor the bundle describes (inputs, outputs,
// intermediates and constants), by index.
KILN_API kiln_status_t kiln_model_get_tensor_info(const kiln_model_t* model, size_t tensor,
                                                  kiln_tensor_info_t* out_info);

// Graph nodes: the optimized graph the bundle keeps for inspection (the
// runtime runs dispatches, not nodes).
typedef struct kiln_node_info_t {
  size_t struct_size;        // sizeof(kiln_node_info_t) as the caller compiled it
  const char* name;          // the ONNX node's name (or a generated one)
  const char* op_type;       // e.g. "Conv"
  uint32_t attribute_count;  // kiln_model_get_attribute_info
  uint32_t input_count;      // entries in `inputs`
  const uint32_t* inputs;    // tensor indices
  uint32_t output_count;     // entries in `outputs`
  const uint32_t* outputs;   // tensor indices
} kiln_node_info_t;

#define KILN_NODE_INFO_MIN_SIZE sizeof(kiln_node_info_t)

// How an attribute's value is given.
typedef enum kiln_attribute_kind_e {
  KILN_ATTRIBUTE_TEXT = 0,  // human-readable text (all bundles store today)
} kiln_attribute_kind_t;

typedef struct kiln_attribute_info_t {
  size_t struct_size;          // sizeof(kiln_attribute_info_t) as the caller compiled it
  const char* name;            // e.g. "strides"
  kiln_attribute_kind_t kind;  // how `value` is given
  const char* value;           // TEXT: e.g. "[1, 1]", "3", "\"NOTSET\"", "<tensor float32[64]>"
} kiln_attribute_info_t;

#define KILN_ATTRIBUTE_INFO_MIN_SIZE sizeof(kiln_attribute_info_t)

KILN_API kiln_status_t kiln_model_get_node_info(const kiln_model_t* model, size_t node,
                                                kiln_node_info_t* out_info);
KILN_API kiln_status_t kiln_model_get_attribute_info(const kiln_model_t* model, size_t node,
                                                     size_t attribute,
                                                     kiln_attribute_info_t* out_info);

// Kernel libraries: blobs of kernel code for one target.
typedef enum kiln_library_format_e {  // same values as kiln.fb.LibraryFormat
  KILN_LIBRARY_FORMAT_ELF = 0,     // a position-independent ELF shared object (CPU)
  KILN_LIBRARY_FORMAT_SPIRV = 1,   // SPIR-V modules, one per kernel (Vulkan)
  KILN_LIBRARY_FORMAT_STATIC = 2,  // CPU kernels linked into the application (no blob)
} kiln_library_format_t;

// Bits of kiln_library_info_t.vulkan_features.
#define KILN_VULKAN_FEATURE_SHADER_INT64 1u    // shaderInt64 (int64 tensors)
#define KILN_VULKAN_FEATURE_SHADER_FLOAT64 2u  // shaderFloat64 (float64 tensors)

typedef struct kiln_library_info_t {
  size_t struct_size;            // sizeof(kiln_library_info_t) as the caller compiled it
  kiln_library_format_t format;  // ELF or SPIR-V
  uint32_t vulkan_features;      // SPIR-V: KILN_VULKAN_FEATURE_* bits its modules need
  const char* target_triple;     // what it was compiled for, e.g. "x86_64-unknown-linux-gnu"
  const char* cpu;               // -mcpu it was compiled for
  const char* features;          // -mattr it was compiled for
  uint64_t offset;               // byte offset of the blob in the data segment
  uint64_t size;                 // bytes of the blob
  const void* data;              // the blob (read-only, owned by the model)
  uint64_t kernel_hash;          // static: the registered library it needs (0 otherwise)
  const char* static_symbol;     // static: the function returning that library ("" otherwise)
} kiln_library_info_t;

#define KILN_LIBRARY_INFO_MIN_SIZE sizeof(kiln_library_info_t)

KILN_API kiln_status_t kiln_model_get_library_info(const kiln_model_t* model, size_t library,
                                                   kiln_library_info_t* out_info);

// Kernels: one entry of a library.
typedef struct kiln_kernel_info_t {
  size_t struct_size;            // sizeof(kiln_kernel_info_t) as the caller compiled it
  const char* name;              // the kernel's name (as in its library's table)
  uint32_t library;              // its library's index
  uint32_t ordinal;              // ELF: its index in the library's kernel table
  kiln_library_format_t format;  // its library's format
  // SPIR-V kernels only (zero, and "" for the entry point, otherwise):
  const char* entry_point;       // the module's GLCompute entry point
  uint64_t spirv_offset;         // byte offset of the module in the library's blob
  uint64_t spirv_size;           // bytes of the module
  uint32_t workgroup_size[3];    // the module's workgroup size (x, y, z)
  uint32_t binding_count;        // storage buffers it binds (set 0)
  uint32_t push_constant_size;   // bytes of push constants
} kiln_kernel_info_t;

#define KILN_KERNEL_INFO_MIN_SIZE sizeof(kiln_kernel_info_t)

KILN_API kiln_status_t kiln_model_get_kernel_info(const kiln_model_t* model, size_t kernel,
                                                  kiln_kernel_info_t* out_info);

// Dispatches: the kernel launches a run executes, in order.
typedef struct kiln_dispatch_info_t {
  size_t struct_size;              // sizeof(kiln_dispatch_info_t) as the caller compiled it
  uint32_t kernel;                 // the kernel's index
  kiln_device_kind_t device;       // KILN_DEVICE_CPU, _VULKAN or _HOST
  uint32_t workgroup_count[3];     // workgroups (x, y, z)
  uint32_t binding_count;          // bound buffers (kiln_model_get_binding_info)
  uint32_t push_constant_count;    // entries in `push_constants`
  const uint32_t* push_constants;  // passed to the kernel verbatim
  uint32_t source_node_count;      // entries in `source_nodes`
  const uint32_t* source_nodes;    // indices of the graph nodes it implements
  uint32_t host_download_count;    // entries in `host_downloads`
  const uint32_t* host_downloads;  // HOST: arena tensors copied device -> host before it runs
  uint32_t host_upload_count;      // entries in `host_uploads`
  const uint32_t* host_uploads;    // HOST: arena tensors copied host -> device after it ran
} kiln_dispatch_info_t;

#define KILN_DISPATCH_INFO_MIN_SIZE sizeof(kiln_dispatch_info_t)

// How a dispatch uses a bound buffer (same values as kiln.fb.Access).
typedef enum kiln_access_e {
  KILN_ACCESS_READ = 0,
  KILN_ACCESS_WRITE = 1,
  KILN_ACCESS_READ_WRITE = 2,
} kiln_access_t;

typedef struct kiln_binding_info_t {
  size_t struct_size;    // sizeof(kiln_binding_info_t) as the caller compiled it
  uint32_t tensor;       // the bound tensor's index
  kiln_access_t access;  // read, write or both
} kiln_binding_info_t;

#define KILN_BINDING_INFO_MIN_SIZE sizeof(kiln_binding_info_t)

KILN_API kiln_status_t kiln_model_get_dispatch_info(const kiln_model_t* model, size_t dispatch,
                                                    kiln_dispatch_info_t* out_info);
// Binding `binding` (slot `binding` of the kernel) of dispatch `dispatch`.
KILN_API kiln_status_t kiln_model_get_binding_info(const kiln_model_t* model, size_t dispatch,
                                                   size_t binding,
                                                   kiln_binding_info_t* out_info);

// A model input or output that the ONNX model types as a sequence or an
// optional (since 0.6; docs/sequences.md), made of ordinary model inputs or
// outputs (set and read with the calls above):
//   a sequence NAME of N tensors (N fixed by kilnc --sequence-length or by
//     the graph): NAME[0] .. NAME[N-1];
//   an optional NAME: a bool scalar NAME.present (true: it holds a value)
//     and its value, a tensor NAME.value or a sequence's NAME[0] .. (none
//     for an output that never holds one). An absent optional input: set
//     NAME.present to false and its value's tensors to anything (zeros).
typedef enum kiln_composite_kind_e {  // same values as kiln.fb.CompositeKind
  KILN_COMPOSITE_SEQUENCE = 0,  // a sequence of tensors
  KILN_COMPOSITE_OPTIONAL = 1,  // a value or none
} kiln_composite_kind_t;

typedef struct kiln_composite_info_t {
  size_t struct_size;          // sizeof(kiln_composite_info_t) as the caller compiled it
  const char* name;            // the ONNX value's name, owned by the model
  kiln_composite_kind_t kind;  // sequence or optional
  int is_output;               // nonzero: the indices below are output indices, else input indices
  size_t element_count;        // the value's tensors: a sequence's length; an optional tensor's 1 (0: never set)
  const uint32_t* elements;    // `element_count` input (or output) indices in order, owned by the model
  int64_t presence;            // an optional: the index of its bool scalar; -1 for a sequence
  int holds_sequence;          // an optional: nonzero when its value is a sequence (of `elements`)
} kiln_composite_info_t;

#define KILN_COMPOSITE_INFO_MIN_SIZE sizeof(kiln_composite_info_t)

// The number of composite inputs and outputs (0 for bundles before 0.8).
KILN_API size_t kiln_model_composite_count(const kiln_model_t* model);
KILN_API kiln_status_t kiln_model_get_composite_info(const kiln_model_t* model, size_t index,
                                                     kiln_composite_info_t* out_info);

// Zero `*info` and set its struct_size.
static inline void kiln_composite_info_init(kiln_composite_info_t* s) { kiln_struct_init(s, sizeof(*s)); }
static inline void kiln_model_info_init(kiln_model_info_t* s) { kiln_struct_init(s, sizeof(*s)); }
static inline void kiln_node_info_init(kiln_node_info_t* s) { kiln_struct_init(s, sizeof(*s)); }
static inline void kiln_attribute_info_init(kiln_attribute_info_t* s) { kiln_struct_init(s, sizeof(*s)); }
static inline void kiln_library_info_init(kiln_library_info_t* s) { kiln_struct_init(s, sizeof(*s)); }
static inline void kiln_kernel_info_init(kiln_kernel_info_t* s) { kiln_struct_init(s, sizeof(*s)); }
static inline void kiln_dispatch_info_init(kiln_dispatch_info_t* s) { kiln_struct_init(s, sizeof(*s)); }
static inline void kiln_binding_info_init(kiln_binding_info_t* s) { kiln_struct_init(s, sizeof(*s)); }

//===----------------------------------------------------------------------===//
// Session
//===----------------------------------------------------------------------===//

// Most threads a session may use (kiln_session_options_t.thread_count).
#define KILN_SESSION_MAX_THREADS 1024u

// Vulkan validation levels (kiln_session_options_t.vulkan_validation); they
// need the Khronos validation layer installed (else KILN_UNSUPPORTED).
typedef enum kiln_vulkan_validate_e {
  KILN_VULKAN_VALIDATE_OFF = 0,              // production
  KILN_VULKAN_VALIDATE_ON = 1,               // VK_LAYER_KHRONOS_validation
  KILN_VULKAN_VALIDATE_SYNCHRONIZATION = 2,  // the layer plus its synchronization checks
} kiln_vulkan_validate_t;

// Receives each warning (severity 1) and error (severity 2) the Vulkan
// validation layer or driver reports, on the thread that made the call.
typedef void (*kiln_vulkan_message_callback_t)(void* user_data, int severity,
                                               const char* message);

// Called once at the start of each pool thread a session creates, on that
// thread, with its worker index (1..thread_count-1; the caller of
// kiln_session_run is worker 0). Use it to set CPU affinity (e.g. to the big
// cores), priority or a name. It must not call back into the session.
typedef void (*kiln_thread_init_fn_t)(uint32_t worker_index, void* user_data);

// Session options: a versioned struct (see above) whose every field's zero
// value is its default. Start from kiln_session_options_init and set the
// fields you need; passing NULL options means all defaults.
typedef struct kiln_session_options_t {
  size_t struct_size;  // sizeof(kiln_session_options_t) as the caller compiled it
  // Threads that run each dispatch, the calling thread included: 0 or 1 runs
  // everything on the calling thread (no threads, no locks); N > 1 starts
  // N - 1 pool threads at kiln_session_create (joined by kiln_session_free)
  // and splits each dispatch's workgroups into N contiguous ranges.
  // At most KILN_SESSION_MAX_THREADS.
  uint32_t thread_count;
  // Optional (NULL: none): run first on every pool thread; see
  // kiln_thread_init_fn_t. kiln_session_create returns after all have returned.
  kiln_thread_init_fn_t thread_init;
  void* thread_init_user_data;  // passed to `thread_init`
  // -- end of the first version (KILN_SESSION_OPTIONS_MIN_SIZE) --
  // Where the session runs (a kiln_device_kind_t: AUTO, CPU or VULKAN): 0 is
  // the device the bundle was compiled for; any other kind than that is
  // KILN_INVALID_ARGUMENT. Vulkan sessions ignore the thread fields.
  uint32_t device;
  // Vulkan: which physical device (among those with a compute queue, in the
  // loader's order). 0 picks the first discrete GPU, else integrated, else
  // virtual, else CPU implementation (e.g. Mesa's lavapipe); i + 1 picks
  // device i.
  uint32_t vulkan_device;
  // Vulkan: a kiln_vulkan_validate_t (0: off).
  uint32_t vulkan_validation;
  // Vulkan: optional; receives the validation layer's and driver's messages.
  kiln_vulkan_message_callback_t vulkan_message;
  void* vulkan_message_user_data;  // passed to `vulkan_message`
  // Vulkan: optional pipeline cache contents saved from
  // kiln_session_get_vulkan_pipeline_cache (e.g. a file next to the
  // bundle). Used only when made by the same device and driver; read during
  // kiln_session_create only.
  const void* vulkan_pipeline_cache;
  size_t vulkan_pipeline_cache_size;  // bytes at `vulkan_pipeline_cache`
  // Vulkan: the longest a run may take, in milliseconds (0: 60000); past it
  // kiln_session_run fails with KILN_INTERNAL.
  uint32_t vulkan_timeout_ms;
  uint32_t reserved;  // 0
  // The most bytes the session's arena (every intermediate tensor, the
  // inputs and outputs) may take: a model that needs more is refused with
  // KILN_OUT_OF_MEMORY before anything is allocated. 0: 1 GiB
  // (KILN_DEFAULT_MAX_ARENA_BYTES); UINT64_MAX: no limit.
  uint64_t max_arena_bytes;
} kiln_session_options_t;

#define KILN_DEFAULT_MAX_ARENA_BYTES (1ull << 30)

// The first published options: the thread fields (libkiln 0.1).
#define KILN_SESSION_OPTIONS_MIN_SIZE \
  KILN_STRUCT_SIZE_THROUGH(kiln_session_options_t, thread_init_user_data)

// Zeroes `*options` (all defaults) and sets its struct_size.
static inline void kiln_session_options_init(kiln_session_options_t* options) {
  kiln_struct_init(options, sizeof(*options));
}

typedef struct kiln_session_t kiln_session_t;

// Allocates the arena and binds every dispatch. `options` may be NULL.
// Vulkan: creates the device, the pipelines (through the optional pipeline
// cache), the arena and constant buffers (constants are uploaded once) and
// records the dispatch list once; no libvulkan, no device or a missing
// shader feature is KILN_UNSUPPORTED.
KILN_API kiln_status_t kiln_session_create(const kiln_model_t* model,
                                           const kiln_session_options_t* options,
                                           kiln_session_t** out_session);
KILN_API void kiln_session_free(kiln_session_t* session);

// Copies `byte_size` bytes (must equal the input's byte_size at its current
// shape, see kiln_session_set_input_shape) into the input. A string input
// (KILN_DTYPE_STRING) takes a string table of the current shape's element
// count instead, checked before anything is copied (KILN_INVALID_ARGUMENT
// naming the offset, or the capacity string_bytes; the previous input stays).
KILN_API kiln_status_t kiln_session_set_input(kiln_session_t* session, size_t index,
                                              const void* data, size_t byte_size);

// Run-time dimensions (bundles compiled with dimension ranges, kilnc
// --input-shape NAME=1,3,32..1280,32..1280; docs/dynamic-shapes.md). One
// bundle serves every shape in its ranges; an input starts at its largest
// shape (kiln_tensor_info_t.shape). Sets input `index`'s shape for the next
// runs: `rank` dimensions, each within [min_shape, shape] of the input's
// info (a static dimension accepts only its size; anything else is
// KILN_INVALID_ARGUMENT naming the input, the dimension and the range).
// Set the shape before the data (kiln_session_set_input's byte_size is the
// new shape's). Inputs sharing a dimension (one model dimension name) must
// agree, and the model's own conditions on its dimensions must hold: that
// is checked when the shapes are next used (the next run, or a
// kiln_session_get_*_info), which then fails with KILN_INVALID_ARGUMENT.
// Works on bundles without ranges too, accepting only their shapes.
KILN_API kiln_status_t kiln_session_set_input_shape(kiln_session_t* session, size_t index,
                                                    const int64_t* shape, uint32_t rank);
// Input or output `index` at the session's current shapes: as
// kiln_model_get_input_info / _output_info, with `shape` and `byte_size`
// those of the next run (for an output, of its last run too). The shape
// pointer is the session's, valid until the next kiln_session_set_input_shape
// or kiln_session_free.
KILN_API kiln_status_t kiln_session_get_input_info(kiln_session_t* session, size_t index,
                                                   kiln_tensor_info_t* out_info);
KILN_API kiln_status_t kiln_session_get_output_info(kiln_session_t* session, size_t index,
                                                    kiln_tensor_info_t* out_info);
// Runs the dispatch list once: dispatches in order, each one's workgroups
// spread over the session's threads, with a barrier after each dispatch. A
// kernel failing stops the run with KILN_INTERNAL naming the dispatch, the
// kernel and the workgroup (with several threads: the first failure seen).
// A string input must be set again after its shape changed, or after a run
// when the bundle lets that run reuse its memory: else KILN_INVALID_ARGUMENT.
KILN_API kiln_status_t kiln_session_run(kiln_session_t* session);

// Copies the output into `data` (`byte_size` must equal its byte_size at
// the session's current shapes: kiln_session_get_output_info).
KILN_API kiln_status_t kiln_session_get_output(kiln_session_t* session, size_t index,
                                               void* data, size_t byte_size);
// Zero-copy view of an output, valid until the next run or free (Vulkan:
// a host copy, downloaded by this call); a string output's: its checked
// table, of kiln_session_get_output_info's byte_size.
KILN_API kiln_status_t kiln_session_get_output_view(kiln_session_t* session, size_t index,
                                                    const void** out_data);

// Profiling. When enabled, kiln_session_run times every dispatch
// (CLOCK_MONOTONIC, around the whole dispatch: all its workgroups on all
// threads, barrier included; on a Vulkan device, the device's timestamps
// after each dispatch, from a copy of the command lists recorded with them
// the first time profiling is enabled: KILN_UNSUPPORTED where the compute
// queue has no timestamps). Disabled (the default) it costs nothing but a
// predictable branch per dispatch.
KILN_API kiln_status_t kiln_session_set_profiling(kiln_session_t* session, int enabled);
// Number of dispatches a run executes, in order (same as the bundle's
// dispatch list, kiln_model_info_t.dispatch_count). 0 for NULL.
KILN_API size_t kiln_session_dispatch_count(const kiln_session_t* session);
// Time dispatch `dispatch` took in the last run, in nanoseconds (at least 1
// for a dispatch that ran; 0 for one the run did not reach because an earlier
// dispatch failed). KILN_INVALID_ARGUMENT if the index is out of range or the
// last run was made with profiling disabled (or there was no run yet).
KILN_API kiln_status_t kiln_session_get_dispatch_profile(const kiln_session_t* session,
                                                         size_t dispatch,
                                                         uint64_t* out_nanoseconds);

// The device the session runs on: "cpu", or the Vulkan device's name
// (owned by the session). "none" for NULL.
KILN_API const char* kiln_session_device_name(const kiln_session_t* session);
// Vulkan: the pipeline cache's contents, for
// kiln_session_options_t.vulkan_pipeline_cache next time. Two calls: with
// NULL `data`, *out_size is the bytes needed; then with a buffer of
// `capacity` >= that many bytes, *out_size is the bytes written (a smaller
// buffer is KILN_INVALID_ARGUMENT). KILN_INVALID_ARGUMENT for CPU sessions.
KILN_API kiln_status_t kiln_session_get_vulkan_pipeline_cache(kiln_session_t* session,
                                                              void* data, size_t capacity,
                                                              size_t* out_size);

// Start-up timing: how long each stage of loading the model, creating the
// session and its first run took, in nanoseconds (CLOCK_MONOTONIC). A stage
// the session's device does not have is 0. Stages are measured inside
// libkiln's calls; the caller's own work between them (filling inputs, ...)
// is only in load_to_first_run_ns. A versioned struct (see above).
typedef struct kiln_session_load_stats_t {
  size_t struct_size;  // sizeof(kiln_session_load_stats_t) as the caller compiled it
  // From the start of the kiln_model_load_* call that made the session's
  // model to the end of the session's first successful kiln_session_run
  // (0 until then). For a later session of the same model it also covers
  // the time before that session was created.
  uint64_t load_to_first_run_ns;
  // kiln_model_load_*: the whole call (the three stages below and the
  // input/output descriptions).
  uint64_t model_load_ns;
  // Mapping the file read-only (or wrapping or copying the caller's memory).
  uint64_t bundle_map_ns;
  // Verifying and parsing the bundle (FlatBuffers verifier, bundle checks,
  // content hash; SPIR-V module checks for Vulkan bundles).
  uint64_t bundle_verify_ns;
  // CPU bundles: loading the kernel libraries (ELF loader) and resolving
  // the kernels. 0 for Vulkan bundles (their pipelines are made per session).
  uint64_t kernel_load_ns;
  // kiln_session_create: the whole call (the stages below).
  uint64_t session_create_ns;
  // Vulkan: loading libvulkan, creating the instance, listing the devices.
  uint64_t instance_create_ns;
  // Vulkan: the logical device with its queue, command pool and fence.
  uint64_t device_create_ns;
  // Vulkan: the pipeline cache and every compute pipeline (shader modules,
  // layouts, the driver compiling the shaders): usually the largest stage.
  uint64_t pipeline_create_ns;
  // Vulkan: the number of pipelines made (one per bundle kernel).
  uint32_t pipeline_count;
  // Vulkan: 1 when options.vulkan_pipeline_cache was given and seeded the
  // cache (made by the same device and driver), else 0.
  uint32_t pipeline_cache_used;
  // Allocating memory: CPU: the arena; Vulkan: the arena, constant and
  // staging buffers.
  uint64_t buffer_create_ns;
  // Vulkan: uploading the constants (weights) to the device. 0 on the CPU,
  // which uses them in place in the mapped bundle.
  uint64_t parameter_upload_ns;
  // Binding the dispatch list: CPU: each dispatch's buffer pointers;
  // Vulkan: descriptor sets and recording the command buffer.
  uint64_t record_ns;
  // CPU: starting the pool threads (thread_count > 1).
  uint64_t thread_start_ns;
  // The session's first successful kiln_session_run (0 until then). It
  // includes one-time costs a later run does not pay (first touch of the
  // arena's pages, a driver's lazy work).
  uint64_t first_run_ns;
} kiln_session_load_stats_t;

#define KILN_SESSION_LOAD_STATS_MIN_SIZE sizeof(kiln_session_load_stats_t)

// Zeroes `*stats` and sets its struct_size.
static inline void kiln_session_load_stats_init(kiln_session_load_stats_t* stats) {
  kiln_struct_init(stats, sizeof(*stats));
}

// The session's start-up timing (see kiln_session_load_stats_t).
KILN_API kiln_status_t kiln_session_get_load_stats(const kiln_session_t* session,
                                                   kiln_session_load_stats_t* out_stats);

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // KILN_KILN_H_
