"""Python values as OTLP can carry them, taken as the trainer meant them.

The OTel Python SDK knows str, bool, int, float, bytes, lists and dicts. It
sends any other attribute value as its ``str()`` and, worse, raises on any
other value inside a log body and drops the whole export batch with it: one
``np.float32`` among 512 episodes loses all 512. Trainers hold numpy and torch
scalars more often than not, so every value is made plain here, before it
reaches the SDK: scalars through ``.item()``, arrays through ``.tolist()``,
tuples and sets as lists, mapping keys as strings, anything else as its
``str()``. Nothing the trainer logs can then fail an export.
"""

import json
import math
from collections.abc import Mapping
from typing import Any, Dict, List, Sequence, Tuple

_PLAIN = (str, bool, int, float, bytes, type(None))


def plain(value: Any) -> Any:
    """``value`` with every part of it a type the OTel SDK encodes."""
    if isinstance(value, _PLAIN):
        # np.float64 is a float subclass and bool an int subclass: keep the
        # base type so the encoder never sees a subclass it might special-case.
        if isinstance(value, float) and type(value) is not float:
            return float(value)
        if isinstance(value, int) and type(value) not in (int, bool):
            return int(value)
        return value
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(v) for v in value]
    tolist = getattr(value, "tolist", None)
    item = getattr(value, "item", None)
    shape = getattr(value, "shape", None)
    # A numpy scalar or a 0-d array/tensor has an empty shape and one item.
    if callable(item) and (shape is None or tuple(shape) == ()):
        try:
            return plain(item())
        except (TypeError, ValueError):
            pass
    if callable(tolist):
        try:
            return plain(tolist())
        except (TypeError, ValueError):
            pass
    return str(value)


def flatten(values: Mapping[str, Any], prefix: str = "") -> Dict[str, Any]:
    """Nested mappings as one level, keys joined with ``/`` (``{"a": {"b": 1}}``
    → ``{"a/b": 1}``), the way metric names already nest."""
    out: Dict[str, Any] = {}
    for key, value in values.items():
        name = f"{prefix}/{key}" if prefix else (key if type(key) is str else str(key))
        # A number is told by its type first: the Mapping check costs more.
        if type(value) is not float and type(value) is not int and isinstance(value, Mapping):
            out.update(flatten(value, name))
        else:
            out[name] = value
    return out


def scalars(values: Mapping[str, Any]) -> Tuple[Dict[str, Any], List[str], List[str]]:
    """The metric values of ``values``: flattened, plain, bools as 1 or 0.

    Returns the kept values, the names of the non-finite ones (dropped: JSON
    has no NaN, and the platform would refuse the row) and the names of
    values that are not numbers at all (dropped: a metric row holds numbers).
    """
    kept: Dict[str, Any] = {}
    non_finite: List[str] = []
    not_numbers: List[str] = []
    isfinite = math.isfinite
    for name, raw in flatten(values).items():
        kind = type(raw)
        if kind is float:
            if isfinite(raw):
                kept[name] = raw
            else:
                non_finite.append(name)
            continue
        if kind is int:
            kept[name] = raw
            continue
        value = plain(raw)
        if isinstance(value, bool):
            kept[name] = int(value)
        elif isinstance(value, int):
            kept[name] = value
        elif isinstance(value, float):
            if math.isfinite(value):
                kept[name] = value
            else:
                non_finite.append(name)
        else:
            not_numbers.append(name)
    return kept, non_finite, not_numbers


def json_text(value: Any) -> str:
    """``value`` as compact JSON text, made at the call so later changes to
    the trainer's objects cannot reach what is sent; non-finite numbers as
    ``null`` (``episode_json`` also says where they were)."""
    return episode_json(value)[0]


def episode_json(value: Any) -> Tuple[str, Sequence[str]]:
    """``value`` as compact JSON text, and the paths of the non-finite
    numbers in it (``trajectory[0].logprobs[3]``), which the text holds as
    ``null``: JSON has no words for them, and the exporter stores them so.

    The common case is one call of the C encoder, made once (see
    ``_encode``): numpy and torch values are taken through ``default``
    (``.item()``, ``.tolist()``), sets as lists. Only a document the encoder
    refuses (a non-finite number; a key that is not text or a number; a
    container that holds itself) is made plain and walked."""
    try:
        return _encode(value), ()
    except (ValueError, TypeError, RecursionError):
        pass
    made = plain(value)
    return json.dumps(finite(made), separators=(",", ":")), non_finite_paths(made)


def _json_default(value: Any) -> Any:
    converted = plain(value)  # any object json.dumps does not know, as the SDK would have it
    if isinstance(converted, bytes):
        return converted.decode("utf-8", "replace")
    return converted


_ENCODER = json.JSONEncoder(separators=(",", ":"), allow_nan=False, default=_json_default)


def _encoder() -> Any:
    """The encoder of an episode's text, made once.

    ``json.dumps`` (and ``JSONEncoder.encode``) build a new C encoder for
    every call, with a fresh dict to catch a container that holds itself:
    about 1 µs of Python a call, an eighth of the whole of a 2 KB episode.
    The C encoder built once with no such dict does the same work; a
    container that holds itself then ends in a ``RecursionError``, which
    ``episode_json`` takes like ``json.dumps``'s ``ValueError``. Without the C
    accelerator (another interpreter), the encoder object does it."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return _ENCODER.encode
    encode = make(None, _json_default, json.encoder.encode_basestring_ascii, None, ":", ",", False, False, False)
    join = "".join
    return lambda value: join(encode(value, 0))


_encode = _encoder()


def non_finite_paths(value: Any, path: str = "") -> List[str]:
    """Where the NaN and ±Inf are in a plain value: keys joined with ``.``,
    list indexes in brackets; ``value`` itself is ``path`` (``""`` at the top)."""
    if isinstance(value, float):
        return [] if math.isfinite(value) else [path or "(the value itself)"]
    found: List[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            found.extend(non_finite_paths(v, f"{path}.{k}" if path else str(k)))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found.extend(non_finite_paths(v, f"{path}[{i}]"))
    return found


def finite(value: Any) -> Any:
    """JSON has no NaN: a non-finite number becomes null, anywhere in ``value``."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, list):
        return [finite(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def drop_non_finite(values: Mapping[str, Any]) -> Dict[str, Any]:
    """A summary without NaN and ±Inf, as ``prime_runs`` keeps it: a
    non-finite value's key is left out, and a nested mapping left empty too."""
    out: Dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, float) and not math.isfinite(value):
            continue
        if isinstance(value, Mapping):
            nested = drop_non_finite(value)
            if nested:
                out[key] = nested
            continue
        out[key] = value
    return out
