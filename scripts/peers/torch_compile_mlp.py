#!/usr/bin/env python3
"""The PyTorch peer (torch_mlp.py) with its step's dense part under torch.compile (PyTorch 2).

The sparse first layer (EmbeddingBag with a sparse gradient) stays eager; everything after it
(bias, ReLU, hidden and output layers, log-softmax, the loss) is one compiled graph, forward and
backward. Compilation happens in the untimed warm-up steps, for both batch shapes of an epoch.
Same options and output as torch_mlp.py, with "peer": "torch.compile".
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch_mlp  # noqa: E402

if __name__ == "__main__":
    torch_mlp.main(compiled=True)
