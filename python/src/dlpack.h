// The DLPack structures the binding reads (DLPack's stable C ABI, versions
// 0.x: the "dltensor" capsule that __dlpack__() returns without arguments).
// Only the fields' layout matters; the names follow dlpack.h.
#pragma once

#include <cstdint>

namespace kilnpy {

enum DLDeviceType : int32_t {
  kDLCPU = 1,
};

enum DLDataTypeCode : uint8_t {
  kDLInt = 0,
  kDLUInt = 1,
  kDLFloat = 2,
  kDLBfloat = 4,
  kDLComplex = 5,
  kDLBool = 6,
};

struct DLDevice {
  int32_t device_type;  // a DLDeviceType
  int32_t device_id;
};

struct DLDataType {
  uint8_t code;  // a DLDataTypeCode
  uint8_t bits;
  uint16_t lanes;
};

struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements; NULL: compact row-major
  uint64_t byte_offset;
};

struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

}  // namespace kilnpy
