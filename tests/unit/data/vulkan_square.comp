// y[i] = x[i] * x[i] for i < n: the second link of the test's dispatch chain
// (runtime_vulkan_test.cpp), reading what vulkan_vector_add wrote.
#version 450
layout(local_size_x = 32, local_size_y = 2) in;
layout(set = 0, binding = 0) readonly buffer X { float x[]; };
layout(set = 0, binding = 1) writeonly buffer Y { float y[]; };
layout(push_constant) uniform Params {
  uint n;
} params;

void main() {
  uint i = gl_GlobalInvocationID.x * 2u + gl_LocalInvocationID.y;
  if (i < params.n) y[i] = x[i] * x[i];
}
