"""attnlab: models, exact constructions and experiments of the small-attention-models companion book."""

__version__ = "0.1.0"
