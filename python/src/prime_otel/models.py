"""The types of ``prime_runs`` that a trainer passes to ``init()`` and ``finish()``,
with the same names and fields, so that code written against the platform SDK
needs only its import changed."""

import os
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Dict, Literal, Mapping, Optional, Union

from .errors import ConfigurationError

RunKind = Literal["train", "eval"]
Mode = Literal["online", "disabled"]
OnError = Literal["warn", "raise"]


class RunStatus(str, Enum):
    """How a run ended. ``failed``: the trainer said so; ``crashed``: it was
    stopped from outside its control flow (the process exited without saying,
    a signal, Ctrl-C), as ``prime_runs`` reports those; ``cancelled`` is
    accepted from a trainer that says so."""

    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    CRASHED = "crashed"

    def is_terminal(self) -> bool:
        return self is not RunStatus.RUNNING


@dataclass
class TrainingSpec:
    """What the dashboard shows of a training run besides its model and environments."""

    max_steps: Optional[int] = None
    batch_size: Optional[int] = None
    rollouts_per_example: Optional[int] = None
    seq_len: Optional[int] = None

    def attributes(self) -> Dict[str, int]:
        out: Dict[str, int] = {}
        for name in ("max_steps", "batch_size", "rollouts_per_example", "seq_len"):
            value = getattr(self, name)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ConfigurationError(f"TrainingSpec.{name} must be an int >= 0, got {value!r}")
            out[f"prime.training.{name}"] = value
        return out


@dataclass
class EnvironmentRef:
    """An environment as the trainer names it: a name, an ``owner/name`` slug or
    an id, optionally pinned to a version. The collector resolves it."""

    name: Optional[str] = None
    id: Optional[str] = None
    version_id: Optional[str] = None
    slug: Optional[str] = None

    def __post_init__(self) -> None:
        if not self.name and not self.slug and not self.id:
            raise ValueError("EnvironmentRef needs a name, slug or id")

    @classmethod
    def coerce(cls, value: Any) -> "EnvironmentRef":
        if isinstance(value, EnvironmentRef):
            return value
        if isinstance(value, str):
            return cls(slug=value) if "/" in value else cls(name=value)
        if isinstance(value, Mapping):
            return cls(
                name=value.get("name"),
                slug=value.get("slug"),
                id=value.get("id"),
                version_id=value.get("version_id"),
            )
        raise TypeError(
            f"environments entries must be a str, dict or EnvironmentRef, got {type(value).__name__}"
        )

    def wire(self) -> str:
        """The form ``prime.run.environments`` takes: ``env`` or ``env@version``."""
        base = self.slug or self.name or self.id or ""
        return f"{base}@{self.version_id}" if self.version_id else base


CONFIG_SOURCE_KEY = "config_source"
MAX_CONFIG_SOURCE_BYTES = 256 * 1024
_FORMATS = {".toml": "toml", ".json": "json", ".yaml": "yaml", ".yml": "yaml"}


@dataclass
class ConfigSource:
    """The config file a run was started from, kept byte for byte."""

    text: str
    format: str = "toml"
    filename: Optional[str] = None

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise TypeError("ConfigSource.text must be a string")
        if len(self.text.encode("utf-8")) > MAX_CONFIG_SOURCE_BYTES:
            raise ConfigurationError(
                f"the config source is over the {MAX_CONFIG_SOURCE_BYTES}-byte limit for a stored run config"
            )

    def to_dict(self) -> Dict[str, Any]:
        data: Dict[str, Any] = {"format": self.format, "text": self.text}
        if self.filename:
            data["filename"] = self.filename
        return data

    @classmethod
    def from_file(cls, path: Union[str, "os.PathLike[str]"]) -> "ConfigSource":
        resolved = Path(path)
        try:
            raw = resolved.read_bytes()
        except OSError as exc:
            raise ConfigurationError(f"config={str(path)!r} could not be read: {exc}") from exc
        if len(raw) > MAX_CONFIG_SOURCE_BYTES:
            raise ConfigurationError(
                f"config={str(path)!r} is {len(raw)} bytes, over the {MAX_CONFIG_SOURCE_BYTES}-byte limit"
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ConfigurationError(f"config={str(path)!r} is not UTF-8 text") from exc
        return cls(text=text, format=_FORMATS.get(resolved.suffix.lower(), "text"), filename=resolved.name)

    @classmethod
    def from_mapping(cls, value: Mapping[str, Any]) -> Optional["ConfigSource"]:
        """Rebuilt from its stored form (``to_dict``); ``None`` when the mapping is not one."""
        text = value.get("text")
        if not isinstance(text, str):
            return None
        raw_format, raw_filename = value.get("format"), value.get("filename")
        return cls(text=text, format=str(raw_format) if raw_format else "toml", filename=str(raw_filename) if raw_filename else None)

    @classmethod
    def coerce(cls, value: Any) -> Optional["ConfigSource"]:
        """What a caller gave as a config source: a ``ConfigSource``, its stored
        mapping, or a path (a ``str`` is always a path, never inline text)."""
        if value is None or isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            source = cls.from_mapping(value)
            if source is None:
                raise ValueError("a config source mapping must hold a 'text' string")
            return source
        if isinstance(value, (str, os.PathLike)):
            return cls.from_file(value)
        raise TypeError(f"a config source is a path, a ConfigSource or a mapping, got {type(value).__name__}")


def normalize_config(value: Any) -> Dict[str, Any]:
    """A run's config as a dict: a mapping as given, a path (or ConfigSource)
    as the file's text under ``config_source``, as the platform SDK stores it."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, ConfigSource):
        return {CONFIG_SOURCE_KEY: value.to_dict()}
    if isinstance(value, (str, os.PathLike)):
        return {CONFIG_SOURCE_KEY: ConfigSource.from_file(value).to_dict()}
    raise TypeError(f"config must be a path to the run's config file or a mapping, got {type(value).__name__}")


@dataclass
class RunSpec:
    """``init()``'s arguments after checking: what the collector is told about the run."""

    kind: RunKind = "eval"
    name: Optional[str] = None
    model: Optional[str] = None
    environments: list = field(default_factory=list)
    training: Optional[TrainingSpec] = None
    config: Dict[str, Any] = field(default_factory=dict)
    team_id: Optional[str] = None
    framework: Optional[str] = None
    description: Optional[str] = None
    tags: list = field(default_factory=list)
    summary: Dict[str, Any] = field(default_factory=dict)
