"""The models tgstore case suite: whole (small) networks, forward pass only.

Case file format (the same as the built-in suite's, see ``tgstore/cases/builtin.py``):

* a plain Python file, loaded by path (``importlib.util.spec_from_file_location``) inside the extraction child,
  so it may only import the standard library and ``tinygrad``;
* every module-level function named ``case_<name>()`` is one case, taken in file order; it takes no arguments and
  returns a ``Tensor`` or a list/tuple of ``Tensor`` (all of them are scheduled together);
* the function's docstring is the case's description.

Cases must work across tinygrad 0.10 ... 0.14, so they only use long-stable Tensor API (no ``tinygrad.nn``): every
weight is a ``Tensor.empty`` made inside the case (no weights are loaded, no RNG kernels, nothing is ever run).
Models are real topologies at small sizes, so a whole network schedules and renders in seconds.
"""

from tinygrad import Tensor, dtypes

# ---- GPT-2 ----


def _linear(x: Tensor, din: int, dout: int) -> Tensor:
    """x @ W + b with a (din, dout) weight and a (dout,) bias, as GPT-2's Conv1D / Linear layers."""
    return x.linear(Tensor.empty(din, dout), Tensor.empty(dout))


def _layernorm(x: Tensor, dim: int) -> Tensor:
    return x.layernorm(eps=1e-5) * Tensor.empty(dim) + Tensor.empty(dim)


def _gpt2_block(x: Tensor, dim: int, heads: int) -> Tensor:
    bs, seq = x.shape[0], x.shape[1]
    q, k, v = [t.reshape(bs, seq, heads, dim // heads).transpose(1, 2)
               for t in _linear(_layernorm(x, dim), dim, 3 * dim).chunk(3, dim=-1)]
    attn = q.scaled_dot_product_attention(k, v, is_causal=True).transpose(1, 2).reshape(bs, seq, dim)
    x = x + _linear(attn, dim, dim)
    return x + _linear(_linear(_layernorm(x, dim), dim, 4 * dim).gelu(), 4 * dim, dim)


def case_gpt2():
    """GPT-2 forward (2 layers, dim 64, 4 heads, vocab 256, context 16, batch 1) from token ids to logits."""
    # token + position embeddings, pre-norm blocks (layernorm, causal attention, GELU MLP, residuals),
    # final layernorm, logits by the tied token embedding
    layers, dim, heads, vocab, ctx, bs = 2, 64, 4, 256, 16, 1
    tokens = Tensor.empty(bs, ctx, dtype=dtypes.int32)
    wte, wpe = Tensor.empty(vocab, dim), Tensor.empty(ctx, dim)
    # token embedding as nn.Embedding does it: compare the ids with arange(vocab), then a matmul with the table
    tok_emb = (tokens.unsqueeze(-1) == Tensor.arange(vocab)).cast(dtypes.float32) @ wte
    pos_emb = (Tensor.arange(ctx).unsqueeze(-1) == Tensor.arange(ctx)).cast(dtypes.float32) @ wpe
    x = tok_emb + pos_emb
    for _ in range(layers):
        x = _gpt2_block(x, dim, heads)
    return _layernorm(x, dim) @ wte.T


# ---- ResNet-18 ----


def _conv_bn(x: Tensor, cin: int, cout: int, k: int, stride: int = 1, relu: bool = True) -> Tensor:
    """A bias-free k x k convolution (padding k//2), inference batchnorm (running mean and invstd), optional relu."""
    x = x.conv2d(Tensor.empty(cout, cin, k, k), stride=stride, padding=k // 2)
    x = x.batchnorm(Tensor.empty(cout), Tensor.empty(cout), Tensor.empty(cout), Tensor.empty(cout))
    return x.relu() if relu else x


def _basic_block(x: Tensor, cin: int, cout: int, stride: int) -> Tensor:
    out = _conv_bn(_conv_bn(x, cin, cout, 3, stride), cout, cout, 3, relu=False)
    shortcut = _conv_bn(x, cin, cout, 1, stride, relu=False) if stride != 1 or cin != cout else x
    return (out + shortcut).relu()


def case_resnet18():
    """ResNet-18 forward on a (1,3,32,32) image, with inference batchnorm, to 1000 class logits."""
    # 7x7/2 conv + bn + relu, 3x3/2 max pool, 4 stages of 2 BasicBlocks (64/128/256/512 channels, 1x1 downsample
    # convs where the shape changes), global average pool, fc
    x = _conv_bn(Tensor.empty(1, 3, 32, 32), 3, 64, 7, stride=2)
    x = x.pad((1, 1, 1, 1), value=float("-inf")).max_pool2d(kernel_size=(3, 3), stride=2)
    cin = 64
    for cout, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        x = _basic_block(x, cin, cout, stride)
        x = _basic_block(x, cout, cout, 1)
        cin = cout
    return x.mean(axis=(2, 3)).linear(Tensor.empty(512, 1000), Tensor.empty(1000))
