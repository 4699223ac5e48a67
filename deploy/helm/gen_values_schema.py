"""Writes deploy/helm/node-feature-discovery/values.schema.json (run after editing this file).

Types of every value the chart reads, and enums where Kubernetes has them, so `helm install`
refuses `image.pullPolicy=Sometimes` or `master.replicaCount: two` as upstream's chart does.
Unknown keys are allowed (values files written for other chart versions keep installing).
`python deploy/helm/gen_values_schema.py --check` fails when the file is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).parent / "node-feature-discovery" / "values.schema.json"

STR: dict[str, Any] = {"type": ["string", "null"]}
BOOL: dict[str, Any] = {"type": ["boolean", "null"]}
INT: dict[str, Any] = {"type": ["integer", "null"]}
OBJ: dict[str, Any] = {"type": ["object", "null"]}
LIST: dict[str, Any] = {"type": ["array", "null"]}
STRLIST: dict[str, Any] = {"type": ["array", "null"], "items": {"type": "string"}}
PULL = {"type": ["string", "null"], "enum": ["Always", "IfNotPresent", "Never", "", None]}
DNS = {"type": ["string", "null"], "enum": ["ClusterFirst", "ClusterFirstWithHostNet", "Default", "None", "", None]}
DURATION = {"type": ["string", "null"], "pattern": r"^$|^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$"}
PROBE = OBJ


def obj(props: dict[str, Any]) -> dict[str, Any]:
    return {"type": ["object", "null"], "properties": props}


def component(extra: dict[str, Any]) -> dict[str, Any]:
    common = {
        "enable": BOOL, "extraArgs": STRLIST, "extraEnvs": LIST, "hostNetwork": BOOL, "dnsPolicy": DNS,
        "port": INT, "serviceAccount": obj({"create": BOOL, "name": STR, "annotations": OBJ}),
        "rbac": obj({"create": BOOL}), "resources": OBJ, "nodeSelector": OBJ, "tolerations": LIST,
        "affinity": OBJ, "annotations": OBJ, "podSecurityContext": OBJ, "securityContext": OBJ,
        "revisionHistoryLimit": INT, "livenessProbe": PROBE, "readinessProbe": PROBE,
        "priorityClassName": STR, "config": OBJ, "hostUsers": BOOL, "labels": OBJ, "initContainers": LIST,
        "networkPolicy": obj({"enabled": BOOL, "ingress": LIST, "egress": LIST}),
    }
    return obj({**common, **extra})


SCHEMA: dict[str, Any] = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "node-feature-discovery chart values",
    "type": "object",
    "properties": {
        "image": obj({"repository": STR, "tag": STR, "pullPolicy": PULL}),
        "imagePullSecrets": LIST,
        "global": obj({"imagePullSecrets": LIST}),
        "nameOverride": STR, "fullnameOverride": STR, "namespaceOverride": STR, "priorityClassName": STR,
        "featureGates": {"type": ["object", "null"], "additionalProperties": {"type": "boolean"}},
        "postDeleteCleanup": BOOL, "workerNodeConfinement": BOOL, "checksumValuesOnly": BOOL,
        "master": component({
            "instance": STR, "resyncPeriod": DURATION, "denyLabelNs": STRLIST, "extraLabelNs": STRLIST,
            "enableTaints": BOOL, "nfdApiParallelism": INT, "replicaCount": INT, "deploymentAnnotations": OBJ,
            "startupProbe": PROBE, "podDisruptionBudget": OBJ,
        }),
        "worker": component({
            "ownerRefs": STRLIST, "mountUsrSrc": BOOL, "updateStrategy": OBJ, "daemonsetAnnotations": OBJ,
            "enableNodeUpdate": BOOL,
        }),
        "topologyUpdater": component({
            "createCRDs": BOOL, "updateInterval": DURATION, "kubeletPodResourcesSockPath": STR,
            "watchNamespace": STR, "kubeletConfigPath": STR, "kubeletStateDir": STR, "podSetFingerprint": BOOL,
            "daemonsetAnnotations": OBJ,
        }),
        "gc": component({
            "interval": DURATION, "replicaCount": INT, "deploymentAnnotations": OBJ, "podDisruptionBudget": OBJ,
        }),
        "prometheus": obj({"enable": BOOL, "scrapeInterval": DURATION, "labels": OBJ}),
        "nodeFeatureRules": obj({"nvidiaGpuLabelsFromDRA": BOOL, "nvidiaGpuHealth": BOOL}),
    },
}


def render() -> str:
    return json.dumps(SCHEMA, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not OUT.exists() or OUT.read_text() != text:
            print(f"{OUT} is stale: run python deploy/helm/gen_values_schema.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
