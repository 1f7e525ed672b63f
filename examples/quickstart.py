"""Quickstart: Adaptive SGD and elastic SGD on the same four emulated unequal devices, from Python.

    python examples/quickstart.py                        # Bibtex from ../shared/data/bibtex
    python examples/quickstart.py TRAIN.txt TEST.txt     # any data `xmltrain train` reads
    python examples/quickstart.py --epochs 3             # a shorter run

Reads the data as scipy matrices, trains each algorithm on devices of speeds 1, 1.1, 1.2 and
1.32 on the virtual clock (deterministic: the same figures on every machine), prints their P@k,
nDCG@k and PSP@k side by side, and plots P@1 against training time with matplotlib when it is
installed (the figure is written to --plot).
"""

import argparse
import pathlib
import sys

import xmltrain

BIBTEX = pathlib.Path(__file__).resolve().parents[1].parent / "shared" / "data" / "bibtex"
# As scripts/demo.sh: the virtual clock charges each row and each merge a fixed cost.
DEVICES = dict(devices="cpu:4", speed=(1, 1.1, 1.2, 1.32), clock="virtual", row_cost=3e-4, merge_cost=5e-10)
FIGURES = {"p1": "P@1", "p3": "P@3", "p5": "P@5", "ndcg3": "nDCG@3", "ndcg5": "nDCG@5", "psp1": "PSP@1",
           "psp3": "PSP@3", "psp5": "PSP@5"}
ALGORITHMS = ("adaptive", "elastic")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("train", nargs="?", default=str(BIBTEX / "train.txt"), help="training data")
    parser.add_argument("test", nargs="?", default=str(BIBTEX / "test.txt"), help="test data")
    parser.add_argument("--epochs", type=float, default=10)
    parser.add_argument("--plot", default="quickstart-p1.png", help="where the P@1 figure goes")
    args = parser.parse_args()
    if not pathlib.Path(args.train).exists():
        sys.exit(f"no {args.train}: give the training and test files (any format xmltrain reads)")

    X, Y = xmltrain.read(args.train)
    X_test, Y_test = xmltrain.read(args.test)
    print(f"{X.shape[0]} training rows, {X_test.shape[0]} test rows, {X.shape[1]} features, {Y.shape[1]} labels")

    models = {}
    for algo in ALGORITHMS:
        print(f"training {algo} on 4 emulated devices (speeds 1-1.32) ...", flush=True)
        models[algo] = xmltrain.train(X, Y, X_test, Y_test, algo=algo, epochs=args.epochs, eval_every=1, hidden=128,
                                      **DEVICES)

    # The final model is the MLP re-ranked by the shortlist ranker (the default; ranker="off" turns
    # it off, and with it the tenth of the training rows it holds out); the MLP's own best P@1
    # during training is a different model's figure.
    figures = {algo: model.evaluate(X_test, Y_test, Y_train=Y) for algo, model in models.items()}
    ranked = all((model.summary.get("ranker") or {}).get("used") for model in models.values())
    title = "final model (MLP + ranker)" if ranked else "final model (MLP)"
    print(f"\n{title:28}" + "".join(f"{algo:>12}" for algo in ALGORITHMS))
    for key, name in FIGURES.items():
        print(f"{name:28}" + "".join(f"{figures[algo][key]:12.4f}" for algo in ALGORITHMS))
    rows = (("MLP alone: best P@1", "mlp_best_p1", "12.4f"), ("training, virtual s", "train_time_s", "12.2f"),
            ("wall s (with evaluations)", "wall_time_s", "12.1f"))
    for name, key, form in rows:
        print(f"{name:28}" + "".join(f"{models[algo].summary[key]:{form}}" for algo in ALGORITHMS))
    print("(one seed: a difference of a few percent in time is within the noise; scripts/sweep.py runs seeds)")

    try:
        import matplotlib
    except ImportError:
        print("\n(matplotlib is not installed: no plot)")
        return
    matplotlib.use("Agg")  # a file, with or without a display
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 4))
    for algo, model in models.items():
        axes.plot([r["train_time_s"] for r in model.history], [r["p1"] for r in model.history], marker="o", label=algo)
    axes.set_xlabel("training time (s, virtual clock)")
    axes.set_ylabel("the MLP's P@1 on the test rows")
    axes.set_title("4 unequal devices (speeds 1, 1.1, 1.2, 1.32)")
    axes.legend()
    figure.tight_layout()
    figure.savefig(args.plot, dpi=120)
    print(f"\nP@1 against time: {args.plot}")


if __name__ == "__main__":
    main()
