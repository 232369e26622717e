"""The built-in tgstore case suite.

Case file format (the same for user files passed with ``--cases FILE``):

* a plain Python file, loaded by path (``importlib.util.spec_from_file_location``) inside the extraction child,
  so it may only import the standard library and ``tinygrad``;
* every module-level function named ``case_<name>()`` is one case, taken in file order; it takes no arguments and
  returns a ``Tensor`` or a list/tuple of ``Tensor`` (all of them are scheduled together);
* the function's docstring is the case's description.

Cases must work across tinygrad 0.10 ... 0.14, so they only use long-stable Tensor API, build their inputs with
``Tensor.empty`` (no RNG kernels, nothing is ever run) and keep shapes small so rendering stays fast.
"""

from tinygrad import Tensor, dtypes


def case_add():
    """Elementwise add of two 16x16 float tensors."""
    return Tensor.empty(16, 16) + Tensor.empty(16, 16)


def case_mul_add_chain():
    """Fused multiply-add chain: (a*b+c)*2-1."""
    a, b, c = Tensor.empty(64), Tensor.empty(64), Tensor.empty(64)
    return (a * b + c) * 2 - 1


def case_unary():
    """Unary ops fused into one kernel: relu(exp(a) + log(b))."""
    return (Tensor.empty(32).exp() + Tensor.empty(32).log()).relu()


def case_cast():
    """Casts float -> int32 -> float, with an int add in between."""
    return (Tensor.empty(32).cast(dtypes.int32) + 3).cast(dtypes.float32)


def case_where_compare():
    """Comparison feeding a where: (a > b).where(a, b*2)."""
    a, b = Tensor.empty(32), Tensor.empty(32)
    return (a > b).where(a, b * 2)


def case_broadcast():
    """Broadcasting a column against a row: (16,1) + (1,16)."""
    return Tensor.empty(16, 1) + Tensor.empty(1, 16)


def case_reduce_sum_full():
    """Full reduction to a scalar: sum of a 16x16 tensor."""
    return Tensor.empty(16, 16).sum()


def case_reduce_max_axis():
    """Reduction along one axis: max over axis 1 of a 8x32 tensor."""
    return Tensor.empty(8, 32).max(axis=1)


def case_sum_rows():
    """x.sum(1) on an 8x64 float tensor: Svod's worked example (kernel r_8_16_4)."""
    return Tensor.empty(8, 64).sum(1)


def case_matmul():
    """16x16 @ 16x16 matrix multiply."""
    return Tensor.empty(16, 16) @ Tensor.empty(16, 16)


def case_conv2d():
    """2D convolution: (1,4,8,8) input, (8,4,3,3) weights."""
    return Tensor.empty(1, 4, 8, 8).conv2d(Tensor.empty(8, 4, 3, 3))


def case_softmax():
    """Softmax over the last axis of a 4x16 tensor (several reduce kernels)."""
    return Tensor.empty(4, 16).softmax(axis=-1)


def case_layernorm():
    """Layernorm-ish: normalize over the last axis, then scale and shift."""
    x = Tensor.empty(4, 16)
    return x.layernorm() * Tensor.empty(16) + Tensor.empty(16)


def case_pooling():
    """2x2 max pool and avg pool of a (1,2,8,8) tensor, scheduled together."""
    x = Tensor.empty(1, 2, 8, 8)
    return [x.max_pool2d(), x.avg_pool2d()]


def case_movement():
    """Movement ops made real: reshape, permute, pad and shrink, then contiguous."""
    x = Tensor.empty(16, 16)
    return x.reshape(4, 4, 16).permute(2, 0, 1).pad(((0, 0), (1, 1), (0, 0))).shrink(((0, 8), None, None)).contiguous()
