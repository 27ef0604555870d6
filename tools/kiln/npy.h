// .npy files (NumPy format 1.0/2.0/3.0), C order, little-endian, the dtypes
// of kiln_dtype_t: '<f4' '<f2' '<f8' '|i1' '<i2' '<i4' '<i8' '|u1' '|b1'
// '<u2' '<u4' '<u8', bfloat16 as '|V2', the narrow types of 0.10 bundles
// (float8, float4e2m1, e8m0, int4, uint4, int2, uint2: one byte an element)
// as '|V1' (what numpy writes for ml_dtypes' arrays; read also as '<V1', and
// as '|u1' / '|i1'), and strings: read from numpy's
// fixed-width unicode ('<U{k}', '>U{k}': UTF-32) or bytes ('|S{k}') arrays,
// whose trailing NULs are padding, into a string table of UTF-8 (kiln.hpp);
// written as '<U{k}', k the longest string's code points (at least 1),
// with each ill-formed UTF-8 sequence read as U+FFFD.
#ifndef KILN_TOOLS_KILN_NPY_H_
#define KILN_TOOLS_KILN_NPY_H_

#include <stdint.h>

#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln_tool {

struct NpyArray {
  kiln_dtype_t dtype = KILN_DTYPE_FLOAT32;  // element type
  std::vector<int64_t> shape;               // dimensions (empty: a scalar)
  std::vector<uint8_t> data;                // product(shape) * element size bytes; strings: their table
  // '|V1': one raw byte an element, of no type of its own (dtype is then
  // KILN_DTYPE_UINT8): what ml_dtypes' narrow arrays save as (NpyFits).
  bool raw_bytes = false;
};

// Whether `array` may be a tensor of `dtype`: the same dtype, or one byte an
// element ('|V1', '|u1', '|i1') for a narrow dtype (float8, int4, ...).
bool NpyFits(const NpyArray& array, kiln_dtype_t dtype);
// Whether `dtype` is one of the narrow types of 0.10 bundles (written as '|V1').
bool IsNarrowDtype(kiln_dtype_t dtype);

// Reads the whole regular file `path` (refusing one larger than this
// process can hold); on failure returns false with a message in *error.
// Also how `kiln bench --rpc` reads the bundle it sends.
bool ReadFileBytes(const std::string& path, std::vector<uint8_t>* out, std::string* error);
// Reads `path`; on failure returns false with a message in *error.
bool ReadNpy(const std::string& path, NpyArray* out, std::string* error);
// Parses the `size` bytes of a .npy file at `data` (what ReadNpy read from
// `path`, which only names it in messages); the fuzz harness
// tests/fuzz/fuzz_npy.cpp calls it directly.
bool ParseNpy(const uint8_t* data, size_t size, const std::string& path, NpyArray* out,
              std::string* error);
// Writes a version 1.0 .npy file (a string tensor: `data` is its table, of
// `byte_size` bytes).
bool WriteNpy(const std::string& path, kiln_dtype_t dtype, const int64_t* shape,
              uint32_t rank, const void* data, size_t byte_size, std::string* error);
// The descr string for a dtype ("<f4", ...; strings: "<U", without the width).
const char* NpyDescr(kiln_dtype_t dtype);

}  // namespace kiln_tool

#endif  // KILN_TOOLS_KILN_NPY_H_
