"""GradBench modules implemented with s2s: objectives in NumPy, derivatives from s2s."""
