"""Four states at once through the per-state kernels' own source: a 4-lane vector type.

The batches compute Algorithm 1 on four states per pass.  They do not use a second copy of
the kernels.  The same Python functions (:func:`coriolis_matrix.sweep`, :func:`place_body`,
:func:`body_factor`, ...) are compiled once more, with lane types for their arguments:

* :data:`f4`, a value of four float64 lanes: LLVM's ``<4 x double>``.  ``+ - *`` (with
  another F4 or a number, which is splatted) and unary ``-`` are single vector
  instructions.  They carry the scalar kernels' one fast-math flag, ``contract``, so each
  lane is computed exactly as the scalar code computes its state: the same operations in the
  same order, with multiply-adds fused at the same places (``test_dynamics_lanes.py`` checks
  this bitwise).  ``math.sqrt`` and ``/`` exist for the free flyer's quaternion.
* :func:`lanes` views a (rows, cols, 4) float64 array as rows x cols of F4: ``w[r, c]``
  loads one F4, ``w[r, c] = x`` stores one (a number is splatted).  ``.shape`` is
  (rows, cols).
* :func:`lane_vector` views a (rows, 4) array as rows of F4: ``q[i]``, ``q.shape``.
* :func:`lane_rows` views four matrices of a (T, m, m) output, one per lane, and
  :func:`transpose` / :func:`store_run` copy a lane buffer into them row by row.

:func:`sincos_at` is where the two paths differ in source: the joint angles' sines and
cosines.  The scalar path calls :func:`.trig.sincos`; the lane path runs the same reduction
and series (:func:`.trig.reduced`) on four angles, takes the quadrant in exact float
arithmetic instead of integer bit operations, and chooses by a select (libm, lane by lane,
beyond the reduction limit).
"""

import math
import operator

from llvmlite import ir
from numba.core import cgutils, types
from numba.core.imputils import lower_builtin, lower_cast
from numba.core.typing.templates import AbstractTemplate, infer_global, signature
from numba.extending import (
    intrinsic,
    make_attribute_wrapper,
    models,
    overload,
    overload_attribute,
    register_model,
)

from .spatial import _OPTIONS
from .trig import REDUCTION_LIMIT, TWO_OVER_PI, reduced, sincos

LANES = 4
# the per-state kernels' numerical options (spatial._OPTIONS), for the overloads below
_JIT = {k: v for k, v in _OPTIONS.items() if k in ("error_model", "boundscheck", "fastmath")}
_V4 = ir.VectorType(ir.DoubleType(), LANES)
_I32 = ir.IntType(32)
_FLAGS = ("contract",)  # the scalar kernels' fastmath={"contract"}


class F4Type(types.Type):
    """Four float64 lanes."""

    def __init__(self):
        super().__init__(name="F4")

    def unify(self, typingctx, other):
        # a variable that is a number on one path and F4 on another (0.0, then v_parent)
        if isinstance(other, (types.Float, types.Integer)):
            return self
        return None


f4 = F4Type()


@register_model(F4Type)
class _F4Model(models.PrimitiveModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, _V4)


def _splat(builder, value):
    vec = ir.Constant(_V4, ir.Undefined)
    for k in range(LANES):
        vec = builder.insert_element(vec, value, ir.Constant(_I32, k))
    return vec


def _as_f4(context, builder, value, ty):
    if isinstance(ty, F4Type):
        return value
    return _splat(builder, context.cast(builder, value, ty, types.float64))


@lower_cast(types.Float, F4Type)
@lower_cast(types.Integer, F4Type)
def _number_to_f4(context, builder, fromty, toty, val):
    return _as_f4(context, builder, val, fromty)


def _number(t) -> bool:
    return isinstance(t, (types.Float, types.Integer))


def _binary(op, instruction):
    @infer_global(op)
    class _Typing(AbstractTemplate):
        def generic(self, args, kws):
            if len(args) != 2 or not any(isinstance(a, F4Type) for a in args):
                return None
            if all(isinstance(a, F4Type) or _number(a) for a in args):
                return signature(f4, *(a if isinstance(a, F4Type) else types.float64 for a in args))
            return None

    def lower(context, builder, sig, args):
        a = _as_f4(context, builder, args[0], sig.args[0])
        b = _as_f4(context, builder, args[1], sig.args[1])
        return getattr(builder, instruction)(a, b, flags=_FLAGS)

    for left in (F4Type, types.Float):
        for right in (F4Type, types.Float):
            if F4Type in (left, right):
                lower_builtin(op, left, right)(lower)


for _op, _instruction in (
    (operator.add, "fadd"),
    (operator.iadd, "fadd"),
    (operator.sub, "fsub"),
    (operator.isub, "fsub"),
    (operator.mul, "fmul"),
    (operator.imul, "fmul"),
    (operator.truediv, "fdiv"),
    (operator.itruediv, "fdiv"),
):
    _binary(_op, _instruction)


@infer_global(operator.neg)
class _NegTyping(AbstractTemplate):
    def generic(self, args, kws):
        if len(args) == 1 and isinstance(args[0], F4Type):
            return signature(f4, f4)
        return None


@lower_builtin(operator.neg, F4Type)
def _neg(context, builder, sig, args):
    return builder.fneg(args[0], flags=_FLAGS)


def _vector_math(builder, name, x):
    """LLVM's lane-wise ``llvm.<name>.v4f64`` on an F4 (sqrt, floor, fabs)."""
    fn = cgutils.get_or_insert_function(
        builder.module, ir.FunctionType(_V4, [_V4]), f"llvm.{name}.v4f64"
    )
    return builder.call(fn, [x])


@infer_global(math.sqrt)
class _SqrtTyping(AbstractTemplate):
    def generic(self, args, kws):
        if len(args) == 1 and isinstance(args[0], F4Type):
            return signature(f4, f4)
        return None


@lower_builtin(math.sqrt, F4Type)
def _sqrt(context, builder, sig, args):
    return _vector_math(builder, "sqrt", args[0])


@intrinsic
def lane(typingctx, x, k):
    """Lane k of an F4, as a float64."""
    if isinstance(x, F4Type) and isinstance(k, types.Integer):

        def codegen(context, builder, sig, args):
            return builder.extract_element(args[0], args[1])

        return types.float64(x, k), codegen
    return None


@intrinsic
def floor(typingctx, x):
    """Lane-wise floor of an F4."""
    if not isinstance(x, F4Type):
        return None

    def codegen(context, builder, sig, args):
        return _vector_math(builder, "floor", args[0])

    return f4(x), codegen


@intrinsic
def within(typingctx, x, bound):
    """True if every lane of x has |x| <= bound (False for NaN)."""
    if not (isinstance(x, F4Type) and _number(bound)):
        return None

    def codegen(context, builder, sig, args):
        limit = _as_f4(context, builder, args[1], sig.args[1])
        inside = builder.fcmp_ordered("<=", _vector_math(builder, "fabs", args[0]), limit)
        result = builder.extract_element(inside, ir.Constant(_I32, 0))
        for k in range(1, LANES):
            result = builder.and_(result, builder.extract_element(inside, ir.Constant(_I32, k)))
        return result

    return types.boolean(x, bound), codegen


@intrinsic
def pick(typingctx, flag, a, b):
    """Lane-wise a where flag != 0, else b (a select: exact)."""
    if not all(isinstance(t, F4Type) for t in (flag, a, b)):
        return None

    def codegen(context, builder, sig, args):
        nonzero = builder.fcmp_unordered("!=", args[0], ir.Constant(_V4, None))
        return builder.select(nonzero, args[1], args[2])

    return f4(flag, a, b), codegen


@intrinsic
def pack(typingctx, a, b, c, d):
    """The F4 (a, b, c, d)."""
    if not all(_number(t) for t in (a, b, c, d)):
        return None

    def codegen(context, builder, sig, args):
        vec = ir.Constant(_V4, ir.Undefined)
        for k in range(LANES):
            value = context.cast(builder, args[k], sig.args[k], types.float64)
            vec = builder.insert_element(vec, value, ir.Constant(_I32, k))
        return vec

    return f4(a, b, c, d), codegen


# --------------------------------------------------------------------------- lane arrays


class LanesType(types.Type):
    """A C-contiguous float64 array whose last axis holds the lanes, indexed without it."""

    def __init__(self, arr):
        self.arr = arr
        self.rank = arr.ndim - 1
        super().__init__(name=f"Lanes({arr})")


@register_model(LanesType)
class _LanesModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        super().__init__(dmm, fe_type, [("arr", fe_type.arr)])


make_attribute_wrapper(LanesType, "arr", "arr")


def _lanes_view(typingctx, arr, rank):
    ok = (
        isinstance(arr, types.Array)
        and arr.ndim == rank + 1
        and arr.dtype == types.float64
        and arr.layout == "C"
    )
    if not ok:
        return None

    def codegen(context, builder, sig, args):
        view = cgutils.create_struct_proxy(sig.return_type)(context, builder)
        view.arr = args[0]
        if context.enable_nrt:
            context.nrt.incref(builder, sig.args[0], args[0])
        return view._getvalue()

    return LanesType(arr)(arr), codegen


@intrinsic
def lanes(typingctx, arr):
    """A (rows, cols, 4) array as rows x cols of F4."""
    return _lanes_view(typingctx, arr, 2)


@intrinsic
def lane_vector(typingctx, arr):
    """A (rows, 4) array as rows of F4."""
    return _lanes_view(typingctx, arr, 1)


@overload_attribute(LanesType, "shape", jit_options=_JIT)
def _lanes_shape(view):
    if view.rank == 2:
        return lambda view: (view.arr.shape[0], view.arr.shape[1])
    return lambda view: (view.arr.shape[0],)


def _pointer(context, builder, view_type, view, indices, index_types):
    proxy = cgutils.create_struct_proxy(view_type)(context, builder, value=view)
    ary = context.make_array(view_type.arr)(context, builder, proxy.arr)
    flat = ir.Constant(cgutils.intp_t, 0)
    shape = cgutils.unpack_tuple(builder, ary.shape, view_type.arr.ndim)
    for axis, (index, ty) in enumerate(zip(indices, index_types)):
        index = context.cast(builder, index, ty, types.intp)
        flat = builder.add(builder.mul(flat, shape[axis]), index) if axis else index
    element = builder.gep(ary.data, [builder.mul(flat, ir.Constant(cgutils.intp_t, LANES))])
    return builder.bitcast(element, _V4.as_pointer())


def _index_types(view, index):
    if isinstance(index, types.Integer):
        index = (index,)
    elif isinstance(index, types.BaseTuple):
        index = tuple(index)
    else:
        return None
    if len(index) != view.rank or not all(isinstance(t, types.Integer) for t in index):
        return None
    return index


def _unpack(builder, value, ty):
    if isinstance(ty, types.BaseTuple):
        return cgutils.unpack_tuple(builder, value, len(ty)), tuple(ty)
    return [value], (ty,)


@infer_global(operator.getitem)
class _GetTyping(AbstractTemplate):
    def generic(self, args, kws):
        if len(args) == 2 and isinstance(args[0], LanesType):
            if _index_types(args[0], args[1]) is not None:
                return signature(f4, *args)
        return None


@lower_builtin(operator.getitem, LanesType, types.Integer)
@lower_builtin(operator.getitem, LanesType, types.BaseTuple)
def _get(context, builder, sig, args):
    indices, index_types = _unpack(builder, args[1], sig.args[1])
    pointer = _pointer(context, builder, sig.args[0], args[0], indices, index_types)
    return builder.load(pointer, align=8)


@infer_global(operator.setitem)
class _SetTyping(AbstractTemplate):
    def generic(self, args, kws):
        if len(args) == 3 and isinstance(args[0], LanesType):
            if _index_types(args[0], args[1]) is None:
                return None
            if isinstance(args[2], F4Type):
                return signature(types.none, *args)
            if _number(args[2]):
                return signature(types.none, args[0], args[1], types.float64)
        return None


@lower_builtin(operator.setitem, LanesType, types.Integer, F4Type)
@lower_builtin(operator.setitem, LanesType, types.BaseTuple, F4Type)
@lower_builtin(operator.setitem, LanesType, types.Integer, types.Float)
@lower_builtin(operator.setitem, LanesType, types.BaseTuple, types.Float)
def _set(context, builder, sig, args):
    indices, index_types = _unpack(builder, args[1], sig.args[1])
    pointer = _pointer(context, builder, sig.args[0], args[0], indices, index_types)
    builder.store(_as_f4(context, builder, args[2], sig.args[2]), pointer, align=8)
    return context.get_dummy_value()


# --------------------------------------------------------------------------- sines, cosines


def sincos_at(q, k):
    """(cos q[k], sin q[k]) of a state's array, or lane by lane of a lane vector."""


@overload(sincos_at, jit_options=_JIT)
def _sincos_at(q, k):
    if isinstance(q, types.Array):
        return lambda q, k: sincos(q[k])
    if isinstance(q, LanesType) and q.rank == 1:
        return _sincos_lanes
    return None


def _sincos_lanes(q, k):
    """trig.sincos on four angles at once: the same reduction and series (trig.reduced), the
    quadrant k mod 4 and its signs in exact float arithmetic, the choice by a select."""
    x = q[k]
    if not within(x, REDUCTION_LIMIT):  # some lane goes to libm: all lanes one by one
        c0, s0 = sincos(lane(x, 0))
        c1, s1 = sincos(lane(x, 1))
        c2, s2 = sincos(lane(x, 2))
        c3, s3 = sincos(lane(x, 3))
        return pack(c0, c1, c2, c3), pack(s0, s1, s2, s3)
    kk = floor(x * TWO_OVER_PI + 0.5)
    c, s = reduced(x, kk)
    quadrant = kk - 4.0 * floor(kk * 0.25)  # k mod 4, as trig.sincos's int(k) & 3
    half = floor(quadrant * 0.5)  # quadrant >> 1
    odd = quadrant - 2.0 * half  # quadrant & 1
    up = floor((quadrant + 1.0) * 0.5)
    cos_flip = up - 2.0 * floor(up * 0.5)  # ((quadrant + 1) >> 1) & 1
    cos_sign = 1.0 - 2.0 * cos_flip
    sin_sign = 1.0 - 2.0 * half
    return cos_sign * pick(odd, s, c), sin_sign * pick(odd, c, s)
    return None


# --------------------------------------------------------------------------- lane outputs


class LaneRowsType(types.Type):
    """Four (m, m) matrices of a (T, m, m) float64 array, one per lane: rows t0 + l, the idle
    lanes of a group (l >= count) sent to row t0, stored after lane 0: their inputs repeat
    state t0's, so they store the same bits again."""

    def __init__(self, arr):
        self.arr = arr
        super().__init__(name=f"LaneRows({arr})")


@register_model(LaneRowsType)
class _LaneRowsModel(models.StructModel):
    def __init__(self, dmm, fe_type):
        members = [("arr", fe_type.arr)] + [(f"start{k}", types.intp) for k in range(LANES)]
        super().__init__(dmm, fe_type, members)


make_attribute_wrapper(LaneRowsType, "arr", "arr")


@intrinsic
def lane_rows(typingctx, arr, t0, count):
    """The matrices arr[t0 + l] (l < count; arr[t0] for the idle lanes) as one lane matrix."""
    ok = (
        isinstance(arr, types.Array)
        and arr.ndim == 3
        and arr.dtype == types.float64
        and arr.layout == "C"
        and isinstance(t0, types.Integer)
        and isinstance(count, types.Integer)
    )
    if not ok:
        return None

    def codegen(context, builder, sig, args):
        view = cgutils.create_struct_proxy(sig.return_type)(context, builder)
        view.arr = args[0]
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        _, m0, m1 = cgutils.unpack_tuple(builder, ary.shape, 3)
        size = builder.mul(m0, m1)
        t0 = context.cast(builder, args[1], sig.args[1], types.intp)
        count = context.cast(builder, args[2], sig.args[2], types.intp)
        for k in range(LANES):
            lane_k = ir.Constant(cgutils.intp_t, k)
            active = builder.icmp_signed("<", lane_k, count)
            row = builder.select(active, builder.add(t0, lane_k), t0)
            setattr(view, f"start{k}", builder.mul(row, size))
        if context.enable_nrt:
            context.nrt.incref(builder, sig.args[0], args[0])
        return view._getvalue()

    return LaneRowsType(arr)(arr, t0, count), codegen


@overload_attribute(LaneRowsType, "shape", jit_options=_JIT)
def _lane_rows_shape(view):
    return lambda view: (view.arr.shape[1], view.arr.shape[2])


def _lane_pointers(context, builder, view_type, view, index, index_type):
    proxy = cgutils.create_struct_proxy(view_type)(context, builder, value=view)
    ary = context.make_array(view_type.arr)(context, builder, proxy.arr)
    _, _, m1 = cgutils.unpack_tuple(builder, ary.shape, 3)
    i, j = cgutils.unpack_tuple(builder, index, 2)
    i = context.cast(builder, i, index_type[0], types.intp)
    j = context.cast(builder, j, index_type[1], types.intp)
    offset = builder.add(builder.mul(i, m1), j)
    return [
        builder.gep(ary.data, [builder.add(getattr(proxy, f"start{k}"), offset)])
        for k in range(LANES)
    ]


def _pair_index(index) -> bool:
    return (
        isinstance(index, types.BaseTuple)
        and len(index) == 2
        and all(isinstance(t, types.Integer) for t in index)
    )


@infer_global(operator.getitem)
class _RowsGetTyping(AbstractTemplate):
    def generic(self, args, kws):
        if len(args) == 2 and isinstance(args[0], LaneRowsType) and _pair_index(args[1]):
            return signature(f4, *args)
        return None


@lower_builtin(operator.getitem, LaneRowsType, types.BaseTuple)
def _rows_get(context, builder, sig, args):
    pointers = _lane_pointers(context, builder, sig.args[0], args[0], args[1], sig.args[1])
    vec = ir.Constant(_V4, ir.Undefined)
    for k, pointer in enumerate(pointers):
        vec = builder.insert_element(vec, builder.load(pointer), ir.Constant(_I32, k))
    return vec


@infer_global(operator.setitem)
class _RowsSetTyping(AbstractTemplate):
    def generic(self, args, kws):
        if len(args) == 3 and isinstance(args[0], LaneRowsType) and _pair_index(args[1]):
            if isinstance(args[2], F4Type):
                return signature(types.none, *args)
            if _number(args[2]):
                return signature(types.none, args[0], args[1], types.float64)
        return None


@lower_builtin(operator.setitem, LaneRowsType, types.BaseTuple, F4Type)
@lower_builtin(operator.setitem, LaneRowsType, types.BaseTuple, types.Float)
def _rows_set(context, builder, sig, args):
    pointers = _lane_pointers(context, builder, sig.args[0], args[0], args[1], sig.args[1])
    value = _as_f4(context, builder, args[2], sig.args[2])
    for k, pointer in enumerate(pointers):
        builder.store(builder.extract_element(value, ir.Constant(_I32, k)), pointer)
    return context.get_dummy_value()


@intrinsic
def transpose(typingctx, a, b, c, d):
    """The 4 x 4 transpose of the F4s (a, b, c, d): lane l of the result k is lane k of the
    l-th argument, so (a[0], b[0], c[0], d[0]), ... (a[3], b[3], c[3], d[3])."""
    if not all(isinstance(t, F4Type) for t in (a, b, c, d)):
        return None

    def shuffle(builder, x, y, mask):
        return builder.shuffle_vector(x, y, ir.Constant(ir.VectorType(_I32, 4), mask))

    def codegen(context, builder, sig, args):
        a, b, c, d = args
        ab_low, ab_high = shuffle(builder, a, b, [0, 4, 1, 5]), shuffle(builder, a, b, [2, 6, 3, 7])
        cd_low, cd_high = shuffle(builder, c, d, [0, 4, 1, 5]), shuffle(builder, c, d, [2, 6, 3, 7])
        rows = [
            shuffle(builder, ab_low, cd_low, [0, 1, 4, 5]),
            shuffle(builder, ab_low, cd_low, [2, 3, 6, 7]),
            shuffle(builder, ab_high, cd_high, [0, 1, 4, 5]),
            shuffle(builder, ab_high, cd_high, [2, 3, 6, 7]),
        ]
        return context.make_tuple(builder, sig.return_type, rows)

    return types.UniTuple(f4, 4)(a, b, c, d), codegen


@intrinsic
def store_run(typingctx, rows, k, i, j, value):
    """Lane k's matrix of ``rows`` (a :func:`lane_rows`), entries [i, j .. j + 3] = value."""
    ok = (
        isinstance(rows, LaneRowsType)
        and all(isinstance(t, types.Integer) for t in (k, i, j))
        and isinstance(value, F4Type)
    )
    if not ok:
        return None

    def codegen(context, builder, sig, args):
        proxy = cgutils.create_struct_proxy(sig.args[0])(context, builder, value=args[0])
        ary = context.make_array(sig.args[0].arr)(context, builder, proxy.arr)
        _, _, m1 = cgutils.unpack_tuple(builder, ary.shape, 3)
        k, i, j = (context.cast(builder, args[x], sig.args[x], types.intp) for x in (1, 2, 3))
        starts = [getattr(proxy, f"start{x}") for x in range(LANES)]
        start = starts[0]
        for x in range(1, LANES):
            is_x = builder.icmp_signed("==", k, ir.Constant(cgutils.intp_t, x))
            start = builder.select(is_x, starts[x], start)
        offset = builder.add(start, builder.add(builder.mul(i, m1), j))
        pointer = builder.bitcast(builder.gep(ary.data, [offset]), _V4.as_pointer())
        builder.store(args[4], pointer, align=8)
        return context.get_dummy_value()

    return types.none(rows, k, i, j, value), codegen
