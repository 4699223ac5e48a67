"""nfd-master configuration: upstream's ``nfd-master.conf`` keys, ``-options`` and flag overrides.

Precedence is upstream's: defaults < config file < ``-options`` < command-line flags. Parsing is a
pure function so the daemon can re-run it on a file change and keep the previous config when the
new one is invalid (upstream has no live reload; see docs/compatibility.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import yaml

from nfd.common import safeyaml
from nfd.common.goduration import format_go_duration, parse_go_duration
from nfd.common.gokeys import canonical_keys
from nfd.common.masterflags import INSTANCE_RE as INSTANCE_RE  # re-exported: nfd-master's -instance
from nfd.lang.goregex import GoRegexError, compile_go
from nfd.nodestate.outputpolicy import PolicyConfig

DEFAULT_CONFIG_PATH = "/etc/kubernetes/node-feature-discovery/nfd-master.conf"



class ConfigError(ValueError):
    """An invalid configuration; the message names the key (and file) at fault."""


def parse_duration(value: Any, *, key: str) -> float:
    """A Go duration (``"1h30m"``, ``"500ms"``, ``"0"``) or a raw number of nanoseconds -> seconds."""
    if isinstance(value, bool):
        raise ConfigError(f"{key}: invalid duration {value!r}")
    if isinstance(value, int | float):
        return float(value) / 1e9
    if not isinstance(value, str):
        raise ConfigError(f"{key}: invalid duration {value!r}")
    try:
        return parse_go_duration(value)
    except ValueError:
        raise ConfigError(f"{key}: invalid duration {value!r}") from None


@dataclass(frozen=True, slots=True)
class LeaderElectionConfig:
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0


@dataclass(frozen=True, slots=True)
class Restrictions:
    # A metav1.LabelSelector as JSON (matchLabels / matchExpressions), or None for all namespaces.
    node_feature_namespace_selector: dict[str, Any] | None = None
    disable_labels: bool = False
    disable_extended_resources: bool = False
    disable_annotations: bool = False
    allow_overwrite: bool = True
    deny_node_feature_labels: bool = False


@dataclass(frozen=True, slots=True)
class MasterConfig:
    no_publish: bool = False
    extra_label_ns: frozenset[str] = frozenset()
    deny_label_ns: frozenset[str] = frozenset()
    label_whitelist: str | None = None
    enable_taints: bool = False
    resync_period: float = 3600.0
    nfd_api_parallelism: int = 10
    informer_page_size: int = 200
    leader_election: LeaderElectionConfig = field(default_factory=LeaderElectionConfig)
    restrictions: Restrictions = field(default_factory=Restrictions)
    klog: dict[str, str] = field(default_factory=dict)
    # Ours: client-side rate limit of the API client (upstream leaves client-go defaults).
    kube_api_qps: float = 200.0
    kube_api_burst: int = 400


@dataclass(slots=True)
class FlagOverrides:
    """Config values given on the command line; None = not given."""

    no_publish: bool | None = None
    extra_label_ns: frozenset[str] | None = None
    deny_label_ns: frozenset[str] | None = None
    label_whitelist: str | None = None
    enable_taints: bool | None = None
    resync_period: float | None = None
    nfd_api_parallelism: int | None = None
    informer_page_size: int | None = None
    kube_api_qps: float | None = None
    kube_api_burst: int | None = None


def _bool(v: Any, key: str) -> bool:
    if isinstance(v, bool):
        return v
    raise ConfigError(f"{key}: expected a boolean, got {v!r}")


def _int(v: Any, key: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int | float) or int(v) != v:
        raise ConfigError(f"{key}: expected an integer, got {v!r}")
    return int(v)


def _num(v: Any, key: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float):
        raise ConfigError(f"{key}: expected a number, got {v!r}")
    return float(v)


def _str_set(v: Any, key: str) -> frozenset[str]:
    if v is None:
        return frozenset()
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise ConfigError(f"{key}: expected a list of strings, got {v!r}")
    return frozenset(v)


def _regexp(v: Any, key: str) -> str | None:
    if v is None:
        return None
    if not isinstance(v, str):
        raise ConfigError(f"{key}: expected a regular expression string, got {v!r}")

    try:
        compile_go(v)  # the compile matching uses (Go's dialect on RE2)
    except GoRegexError as e:
        raise ConfigError(f"{key}: invalid regular expression {v!r}: {e}") from None
    return v


# nfd-master.conf's top-level keys (matched like Go's JSON decoder: nfd/common/gokeys.py)
_TOP_KEYS = ("noPublish", "extraLabelNs", "denyLabelNs", "labelWhiteList", "enableTaints", "resyncPeriod",
             "nfdApiParallelism", "informerPageSize", "kubeApiQps", "kubeApiBurst", "leaderElection",
             "restrictions", "klog")


def _apply(cfg: MasterConfig, doc: Any, *, source: str) -> tuple[MasterConfig, list[str]]:
    """Overlay one YAML document on ``cfg``; returns the new config and warnings (unknown keys)."""
    warnings: list[str] = []
    if doc is None:
        return cfg, warnings
    if not isinstance(doc, dict):
        raise ConfigError(f"{source}: expected a mapping at the top level")
    upd: dict[str, Any] = {}
    for key, v in canonical_keys(doc, _TOP_KEYS).items():
        k = f"{source}: {key}"
        if key == "noPublish":
            upd["no_publish"] = _bool(v, k)
        elif key == "extraLabelNs":
            # Go's yaml unmarshal adds to the existing set.
            upd["extra_label_ns"] = cfg.extra_label_ns | _str_set(v, k)
        elif key == "denyLabelNs":
            upd["deny_label_ns"] = cfg.deny_label_ns | _str_set(v, k)
        elif key == "labelWhiteList":
            upd["label_whitelist"] = _regexp(v, k)
        elif key == "enableTaints":
            upd["enable_taints"] = _bool(v, k)
        elif key == "resyncPeriod":
            upd["resync_period"] = parse_duration(v, key=k)
        elif key == "nfdApiParallelism":
            upd["nfd_api_parallelism"] = _int(v, k)
        elif key == "informerPageSize":
            upd["informer_page_size"] = _int(v, k)
        elif key == "kubeApiQps":
            upd["kube_api_qps"] = _num(v, k)
        elif key == "kubeApiBurst":
            upd["kube_api_burst"] = _int(v, k)
        elif key == "leaderElection":
            if v is None:
                continue
            if not isinstance(v, dict):
                raise ConfigError(f"{k}: expected a mapping")
            le = cfg.leader_election
            for lk, lv in canonical_keys(v, ("leaseDuration", "renewDeadline", "retryPeriod")).items():
                kk = f"{k}.{lk}"
                if lk == "leaseDuration":
                    le = replace(le, lease_duration=parse_duration(lv, key=kk))
                elif lk == "renewDeadline":
                    le = replace(le, renew_deadline=parse_duration(lv, key=kk))
                elif lk == "retryPeriod":
                    le = replace(le, retry_period=parse_duration(lv, key=kk))
                else:
                    warnings.append(f"{kk}: unknown key ignored")
            upd["leader_election"] = le
        elif key == "restrictions":
            if v is None:
                continue
            if not isinstance(v, dict):
                raise ConfigError(f"{k}: expected a mapping")
            r = cfg.restrictions
            names: dict[str, str] = {
                "disableLabels": "disable_labels",
                "disableExtendedResources": "disable_extended_resources",
                "disableAnnotations": "disable_annotations",
                "allowOverwrite": "allow_overwrite",
                "denyNodeFeatureLabels": "deny_node_feature_labels",
            }
            for rk, rv in canonical_keys(v, [*names, "nodeFeatureNamespaceSelector"]).items():
                kk = f"{k}.{rk}"
                if rk in names:
                    flag: dict[str, Any] = {names[rk]: _bool(rv, kk)}
                    r = replace(r, **flag)
                elif rk == "nodeFeatureNamespaceSelector":
                    if rv is not None and not isinstance(rv, dict):
                        raise ConfigError(f"{kk}: expected a label selector mapping")
                    if rv is not None:
                        validate_label_selector(rv, key=kk)
                    r = replace(r, node_feature_namespace_selector=rv)
                else:
                    warnings.append(f"{kk}: unknown key ignored")
            upd["restrictions"] = r
        elif key == "klog":
            if v is None:
                continue
            if not isinstance(v, dict):
                raise ConfigError(f"{k}: expected a mapping")
            kl = dict(cfg.klog)
            kl.update({str(a): str(b) for a, b in v.items()})
            upd["klog"] = kl
        else:
            warnings.append(f"{k}: unknown key ignored")
    return replace(cfg, **upd), warnings


def validate_label_selector(sel: dict[str, Any], *, key: str) -> None:
    ml = sel.get("matchLabels") or {}
    if not isinstance(ml, dict):
        raise ConfigError(f"{key}.matchLabels: expected a mapping")
    me = sel.get("matchExpressions") or []
    if not isinstance(me, list):
        raise ConfigError(f"{key}.matchExpressions: expected a list")
    for i, e in enumerate(me):
        if not isinstance(e, dict) or "key" not in e:
            raise ConfigError(f"{key}.matchExpressions[{i}]: expected {{key, operator, values}}")
        op = e.get("operator")
        if op not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ConfigError(f"{key}.matchExpressions[{i}].operator: invalid operator {op!r}")
        vals = e.get("values") or []
        if op in ("In", "NotIn") and not vals:
            raise ConfigError(f"{key}.matchExpressions[{i}].values: must be non-empty for {op}")
        if op in ("Exists", "DoesNotExist") and vals:
            raise ConfigError(f"{key}.matchExpressions[{i}].values: must be empty for {op}")


def selector_matches(sel: dict[str, Any] | None, labels: dict[str, str]) -> bool:
    """metav1.LabelSelector semantics (an empty selector matches everything)."""
    if sel is None:
        return True
    for k, v in (sel.get("matchLabels") or {}).items():
        if labels.get(k) != str(v):
            return False
    for e in sel.get("matchExpressions") or []:
        k, op, vals = e.get("key"), e.get("operator"), [str(x) for x in e.get("values") or []]
        if op == "In" and labels.get(k) not in vals:
            return False
        if op == "NotIn" and k in labels and labels[k] in vals:
            return False
        if op == "Exists" and k not in labels:
            return False
        if op == "DoesNotExist" and k in labels:
            return False
    return True


def load_config(
    *, file_text: str | None, options: str = "", overrides: FlagOverrides | None = None, file_name: str = "config"
) -> tuple[MasterConfig, list[str]]:
    """Build the effective config. Raises ConfigError (one line, naming the key) when invalid."""
    cfg = MasterConfig()
    warnings: list[str] = []
    for text, source in ((file_text, file_name), (options, "-options")):
        if not text:
            continue
        try:
            doc = safeyaml.safe_load(text, source=source, max_bytes=4 << 20)
        except yaml.YAMLError as e:
            raise ConfigError(f"{source}: invalid YAML: {safeyaml.error_text(e)}") from None
        except safeyaml.YamlLimitError as e:
            raise ConfigError(str(e)) from None
        cfg, w = _apply(cfg, doc, source=source)
        warnings.extend(w)
    o = overrides or FlagOverrides()
    upd: dict[str, Any] = {}
    for name in (
        "no_publish",
        "extra_label_ns",
        "deny_label_ns",
        "label_whitelist",
        "enable_taints",
        "resync_period",
        "nfd_api_parallelism",
        "informer_page_size",
        "kube_api_qps",
        "kube_api_burst",
    ):
        val = getattr(o, name)
        if val is not None:
            upd[name] = val
    cfg = replace(cfg, **upd)
    if cfg.label_whitelist is not None:
        _regexp(cfg.label_whitelist, "labelWhiteList")
    if cfg.nfd_api_parallelism <= 0:
        raise ConfigError(
            "nfdApiParallelism: the maximum number of concurrent labelers should be a non-zero positive number"
        )
    if cfg.informer_page_size < 0:
        raise ConfigError("informerPageSize: must not be negative")
    if cfg.resync_period < 0:
        raise ConfigError("resyncPeriod: must not be negative")
    if cfg.kube_api_qps <= 0 or cfg.kube_api_burst <= 0:
        raise ConfigError("kubeApiQps/kubeApiBurst: must be positive")
    le = cfg.leader_election
    if not (le.lease_duration > le.renew_deadline > 0 and le.retry_period > 0):
        raise ConfigError("leaderElection: need leaseDuration > renewDeadline > 0 and retryPeriod > 0")
    return cfg, warnings


def read_config(path: str, options: str, overrides: FlagOverrides) -> tuple[MasterConfig, list[str], str | None]:
    """The config file at ``path`` (a missing file means defaults) with ``-options`` and the flags
    over it; also returns the file's text, so a reload can tell a real change. Shared by
    nfd-master and the worker's masterless mode."""
    text: str | None = None
    if path:
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except FileNotFoundError:
            text = None
        except OSError as e:
            raise ConfigError(f"{path}: cannot read: {e.strerror}") from None
    cfg, warnings = load_config(file_text=text, options=options, overrides=overrides, file_name=path or "config")
    return cfg, warnings, text


def parse_ns_list(value: str) -> frozenset[str]:
    """A comma-separated namespace list flag value (``-extra-label-ns=a.io,b.io``)."""
    return frozenset(s.strip() for s in value.split(",") if s.strip())


def config_dump(cfg: MasterConfig) -> dict[str, Any]:
    """The effective config in nfd-master.conf's keys, for the "configuration successfully
    updated" log line (as upstream's YAML dump of its config)."""
    def dur(s: float) -> str:
        return format_go_duration(round(s * 1e9))

    r, le = cfg.restrictions, cfg.leader_election
    return {
        "noPublish": cfg.no_publish,
        "extraLabelNs": sorted(cfg.extra_label_ns),
        "denyLabelNs": sorted(cfg.deny_label_ns),
        "labelWhiteList": cfg.label_whitelist or "",
        "enableTaints": cfg.enable_taints,
        "resyncPeriod": dur(cfg.resync_period),
        "nfdApiParallelism": cfg.nfd_api_parallelism,
        "informerPageSize": cfg.informer_page_size,
        "leaderElection": {"leaseDuration": dur(le.lease_duration), "renewDeadline": dur(le.renew_deadline),
                           "retryPeriod": dur(le.retry_period)},
        "restrictions": {"nodeFeatureNamespaceSelector": r.node_feature_namespace_selector,
                         "disableLabels": r.disable_labels, "disableExtendedResources": r.disable_extended_resources,
                         "disableAnnotations": r.disable_annotations, "allowOverwrite": r.allow_overwrite,
                         "denyNodeFeatureLabels": r.deny_node_feature_labels},
        "klog": dict(cfg.klog),
        "kubeApiQps": cfg.kube_api_qps,
        "kubeApiBurst": cfg.kube_api_burst,
    }


def policy_config(cfg: MasterConfig, *, disable_auto_prefix: bool = False) -> PolicyConfig:
    """The output policy (nfd.nodestate.outputpolicy) that ``cfg`` sets."""
    r = cfg.restrictions
    return PolicyConfig(
        extra_label_ns=frozenset(cfg.extra_label_ns),
        deny_label_ns=frozenset(cfg.deny_label_ns),
        label_whitelist=cfg.label_whitelist,
        enable_taints=cfg.enable_taints,
        disable_auto_prefix=disable_auto_prefix,
        disable_labels=r.disable_labels,
        disable_annotations=r.disable_annotations,
        disable_extended_resources=r.disable_extended_resources,
        deny_node_feature_labels=r.deny_node_feature_labels,
        allow_overwrite=r.allow_overwrite,
    )
