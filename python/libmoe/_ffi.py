"""The ctypes layer: finding and loading the shared library, the enums of
include/moe.h, the four public structs laid out exactly as the C compiler lays
them out (x86-64 / aarch64 LP64: enums are 4-byte ints), and the signatures
of every exported function.

Layouts (offset in bytes, checked against offsetof on gcc x86-64):
    moe_tensor        40: data 0, type 8, mem 12, stride_e 16, stride_n 24, stride_c 32
    moe_layer_desc   384: E 0, D 8, I 16, K 24, act 32, alpha 36, limit 40, layout 44,
                          gate 48, up 88, gate_up 128, down 168, gate_bias 208,
                          up_bias 248, gate_up_bias 288, down_bias 328, act_type 368,
                          backend 376
    moe_ctx_params    48: device 0, cuda_device 4, cuda_stream 8, n_threads 16,
                          log 24, log_user 32, log_level 40
    moe_route_params  56: E 0, K 8, score 16, renormalize 20, score_bias 24,
                          n_group 32, topk_group 40, routed_scaling 48
"""
import ctypes
import ctypes.util
import enum
import os
import threading

# ---------------------------------------------------------------------------
# enums (values are the C values; names drop the MOE_<ENUM>_ prefix)
# ---------------------------------------------------------------------------


class Status(enum.IntEnum):
    OK = 0
    ERR_NULL_POINTER = 1
    ERR_INVALID_DIM = 2
    ERR_TOPK_EXCEEDS_EXPERTS = 3
    ERR_EXPERT_ID_OUT_OF_RANGE = 4
    ERR_NONFINITE_PARAM = 5
    ERR_SIZE_OVERFLOW = 6
    ERR_UNSUPPORTED = 7
    ERR_INVALID_ARGUMENT = 8
    ERR_BLOCK_SHAPE = 9
    ERR_WORKSPACE_TOO_SMALL = 10
    ERR_OUT_OF_MEMORY = 11
    ERR_BACKEND_UNAVAILABLE = 12
    ERR_NO_DEVICE = 13
    ERR_CUDA = 14
    ERR_IO = 15
    ERR_GGUF_FORMAT = 16
    ERR_NOT_FOUND = 17
    ERR_MEMORY_SPACE = 18
    ERR_INTERNAL = 19


class Type(enum.IntEnum):
    F32 = 0
    F16 = 1
    Q4_0 = 2
    Q8_0 = 8
    Q2_K = 10
    Q3_K = 11
    Q4_K = 12
    Q5_K = 13
    Q6_K = 14
    BF16 = 30
    MXFP4 = 39


class Device(enum.IntEnum):
    CPU = 0
    CUDA = 1


class LogLevel(enum.IntEnum):
    DEBUG = 0
    INFO = 1
    WARN = 2
    ERROR = 3
    NONE = 4


class Act(enum.IntEnum):
    SWIGLU = 0
    GEGLU_TANH = 1
    GEGLU_ERF = 2
    SWIGLU_OAI = 3
    SILU = 4
    GELU = 5
    RELU2 = 6


class Layout(enum.IntEnum):
    SEPARATE = 0
    CONCAT = 1
    INTERLEAVED = 2


class Mem(enum.IntEnum):
    HOST = 0
    DEVICE = 1


class Score(enum.IntEnum):
    SOFTMAX = 0
    SIGMOID = 1


# The C-spelled names (MOE_OK, MOE_TYPE_Q4_K, MOE_ACT_SWIGLU, MOE_GATE_UP_CONCAT, ...).
C_NAMES = {}
for _cls, _prefix in ((Status, "MOE_"), (Type, "MOE_TYPE_"), (Device, "MOE_DEVICE_"), (LogLevel, "MOE_LOG_"),
                      (Act, "MOE_ACT_"), (Layout, "MOE_GATE_UP_"), (Mem, "MOE_MEM_"), (Score, "MOE_SCORE_")):
    for _m in _cls:
        C_NAMES[_prefix + _m.name] = _m

# ---------------------------------------------------------------------------
# structs
# ---------------------------------------------------------------------------

LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


class moe_tensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("type", ctypes.c_int),
        ("mem", ctypes.c_int),
        ("stride_e", ctypes.c_int64),
        ("stride_n", ctypes.c_int64),
        ("stride_c", ctypes.c_int64),
    ]


class moe_layer_desc(ctypes.Structure):
    _fields_ = [
        ("E", ctypes.c_int64),
        ("D", ctypes.c_int64),
        ("I", ctypes.c_int64),
        ("K", ctypes.c_int64),
        ("act", ctypes.c_int),
        ("alpha", ctypes.c_float),
        ("limit", ctypes.c_float),
        ("layout", ctypes.c_int),
        ("gate", moe_tensor),
        ("up", moe_tensor),
        ("gate_up", moe_tensor),
        ("down", moe_tensor),
        ("gate_bias", moe_tensor),
        ("up_bias", moe_tensor),
        ("gate_up_bias", moe_tensor),
        ("down_bias", moe_tensor),
        ("act_type", ctypes.c_int),
        ("backend", ctypes.c_char_p),
    ]


class moe_ctx_params(ctypes.Structure):
    _fields_ = [
        ("device", ctypes.c_int),
        ("cuda_device", ctypes.c_int),
        ("cuda_stream", ctypes.c_void_p),
        ("n_threads", ctypes.c_int),
        ("log", LOG_FN),
        ("log_user", ctypes.c_void_p),
        ("log_level", ctypes.c_int),
    ]


class moe_route_params(ctypes.Structure):
    _fields_ = [
        ("E", ctypes.c_int64),
        ("K", ctypes.c_int64),
        ("score", ctypes.c_int),
        ("renormalize", ctypes.c_int),
        ("score_bias", ctypes.c_void_p),
        ("n_group", ctypes.c_int64),
        ("topk_group", ctypes.c_int64),
        ("routed_scaling", ctypes.c_float),
    ]


# (sizeof, {field: offset}) as gcc reports them; checked when the library loads.
EXPECTED_LAYOUT = {
    moe_tensor: (40, {"data": 0, "type": 8, "mem": 12, "stride_e": 16, "stride_n": 24, "stride_c": 32}),
    moe_layer_desc: (384, {"E": 0, "D": 8, "I": 16, "K": 24, "act": 32, "alpha": 36, "limit": 40, "layout": 44,
                           "gate": 48, "up": 88, "gate_up": 128, "down": 168, "gate_bias": 208, "up_bias": 248,
                           "gate_up_bias": 288, "down_bias": 328, "act_type": 368, "backend": 376}),
    moe_ctx_params: (48, {"device": 0, "cuda_device": 4, "cuda_stream": 8, "n_threads": 16, "log": 24,
                          "log_user": 32, "log_level": 40}),
    moe_route_params: (56, {"E": 0, "K": 8, "score": 16, "renormalize": 20, "score_bias": 24, "n_group": 32,
                            "topk_group": 40, "routed_scaling": 48}),
}

# ---------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------

_P = ctypes.c_void_p
_I64 = ctypes.c_int64
_INT = ctypes.c_int
_STR = ctypes.c_char_p

# name: (restype, argtypes)
_SIGNATURES = {
    "moe_version": (_STR, []),
    "moe_version_number": (_INT, []),
    "moe_status_string": (_STR, [_INT]),
    "moe_status_name": (_STR, [_INT]),
    "moe_type_block_size": (_I64, [_INT]),
    "moe_type_block_bytes": (_I64, [_INT]),
    "moe_type_name": (_STR, [_INT]),
    "moe_type_row_bytes": (_I64, [_INT, _I64]),
    "moe_quantize_row": (_INT, [_INT, _P, _P, _I64]),
    "moe_dequantize_row": (_INT, [_INT, _P, _P, _I64]),
    "moe_ctx_default_params": (moe_ctx_params, []),
    "moe_ctx_create": (_INT, [ctypes.POINTER(moe_ctx_params), ctypes.POINTER(_P)]),
    "moe_ctx_free": (None, [_P]),
    "moe_ctx_last_error": (_STR, [_P]),
    "moe_ctx_device": (_INT, [_P]),
    "moe_ctx_n_threads": (_INT, [_P]),
    "moe_act_is_gated": (_INT, [_INT]),
    "moe_act_name": (_STR, [_INT]),
    "moe_layer_desc_default": (moe_layer_desc, []),
    "moe_layer_create": (_INT, [_P, ctypes.POINTER(moe_layer_desc), ctypes.POINTER(_P)]),
    "moe_layer_free": (None, [_P]),
    "moe_layer_last_error": (_STR, [_P]),
    "moe_layer_backend": (_STR, [_P]),
    "moe_layer_workspace_size": (_INT, [_P, _I64, ctypes.POINTER(ctypes.c_size_t)]),
    "moe_layer_forward": (_INT, [_P, _I64, _P, _P, _P, _P, _P, ctypes.c_size_t]),
    "moe_layer_describe": (_INT, [_P, _I64, ctypes.c_char_p, ctypes.c_size_t]),
    "moe_route_params_default": (moe_route_params, []),
    "moe_route_topk": (_INT, [_P, ctypes.POINTER(moe_route_params), _I64, _P, _P, _P]),
}

_lock = threading.Lock()
_lib = None
_lib_path = None


def _candidates():
    env = os.environ.get("MOE_LIB")
    if env:
        return [env], "MOE_LIB=" + env
    here = os.path.dirname(os.path.abspath(__file__))
    local = os.path.normpath(os.path.join(here, "..", "..", "build", "libmoe.so"))
    found = ctypes.util.find_library("moe")
    tried = [local] + ([found] if found else [])
    return [p for p in tried if p == found or os.path.exists(p)], "%s, ctypes.util.find_library('moe')" % local


def check_layout():
    """Raises AssertionError if a ctypes struct differs from the C layout."""
    for cls, (size, offsets) in EXPECTED_LAYOUT.items():
        assert ctypes.sizeof(cls) == size, "%s: sizeof %d, C says %d" % (cls.__name__, ctypes.sizeof(cls), size)
        for f, off in offsets.items():
            got = getattr(cls, f).offset
            assert got == off, "%s.%s at %d, C says %d" % (cls.__name__, f, got, off)


def lib():
    """The loaded ctypes.CDLL, with every signature declared. Loaded on first
    use from $MOE_LIB, else ../../build/libmoe.so next to this package, else
    wherever ctypes.util.find_library('moe') finds it."""
    global _lib, _lib_path
    if _lib is not None:
        return _lib
    with _lock:
        if _lib is not None:
            return _lib
        paths, described = _candidates()
        if not paths:
            raise OSError("libmoe: shared library not found (looked at %s); build it "
                          "(cmake -S . -B build && cmake --build build) or set MOE_LIB" % described)
        errors = []
        for p in paths:
            try:
                cdll = ctypes.CDLL(p)
                break
            except OSError as e:
                errors.append("%s: %s" % (p, e))
        else:
            raise OSError("libmoe: could not load the shared library: " + "; ".join(errors))
        check_layout()
        for name, (res, args) in _SIGNATURES.items():
            fn = getattr(cdll, name)
            fn.restype = res
            fn.argtypes = args
        _lib_path = getattr(cdll, "_name", paths[0])
        _lib = cdll
        return _lib


def lib_path():
    """The path of the loaded library (loads it)."""
    lib()
    return _lib_path


def cstr(b):
    return b.decode("utf-8", "replace") if b is not None else ""
