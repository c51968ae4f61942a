"""The chapters of paper 002: one module per chapter (slug with underscores), each defining EXPERIMENTS."""
