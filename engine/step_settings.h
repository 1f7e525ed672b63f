// How a device's training step goes beyond plain SGD (kernels/cpu/sparse_mlp.h, StepRule): L2
// weight decay, dropout on the hidden activations, the first layer's Adagrad, and how the step
// keeps its optimizer state. All 0 here: the step is then exactly the step without them. The CPU
// dense step implements them all; the sampled (SLIDE) step and the CUDA replica all but the weight
// decay, which they refuse.
#pragma once

#include <cstdint>

namespace xmlt::engine {

struct StepSettings {
  float weight_decay = 0;  // g += weight_decay * w for the weights (the first layer's batch rows only)
  float dropout = 0;       // probability of zeroing a hidden unit's activation, in [0, 1)
  // The dropout masks are a hash of (seed, stream, the device's step count): the run's seed, and a
  // stream per device so that devices draw different masks.
  uint64_t seed = 0;
  uint64_t stream = 0;
  // > 0: the first layer's weights step with Adagrad at this multiple of the step's learning rate
  // (so that a schedule, Algorithm 1's batch rescaling and a rollback's lowering move both rates
  // alike; the device pool sets the ratio from the run's two rates, scheduler/device_pool.cc).
  float input_adagrad_ratio = 0;
  // The CPU dense step keeps its momentum and Adagrad's squares in bfloat16, rounded stochastically
  // (--optimizer-state bf16; kernels/cpu/sparse_mlp.h, StepRule): half their memory. It needs the
  // output layer's products in bf16. The sampled step and the CUDA replica keep them in fp32.
  bool bf16_optimizer_state = false;
  // The CPU dense step keeps the weights themselves in bfloat16, rounded stochastically, with no
  // fp32 copy (--weights bf16; StepRule::weights_bf16): half their memory. It needs the output
  // layer's products in bf16, and a merge that reads the replica through Device::StreamParams (the
  // copy of one device's run, --algo single).
  bool bf16_weights = false;
};

}  // namespace xmlt::engine
