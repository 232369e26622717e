"""The CI gate's workflows, beside pipeline.py: they extract a working tree and store or time it, which compare/ (that
only compares what is stored) does not do. tree.py: a working tree's kernels against a stored commit, inside a
rolled-back transaction (`tgstore check`); speed.py: both timed on this machine, interleaved (`check --time`)."""
