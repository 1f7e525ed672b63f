#!/usr/bin/env python3
"""PyTorch peer of xmltrain: trains exactly xmltrain's model on the same file and reports samples/s.

Model: sparse input (D) -> Linear(D,H) + ReLU [-> Linear + ReLU ...] -> Linear(H,L) -> softmax;
loss: cross-entropy against the uniform distribution over each row's labels (mean over rows),
rows without labels skipped; plain SGD. Reading the file and evaluation are not timed.

  python3 scripts/peers/torch_mlp.py --train DIR/train.txt [--test DIR/test.txt] \
      [--batch 256] [--hidden 128|256,128] [--lr 0.1] [--threads N] [--epochs 1] \
      [--max-steps S] [--warmup-steps 5] [--device cpu|cuda] [--seed 1]

Prints one JSON line: {"peer":"torch","samples":..,"train_time_s":..,"samples_per_s":..,...}.
"""

import argparse
import json
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F


def read_xml_repo(path):
    """Reads XML-repository text ("N D L" header, rows "l1,l2 f:v ...") into CSR numpy arrays.

    N in the header is not trusted (sample files keep the full set's count); D and L are, and ids
    beyond them are an error naming the line.
    """
    with open(path, "r", encoding="ascii") as f:
        header = f.readline().split()
        if len(header) != 3:
            sys.exit(f"{path}:1: expected a header 'rows features labels'")
        num_features, num_labels = int(header[1]), int(header[2])
        feat_ptr, feat_idx, feat_val = [0], [], []
        label_ptr, label_idx = [0], []
        for line_no, line in enumerate(f, start=2):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            # A row without labels starts with a space, so the first field is then empty.
            labels_field, _, features_field = line.partition(" ")
            if ":" in labels_field:  # no space before the features: a row without labels
                labels_field, features_field = "", line
            if labels_field:
                label_idx.extend(int(y) for y in labels_field.split(","))
            label_ptr.append(len(label_idx))
            for token in features_field.split():
                fid, _, value = token.partition(":")
                feat_idx.append(int(fid))
                feat_val.append(float(value))
            feat_ptr.append(len(feat_idx))
            if feat_idx and max(feat_idx[feat_ptr[-2]:], default=-1) >= num_features:
                sys.exit(f"{path}:{line_no}: feature id >= {num_features}")
            if label_idx and max(label_idx[label_ptr[-2]:], default=-1) >= num_labels:
                sys.exit(f"{path}:{line_no}: label id >= {num_labels}")
    return {
        "num_features": num_features,
        "num_labels": num_labels,
        "feat_ptr": np.asarray(feat_ptr, dtype=np.int64),
        "feat_idx": np.asarray(feat_idx, dtype=np.int64),
        "feat_val": np.asarray(feat_val, dtype=np.float32),
        "label_ptr": np.asarray(label_ptr, dtype=np.int64),
        "label_idx": np.asarray(label_idx, dtype=np.int64),
    }


def take_rows(ptr, *columns, rows):
    """CSR rows `rows` (in that order) as (new_ptr, columns...): one vectorized gather."""
    lengths = ptr[rows + 1] - ptr[rows]
    new_ptr = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(lengths, out=new_ptr[1:])
    source = np.repeat(ptr[rows] - new_ptr[:-1], lengths) + np.arange(new_ptr[-1], dtype=np.int64)
    return (new_ptr,) + tuple(c[source] for c in columns)


class SparseMlp(torch.nn.Module):
    """xmltrain's model. The first layer is an EmbeddingBag (sum of weight rows scaled by the
    feature values) plus a bias: the fastest CPU sparse x dense product in PyTorch, and with
    sparse=True its gradient and SGD update touch only the features present in the batch."""

    def __init__(self, num_features, hidden, num_labels):
        super().__init__()
        self.first = torch.nn.EmbeddingBag(num_features, hidden[0], mode="sum", sparse=True)
        bound = 1.0 / num_features ** 0.5  # nn.Linear's default init, for a like-for-like model
        torch.nn.init.uniform_(self.first.weight, -bound, bound)
        self.first_bias = torch.nn.Parameter(torch.empty(hidden[0]).uniform_(-bound, bound))
        self.hidden = torch.nn.ModuleList(
            torch.nn.Linear(a, b) for a, b in zip(hidden[:-1], hidden[1:]))
        self.out = torch.nn.Linear(hidden[-1], num_labels)

    def forward(self, idx, offsets, values):
        return self.dense(self.first(idx, offsets, per_sample_weights=values))

    def dense(self, first_sum):
        """Everything after the sparse gather: what torch_compile_mlp.py compiles (the gather's
        sparse gradient stays eager)."""
        h = torch.relu(first_sum + self.first_bias)
        for layer in self.hidden:
            h = torch.relu(layer(h))
        return self.out(h)


def make_batch(data, rows, device):
    """Tensors of one batch: features as EmbeddingBag input, labels as (row, label, 1/|Y_r|)."""
    fptr, fidx, fval = take_rows(data["feat_ptr"], data["feat_idx"], data["feat_val"], rows=rows)
    lptr, lidx = take_rows(data["label_ptr"], data["label_idx"], rows=rows)
    counts = np.diff(lptr)
    label_row = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
    label_weight = np.repeat((1.0 / np.maximum(counts, 1)).astype(np.float32), counts)
    tensors = (fidx, fptr[:-1], fval, label_row, lidx, label_weight)
    return tuple(torch.from_numpy(t).to(device, non_blocking=True) for t in tensors)


def dense_loss(model, first_sum, label_row, label_idx, label_weight):
    logp = F.log_softmax(model.dense(first_sum), dim=1)
    # Gathering the |Y_r| log-probabilities beats a dense B x L target matrix: its backward is a
    # scatter of B*|Y| values instead of a B x L multiply.
    picked = logp[label_row, label_idx]
    return -(picked * label_weight).sum() / first_sum.shape[0]


def loss_of(model, batch, dense=dense_loss):
    idx, offsets, values, label_row, label_idx, label_weight = batch
    first_sum = model.first(idx, offsets, per_sample_weights=values)
    return dense(model, first_sum, label_row, label_idx, label_weight)


def precision_at_1(model, data, batch, device):
    model.eval()
    hits, rows_total = 0, len(data["feat_ptr"]) - 1
    with torch.no_grad():
        for start in range(0, rows_total, batch):
            rows = np.arange(start, min(start + batch, rows_total))
            idx, offsets, values, label_row, label_idx, _ = make_batch(data, rows, device)
            top = model(idx, offsets, values).argmax(dim=1)
            match = (top[label_row] == label_idx).float()
            hit = torch.zeros(len(rows), device=device).index_add_(0, label_row, match)
            hits += int((hit > 0).sum())  # once per row, even if a file repeats a label
    model.train()
    return hits / max(rows_total, 1)


def main(compiled=False):
    """compiled: the step's dense part under torch.compile (torch_compile_mlp.py)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--train", required=True)
    parser.add_argument("--test", help="also report P@1 on this file (not timed)")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--hidden", default="128", help="hidden sizes, e.g. 128 or 256,128")
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--threads", type=int, default=torch.get_num_threads())
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--max-steps", type=int, default=0, help="stop after this many timed steps")
    parser.add_argument("--warmup-steps", type=int, default=5, help="untimed steps before timing")
    parser.add_argument("--device", default="cpu", help="cpu or cuda[:N]")
    parser.add_argument("--seed", type=int, default=1)
    if compiled:
        # Holding the compiled code to AVX2 on an AVX-512 CPU: ATEN_CPU_CAPABILITY=avx2 would, but
        # the compiled step then ends in a segmentation fault (PyTorch 2.15); the generated
        # kernels' vector width set here, with MKL_ENABLE_INSTRUCTIONS=AVX2 and
        # ONEDNN_MAX_CPU_ISA=AVX2 for the library calls, holds both to 256-bit vectors.
        parser.add_argument("--simdlen", type=int, default=0,
                            help="vector width in bits of the compiled kernels (256: AVX2); 0: PyTorch's choice")
    args = parser.parse_args()
    if compiled and args.simdlen:
        import torch._inductor.config as inductor_config
        inductor_config.cpp.simdlen = args.simdlen

    hidden = [int(h) for h in args.hidden.split(",")]
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    sync = torch.cuda.synchronize if cuda else (lambda: None)

    data = read_xml_repo(args.train)
    labelled = np.flatnonzero(np.diff(data["label_ptr"]) > 0)  # rows without labels are skipped
    model = SparseMlp(data["num_features"], hidden, data["num_labels"]).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr)
    rng = np.random.default_rng(args.seed)
    # Automatic dynamic shapes: the batch's label count changes every step; after the first
    # recompilation that dimension (and the last batch's row count) stays symbolic.
    dense = torch.compile(dense_loss) if compiled else dense_loss

    def step(rows):
        loss = loss_of(model, make_batch(data, rows, device), dense)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        return loss

    warm_order = rng.permutation(labelled)
    for s in range(args.warmup_steps):
        step(warm_order[(s * args.batch) % len(labelled):][:args.batch])
    if compiled and len(labelled) % args.batch:
        step(warm_order[:len(labelled) % args.batch])  # the epoch's last, shorter batch compiles too
    sync()

    samples = steps = 0
    loss_sum, loss_steps, loss = 0.0, 0, None
    start = time.perf_counter()
    for _ in range(args.epochs):
        order = rng.permutation(labelled)  # a fresh shuffle per epoch, as xmltrain's scheduler does
        for begin in range(0, len(order), args.batch):
            rows = order[begin:begin + args.batch]
            loss = step(rows)
            samples += len(rows)
            steps += 1
            if steps % 50 == 0:  # reading a loss synchronizes a GPU; do it rarely
                loss_sum += float(loss)
                loss_steps += 1
            if args.max_steps and steps >= args.max_steps:
                break
        if args.max_steps and steps >= args.max_steps:
            break
    sync()
    train_time = time.perf_counter() - start

    result = {
        "peer": "torch.compile" if compiled else "torch",
        "samples": samples,
        "train_time_s": round(train_time, 4),
        "samples_per_s": round(samples / train_time, 1) if train_time > 0 else None,
        "batch": args.batch,
        "hidden": args.hidden,
        "threads": args.threads,
        "torch": torch.__version__,
        "device": str(device),
        "steps": steps,
        "epochs": args.epochs,
        # Mean of every 50th step's loss (the last one when there were fewer): a sanity check.
        "loss": round(loss_sum / loss_steps if loss_steps else float(loss), 4) if steps else None,
    }
    if compiled:
        result["simdlen"] = args.simdlen or None
    if args.test:
        result["p1"] = round(precision_at_1(model, read_xml_repo(args.test), args.batch, device), 4)
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
