"""Contracts: the data models, errors, settings and file helpers every layer shares. Imports nothing of ours."""
