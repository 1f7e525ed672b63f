// uint3 and dim3 (vector_types.h of the CUDA toolkit): a thread's or block's index and a launch's
// extents. Apart from kernel_builtins.h so that the scheduler's block state can name them too.
#pragma once

struct uint3 {
  unsigned x, y, z;
};

struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned vx = 1, unsigned vy = 1, unsigned vz = 1) : x(vx), y(vy), z(vz) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
};
