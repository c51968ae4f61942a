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
