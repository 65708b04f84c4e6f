"""The compiler's passes, one per module, run in the order `s2s.program` lists."""
