"""train()'s progress without tqdm: the command line's line on stderr, with the time elapsed and
left, whenever stderr is a terminal (issue 62, point 6: the README's example trained for minutes
in silence where tqdm was missing)."""

import io
import sys

from xmltrain import _progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def without_tqdm(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)  # `import tqdm.auto` raises ImportError
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)


def test_a_terminal_without_tqdm_gets_the_text_line(monkeypatch):
    without_tqdm(monkeypatch)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    bar = _progress.ProgressBar.open(None)
    assert isinstance(bar, _progress.TextProgress)
    bar(250, 1000, 0.5)
    bar.close()
    shown = terminal.getvalue()
    assert " 25.0%  batch loss 0.5000  0:00 elapsed, 0:00 left" in shown, shown
    assert shown.endswith("\r\033[K"), "the line is cleared at the end"


def test_no_terminal_no_progress_unless_asked(monkeypatch):
    without_tqdm(monkeypatch)
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert _progress.ProgressBar.open(None) is None
    assert isinstance(_progress.ProgressBar.open(True), _progress.TextProgress)
    assert _progress.ProgressBar.open(False) is None


def test_the_time_left_is_the_elapsed_time_scaled_by_the_rows_to_go():
    assert _progress.progress_text(300, 1000, 1.25, 30.0) == " 30.0%  batch loss 1.2500  0:30 elapsed, 1:10 left"
    assert _progress.progress_text(0, 1000, 0.0, 3.0).endswith("0:03 elapsed, ? left")
    assert _progress.duration(3723) == "1:02:03"
