"""Placeholder: experiments of paper 004 still to come (see EXPERIMENT_MODULES)."""

EXPERIMENTS: list = []
