"""nfd-master's check of the CRDs it runs under.

A cluster may serve an older release's NodeFeatureRule and NodeFeatureGroup CRDs (the GPU
Operator bundles NFD 0.19's, and Helm never upgrades a chart's CRDs). The API server then prunes
every field their schema lacks from every object it stores (``matchCEL``, say), so nfd-master
never sees it, and a rule that loses its last match term matches every node. The objects
themselves cannot tell: the field is gone before the master reads them.

``CrdCheck`` reads the two CRDs at start and watches them (one informer each, field-selected by
name: RBAC ``get``, ``list``, ``watch`` on those two ``customresourcedefinitions``); for each it
compares the served schema of ``v1alpha1`` with ours (crds/, nfd.api.schema.missing_fields).
Whenever the set of missing fields changes, it says so once: a log line, a Warning Event on the
CRD (posted while leading, or when leadership comes) and the gauge
``nfd_master_crd_missing_fields{crd}``. A CRD that cannot be read (no RBAC, a cluster without
it) is logged once and left alone: nothing else depends on it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from nfd.api.schema import SchemaUnavailable, missing_fields, object_schema, served_schema
from nfd.k8s import errors as kerr
from nfd.k8s.events import post_event
from nfd.k8s.fetching import get
from nfd.k8s.resources import CUSTOMRESOURCEDEFINITIONS, RULE_CRD_NAMES
from nfd.k8s.watching import Informer

if TYPE_CHECKING:
    from nfd.k8s.client import ApiClient
    from nfd.master.eventsink import Spawn
    from nfd.master.metrics import MasterMetrics

log = logging.getLogger("nfd.master")

KINDS = {"nodefeaturerules.nfd.k8s-sigs.io": "NodeFeatureRule", "nodefeaturegroups.nfd.k8s-sigs.io": "NodeFeatureGroup"}
UPGRADE = "upgrade the CRDs: kubectl apply --server-side --force-conflicts -k crds/ (docs/install.md)"
REASON = "OutdatedCRD"


def crd_gaps(name: str, crd: dict[str, Any] | None) -> list[str]:
    """The fields of ours that the served CRD ``crd`` would prune (generic paths such as
    ``spec.rules[].matchCEL``); ``["v1alpha1"]`` when it does not serve that version at all."""
    served = served_schema(crd) if crd is not None else None
    if served is None:
        return ["v1alpha1"]
    return missing_fields(object_schema(KINDS[name]), served)


def gaps_message(name: str, gaps: list[str]) -> str:
    if gaps == ["v1alpha1"]:
        return f"the cluster serves no {name} v1alpha1: nfd-master cannot read these objects; {UPGRADE}"
    return (f"the served CRD {name} lacks fields this nfd-master evaluates: {', '.join(gaps)}; the API server "
            "prunes them from every object it stores, so nfd-master never sees them (a rule left without a match "
            f"term matches every node); {UPGRADE}")


class CrdCheck:
    """Reads and watches the rule CRDs (see the module doc); ``leading()`` gates the Events."""

    def __init__(self, api: ApiClient, *, write_api: ApiClient, metrics: MasterMetrics, spawn: Spawn,
                 leading: Callable[[], bool]) -> None:
        self.api = api
        self.write_api = write_api
        self.metrics = metrics
        self.spawn = spawn
        self.leading = leading
        self.gaps: dict[str, list[str]] = {}
        self._unpostable: dict[str, tuple[dict[str, Any], str]] = {}  # Events waiting for leadership
        self._unreadable = False
        self.informers = [Informer(api, CUSTOMRESOURCEDEFINITIONS, field_selector=f"metadata.name={n}")
                          for n in RULE_CRD_NAMES]
        for n, inf in zip(RULE_CRD_NAMES, self.informers, strict=True):
            inf.on_event(self._handler(n))

    def _handler(self, name: str) -> Callable[[str, dict[str, Any], dict[str, Any] | None], None]:
        def on_event(etype: str, obj: dict[str, Any], old: dict[str, Any] | None) -> None:
            self.check(name, None if etype == "DELETED" else obj)

        return on_event

    async def start(self) -> None:
        """Read both CRDs now (so the first rules are judged with them known), then watch them."""
        for name in RULE_CRD_NAMES:
            try:
                obj = await get(self.api, CUSTOMRESOURCEDEFINITIONS, name=name)
            except kerr.ApiError as e:
                if e.status == 403:  # upstream's ClusterRole: nothing to watch either
                    log.warning("cannot read the CustomResourceDefinition %s (%s): the CRDs the cluster serves "
                                "are not checked against this nfd-master's fields", name, e)
                    self._unreadable = True
                    return
                log.warning("cannot read the CustomResourceDefinition %s yet (%s); watching it", name, e)
                continue
            except kerr.ApiUnavailable as e:  # the watch below retries
                log.warning("cannot read the CustomResourceDefinition %s yet (%s); watching it", name, e)
                continue
            self.check(name, obj)
        for inf in self.informers:
            await inf.start()

    async def stop(self) -> None:
        for inf in self.informers:
            await inf.stop()

    def check(self, name: str, crd: dict[str, Any] | None) -> None:
        """Compare the served CRD with ours; say it once when what it lacks changed."""
        try:
            gaps = crd_gaps(name, crd)
        except SchemaUnavailable as e:
            if not self._unreadable:
                log.warning("the served CRDs are not checked: %s", e)
            self._unreadable = True
            return
        if self.gaps.get(name) == gaps:
            return
        before = self.gaps.get(name)
        self.gaps[name] = gaps
        self.metrics.crd_missing_fields.labels(crd=name).set(len(gaps))
        if not gaps:
            if before:
                log.info("the served CRD %s now has every field this nfd-master evaluates", name)
            self._unpostable.pop(name, None)
            return
        msg = gaps_message(name, gaps)
        log.warning("%s", msg)
        involved = crd or {"metadata": {"name": name}}
        self._unpostable[name] = (involved, msg)
        self.post_pending()

    def post_pending(self) -> None:
        """Post the Events not yet posted, while leading (nfd-master calls it on taking the lead)."""
        if not self.leading():
            return

        for name, (crd, msg) in sorted(self._unpostable.items()):
            meta = crd.get("metadata") or {}
            involved = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                        "metadata": {"name": meta.get("name", name), "uid": meta.get("uid")}}
            self.spawn(post_event(self.write_api, namespace="default", involved=involved, reason=REASON,
                                  message=msg, component="nfd-master", type_="Warning"))
        self._unpostable.clear()
