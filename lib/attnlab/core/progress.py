"""Progress bars: tqdm.auto (a widget in Jupyter when ipywidgets is installed, text otherwise)."""

import warnings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # "IProgress not found": we deliberately render text bars
    from tqdm.auto import tqdm  # noqa: F401
