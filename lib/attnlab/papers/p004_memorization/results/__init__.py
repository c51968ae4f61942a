"""The chapters of paper 004: one module per chapter (slug with underscores), each defining EXPERIMENTS."""
