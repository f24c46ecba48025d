"""Memory-traffic helpers for kernels whose output is larger than a core's cache.

A kernel that fills a large, mostly zero output (Algorithm 2's Gamma: n^3 doubles, 681 KB
for 44 DoF) spends most of its time zeroing it: every cache line written by an ordinary
store is first read from memory (read-for-ownership), then written back, twice the output's
size in memory traffic.  Non-temporal ("streaming") stores write whole lines straight to
memory, without reading them and without evicting what the cache holds.

* :func:`stream_zeros` zeroes a C-contiguous array: the whole 64-byte lines inside it by
  non-temporal stores, the partial lines at its two ends by ordinary stores.  It ends with
  :func:`store_fence`, which orders the streaming stores before every later memory access
  (and so before another thread reads the array).

These are Numba intrinsics (LLVM's ``!nontemporal`` store metadata and a store fence):
LLVM lowers them on every target (x86: ``vmovntpd``, ``sfence``); a target without
streaming stores makes ordinary ones.  Their results are
exactly those of ordinary stores: only the traffic differs.  They take C-contiguous arrays
only (anything else is a typing error) and index them by flat position.
"""

import platform

from llvmlite import ir  # Numba's LLVM binding, installed with it
from numba.core import cgutils, types
from numba.extending import intrinsic

from .spatial import kernel

LINE = 8  # float64 entries per 64-byte cache line
_X86 = platform.machine().lower() in ("x86_64", "amd64", "i386", "i686", "x86")
_V4 = ir.VectorType(ir.DoubleType(), 4)


def _c_float64(arr) -> bool:
    return isinstance(arr, types.Array) and arr.dtype == types.float64 and arr.layout == "C"


def _element_pointer(context, builder, arr_type, arr, index):
    ary = context.make_array(arr_type)(context, builder, arr)
    return builder.gep(ary.data, [index])


@intrinsic
def data_address(typingctx, arr):
    """The address of arr's first entry, as an integer."""
    if not _c_float64(arr):
        return None

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        return builder.ptrtoint(ary.data, ir.IntType(64))

    return types.int64(arr), codegen


@intrinsic
def store_flat(typingctx, arr, index, value):
    """arr.flat[index] = value (an ordinary store)."""
    if not _c_float64(arr):
        return None

    def codegen(context, builder, sig, args):
        value = context.cast(builder, args[2], sig.args[2], types.float64)
        builder.store(value, _element_pointer(context, builder, sig.args[0], args[0], args[1]))
        return context.get_dummy_value()

    return types.void(arr, types.intp, types.float64), codegen


@intrinsic
def stream_zero_line(typingctx, arr, index):
    """arr.flat[index:index + 8] = 0 by two non-temporal 32-byte stores.

    The caller guarantees that &arr.flat[index] is 64-byte aligned and the 8 entries lie
    inside arr (an unaligned streaming store faults)."""
    if not _c_float64(arr):
        return None

    def codegen(context, builder, sig, args):
        nontemporal = builder.module.add_metadata([ir.Constant(ir.IntType(32), 1)])
        for half in (0, 4):
            index = builder.add(args[1], ir.Constant(args[1].type, half))
            ptr = _element_pointer(context, builder, sig.args[0], args[0], index)
            store = builder.store(ir.Constant(_V4, None), builder.bitcast(ptr, _V4.as_pointer()))
            store.align = 32
            store.set_metadata("nontemporal", nontemporal)
        return context.get_dummy_value()

    return types.void(arr, types.intp), codegen


@intrinsic
def store_fence(typingctx):
    """Every store before this one, streaming stores included, is visible (to every thread)
    before any store after it.

    x86: ``sfence``.  Not LLVM's ``fence seq_cst``, which x86 lowers to a locked
    instruction: that orders ordinary stores, but streaming stores only on some processors
    (Linux's wmb() is an sfence for the same reason).  Elsewhere: ``fence seq_cst``
    (AArch64: ``dmb ish``, which orders its non-temporal stores too).
    """

    def codegen(context, builder, sig, args):
        if _X86:
            fnty = ir.FunctionType(ir.VoidType(), [])
            builder.call(
                cgutils.get_or_insert_function(builder.module, fnty, "llvm.x86.sse.sfence"), []
            )
        else:
            builder.fence("seq_cst")
        return context.get_dummy_value()

    return types.void(), codegen


@kernel
def stream_zeros(x):
    """x[...] = 0 for a C-contiguous float64 array: whole lines by streaming stores, then
    :func:`store_fence`.  An array not 8-byte aligned is zeroed by ordinary stores."""
    size = x.size
    address = data_address(x)
    first = size  # not 8-byte aligned: no entry begins a line, ordinary stores throughout
    if address % 8 == 0:
        first = min(size, (LINE - (address // 8) % LINE) % LINE)  # the first entry on a line
    stop = first + (size - first) // LINE * LINE
    for i in range(first):
        store_flat(x, i, 0.0)
    for i in range(first, stop, LINE):
        stream_zero_line(x, i)
    for i in range(stop, size):
        store_flat(x, i, 0.0)
    store_fence()
