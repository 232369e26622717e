"""Limits on what kernel timings are compared, in a module of their own: the analysis (`tgstore regressions`) reads
them without importing the store's ORM models (1 s of the CLI's start on the shared machine)."""

MIN_KERNEL_NS = 10_000  # kernels faster than this at the base are launch overhead and noise, not compared alone
