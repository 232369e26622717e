"""Cases for bench/bench_timing.py: kernels long enough (100 µs to ~1.5 ms on a 2-core EPYC) for repeatability to mean
something; the built-in suite's kernels are a few µs."""

from tinygrad import Tensor


def case_matmul256():
    a = Tensor.ones(256, 256).contiguous()
    return a @ Tensor.ones(256, 256).contiguous()


def case_conv():
    x = Tensor.ones(1, 16, 32, 32).contiguous()
    w = Tensor.ones(32, 16, 3, 3).contiguous()
    return x.conv2d(w)


def case_softmax():
    return Tensor.ones(64, 1024).contiguous().softmax(-1)
