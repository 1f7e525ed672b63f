"""The progress bar train() shows: tqdm's, when tqdm is installed and someone is watching (a
terminal or a notebook)."""

import sys


def _interactive():
    if "ipykernel" in sys.modules:
        return True
    stream = sys.stderr
    return stream is not None and hasattr(stream, "isatty") and stream.isatty()


class ProgressBar:
    """Called with (done, total, batch_loss) as the run trains; closed when it ends."""

    def __init__(self, bar):
        self._bar = bar

    @staticmethod
    def open(wanted):
        """A bar when `wanted` is True, or when it is None and one would be seen; else None."""
        if wanted is False or (wanted is None and not _interactive()):
            return None
        try:
            from tqdm.auto import tqdm
        except ImportError:
            return None
        return ProgressBar(tqdm(total=1, unit="row", unit_scale=True, leave=False))

    def __call__(self, done, total, loss):
        if self._bar.total != total:
            self._bar.total = total
        self._bar.n = done
        self._bar.set_postfix(loss=f"{loss:.4f}", refresh=False)
        self._bar.refresh()

    def close(self):
        self._bar.close()
