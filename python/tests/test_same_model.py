"""The same options and seed give the same model file, byte for byte, as `xmltrain train` on the
same data written as text."""

import pathlib

import pytest

import xmltrain
from conftest import run_cli

CASES = {
    "single": dict(algo="single", hidden=32, epochs=3, batch=32, seed=7),
    "single-lr-auto": dict(algo="single", hidden=(24, 16), epochs=2, batch=64, lr="auto", dropout=0.25,
                           eval_every="end"),
    "adaptive": dict(algo="adaptive", devices="cpu:3", speed=(1, 1.5, 2), hidden=32, epochs=3, batch=32,
                     seed=11),
    "elastic": dict(algo="elastic", devices="cpu:2", hidden=32, epochs=2, batch=32, normalize="none"),
    # A fixed blend: the ranker is fitted on every row and saved with the MLP.
    "single-ranker": dict(algo="single", hidden=32, epochs=2, batch=32, ranker_blend=0.5, ranker_passes=2),
}


def cli_arguments(options):
    args = []
    for key, value in options.items():
        text = ",".join(map(str, value)) if isinstance(value, tuple) else str(value)
        args += ["--" + key.replace("_", "-"), text]
    return args


@pytest.mark.parametrize("case", sorted(CASES))
def test_same_model_file_as_the_command_line(case, data, text_data, cli, tmp_path):
    options = CASES[case]
    X, Y, Xt, Yt = data
    cli_model = tmp_path / "cli.xmlt"
    run_cli(cli, "train", "--train", text_data[0], "--test", text_data[1], "--model", str(cli_model),
            *cli_arguments(options))
    model = xmltrain.train(X, Y, Xt, Yt, progress=False, **options)
    if "ranker_blend" in options:
        assert model.ranker == {"form": "geometric", "blend": 0.5, "shortlist": 16}
        assert model.summary["ranker"]["used"]
    model.save(tmp_path / "python.xmlt")
    assert (tmp_path / "python.xmlt").read_bytes() == cli_model.read_bytes()
    # The model= keyword writes the file as --model does.
    xmltrain.train(X, Y, Xt, Yt, progress=False, model=str(tmp_path / "keyword.xmlt"), **options)
    assert (tmp_path / "keyword.xmlt").read_bytes() == cli_model.read_bytes()


def test_same_model_on_bibtex(bibtex, cli, tmp_path):
    options = dict(algo="adaptive", devices="cpu:4", epochs=1, seed=5)
    cli_model = tmp_path / "cli.xmlt"
    run_cli(cli, "train", "--train", bibtex[0], "--model", str(cli_model), *cli_arguments(options))
    X, Y = xmltrain.read(bibtex[0])
    xmltrain.train(X, Y, progress=False, model=str(tmp_path / "python.xmlt"), **options)
    assert pathlib.Path(tmp_path / "python.xmlt").read_bytes() == cli_model.read_bytes()
