"""The Events the node pipeline posts, behind one narrow sink (Kubernetes' EventRecorder).

The parts report what happened (``rule_broken``, ``node_updated``); the composition decides
whether that becomes an Event: nfd-master posts them (a broken rule only while it leads),
a masterless worker posts none (thousands of workers would each post the same Event).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from nfd.k8s.client import ApiClient

Spawn = Callable[[Coroutine[Any, Any, Any]], None]


class EventSink(Protocol):
    def rule_broken(self, obj: dict[str, Any], msg: str, *, reason: str = "InvalidRule") -> None:
        """A rule object is invalid or over its budget (the caller has logged it)."""

    def node_updated(self, node_metadata: dict[str, Any], message: str) -> None:
        """A write removed something nfd owned from the Node (``message``: what changed)."""


class NoEvents:
    """Posts nothing (masterless mode; a core without a cluster-wide view)."""

    def rule_broken(self, obj: dict[str, Any], msg: str, *, reason: str = "InvalidRule") -> None:
        pass

    def node_updated(self, node_metadata: dict[str, Any], message: str) -> None:
        pass


class ApiEvents:
    """Posts nfd-master's Events in the background (``spawn``): Warnings on NodeFeatureRules
    while ``leading()``, and FeaturesUpdated on Nodes."""

    def __init__(self, write_api: ApiClient, *, spawn: Spawn, leading: Callable[[], bool]) -> None:
        self.write_api = write_api
        self.spawn = spawn
        self.leading = leading

    def rule_broken(self, obj: dict[str, Any], msg: str, *, reason: str = "InvalidRule") -> None:
        if not self.leading():
            return
        # here, not at the top: masterless mode (NoEvents) loads no Event poster and no Lease
        # code (~2.3 ms; tests/unit/worker/test_worker_imports.py)
        from nfd.k8s.events import post_event

        involved = dict(obj)
        involved.setdefault("apiVersion", "nfd.k8s-sigs.io/v1alpha1")
        involved.setdefault("kind", "NodeFeatureRule")
        self.spawn(
            post_event(
                self.write_api,
                # NodeFeatureRules are cluster-scoped: the API server takes their Events in
                # "default" only ("involvedObject.namespace ... does not match event.namespace")
                namespace="default",
                involved=involved,
                reason=reason,
                message=msg,
                component="nfd-master",
                type_="Warning",
            )
        )

    def node_updated(self, node_metadata: dict[str, Any], message: str) -> None:
        # here, not at the top: masterless mode (NoEvents) loads no Event poster and no Lease
        # code (~2.3 ms; tests/unit/worker/test_worker_imports.py)
        from nfd.k8s.events import post_event

        involved = {"apiVersion": "v1", "kind": "Node", "metadata": node_metadata}
        self.spawn(
            post_event(
                self.write_api,
                namespace="default",
                involved=involved,
                reason="FeaturesUpdated",
                message=message,
                component="nfd-master",
            )
        )
