"""The chapters of paper 000: one module per chapter (slug with underscores), each defining EXPERIMENTS."""
