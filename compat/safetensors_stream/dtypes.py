"""safetensors dtypes, their sizes, and the float conversions --dtype makes (one chunk at a time, numpy)."""

from __future__ import annotations

# Every dtype the safetensors library reads (0.8, safetensors/src/tensor.rs Dtype) and its size in bits.
DTYPE_BITS = {
    "BOOL": 8, "F4": 4, "F6_E2M3": 6, "F6_E3M2": 6, "U8": 8, "I8": 8,
    "F8_E5M2": 8, "F8_E4M3": 8, "F8_E8M0": 8, "F8_E4M3FNUZ": 8, "F8_E5M2FNUZ": 8,
    "I16": 16, "U16": 16, "F16": 16, "BF16": 16, "I32": 32, "U32": 32, "F32": 32,
    "C64": 64, "F64": 64, "I64": 64, "U64": 64,
}
# The ones compat reads and writes: whole bytes per element (the sub-byte F4/F6 packings are refused).
DTYPE_SIZES = {name: bits // 8 for name, bits in DTYPE_BITS.items() if bits % 8 == 0}
FLOAT_DTYPES = {"F16", "BF16", "F32"}  # the ones --dtype converts between
DTYPE_NAMES = {"bfloat16": "BF16", "float16": "F16", "float32": "F32"}  # --dtype / torch_dtype spellings


def convert_chunk(data: memoryview, src: str, dst: str) -> bytes:
    """Elementwise float conversion, so chunks need only be element-aligned."""
    import numpy as np

    if src == dst:
        return bytes(data)
    values = _to_float32(np.frombuffer(data, dtype=_NUMPY_STORAGE[src]), src)
    return _from_float32(values, dst).tobytes()


_NUMPY_STORAGE = {"F32": "<f4", "F16": "<f2", "BF16": "<u2"}


def _to_float32(array, dtype: str):
    import numpy as np

    if dtype == "BF16":  # bf16 is the top half of a float32
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float32)


def _from_float32(values, dtype: str):
    import numpy as np

    if dtype == "F32":
        return values.astype("<f4")
    if dtype == "F16":
        return values.astype("<f2")
    bits = values.astype("<f4").view(np.uint32)
    # round to nearest even; NaNs keep a quiet-NaN payload instead of rounding into infinity
    rounded = ((bits + np.uint32(0x7FFF) + ((bits >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)).astype(np.uint16)
    nan = np.isnan(values)
    if nan.any():
        rounded[nan] = ((bits[nan] >> np.uint32(16)) | np.uint32(0x0040)).astype(np.uint16)
    return rounded
