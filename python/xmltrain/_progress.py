"""The progress train() shows when someone is watching (a terminal or a notebook): tqdm's bar when
tqdm is installed, else the command line's own line on stderr (share done, batch loss, time elapsed
and the estimated time left)."""

import sys
import time


def _interactive():
    if "ipykernel" in sys.modules:
        return True
    stream = sys.stderr
    return stream is not None and hasattr(stream, "isatty") and stream.isatty()


def duration(seconds):
    """'0:07', '12:34' or '1:02:03'."""
    seconds = int(round(seconds))
    hours, rest = divmod(seconds, 3600)
    minutes, seconds = divmod(rest, 60)
    return f"{hours}:{minutes:02d}:{seconds:02d}" if hours else f"{minutes}:{seconds:02d}"


def progress_text(done, total, loss, elapsed):
    """The line `xmltrain train` prints: '42.0%  batch loss 0.1234  0:42 elapsed, 0:58 left'."""
    share = done / total if total else 0.0
    left = duration(elapsed * (total - done) / done) if done else "?"
    return f"{100.0 * share:5.1f}%  batch loss {loss:.4f}  {duration(elapsed)} elapsed, {left} left"


class TextProgress:
    """The command line's progress line, rewritten in place on `stream` at most five times a second."""

    def __init__(self, stream):
        self._stream = stream
        self._start = time.monotonic()
        self._shown = None

    def __call__(self, done, total, loss):
        now = time.monotonic()
        if self._shown is not None and now - self._shown < 0.2 and done < total:
            return
        self._shown = now
        self._stream.write("\r\033[K" + progress_text(done, total, loss, now - self._start))
        self._stream.flush()

    def close(self):
        if self._shown is not None:
            self._stream.write("\r\033[K")
            self._stream.flush()


class ProgressBar:
    """Called with (done, total, batch_loss) as the run trains; closed when it ends."""

    def __init__(self, bar):
        self._bar = bar

    @staticmethod
    def open(wanted):
        """tqdm's bar, or else the text line, when `wanted` is True, or when it is None and one
        would be seen; else None."""
        if wanted is False or (wanted is None and not _interactive()):
            return None
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return TextProgress(sys.stderr) if sys.stderr is not None else None
        return ProgressBar(tqdm(total=1, unit="row", unit_scale=True, leave=False))

    def __call__(self, done, total, loss):
        if self._bar.total != total:
            self._bar.total = total
        self._bar.n = done
        self._bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
        self._bar.refresh()

    def close(self):
        self._bar.close()
