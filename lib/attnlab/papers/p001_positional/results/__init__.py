"""The chapters of paper 001: one module per chapter (slug with underscores), each defining EXPERIMENTS."""
