"""The chapters of paper 003: one module per chapter (slug with underscores), each defining EXPERIMENTS."""
