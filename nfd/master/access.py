"""What nfd-master may do and what the API serves, asked before the caches start.

A SelfSubjectAccessReview per permission the master can do without (watching Nodes,
reading ResourceSlices), so it runs with upstream's narrower ClusterRole instead of failing.
"""

from __future__ import annotations

import logging

from nfd.k8s import errors as kerr
from nfd.k8s.client import ApiClient

log = logging.getLogger("nfd.master")


async def allowed(api: ApiClient, *, verb: str, resource: str, group: str = "") -> bool:
    """SelfSubjectAccessReview; an unanswerable question counts as allowed (the call will tell)."""
    body = {
        "apiVersion": "authorization.k8s.io/v1",
        "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": verb, "resource": resource, "group": group}},
    }
    try:
        res = await api.request(
            "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", body=body, verb="CREATE"
        )
    except (kerr.ApiError, kerr.ApiUnavailable) as e:
        log.info("cannot check permission to %s %s (%s); assuming allowed", verb, resource, e)
        return True
    return bool(((res or {}).get("status") or {}).get("allowed"))


async def dra_available(api: ApiClient) -> bool:
    """Whether the dra source can run: resource.k8s.io/v1 served, list and watch allowed.
    Without them the master runs as upstream's, with one log line saying why."""
    try:
        await api.request("GET", "/apis/resource.k8s.io/v1")
    except kerr.NotFound:
        log.info("the API server does not serve resource.k8s.io/v1: the dra feature source is off")
        return False
    except (kerr.ApiError, kerr.ApiUnavailable) as e:
        log.warning("cannot tell whether resource.k8s.io/v1 is served (%s): the dra feature source is off", e)
        return False
    for verb in ("list", "watch"):
        if not await allowed(api, verb=verb, resource="resourceslices", group="resource.k8s.io"):
            log.warning("RBAC does not allow %s on resourceslices.resource.k8s.io: the dra feature source is "
                        "off (nfd-master's ClusterRole needs get/list/watch on them; docs/dra.md)", verb)
            return False
    return True
