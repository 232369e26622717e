"""Comparing what tinygrad (or Svod) produced: text with kernel names masked, graph identity and structural diffs
with ids ignored. Used by diff, bisect, parity and the web pages."""
