"""Placeholder: experiments of paper 002 still to come (see EXPERIMENT_MODULES)."""

EXPERIMENTS: list = []
