"""Which confinement layers are active, as measured by a worker at start-up."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: Every layer a worker reports, in the order they are applied.
LAYER_NAMES: tuple[str, ...] = (
    "clean_environment",
    "fd_hygiene",
    "user_namespace",
    "mount_namespace",
    "network_namespace",
    "ipc_uts_namespace",
    "pid_namespace",
    "privilege_drop",
    "rlimits",
    "no_new_privs",
    "landlock",
    "seccomp",
    "audit_hook",
)


@dataclass(frozen=True)
class Layer:
    name: str
    active: bool
    detail: str


@dataclass(frozen=True)
class IsolationReport:
    """One `Layer` per name in `LAYER_NAMES`; `str()` renders a table."""

    layers: tuple[Layer, ...]

    def __getitem__(self, name: str) -> Layer:
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise KeyError(name)

    def active(self, name: str) -> bool:
        return self[name].active

    @property
    def active_names(self) -> frozenset[str]:
        return frozenset(layer.name for layer in self.layers if layer.active)

    def __str__(self) -> str:
        width = max(len(name) for name in LAYER_NAMES)
        return "\n".join(
            f"{layer.name:<{width}}  {'ACTIVE  ' if layer.active else 'inactive'}  {layer.detail}" for layer in self.layers
        )

    def to_wire(self) -> list[dict[str, Any]]:
        return [{"name": x.name, "active": x.active, "detail": x.detail} for x in self.layers]

    @classmethod
    def from_wire(cls, data: Any) -> IsolationReport:
        if not isinstance(data, list):
            raise ValueError("isolation report is not a list")
        layers = tuple(Layer(str(item["name"]), bool(item["active"]), str(item["detail"])) for item in data)
        if tuple(layer.name for layer in layers) != LAYER_NAMES:
            raise ValueError("isolation report has unexpected layers")
        return cls(layers)


class ReportBuilder:
    """Collects layer results in any order; `build()` fills the missing ones as inactive."""

    def __init__(self) -> None:
        self._layers: dict[str, Layer] = {}

    def set(self, name: str, active: bool, detail: str) -> None:
        if name not in LAYER_NAMES:
            raise KeyError(name)
        self._layers[name] = Layer(name, active, detail)

    def build(self) -> IsolationReport:
        return IsolationReport(tuple(self._layers.get(name, Layer(name, False, "not attempted")) for name in LAYER_NAMES))
