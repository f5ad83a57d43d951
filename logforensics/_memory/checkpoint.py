"""How large a checkpoint's weights are at least, from what its name and the flags say of it:
the parameter count a model name carries (``Llama-3.3-70B``, ``Qwen3-30B-A3B``) times the
bytes each parameter is stored in (``-FP8``/``--quantization fp8``: 1, ``-AWQ``: ½, else the
16-bit default: 2). A lower bound on purpose: a name with no count, or with a count that is
not the total (``8x7B``), or weights whose storage the name and flags do not settle (an
unknown quantization, GGUF) give no figure rather than a guess.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from .._lazyre import lazy

GIB = 1024**3
# the nominal count in a name may round up (Qwen2.5-0.5B has 0.49B): take this share of it
NOMINAL_SHARE = 0.95
# "72B", "0.5B", "27b": a whole token; not "A3B" (active parameters), "8x7B", "7b1"
_COUNT = lazy(r"(?<![A-Za-z\d.])(\d{1,4}(?:\.\d{1,2})?)[Bb](?![A-Za-z\d])")
# how the weights are stored, from the name or --quantization: the fewest bytes a hint allows
_FOUR_BIT = lazy(r"(?i)awq|gptq|int4|w4a|nvfp4|mxfp4|fp4|4bit|bnb|bitsandbytes|gpt-oss")  # gpt-oss: MXFP4
_EIGHT_BIT = lazy(r"(?i)fp8|int8|w8a|8bit|fbgemm|modelopt")
_SIXTEEN_BIT_DTYPES = {"auto", "bfloat16", "float16", "half", "bf16", "fp16"}
_THIRTY_TWO_BIT_DTYPES = {"float32", "float", "fp32"}
_UNSETTLED = lazy(r"(?i)gguf|exl2|hqq|quant")  # stored some way the name does not say


def is_quantized(model: str | None, quantization: str | None = None) -> bool:
    """``--quantization`` is set, or the model's name says its weights are stored in fewer bits."""
    name = (model or "").rstrip("/").rsplit("/", 1)[-1]
    return bool(quantization) or bool(_FOUR_BIT.search(name) or _EIGHT_BIT.search(name) or _UNSETTLED.search(name))


class CheckpointSize(NamedTuple):
    """The least the weights take: ``params_billion`` × ``bytes_per_param`` (``storage`` names how)."""

    params_billion: float
    bytes_per_param: float
    storage: str

    @property
    def gib(self) -> float:
        return NOMINAL_SHARE * self.params_billion * 1e9 * self.bytes_per_param / GIB

    def per_gpu_gib(self, shards: int) -> float:
        """Per GPU when the weights are split ``shards`` ways (TP × PP)."""
        return self.gib / max(1, shards)


def checkpoint_size(model: str | None, quantization: str | None = None,
                    dtype: str | None = None) -> CheckpointSize | None:
    """The checkpoint's least size from its name (the last path part), ``--quantization`` and
    ``--dtype``; ``None`` when they do not settle it."""
    if not model:
        return None
    name = model.rstrip("/").rsplit("/", 1)[-1]
    counts = {float(c) for c in _COUNT.findall(name)}
    if len(counts) != 1 or re.search(r"(?i)\d+x\d", name):
        return None
    params = counts.pop()
    hints = f"{name} {quantization or ''}"
    if _FOUR_BIT.search(hints):
        return CheckpointSize(params, 0.5, "4-bit")
    if _EIGHT_BIT.search(hints):
        return CheckpointSize(params, 1.0, "8-bit")
    if quantization or _UNSETTLED.search(name):
        return None
    stored = str(dtype or "auto").lower()
    if stored in _THIRTY_TWO_BIT_DTYPES:
        return CheckpointSize(params, 4.0, "float32")
    if stored in _SIXTEEN_BIT_DTYPES:
        return CheckpointSize(params, 2.0, "16-bit")
    return None
