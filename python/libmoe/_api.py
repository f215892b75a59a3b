"""Context, Layer, route_topk, quantize_row / dequantize_row: thin wrappers
over include/moe.h. Every failed call raises MoeError carrying the status and
the library's own message (moe_ctx_last_error / moe_layer_last_error)."""
import ctypes
import math
import weakref

import numpy as np

from . import _buffers as B
from ._ffi import LOG_FN, Act, Device, Layout, LogLevel, Mem, Score, Status, Type, cstr, lib
from ._ffi import moe_tensor

# ---------------------------------------------------------------------------
# errors
# ---------------------------------------------------------------------------


class MoeError(RuntimeError):
    """A libmoe call failed. status: the Status (an int for an unknown value);
    name: its C name ("MOE_ERR_EXPERT_ID_OUT_OF_RANGE"); message: the
    library's message saying what was wrong ("topk_ids[3][1] = 9 but E = 8")."""

    def __init__(self, status, name, message):
        try:
            status = Status(status)
        except ValueError:
            pass
        self.status, self.name, self.message = status, name, message
        super().__init__(status, name, message)

    def __str__(self):
        return "%s: %s" % (self.name, self.message or status_string(self.status))


def status_string(s):
    return cstr(lib().moe_status_string(int(s)))


def status_name(s):
    return cstr(lib().moe_status_name(int(s)))


def _raise(s, message):
    raise MoeError(s, status_name(s), message)


def _check_ctx(s, ctx_handle):
    if s != 0:
        _raise(s, cstr(lib().moe_ctx_last_error(ctx_handle)))


def _check_layer(s, layer_handle):
    if s != 0:
        _raise(s, cstr(lib().moe_layer_last_error(layer_handle)))


# ---------------------------------------------------------------------------
# enums from strings
# ---------------------------------------------------------------------------

_TYPE_NAMES = {"f32": Type.F32, "float32": Type.F32, "f16": Type.F16, "float16": Type.F16, "half": Type.F16,
               "bf16": Type.BF16, "bfloat16": Type.BF16, "q4_0": Type.Q4_0, "q8_0": Type.Q8_0, "q2_k": Type.Q2_K,
               "q3_k": Type.Q3_K, "q4_k": Type.Q4_K, "q5_k": Type.Q5_K, "q6_k": Type.Q6_K, "mxfp4": Type.MXFP4}


def _enum(cls, v, what, aliases=None):
    if v is None:
        return None
    if isinstance(v, cls):
        return v
    if isinstance(v, str):
        key = v.lower()
        if aliases and key in aliases:
            return aliases[key]
        for m in cls:
            if m.name.lower() == key:
                return m
        raise ValueError("%s = %r; expected one of %s" % (what, v, sorted(
            list(aliases) if aliases else [m.name.lower() for m in cls])))
    try:
        return cls(int(v))
    except (ValueError, TypeError):
        raise ValueError("%s = %r is not a %s" % (what, v, cls.__name__)) from None


def as_type(v, what="type"):
    """Type from a Type, an int (GGUF number) or a name ("bf16", "q4_K")."""
    if v is not None and not isinstance(v, (str, Type, int)):  # a numpy / torch dtype
        if str(v).startswith("torch."):
            v = str(v)[6:]
        else:
            try:
                v = np.dtype(v).name
            except TypeError:
                raise ValueError("%s = %r is not a type" % (what, v)) from None
    return _enum(Type, v, what, _TYPE_NAMES)


_ACT_ALIASES = {"swiglu": Act.SWIGLU, "geglu_tanh": Act.GEGLU_TANH, "geglu": Act.GEGLU_TANH,
                "geglu_erf": Act.GEGLU_ERF, "swiglu_oai": Act.SWIGLU_OAI, "silu": Act.SILU, "gelu": Act.GELU,
                "gelu_tanh": Act.GELU, "relu2": Act.RELU2}


def type_block_size(t):
    return int(lib().moe_type_block_size(int(as_type(t))))


def type_block_bytes(t):
    return int(lib().moe_type_block_bytes(int(as_type(t))))


def type_row_bytes(t, n):
    return int(lib().moe_type_row_bytes(int(as_type(t)), int(n)))


def type_name(t):
    return cstr(lib().moe_type_name(int(as_type(t))))


def act_is_gated(act):
    return bool(lib().moe_act_is_gated(int(_enum(Act, act, "act", _ACT_ALIASES))))


def version():
    """The version string of the library loaded ("0.1.0")."""
    return cstr(lib().moe_version())


def version_number():
    return int(lib().moe_version_number())


# ---------------------------------------------------------------------------
# Context
# ---------------------------------------------------------------------------


def _stream_ptr(stream):
    if stream is None:
        return None
    if isinstance(stream, int):
        return stream or None
    if isinstance(stream, ctypes.c_void_p):
        return stream.value
    for attr in ("cuda_stream", "ptr", "handle"):  # torch.cuda.Stream, cupy Stream, ...
        v = getattr(stream, attr, None)
        if isinstance(v, int):
            return v or None
    raise TypeError("stream: expected a cudaStream_t as an int, or a stream object (torch/cupy), got %r" % (stream,))


class _Handle:
    """A library handle: closed by close(), by a with-block, or when collected."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


class Context(_Handle):
    """moe_ctx: the device, the CPU threads and the logging layers share.

    device: "cpu" or "cuda" (or a Device). cuda_device: the CUDA ordinal.
    stream: the cudaStream_t every call of the context is asynchronous on (an
    int, or a torch/cupy stream object); None on a CUDA context takes torch's
    current stream of that device when torch is importable, else the legacy
    default stream. n_threads: CPU workers, 0 = one per core. log: a callable
    (level: LogLevel, message: str), called from the threads that call the
    library. log_level: the least level passed to log ("debug" ... "none").

    Like the C handle, a Context is used by one thread at a time. close() (or
    leaving a with-block) frees it, after closing the layers made from it.
    """

    def __init__(self, device="cpu", cuda_device=0, stream=None, n_threads=0, log=None, log_level=LogLevel.WARN):
        L = lib()
        self._h = None
        self._layers = weakref.WeakSet()
        dev = _enum(Device, device, "device")
        p = L.moe_ctx_default_params()
        p.device = int(dev)
        p.cuda_device = int(cuda_device)
        if dev == Device.CUDA and stream is None:
            t = B.torch_module()
            if t is not None and t.cuda.is_available():
                stream = t.cuda.current_stream(int(cuda_device)).cuda_stream
        p.cuda_stream = _stream_ptr(stream)
        p.n_threads = int(n_threads)
        self._log = log
        self._log_fn = None
        if log is not None:
            def trampoline(level, msg, user):
                try:
                    lv = LogLevel(level)
                except ValueError:
                    lv = level
                log(lv, cstr(msg))

            self._log_fn = LOG_FN(trampoline)  # kept alive as long as the context
            p.log = self._log_fn
        p.log_level = int(_enum(LogLevel, log_level, "log_level", {"warning": LogLevel.WARN}))
        h = ctypes.c_void_p()
        s = L.moe_ctx_create(ctypes.byref(p), ctypes.byref(h))
        _check_ctx(s, None)  # a failed create reports through the NULL context
        self._h = h.value
        self._params = p
        self.stream = p.cuda_stream or 0

    def _handle(self):
        if self._h is None:
            raise ValueError("the Context is closed")
        return self._h

    @property
    def device(self):
        return Device(lib().moe_ctx_device(self._handle()))

    @property
    def cuda_device(self):
        return int(self._params.cuda_device)

    @property
    def n_threads(self):
        return int(lib().moe_ctx_n_threads(self._handle()))

    @property
    def last_error(self):
        return cstr(lib().moe_ctx_last_error(self._handle()))

    @property
    def closed(self):
        return self._h is None

    def close(self):
        if self._h is None:
            return
        for layer in list(self._layers):
            layer.close()
        lib().moe_ctx_free(self._h)
        self._h = None

    def __repr__(self):
        if self._h is None:
            return "<libmoe.Context closed>"
        return "<libmoe.Context %s threads=%d>" % (self.device.name.lower(), self.n_threads)

    # memory-space checks for forward-time buffers, which the library cannot check
    def _check_space(self, buf, what):
        if self.device == Device.CPU:
            if buf.mem != Mem.HOST:
                _raise(Status.ERR_MEMORY_SPACE, "%s is in %s but the context is a CPU context: pass host memory"
                       % (what, buf.where()))
        else:
            if buf.mem != Mem.DEVICE:
                _raise(Status.ERR_MEMORY_SPACE, "%s is in host memory but the context is a CUDA context: pass "
                       "device memory of CUDA device %d" % (what, self.cuda_device))
            if buf.device_index is not None and buf.device_index != self.cuda_device:
                _raise(Status.ERR_MEMORY_SPACE, "%s is on CUDA device %d but the context uses CUDA device %d"
                       % (what, buf.device_index, self.cuda_device))


# ---------------------------------------------------------------------------
# buffers for calls
# ---------------------------------------------------------------------------


def _input(ctx, x, what, kinds, shape, convert_dtype):
    """A row-major buffer of one of kinds for a forward-time input. Host
    arrays that are not row-major (or are lists) are copied; device tensors
    must already be."""
    if not (isinstance(x, np.ndarray) or B.is_torch(x) or hasattr(x, "__cuda_array_interface__")):
        x = np.asarray(x, dtype=convert_dtype)
    b = B.wrap(x, what)
    if b.kind not in kinds:
        raise TypeError("%s: dtype %s, expected %s" % (what, b.kind, " or ".join(kinds)))
    if tuple(b.shape) != tuple(shape):
        raise ValueError("%s: shape %s, expected %s" % (what, list(b.shape), list(shape)))
    ctx._check_space(b, what)
    if not b.contiguous:
        if b.mem == Mem.HOST:
            b = B.wrap(x.contiguous() if b.lib == "torch" else np.ascontiguousarray(x), what)
        else:
            raise ValueError("%s: a non-contiguous device tensor (strides %s); pass a contiguous one"
                             % (what, list(b.strides)))
    return b


def _output(ctx, out, what, kinds, shape):
    b = B.wrap(out, what)
    if b.kind not in kinds:
        raise TypeError("%s: dtype %s, expected %s" % (what, b.kind, " or ".join(kinds)))
    if tuple(b.shape) != tuple(shape):
        raise ValueError("%s: shape %s, expected %s" % (what, list(b.shape), list(shape)))
    if not b.contiguous:
        raise ValueError("%s: must be contiguous (row-major), strides %s" % (what, list(b.strides)))
    if b.lib == "numpy" and not out.flags.writeable:
        raise ValueError("%s: a read-only array" % what)
    ctx._check_space(b, what)
    return b


def _empty_like_space(like, shape, t_np, t_torch_name, ctx):
    """An empty array in the same place as the Buf like (numpy on the host,
    else torch on like's device)."""
    if like.lib == "torch":
        t = B.torch_module()
        return t.empty(shape, dtype=getattr(t, t_torch_name), device=like.obj.device)
    if like.mem == Mem.HOST:
        return np.empty(shape, dtype=t_np)
    t = B.torch_module()
    if t is None:
        raise RuntimeError("allocating CUDA memory needs torch; pass out= (and workspace=) allocated yourself")
    return t.empty(shape, dtype=getattr(t, t_torch_name), device="cuda:%d" % ctx.cuda_device)


# ---------------------------------------------------------------------------
# Layer
# ---------------------------------------------------------------------------

_WEIGHTS = ("gate", "up", "gate_up", "down")
_BIASES = ("gate_bias", "up_bias", "gate_up_bias", "down_bias")


class Layer(_Handle):
    """moe_layer: one MoE expert layer over BORROWED weights.

    Weights (numpy arrays or torch tensors, never copied by the binding; the
    Layer keeps a reference to each so that they stay alive, and they must not
    be changed while the layer lives):
        SEPARATE:  gate [E, I, D] (gated activations only), up [E, I, D]
        CONCAT / INTERLEAVED: gate_up [E, 2I, D]
        down [E, D, I]
        biases: gate_bias/up_bias [E, I], gate_up_bias [E, 2I], down_bias [E, D]
    Dense weights may have any non-negative strides (element strides are
    passed to the library). Block-quantised weights are uint8 arrays [E, N,
    row_bytes] (row_bytes = type_row_bytes(type, C)) or any contiguous byte
    array of that size.

    wtype: the type of the projection weights when the dtype does not say it
    (uint16 bits: "bf16"; uint8 bytes: "q4_K", ...); a single type or a dict
    {"gate": ..., "up": ..., "gate_up": ..., "down": ...}. bias_type: the same
    for the biases. act: "swiglu", "geglu_tanh", "geglu_erf", "swiglu_oai",
    "silu", "gelu", "relu2" (or an Act). layout: "separate", "concat",
    "interleaved"; default: "concat" when gate_up is given, else "separate".
    act_type: the dtype of x and out: "f32" (default), "f16", "bf16".
    backend: force a backend by name ("ref", "cpu", ...); None = automatic.
    """

    def __init__(self, ctx, E, D, I, K, gate=None, up=None, gate_up=None, down=None, gate_bias=None, up_bias=None,
                 gate_up_bias=None, down_bias=None, act=Act.SWIGLU, layout=None, alpha=1.702, limit=7.0,
                 act_type=Type.F32, backend=None, wtype=None, bias_type=None):
        self._h = None
        if not isinstance(ctx, Context):
            raise TypeError("ctx: expected a libmoe.Context, got %s" % type(ctx).__name__)
        L = lib()
        self.ctx = ctx
        self.E, self.D, self.I, self.K = int(E), int(D), int(I), int(K)
        self.act = _enum(Act, act, "act", _ACT_ALIASES)
        if layout is None:
            layout = Layout.CONCAT if gate_up is not None else Layout.SEPARATE
        self.layout = _enum(Layout, layout, "layout")
        self.act_type = as_type(act_type, "act_type")
        d = L.moe_layer_desc_default()
        d.E, d.D, d.I, d.K = self.E, self.D, self.I, self.K
        d.act = int(self.act)
        d.alpha = float(alpha)
        d.limit = float(limit)
        d.layout = int(self.layout)
        d.act_type = int(self.act_type)
        self._weights = {}  # borrowed by the library: kept alive here
        args = dict(gate=gate, up=up, gate_up=gate_up, down=down, gate_bias=gate_bias, up_bias=up_bias,
                    gate_up_bias=gate_up_bias, down_bias=down_bias)
        Ev, Dv, Iv = self.E, self.D, self.I
        shapes = {"gate": (Ev, Iv, Dv), "up": (Ev, Iv, Dv), "gate_up": (Ev, 2 * Iv, Dv), "down": (Ev, Dv, Iv),
                  "gate_bias": (Ev, Iv, 1), "up_bias": (Ev, Iv, 1), "gate_up_bias": (Ev, 2 * Iv, 1),
                  "down_bias": (Ev, Dv, 1)}
        for name, arr in args.items():
            if arr is None:
                continue
            spec = wtype if name in _WEIGHTS else bias_type
            if isinstance(spec, dict):
                spec = spec.get(name)
            buf = B.wrap(arr, name)
            t = B.resolve_type(buf, as_type(spec, name + " type"), name)
            bs, bb = int(L.moe_type_block_size(int(t))), int(L.moe_type_block_bytes(int(t)))
            C = shapes[name][2]
            if (name in _BIASES and t not in B.DENSE) or C % bs:
                strides = (0, 0, 0)  # the library rejects it, with its own message, before reading anything
            else:
                strides = B.weight_strides(buf, t, shapes[name], name, bs, bb, C // bs * bb)
            tt = moe_tensor(buf.ptr, int(t), int(buf.mem), *strides)
            setattr(d, name, tt)
            self._weights[name] = buf.obj
        self.wtypes = {n: Type(getattr(d, n).type) for n in self._weights}
        bname = backend.encode() if isinstance(backend, str) else backend
        d.backend = bname  # not kept by the library
        h = ctypes.c_void_p()
        s = L.moe_layer_create(ctx._handle(), ctypes.byref(d), ctypes.byref(h))
        _check_ctx(s, ctx._handle())
        self._h = h.value
        self._desc = d
        self._ws = {}  # T -> workspace buffer
        self._ws_size = {}  # T -> bytes
        ctx._layers.add(self)

    def _handle(self):
        if self._h is None:
            raise ValueError("the Layer is closed")
        return self._h

    @property
    def backend(self):
        """The name of the backend the layer runs on ("ref", "cpu", ...)."""
        return cstr(lib().moe_layer_backend(self._handle()))

    @property
    def last_error(self):
        return cstr(lib().moe_layer_last_error(self._handle()))

    @property
    def weights(self):
        """The borrowed weight arrays, by desc field name."""
        return dict(self._weights)

    def workspace_size(self, T):
        """Bytes of workspace a forward of T tokens needs."""
        if int(T) in self._ws_size:
            return self._ws_size[int(T)]
        n = ctypes.c_size_t()
        _check_layer(lib().moe_layer_workspace_size(self._handle(), int(T), ctypes.byref(n)), self._handle())
        self._ws_size[int(T)] = n.value
        return n.value

    def describe(self, T):
        """One line saying which backend and kernels a forward of T tokens runs."""
        buf = ctypes.create_string_buffer(1024)
        _check_layer(lib().moe_layer_describe(self._handle(), int(T), buf, len(buf)), self._handle())
        return cstr(buf.value)

    def _workspace(self, T, like):
        need = self.workspace_size(T)
        if need == 0:
            return None, 0
        ws = self._ws.get(T)
        if ws is None:
            if self.ctx.device == Device.CPU:
                raw = np.empty(need + 64, dtype=np.uint8)
                off = (-raw.__array_interface__["data"][0]) % 64
                ws = raw[off:off + need]
            else:
                ws = _empty_like_space(like, (need,), np.uint8, "uint8", self.ctx)
            self._ws[T] = ws
        return B.wrap(ws, "workspace").ptr, need

    def clear_workspace(self):
        """Drops the cached workspaces (one per T seen)."""
        self._ws.clear()

    def forward(self, x, topk_ids, topk_weights, out=None, workspace=None):
        """out[T, D] = the layer applied to x[T, D] (act_type) routed by
        topk_ids[T, K] (int32) and topk_weights[T, K] (float32). out is
        allocated (numpy for numpy x, a torch tensor on x's device for torch x)
        unless given; the workspace is allocated once per T and cached unless
        given. On a CUDA context the call is asynchronous on ctx's stream."""
        h = self._handle()
        kinds = {Type.F32: ("f32",), Type.F16: ("f16", "u16"), Type.BF16: ("bf16", "u16")}[self.act_type]
        np_act = B.np_dtype(self.act_type)
        xv = x
        if not (isinstance(x, np.ndarray) or B.is_torch(x) or hasattr(x, "__cuda_array_interface__")):
            xv = np.asarray(x, dtype=np_act)
        xshape = B.wrap(xv, "x").shape
        if len(xshape) != 2:
            raise ValueError("x: shape %s, expected [T, D = %d]" % (list(xshape), self.D))
        T = int(xshape[0])
        xb = _input(self.ctx, xv, "x", kinds, (T, self.D), np_act)
        ib = _input(self.ctx, topk_ids, "topk_ids", ("i32",), (T, self.K), np.int32)
        wb = _input(self.ctx, topk_weights, "topk_weights", ("f32",), (T, self.K), np.float32)
        if out is None:
            out = _empty_like_space(xb, (T, self.D), np_act, {Type.F32: "float32", Type.F16: "float16",
                                                             Type.BF16: "bfloat16"}[self.act_type], self.ctx)
        ob = _output(self.ctx, out, "out", kinds, (T, self.D))
        if workspace is not None:
            wsb = _output(self.ctx, workspace, "workspace", ("u8",), tuple(B.wrap(workspace, "workspace").shape))
            ws_ptr, ws_n = wsb.ptr, wsb.itemsize * int(np.prod(wsb.shape))
        else:
            ws_ptr, ws_n = self._workspace(T, xb)
        s = lib().moe_layer_forward(h, T, xb.ptr, ib.ptr, wb.ptr, ob.ptr, ws_ptr, ws_n)
        _check_layer(s, h)
        return out

    __call__ = forward

    @property
    def closed(self):
        return self._h is None

    def close(self):
        if self._h is None:
            return
        lib().moe_layer_free(self._h)
        self._h = None
        self._ws.clear()
        self._weights.clear()

    def __repr__(self):
        if self._h is None:
            return "<libmoe.Layer closed>"
        return "<libmoe.Layer E=%d D=%d I=%d K=%d %s %s backend=%s>" % (
            self.E, self.D, self.I, self.K, self.act.name.lower(), self.layout.name.lower(), self.backend)


# ---------------------------------------------------------------------------
# routing
# ---------------------------------------------------------------------------


def route_topk(ctx, logits, K, score=Score.SOFTMAX, renormalize=False, score_bias=None, n_group=0, topk_group=0,
               routed_scaling=1.0, out_ids=None, out_weights=None):
    """moe_route_topk: router logits [T, E] float32 -> (topk_ids [T, K] int32,
    topk_weights [T, K] float32), best first, ties to the lower index.
    score: "softmax" or "sigmoid". score_bias: [E] float32, added for the
    selection only. n_group/topk_group: grouped top-k (n_group <= 1: off).
    Outputs are allocated like logits (numpy, or torch on its device) unless
    given. On a CUDA context the call is asynchronous on ctx's stream."""
    if not isinstance(ctx, Context):
        raise TypeError("ctx: expected a libmoe.Context, got %s" % type(ctx).__name__)
    h = ctx._handle()
    lv = logits
    if not (isinstance(lv, np.ndarray) or B.is_torch(lv) or hasattr(lv, "__cuda_array_interface__")):
        lv = np.asarray(lv, dtype=np.float32)
    shape = B.wrap(lv, "logits").shape
    if len(shape) != 2:
        raise ValueError("logits: shape %s, expected [T, E]" % list(shape))
    T, E = int(shape[0]), int(shape[1])
    lb = _input(ctx, lv, "logits", ("f32",), (T, E), np.float32)
    p = lib().moe_route_params_default()
    p.E, p.K = E, int(K)
    p.score = int(_enum(Score, score, "score"))
    p.renormalize = 1 if renormalize else 0
    keep = None
    if score_bias is not None:
        bb = _input(ctx, score_bias, "score_bias", ("f32",), (E,), np.float32)
        p.score_bias = bb.ptr
        keep = bb  # noqa: F841  alive until the call returns
    p.n_group, p.topk_group = int(n_group), int(topk_group)
    p.routed_scaling = float(routed_scaling) if routed_scaling is not None else math.nan
    Kout = max(int(K), 0)
    if out_ids is None:
        out_ids = _empty_like_space(lb, (T, Kout), np.int32, "int32", ctx)
    if out_weights is None:
        out_weights = _empty_like_space(lb, (T, Kout), np.float32, "float32", ctx)
    ob = _output(ctx, out_ids, "topk_ids", ("i32",), (T, Kout))
    wb = _output(ctx, out_weights, "topk_weights", ("f32",), (T, Kout))
    s = lib().moe_route_topk(h, ctypes.byref(p), T, lb.ptr, ob.ptr, wb.ptr)
    del keep
    _check_ctx(s, h)
    return out_ids, out_weights


# ---------------------------------------------------------------------------
# quantisation
# ---------------------------------------------------------------------------


def quantize_row(t, src):
    """f32 values -> elements of type t, as uint8 bytes. src: float32 [..., n]
    (n a multiple of the block size); returns uint8 [..., type_row_bytes(t, n)].
    Blocks are made the way GGUF's reference quantizers make them."""
    t = as_type(t)
    src = np.ascontiguousarray(src, dtype=np.float32)
    if src.ndim == 0:
        raise ValueError("src: expected at least one dimension")
    n = src.shape[-1]
    rb = type_row_bytes(t, n)
    if rb < 0:
        _raise(Status.ERR_BLOCK_SHAPE, "quantize_row: n = %d is not a multiple of %d, required by %s"
               % (n, type_block_size(t), type_name(t)))
    rows = int(np.prod(src.shape[:-1]))
    dst = np.empty(src.shape[:-1] + (rb,), dtype=np.uint8)
    if rows * n:
        _check_ctx(lib().moe_quantize_row(int(t), src.ctypes.data, dst.ctypes.data, rows * n), None)
    return dst


def dequantize_row(t, src, n=None):
    """Elements of type t -> float32. src: uint8 bytes [..., row_bytes] (or,
    for dense types, an array of that dtype [..., n]); n: elements per row,
    by default what row_bytes holds. Returns float32 [..., n]."""
    t = as_type(t)
    src = np.ascontiguousarray(src)
    if src.dtype != np.uint8:
        if t in B.DENSE and src.dtype.itemsize == (4 if t == Type.F32 else 2):
            src = src.view(np.uint8)
        else:
            raise TypeError("src: dtype %s; expected uint8 bytes of %s" % (src.dtype, type_name(t)))
    if src.ndim == 0:
        raise ValueError("src: expected at least one dimension")
    rb = src.shape[-1]
    bs, bb = type_block_size(t), type_block_bytes(t)
    if n is None:
        if bb == 0 or rb % bb:
            _raise(Status.ERR_BLOCK_SHAPE, "dequantize_row: %d bytes is not a whole number of %d-byte %s blocks"
                   % (rb, bb, type_name(t)))
        n = rb // bb * bs
    n = int(n)
    if type_row_bytes(t, n) != rb:
        raise ValueError("src: rows of %d bytes, but %d elements of %s take %d" % (rb, n, type_name(t),
                                                                                 type_row_bytes(t, n)))
    rows = int(np.prod(src.shape[:-1]))
    dst = np.empty(src.shape[:-1] + (n,), dtype=np.float32)
    if rows * n:
        _check_ctx(lib().moe_dequantize_row(int(t), src.ctypes.data, dst.ctypes.data, rows * n), None)
    return dst
