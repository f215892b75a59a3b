"""libmoe: a thin ctypes binding of the libmoe C library (include/moe.h).

    import numpy as np, libmoe
    with libmoe.Context("cpu") as ctx:
        layer = libmoe.Layer(ctx, E, D, I, K, gate=g, up=u, down=dn, act="swiglu")
        ids, w = libmoe.route_topk(ctx, logits, K, score="softmax", renormalize=True)
        out = layer.forward(x, ids, w)

The shared library is found through $MOE_LIB, else ../../build/libmoe.so
relative to this package, else ctypes.util.find_library("moe"); it is loaded
on first use. Arrays are numpy arrays (host) or torch tensors (CPU or CUDA)
when torch is importable. Weights are BORROWED by the library: the Layer keeps
a reference to each array, and they must stay unchanged while it lives.
Failures raise MoeError(status, name, message) with the library's message.
"""
from ._ffi import C_NAMES, Act, Device, Layout, LogLevel, Mem, Score, Status, Type, check_layout, lib, lib_path
from ._api import (Context, Layer, MoeError, act_is_gated, as_type, dequantize_row, quantize_row, route_topk,
                   status_name, status_string, type_block_bytes, type_block_size, type_name, type_row_bytes,
                   version, version_number)

globals().update(C_NAMES)  # MOE_OK, MOE_ERR_..., MOE_TYPE_Q4_K, MOE_ACT_SWIGLU, MOE_GATE_UP_CONCAT, ...

__version__ = "0.1.0"

__all__ = ["Act", "Context", "Device", "Layer", "Layout", "LogLevel", "Mem", "MoeError", "Score", "Status", "Type",
           "act_is_gated", "as_type", "check_layout", "dequantize_row", "lib", "lib_path", "quantize_row",
           "route_topk", "status_name", "status_string", "type_block_bytes", "type_block_size", "type_name",
           "type_row_bytes", "version", "version_number"] + sorted(C_NAMES)
