"""Analyses of normalised functions: types (from Numba), activity, variable scopes."""
