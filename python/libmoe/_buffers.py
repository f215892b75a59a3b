"""Arrays -> (pointer, shape, element strides, moe_type, memory space).

numpy arrays are host memory. torch tensors (when torch is importable) may be
CPU or CUDA tensors; anything else exposing __cuda_array_interface__ (CuPy,
Numba) is CUDA device memory. numpy has no bfloat16: raw bf16 bits travel as
uint16 with an explicit type "bf16" (an ml_dtypes.bfloat16 array needs none).
GGUF block types travel as uint8 bytes with an explicit type ("q4_K").
"""
import sys

import numpy as np

from ._ffi import Mem, Type

DENSE = (Type.F32, Type.F16, Type.BF16)

# element kinds: the dtype as far as the library cares
_NP_KIND = {
    np.dtype(np.float32): "f32",
    np.dtype(np.float16): "f16",
    np.dtype(np.uint16): "u16",
    np.dtype(np.int16): "u16",
    np.dtype(np.uint8): "u8",
    np.dtype(np.int8): "u8",
    np.dtype(np.int32): "i32",
}
_KIND_TYPE = {"f32": Type.F32, "f16": Type.F16, "bf16": Type.BF16}
_TYPE_NP = {Type.F32: np.float32, Type.F16: np.float16, Type.BF16: np.uint16}
_CAI_KIND = {"<f4": "f32", "<f2": "f16", "<u2": "u16", "<i2": "u16", "|u1": "u8", "|i1": "u8", "<i4": "i32",
             "<V2": "u16"}


def torch_module():
    """torch if it is already imported or importable, else None."""
    t = sys.modules.get("torch")
    if t is not None:
        return t
    try:
        import torch  # noqa: F401
    except Exception:
        return None
    return sys.modules["torch"]


def is_torch(x):
    t = sys.modules.get("torch")
    return t is not None and isinstance(x, t.Tensor)


def _torch_kind(t, dtype):
    return {t.float32: "f32", t.float16: "f16", t.bfloat16: "bf16", t.uint8: "u8", t.int8: "u8", t.int16: "u16",
            t.int32: "i32"}.get(dtype) or (getattr(t, "uint16", None) == dtype and "u16") or str(dtype)


class Buf:
    """One array as the library sees it. obj is kept so that the memory stays alive."""

    __slots__ = ("obj", "ptr", "shape", "strides", "itemsize", "kind", "mem", "device_index", "lib")

    def __init__(self, obj, ptr, shape, strides, itemsize, kind, mem, device_index, lib):
        self.obj, self.ptr, self.shape, self.strides = obj, ptr, tuple(shape), tuple(strides)
        self.itemsize, self.kind, self.mem, self.device_index, self.lib = itemsize, kind, mem, device_index, lib

    @property
    def contiguous(self):
        if 0 in self.shape:
            return True
        expect = 1
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != expect:
                return False
            expect *= n
        return True

    def where(self):
        return "host memory" if self.mem == Mem.HOST else "CUDA device %s memory" % (
            "?" if self.device_index is None else self.device_index)


def wrap(x, what):
    """A Buf for x (numpy array, torch tensor, or __cuda_array_interface__ object).
    Raises TypeError for anything else."""
    if isinstance(x, np.ndarray):
        if x.dtype.name == "bfloat16":  # ml_dtypes
            kind = "bf16"
        else:
            kind = _NP_KIND.get(x.dtype, str(x.dtype))
        isz = x.itemsize
        st = []
        for s in x.strides:
            if s % isz:
                raise ValueError("%s: a byte stride %d that is not a multiple of the element size %d" % (what, s, isz))
            st.append(s // isz)
        ptr = x.__array_interface__["data"][0]
        return Buf(x, ptr, x.shape, st, isz, kind, Mem.HOST, None, "numpy")
    if is_torch(x):
        t = sys.modules["torch"]
        dev = x.device
        if dev.type == "cuda":
            mem, idx = Mem.DEVICE, dev.index if dev.index is not None else t.cuda.current_device()
        elif dev.type == "cpu":
            mem, idx = Mem.HOST, None
        else:
            raise TypeError("%s: a torch tensor on %s; libmoe takes CPU or CUDA tensors" % (what, dev))
        return Buf(x, x.data_ptr(), x.shape, x.stride(), x.element_size(), _torch_kind(t, x.dtype), mem, idx, "torch")
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is not None:
        typestr = cai["typestr"]
        isz = int(typestr[2:])
        shape = tuple(cai["shape"])
        if cai.get("strides"):
            st = [s // isz for s in cai["strides"]]
        else:
            st, acc = [], 1
            for n in reversed(shape):
                st.insert(0, acc)
                acc *= n
        return Buf(x, cai["data"][0], shape, st, isz, _CAI_KIND.get(typestr, typestr), Mem.DEVICE, None, "cai")
    raise TypeError("%s: expected a numpy array or a torch tensor, got %s" % (what, type(x).__name__))


def _type_ok(kind, t):
    if t == Type.F32:
        return kind == "f32"
    if t == Type.F16:
        return kind in ("f16", "u16")
    if t == Type.BF16:
        return kind in ("bf16", "u16")
    return kind == "u8"


def resolve_type(buf, explicit, what):
    """The moe Type of a weight or activation buffer: explicit (a Type) when
    given and compatible with the array's dtype, else the dtype's own."""
    if explicit is None:
        if buf.kind in _KIND_TYPE:
            return _KIND_TYPE[buf.kind]
        if buf.kind == "u16":
            raise TypeError("%s: a 16-bit integer array; numpy has no bfloat16, so say what the bits are: "
                            "type='bf16' (or 'f16')" % what)
        if buf.kind == "u8":
            raise TypeError("%s: a byte array; say which GGUF block format it holds, e.g. type='q4_K'" % what)
        raise TypeError("%s: dtype %s is not supported (float32, float16, bfloat16, or raw bits with a type)"
                        % (what, buf.kind))
    if not _type_ok(buf.kind, explicit):
        need = {Type.F32: "float32", Type.F16: "float16 (or uint16 bits)", Type.BF16: "bfloat16 or uint16 bits"}
        raise TypeError("%s: dtype %s cannot hold %s data; expected %s" % (
            what, buf.kind, explicit.name.lower(), need.get(explicit, "uint8 bytes of whole blocks")))
    return explicit


def weight_strides(buf, t, shape, what, block_size, block_bytes, row_bytes):
    """Element strides (stride_e, stride_n, stride_c) of a weight [E, N, C]
    (or bias [E, N]) held in buf, checking that buf covers that shape."""
    E, N, C = shape
    if t in DENSE:
        want = (E, N, C) if len(buf.shape) == 3 or C != 1 else (E, N)
        if buf.shape != want:
            raise ValueError("%s: shape %s, expected %s" % (what, list(buf.shape), list(want)))
        st = list(buf.strides) + ([1] if len(want) == 2 else [])
        sizes = (E, N, C)
        contig = (N * C, C, 1)
        for i in range(3):
            if sizes[i] == 1:  # a stride that is never used: make it unambiguous
                st[i] = contig[i]
            if st[i] < 0:
                raise ValueError("%s: negative strides %s are not supported" % (what, list(buf.strides)))
        if st == [0, 0, 0]:
            raise ValueError("%s: a broadcast array (all strides 0) cannot be described to the library; "
                             "pass a materialised copy" % what)
        return tuple(st)
    # block types: bytes; rows of C elements are row_bytes bytes, contiguous within a row
    total = E * N * row_bytes
    if buf.shape == (E, N, row_bytes):
        se, sn, sc = buf.strides
        if E == 1:
            se = N * row_bytes
        if N == 1:
            sn = row_bytes
        if sc != 1 and row_bytes > 1:
            raise ValueError("%s: the bytes of a row must be contiguous (byte strides %s)" % (what, list(buf.strides)))
        if se < 0 or sn < 0 or se % block_bytes or sn % block_bytes:
            raise ValueError("%s: byte strides %s must be non-negative multiples of the %d-byte block" % (
                what, list(buf.strides), block_bytes))
        return (se // block_bytes * block_size, sn // block_bytes * block_size, 1)
    size = 1
    for n in buf.shape:
        size *= n
    if buf.contiguous and size == total:
        return (0, 0, 0)  # contiguous
    raise ValueError("%s: %s bytes of shape %s; expected [E, N, row_bytes] = %s (or any contiguous array of %d bytes)"
                     % (what, t.name.lower(), list(buf.shape), [E, N, row_bytes], total))


def np_dtype(t):
    """The numpy dtype that holds elements of a dense Type (bf16: uint16 bits)."""
    return np.dtype(_TYPE_NP[t])


def torch_dtype(t):
    tm = sys.modules["torch"]
    return {Type.F32: tm.float32, Type.F16: tm.float16, Type.BF16: tm.bfloat16}[t]
