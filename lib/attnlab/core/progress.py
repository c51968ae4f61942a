"""Progress bars: tqdm.auto (a widget in Jupyter when ipywidgets is installed, text otherwise).

Without tqdm (a bare GPU machine with only torch and numpy, where `python -m attnlab.bench` runs
headless) `tqdm` is a stand-in that returns the iterable and prints nothing."""

import warnings

try:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "IProgress not found": we deliberately render text bars
        from tqdm.auto import tqdm  # noqa: F401
except ModuleNotFoundError:
    class tqdm:  # noqa: N801 (tqdm's own name)
        """The part of tqdm's interface the library uses, without output."""

        def __init__(self, iterable=None, *args, **kwargs):
            self.iterable = iterable

        def __iter__(self):
            return iter(self.iterable)

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

        def update(self, n=1):
            pass

        def set_postfix(self, *args, **kwargs):
            pass

        def set_description(self, *args, **kwargs):
            pass

        def close(self):
            pass

        @staticmethod
        def write(s, *args, **kwargs):
            print(s)


class CellProgress:
    """What `attnlab run` shows while papermill executes a chapter (`attnlab.notebooks.execute(...,
    progress=...)`): on a terminal, one line naming the code cell that runs (`[cell 3/9, 0:04]
    result = EXP.run(cfg)`, rewritten in place), and below it, as they arrive, the lines the kernel
    writes to stderr: the experiment's tqdm bars, warnings. Not on a terminal (a log file): the
    kernel's stderr only. `stream`: where to write (the terminal's stderr, opened before papermill
    redirects file descriptor 2); `total`: the code cells (set by `execute`)."""

    def __init__(self, stream, total: int = 0, tty: bool | None = None):
        import time

        self.stream, self.total = stream, total
        self.tty = bool(stream.isatty()) if tty is None else tty
        self.count = 0  # code cells started
        self.status = False  # the cell line is the terminal's current line
        self.midline = False  # the kernel's text left the cursor inside a line
        self.started = time.monotonic()

    def _emit(self, text: str) -> None:
        self.stream.write(text)
        self.stream.flush()

    def cell_start(self, cell=None, cell_index=None, **_) -> None:
        """nbclient's on_cell_start hook."""
        import shutil
        import time

        if (cell is None or cell.cell_type != "code" or not cell.source.strip()
                or "attnlab-units" in cell.metadata.get("tags", [])):  # the last, hidden cell of `attnlab run`
            return
        self.count += 1
        if not self.tty:
            return
        lines = [l.strip() for l in cell.source.splitlines()]
        first = next((l for l in lines if l and not l.startswith(("#", "%", "---", ":"))), lines[0])
        seconds = int(time.monotonic() - self.started)
        text = f"[cell {self.count}/{max(self.total, self.count)}, {seconds // 60}:{seconds % 60:02d}] {first}"
        width = max(20, shutil.get_terminal_size().columns - 1)
        self._emit(("\n" if self.midline else "") + "\r\x1b[K" + (text if len(text) <= width else text[:width - 1] + "…"))
        self.status, self.midline = True, False

    def write(self, text: str) -> None:
        """papermill's stderr_file: the kernel's stderr stream, as it arrives."""
        if not text:
            return
        if self.status:
            self._emit("\n")
            self.status = False
        self._emit(text)
        self.midline = not text.endswith(("\n", "\r"))

    def flush(self) -> None:
        self.stream.flush()

    def close(self) -> None:
        """Leave the cursor at the start of a clean line (the cell line erased)."""
        if self.status:
            self._emit("\r\x1b[K")
        elif self.midline:
            self._emit("\n")
        self.status = self.midline = False
