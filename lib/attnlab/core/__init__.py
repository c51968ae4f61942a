"""Paper-agnostic machinery: attention, replica-batched training, presets, result store, claims, plots."""
