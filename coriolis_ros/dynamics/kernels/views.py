"""Views of a packed array under a new shape, without Numba's general reshape.

The compiled entry points keep their arrays in one packed workspace and carve views from it
on every call.  Numba's ``reshape`` handles any layout: it calls a C helper that works out the
strides (about 20 ns a view, more than the arithmetic that some of these views serve).  A
C-contiguous array needs none of that: :func:`shaped` gives the C-contiguous view of the same
data under another shape, its strides the running products of the shape, after checking that
the sizes agree (a mismatch raises ValueError: an internal error, the layouts are computed
once).  The view shares the array's data; nothing is copied or allocated.
"""

from numba import njit, types
from numba.core import cgutils
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

SIZE_MESSAGE = "shaped: the view's size differs from the array's"


@intrinsic
def _as_shape(typingctx, arr, shape):
    """The C-contiguous view of ``arr`` (a C-contiguous array) under ``shape`` (a tuple of
    integers), sizes unchecked."""
    if not (isinstance(arr, types.Array) and arr.layout == "C"):
        return None
    if not (isinstance(shape, types.UniTuple) and isinstance(shape.dtype, types.Integer)):
        return None
    ndim = shape.count
    result = types.Array(arr.dtype, ndim, "C")

    def codegen(context, builder, sig, args):
        src = make_array(sig.args[0])(context, builder, args[0])
        intp = context.get_value_type(types.intp)
        dims = [
            context.cast(builder, d, sig.args[1].dtype, types.intp)
            for d in cgutils.unpack_tuple(builder, args[1], ndim)
        ]
        strides = [None] * ndim
        step = src.itemsize
        for k in range(ndim - 1, -1, -1):  # C order: the last index is contiguous
            strides[k] = step
            step = builder.mul(step, dims[k])
        out = make_array(result)(context, builder)
        populate_array(
            out,
            data=src.data,
            shape=cgutils.pack_array(builder, dims, ty=intp),
            strides=cgutils.pack_array(builder, strides, ty=intp),
            itemsize=src.itemsize,
            meminfo=src.meminfo,
            parent=src.parent,
        )
        return out._getvalue()

    return result(arr, shape), codegen


@njit(cache=False, error_model="numpy", _nrt=False, inline="always")
def shaped(arr, shape):
    """``arr`` (C-contiguous) viewed under ``shape``; ValueError if the sizes differ."""
    size = 1
    for d in shape:
        size *= d
    if size != arr.size:
        raise ValueError(SIZE_MESSAGE)
    return _as_shape(arr, shape)
