"""A small program for `tgstore capture`: three distinct kernels (a fill, an elementwise op, a reduce);
the elementwise one runs twice and is stored once."""

from tinygrad import Tensor


def main() -> None:
    a = Tensor.ones(16).contiguous().realize()
    b = (a * 2 + 1).realize()
    total = b.sum().realize()
    again = (a * 2 + 1).realize()
    print("total", total.item(), again.shape)


main()
