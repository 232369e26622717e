"""The built-in tgstore case suite.

Case file format (the same for user files passed with ``--cases FILE``):

* a plain Python file, loaded by path (``importlib.util.spec_from_file_location``) inside the extraction child,
  so it may only import the standard library and ``tinygrad``;
* every module-level function named ``case_<name>()`` is one case, taken in file order; it takes no arguments and
  returns a ``Tensor`` or a list/tuple of ``Tensor`` (all of them are scheduled together);
* the function's docstring is the case's description;
* a case may declare the Context it is scheduled and lowered under: ``case_x.context = {"NOOPT": 1}`` (ContextVar
  names and values); it is stored with each kernel, and a ContextVar the era lacks makes the case unsupported.

Cases must work across tinygrad 0.10 ... 0.14, so they only use long-stable Tensor API, build their inputs with
``Tensor.empty`` (``Tensor.rand``'s kernels are scheduled like any other; nothing is ever run) and keep shapes small
so rendering stays fast. A case that
needs what an older tinygrad lacks fails in its own code (this file) with AttributeError, ImportError or
NotImplementedError, found by feature (hasattr, import, a probe), never by version number: it is recorded as
unsupported in that era, not as an error.
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


# ---- beyond the basics: what tinygrad users run (all small; inputs are Tensor.empty) ----


def _need(name: str) -> None:
    """Raise NotImplementedError here, in the case file, when this tinygrad's Tensor lacks a method."""
    if not hasattr(Tensor, name):
        raise NotImplementedError(f"no Tensor.{name} in this tinygrad")


def case_sdpa_causal():
    """Tensor.scaled_dot_product_attention with is_causal=True: (1,2,8,16) q, k, v."""
    q, k, v = Tensor.empty(1, 2, 8, 16), Tensor.empty(1, 2, 8, 16), Tensor.empty(1, 2, 8, 16)
    return q.scaled_dot_product_attention(k, v, is_causal=True)


def case_attention_manual():
    """Attention spelled out: softmax(q @ k^T / sqrt(d) + causal mask) @ v, (2,8,16) per head."""
    q, k, v = Tensor.empty(2, 8, 16), Tensor.empty(2, 8, 16), Tensor.empty(2, 8, 16)
    mask = Tensor.ones(8, 8, dtype=dtypes.bool).tril().where(0.0, float("-inf"))
    return ((q @ k.transpose(-1, -2)) * (16 ** -0.5) + mask).softmax(-1) @ v


def case_transformer_block():
    """Pre-norm transformer block (dim 16, 2 heads, seq 8): layernorm, causal SDPA, residual, layernorm, GELU MLP."""
    bs, seq, dim, heads = 1, 8, 16, 2
    x = Tensor.empty(bs, seq, dim)
    wqkv, wo = Tensor.empty(dim, 3 * dim), Tensor.empty(dim, dim)
    w1, w2 = Tensor.empty(dim, 2 * dim), Tensor.empty(2 * dim, dim)
    g1, b1, g2, b2 = Tensor.empty(dim), Tensor.empty(dim), Tensor.empty(dim), Tensor.empty(dim)
    h = x.layernorm() * g1 + b1
    q, k, v = [t.reshape(bs, seq, heads, dim // heads).transpose(1, 2) for t in (h @ wqkv).chunk(3, dim=-1)]
    attn = q.scaled_dot_product_attention(k, v, is_causal=True).transpose(1, 2).reshape(bs, seq, dim)
    x = x + attn @ wo
    return x + ((x.layernorm() * g2 + b2) @ w1).gelu() @ w2


def case_layernorm_affine():
    """Tensor.layernorm over the last axis with eps, then elementwise affine (weight, bias) on a (2,8,32) input."""
    return Tensor.empty(2, 8, 32).layernorm(axis=-1, eps=1e-5) * Tensor.empty(32) + Tensor.empty(32)


def case_rmsnorm():
    """RMSNorm: x * rsqrt(mean(x^2) + eps) * weight over the last axis of a (2,8,32) input."""
    x = Tensor.empty(2, 8, 32)
    return x * (x.square().mean(-1, keepdim=True) + 1e-6).rsqrt() * Tensor.empty(32)


def case_mlp_gelu():
    """GELU MLP: linear(32->128) + bias, gelu, linear(128->32) + bias on (4,32)."""
    x = Tensor.empty(4, 32)
    return x.linear(Tensor.empty(32, 128), Tensor.empty(128)).gelu().linear(Tensor.empty(128, 32), Tensor.empty(32))


def case_mlp_swiglu():
    """SwiGLU MLP (LLaMA style): (silu(x @ w1) * (x @ w3)) @ w2 on (4,32) with hidden 64."""
    x = Tensor.empty(4, 32)
    return ((x @ Tensor.empty(32, 64)).silu() * (x @ Tensor.empty(32, 64))) @ Tensor.empty(64, 32)


def case_embedding_onehot():
    """Embedding lookup without nn: int32 token ids (2,8) compared against arange(vocab), then @ a (64,16) table."""
    idx = Tensor.empty(2, 8, dtype=dtypes.int32)
    onehot = (idx.unsqueeze(-1) == Tensor.arange(64)).cast(dtypes.float32)
    return onehot @ Tensor.empty(64, 16)


def case_gather():
    """Tensor.gather along dim 1 of a (4,16) float tensor with a (4,5) int32 index tensor."""
    return Tensor.empty(4, 16).gather(1, Tensor.empty(4, 5, dtype=dtypes.int32))


def case_argmax():
    """argmax over the last axis of a (4,32) tensor, and argmin over axis 0 (both int results)."""
    x = Tensor.empty(4, 32)
    return [x.argmax(axis=-1), x.argmin(axis=0)]


def case_topk():
    """Tensor.topk(3) over the last axis of a (2,8) tensor: values and indices."""
    values, indices = Tensor.topk(Tensor.empty(2, 8), 3)
    return [values, indices]


def case_sort():
    """Tensor.sort (descending) over the last axis of a (2,8) tensor: values and indices."""
    values, indices = Tensor.sort(Tensor.empty(2, 8), dim=-1, descending=True)
    return [values, indices]


def case_cumsum():
    """cumsum along axis 1 of a (4,32) tensor."""
    return Tensor.empty(4, 32).cumsum(axis=1)


def case_conv_transpose2d():
    """conv_transpose2d with stride 2 (upsampling): (1,4,4,4) input, (4,2,3,3) weights, bias; (1,2,9,9) out."""
    x, w = Tensor.empty(1, 4, 4, 4), Tensor.empty(4, 2, 3, 3)
    return x.conv_transpose2d(w, Tensor.empty(2), stride=2)


def case_batchnorm():
    """Tensor.batchnorm (inference form) with weight, bias, running mean and invstd over channels of (2,4,8,8)."""
    x = Tensor.empty(2, 4, 8, 8)
    return x.batchnorm(Tensor.empty(4), Tensor.empty(4), Tensor.empty(4), Tensor.empty(4).rsqrt()).relu()


def case_batchnorm_train():
    """Training-mode batchnorm statistics: batch mean and invstd over (N,H,W), then Tensor.batchnorm."""
    x = Tensor.empty(2, 4, 8, 8)
    mean = x.mean(axis=(0, 2, 3))
    invstd = (x - mean.reshape(1, 4, 1, 1)).square().mean(axis=(0, 2, 3)).add(1e-5).rsqrt()
    return x.batchnorm(Tensor.empty(4), Tensor.empty(4), mean, invstd)


def case_pooling_variants():
    """Pooling variants on (1,2,9,9): 3x3 max pool stride 2, 3x3 avg pool stride 1 with padding, dilated max pool."""
    x = Tensor.empty(1, 2, 9, 9)
    return [x.max_pool2d(kernel_size=(3, 3), stride=2), x.avg_pool2d(kernel_size=(3, 3), stride=1, padding=1),
            x.max_pool2d(kernel_size=(2, 2), stride=1, dilation=2)]


def case_global_avg_pool():
    """Global average pool over H, W of (2,8,4,4): mean(axis=(2,3))."""
    return Tensor.empty(2, 8, 4, 4).mean(axis=(2, 3))


def case_half():
    """float16: half matmul (8x16 @ 16x8), bias add in half, cast back to float32."""
    a, b = Tensor.empty(8, 16, dtype=dtypes.half), Tensor.empty(16, 8, dtype=dtypes.half)
    return ((a @ b) + Tensor.empty(8, dtype=dtypes.float16)).cast(dtypes.float32)


def case_bfloat16():
    """bfloat16: elementwise mul-add and a sum in bfloat16, cast to float32."""
    if not hasattr(dtypes, "bfloat16"):
        raise NotImplementedError("no bfloat16 in this tinygrad")
    a, b = Tensor.empty(16, 16, dtype=dtypes.bfloat16), Tensor.empty(16, 16, dtype=dtypes.bfloat16)
    return (a * b + 1).sum(axis=1).cast(dtypes.float32)


def case_int8():
    """int8 tensors: add in int8, widen to int32 and reduce, plus a uint8 -> float dequantize-like scale."""
    a, b = Tensor.empty(32, dtype=dtypes.int8), Tensor.empty(32, dtype=dtypes.int8)
    q = Tensor.empty(32, dtype=dtypes.uint8)
    return [(a + b).cast(dtypes.int32).sum(), (q.cast(dtypes.float32) - 128) * 0.05]


def _symbolic_var(name: str, hi: int):
    """An unbound Variable for a symbolic shape; NotImplementedError (here) where this tinygrad cannot schedule one.

    Bound variables (``.bind(n)``) give the schedule variable values, which tgstore's scheduler (``Tensor.schedule``
    / ``Tensor.schedule_linear``) rejects in every era; unbound ones schedule from 0.11 on. In 0.10 a ShapeTracker
    view asserts every variable in it is bound, so the case is unsupported there: probed, not guessed by version.
    """
    from tinygrad import Variable
    v = Variable(name, 1, hi)
    try:
        from tinygrad.shape.view import View  # ShapeTracker era (<= 0.11); later eras keep shapes as UOps
    except ImportError:
        return v
    try:
        View.create((v,)).unbind()
    except AssertionError:
        raise NotImplementedError("this tinygrad's views cannot hold an unbound Variable") from None
    return v


def case_symbolic_shrink():
    """Symbolic shape: a (16,16) tensor shrunk to (n,16) with an unbound Variable('n', 1, 16), then doubled."""
    n = _symbolic_var("n", 16)
    return (Tensor.empty(16, 16).shrink(((0, n), None)) * 2).contiguous()


def case_symbolic_reduce():
    """Symbolic reduce: the first n (a Variable, 1..16) rows of a (16,8) tensor summed over the row axis."""
    n = _symbolic_var("n", 16)
    return Tensor.empty(16, 8).shrink(((0, n), None)).sum(axis=0)


def case_multi_output():
    """Several outputs sharing inputs, scheduled together: a+b, a*b, (a-b).sum(), max(a,b)."""
    a, b = Tensor.empty(16, 16), Tensor.empty(16, 16)
    return [a + b, a * b, (a - b).sum(), a.maximum(b)]


def case_assign():
    """In-place update: a.assign(a + 1) on a 16-element buffer."""
    a = Tensor.empty(16)
    return a.assign(a + 1)


def case_assign_slice_like():
    """Assign of a computed value into an existing (8,8) buffer: w.assign(w - lr * g), an SGD step."""
    w, g = Tensor.empty(8, 8), Tensor.empty(8, 8)
    return w.assign(w - 0.01 * g)


def case_log_softmax():
    """log_softmax over the last axis of (4,32), and logsumexp."""
    x = Tensor.empty(4, 32)
    return [x.log_softmax(-1), x.logsumexp(-1)]


def case_cross_entropy():
    """Cross-entropy loss: sparse_categorical_crossentropy of (4,10) logits against int32 labels (4,)."""
    return Tensor.empty(4, 10).sparse_categorical_crossentropy(Tensor.empty(4, dtype=dtypes.int32))


def case_mean_var_std():
    """Statistics reductions over axis 1 of (4,32): mean, var, std (with Bessel correction)."""
    x = Tensor.empty(4, 32)
    return [x.mean(axis=1), x.var(axis=1), x.std(axis=1)]


def case_clip_max_min():
    """clip(-1, 1), elementwise maximum and minimum of two (32,) tensors, combined."""
    a, b = Tensor.empty(32), Tensor.empty(32)
    return a.clip(-1, 1) + a.maximum(b) * b.minimum(0.5)


def case_activations():
    """sigmoid, tanh, silu, gelu, leaky_relu, softplus and elu of one (64,) input, summed into one kernel."""
    x = Tensor.empty(64)
    leaky_relu = getattr(Tensor, "leaky_relu", None) or Tensor.leakyrelu  # renamed after 0.10
    return x.sigmoid() + x.tanh() + x.silu() + x.gelu() + leaky_relu(x, 0.1) + x.softplus() + x.elu()


def case_transcendental():
    """sin, cos, sqrt, exp2, log2, reciprocal on (64,): the ops tinygrad rewrites into polynomials."""
    x = Tensor.empty(64)
    return x.sin() + x.cos() * x.sqrt() + x.exp2() - x.log2() + x.reciprocal()


def case_int_divmod():
    """int32 floor division and modulo by constants and by a tensor, on (32,) tensors."""
    _need("__mod__")
    a, b = Tensor.empty(32, dtype=dtypes.int32), Tensor.empty(32, dtype=dtypes.int32)
    return [a // 3, a % 7, a // b]


def case_int_bitwise():
    """uint32 shifts (tinygrad shifts unsigned ints) and int32 bitwise and/or/xor, on (32,) tensors."""
    u = Tensor.empty(32, dtype=dtypes.uint32)
    a, b = Tensor.empty(32, dtype=dtypes.int32), Tensor.empty(32, dtype=dtypes.int32)
    return [(u << 2) + (u >> 1), (a & b) | (a ^ 5)]


def case_where_mask():
    """where with masks: causal mask fill with -inf, then a boolean and of two comparisons selecting between inputs."""
    x, y = Tensor.empty(8, 8), Tensor.empty(8, 8)
    causal = Tensor.ones(8, 8, dtype=dtypes.bool).tril()
    both = (x > 0) & (y < 1)
    return [causal.where(x, float("-inf")), both.where(x, y)]


def case_expand_reduce():
    """Expand then reduce: a (8,1) column expanded to (8,16), multiplied by a row and summed over axis 0."""
    col = Tensor.empty(8, 1).expand(8, 16)
    return (col * Tensor.empty(1, 16)).sum(axis=0)


def case_batched_matmul():
    """Batched matmul with transposes: (2,3,8,16) @ (2,3,8,16).transpose(-1,-2), then permuted."""
    a, b = Tensor.empty(2, 3, 8, 16), Tensor.empty(2, 3, 8, 16)
    return (a @ b.transpose(-1, -2)).permute(0, 2, 1, 3).contiguous()


def case_matvec():
    """Matrix-vector product (GEMV) of a (64,128) matrix with a 128 vector, with bias."""
    return Tensor.empty(64, 128) @ Tensor.empty(128) + Tensor.empty(64)


def case_einsum():
    """Tensor.einsum('bij,bjk->bik') on (2,4,8) and (2,8,4)."""
    return Tensor.einsum("bij,bjk->bik", Tensor.empty(2, 4, 8), Tensor.empty(2, 8, 4))


def case_conv2d_padded():
    """conv2d with padding 1 and bias: (1,4,8,8) input, (8,4,3,3) weights, keeping 8x8."""
    return Tensor.empty(1, 4, 8, 8).conv2d(Tensor.empty(8, 4, 3, 3), Tensor.empty(8), padding=1)


def case_conv2d_strided_dilated():
    """conv2d with stride 2 and dilation 2: (1,4,12,12) input, (8,4,3,3) weights."""
    return Tensor.empty(1, 4, 12, 12).conv2d(Tensor.empty(8, 4, 3, 3), stride=2, dilation=2)


def case_conv2d_depthwise():
    """Depthwise conv2d (groups=8, padding 1) on (1,8,8,8), then a 1x1 pointwise conv to 16 channels."""
    x = Tensor.empty(1, 8, 8, 8).conv2d(Tensor.empty(8, 1, 3, 3), groups=8, padding=1)
    return x.conv2d(Tensor.empty(16, 8, 1, 1))


def case_conv1d():
    """1D convolution through conv2d's general path: (1,4,16) input, (8,4,3) weights, padding 1."""
    return Tensor.empty(1, 4, 16).conv2d(Tensor.empty(8, 4, 3), padding=1)


def case_interpolate():
    """Tensor.interpolate: (1,2,4,4) resized to 8x8, linear (align_corners=False) and nearest."""
    x = Tensor.empty(1, 2, 4, 4)
    return [x.interpolate((8, 8), mode="linear"), x.interpolate((8, 8), mode="nearest")]


def case_one_hot():
    """Tensor.one_hot of int32 labels (8,) into 10 classes, cast to int32 (0.14 returns a weak int)."""
    return Tensor.empty(8, dtype=dtypes.int32).one_hot(10).cast(dtypes.int32)


def case_triu_tril():
    """triu and tril (diagonal 1 and -1) masks of an (8,8) tensor."""
    x = Tensor.empty(8, 8)
    return [x.triu(1), x.tril(-1)]


def case_cat_stack():
    """cat along axis 1 and stack along a new axis 0 of (4,8) tensors."""
    a, b = Tensor.empty(4, 8), Tensor.empty(4, 8)
    return [a.cat(b, dim=1), Tensor.stack(a, b, dim=0)]


def case_flip_repeat():
    """flip along axis 0 and repeat (2,3) of a (4,8) tensor, both contiguous."""
    x = Tensor.empty(4, 8)
    return [x.flip(0).contiguous(), x.repeat(2, 3).contiguous()]


def case_arange_const():
    """Tensors made without buffers: arange(16) * 2 + ones(16), and full((4,4), 3.0) plus an eye(4)."""
    return [Tensor.arange(16) * 2 + Tensor.ones(16), Tensor.full((4, 4), 3.0) + Tensor.eye(4)]


def case_reduce_mixed():
    """Other reductions over axis 1 of (4,16): prod, min, and any/all of a comparison."""
    x = Tensor.empty(4, 16)
    return [x.prod(axis=1), x.min(axis=1), (x > 0).any(axis=1), (x > 0).all(axis=1)]

def case_matmul_noopt():
    """16x16 @ 16x16 matrix multiply lowered under Context(NOOPT=1): the kernel without optimizations."""
    return Tensor.empty(16, 16) @ Tensor.empty(16, 16)


case_matmul_noopt.context = {"NOOPT": 1}


def case_sum_rows_noopt():
    """x.sum(1) on an 8x64 float tensor under Context(NOOPT=1)."""
    return Tensor.empty(8, 64).sum(1)


case_sum_rows_noopt.context = {"NOOPT": 1}


def case_float64_int64():
    """float64 and int64 arithmetic: (a.double()*2).cast(int64) + b."""
    return (Tensor.empty(16, dtype=dtypes.float64) * 2).cast(dtypes.int64) + Tensor.empty(16, dtype=dtypes.int64)


def case_int16():
    """int16 elementwise with a shift-like multiply: a*4 + b."""
    return Tensor.empty(16, dtype=dtypes.int16) * 4 + Tensor.empty(16, dtype=dtypes.int16)


def case_mlp_backward():
    """Gradients of a 2-layer MLP's summed output w.r.t. both weights (the backward kernels)."""
    x = Tensor.empty(4, 8)
    w1, w2 = Tensor.empty(8, 16), Tensor.empty(16, 4)
    w1.requires_grad = w2.requires_grad = True
    x.matmul(w1).relu().matmul(w2).sum().backward()
    return [w1.grad, w2.grad]

def case_conv2d_noopt():
    """2D convolution (1,4,8,8) * (8,4,3,3) under Context(NOOPT=1)."""
    return Tensor.empty(1, 4, 8, 8).conv2d(Tensor.empty(8, 4, 3, 3))


case_conv2d_noopt.context = {"NOOPT": 1}


def case_softmax_noopt():
    """Softmax over the last axis of a 4x16 tensor under Context(NOOPT=1)."""
    return Tensor.empty(4, 16).softmax(axis=-1)


case_softmax_noopt.context = {"NOOPT": 1}


def case_matmul_nolocals():
    """32x32 @ 32x32 under Context(NOLOCALS=1): GPU renderers get no local (workgroup) dimensions."""
    return Tensor.empty(32, 32) @ Tensor.empty(32, 32)


case_matmul_nolocals.context = {"NOLOCALS": 1}


def case_exp_sin_transcendental():
    """exp and sin lowered under Context(TRANSCENDENTAL=2): tinygrad's own polynomial approximations on every
    renderer."""
    return Tensor.empty(32).exp() + Tensor.empty(32).sin()


case_exp_sin_transcendental.context = {"TRANSCENDENTAL": 2}


def case_matmul_half_tc():
    """16x16x16 half matmul: GPU renderers with tensor cores (CUDA, PTX, Metal, HIP) emit WMMA without hardware."""
    return Tensor.empty(16, 16, dtype=dtypes.half) @ Tensor.empty(16, 16, dtype=dtypes.half)


def case_reduce_split_large():
    """Sum of 65536 floats: tinygrad splits the large reduction into two kernels."""
    return Tensor.empty(65536).sum()


def case_max_split_large():
    """Max of 32768 floats (a split reduction with another reduce op)."""
    return Tensor.empty(32768).max()


def case_winograd_conv():
    """3x3 conv under Context(WINO=1): winograd's transformed kernels (where the era has WINO)."""
    return Tensor.empty(1, 1, 6, 6).conv2d(Tensor.empty(2, 1, 3, 3))


case_winograd_conv.context = {"WINO": 1}


def case_conv_backward():
    """Gradients of a conv2d + relu + sum w.r.t. input and weights."""
    x, w = Tensor.empty(1, 1, 5, 5), Tensor.empty(2, 1, 3, 3)
    x.requires_grad = w.requires_grad = True
    x.conv2d(w).relu().sum().backward()
    return [x.grad, w.grad]


def case_rand():
    """Tensor.rand: the threefry random-number kernels."""
    return Tensor.rand(16, 16) * 2 - 1


def case_setitem():
    """Setitem of a slice: t[2:4] = v on an 8x8 tensor (unsupported where setitem realizes at once)."""
    import inspect

    if ".realize()" in inspect.getsource(Tensor.__setitem__):
        raise NotImplementedError("Tensor.__setitem__ realizes (runs kernels) in this tinygrad")
    t = Tensor.empty(8, 8).contiguous()
    t[2:4] = Tensor.empty(2, 8)
    return t


def case_scatter():
    """Tensor.scatter along dim 1 with an int32 index."""
    return Tensor.empty(4, 8).scatter(1, Tensor.empty(4, 3, dtype=dtypes.int32), Tensor.empty(4, 3))


def case_fp8():
    """fp8 (e4m3) cast round trip where the era has it."""
    fp8 = dtypes.fp8e4m3
    return Tensor.empty(16).cast(fp8).cast(dtypes.float) * 2


def case_int64_reduce():
    """Sum of an int64 tensor along an axis."""
    return Tensor.empty(8, 32, dtype=dtypes.int64).sum(1)


def case_float64_mean():
    """Mean of a float64 tensor along an axis."""
    return Tensor.empty(8, 32, dtype=dtypes.float64).mean(1)


def case_uint8_normalize():
    """uint8 image bytes to normalized float: (x / 255 - 0.5) * 2."""
    return (Tensor.empty(3, 8, 8, dtype=dtypes.uint8).cast(dtypes.float) / 255 - 0.5) * 2


def case_multi_output_reduce():
    """Sum and max of the same rows scheduled together."""
    a = Tensor.empty(8, 32)
    return [a.sum(1), a.max(1)]


def case_bool_logic():
    """Boolean logic on comparisons: ((a > 0) & (b < 1)) | (a == b)."""
    a, b = Tensor.empty(32), Tensor.empty(32)
    return ((a > 0) & (b < 1)) | (a == b)


def case_embedding_backward():
    """Gradient of a one-hot embedding lookup w.r.t. the table (a scatter-add shaped kernel)."""
    table = Tensor.empty(16, 4)
    table.requires_grad = True
    idx = Tensor.empty(6, dtype=dtypes.int32)
    (idx.unsqueeze(-1) == Tensor.arange(16)).float().matmul(table).sum().backward()
    return table.grad


def case_pad_reflect_like():
    """Padding on both sides of a 2D tensor followed by an elementwise op."""
    return Tensor.empty(8, 8).pad(((1, 1), (2, 2))) * 3


def case_custom_addmul():
    """A real multi-output kernel: Tensor.custom_kernel writes a+b and a*b in one kernel (two STOREs, one SINK).
    Feature-detected: an era without Tensor.custom_kernel or UOp.group records the case as unsupported."""
    if not hasattr(Tensor, "custom_kernel"):
        raise NotImplementedError("this tinygrad has no Tensor.custom_kernel")
    from tinygrad.uop.ops import KernelInfo, UOp
    if not hasattr(UOp, "group"):
        raise NotImplementedError("this tinygrad's UOp has no group(): no multi-store custom kernel")

    def addmul(c, d, a, b):
        c, d, a, b = c.flatten(), d.flatten(), a.flatten(), b.flatten()
        i = UOp.range(c.numel(), 0)
        return UOp.group(c[i].store(a[i] + b[i]), d[i].store(a[i] * b[i])).end(i).sink(
            arg=KernelInfo(name=f"custom_addmul_{c.numel()}"))

    a, b = Tensor.empty(16), Tensor.empty(16)
    return list(Tensor.custom_kernel(Tensor.empty(16), Tensor.empty(16), a, b, fxn=addmul)[:2])
