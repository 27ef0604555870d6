// c[i] = a[i] + scale * b[i] for i < n (runtime_vulkan_test.cpp; compiled at
// build time by glslangValidator -V).
#version 450
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) readonly buffer A { float a[]; };
layout(set = 0, binding = 1) readonly buffer B { float b[]; };
layout(set = 0, binding = 2) writeonly buffer C { float c[]; };
layout(push_constant) uniform Params {
  uint n;
  float scale;
} params;

void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < params.n) c[i] = a[i] + params.scale * b[i];
}
