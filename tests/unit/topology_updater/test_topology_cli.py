"""nfd-topology-updater and nfd-gc command lines: flags, defaults, exit codes."""

from __future__ import annotations

import pytest

from nfd.gc import __main__ as gc_main
from nfd.hostpaths import HostPaths
from nfd.topology_updater import __main__ as tu_main


def test_updater_flag_defaults_follow_host_paths() -> None:
    ns = tu_main.build_parser(HostPaths.with_prefix("/nonexistent-")).parse_go([])
    assert ns.sleep_interval == 60 and ns.watch_namespace == "*" and ns.port == 8080
    assert ns.pods_fingerprint is True and ns.oneshot is False and ns.no_publish is False
    assert ns.podresources_socket == "/var/lib/kubelet/pod-resources/kubelet.sock"
    assert ns.kubelet_state_dir == "/var/lib/kubelet"
    assert ns.config == "/etc/kubernetes/node-feature-discovery/nfd-topology-updater.conf"
    under = tu_main.build_parser(HostPaths.under("/h")).parse_go([])
    assert under.podresources_socket == "/h/var/lib/kubelet/pod-resources/kubelet.sock"


def test_updater_flags_as_upstream_spells_them() -> None:
    ns = tu_main.build_parser(HostPaths()).parse_go(
        [
            "-sleep-interval=3s",
            "-pods-fingerprint=false",
            "-kubelet-state-dir=",
            "-watch-namespace",
            "team",
            "-oneshot",
        ]
    )
    assert (ns.sleep_interval, ns.pods_fingerprint, ns.kubelet_state_dir, ns.watch_namespace, ns.oneshot) == (
        3.0,
        False,
        "",
        "team",
        True,
    )


def test_updater_exit_codes(monkeypatch, capsys) -> None:
    assert tu_main.main(["-version"]) == 0
    assert "nfd-topology-updater" in capsys.readouterr().out
    monkeypatch.delenv("NODE_NAME", raising=False)
    assert tu_main.main([]) == 1
    monkeypatch.setenv("NODE_NAME", "n1")
    monkeypatch.delenv("NODE_ADDRESS", raising=False)
    assert tu_main.main([]) == 1
    assert "NODE_ADDRESS" in capsys.readouterr().err
    assert tu_main.main(["-kubelet-config-uri=ftp://x/configz"]) == 1
    with pytest.raises(SystemExit) as e:
        tu_main.main(["extra-arg"])
    assert e.value.code == 2


def test_updater_bad_config_file_exits_with_message(monkeypatch, tmp_path, caplog) -> None:
    monkeypatch.setenv("NODE_NAME", "n1")
    conf = tmp_path / "c.conf"
    conf.write_text("excludeList: 5\n")
    assert tu_main.main(["-kubelet-config-uri=file:///k.yaml", f"-config={conf}"]) == 1
    assert str(conf) in caplog.text


def test_gc_flags_and_exit_codes(capsys) -> None:
    ns = gc_main.build_parser().parse_go([])
    assert (ns.gc_interval, ns.list_size, ns.port) == (3600.0, 200, 8080)
    ns = gc_main.build_parser().parse_go(["-gc-interval=10m", "-list-size=0"])
    assert (ns.gc_interval, ns.list_size) == (600.0, 0)
    assert gc_main.main(["-version"]) == 0
    assert "nfd-gc" in capsys.readouterr().out
    assert gc_main.main(["-gc-interval=0s"]) == 2


@pytest.mark.parametrize("kubeconfig", ["/nonexistent/kubeconfig", ""])
def test_updater_without_cluster_config_is_one_error_line(monkeypatch, caplog, kubeconfig) -> None:
    """No kubeconfig / not in a cluster: the ConfigError is one logged line and exit 1."""
    import asyncio

    from nfd.topology_updater.updater import Options

    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", "/nonexistent-home")
    opts = Options(node_name="n1", kubelet_config_uri="file:///k.yaml", podresources_socket="/x",
                   no_publish=True, oneshot=True, port=0)
    assert asyncio.run(tu_main.run(opts, kubeconfig=kubeconfig)) == 1
    errors = [r for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "failed to create the Kubernetes client" in errors[0].getMessage()
    assert (kubeconfig or "not in a cluster") in errors[0].getMessage()


def _unreachable_kubeconfig(tmp_path):
    """A kubeconfig whose server refuses every connection."""
    kc = tmp_path / "kc"
    kc.write_text(
        "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\n"
        "users: [{name: u, user: {token: t}}]\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
        "current-context: x\n"
    )
    return kc


@pytest.mark.parametrize("no_publish", [True, False])
def test_updater_no_publish_does_not_wait_for_the_crd(monkeypatch, tmp_path, no_publish) -> None:
    """-no-publish never writes an NRT, so it must not wait (forever, if the API is down) for its CRD."""
    import asyncio

    from nfd.topology_updater import sysfs, updater
    from nfd.topology_updater.updater import Options

    kc = _unreachable_kubeconfig(tmp_path)
    waited: list[bool] = []

    async def fake_wait(api, **_kw) -> None:
        waited.append(True)

    def no_topology(_paths):
        raise sysfs.TopologyError("stop here")

    monkeypatch.setattr(updater, "wait_for_crd", fake_wait)
    monkeypatch.setattr(sysfs, "read_topology", no_topology)
    opts = Options(node_name="n1", kubelet_config_uri="file:///k.yaml", podresources_socket="/x",
                   no_publish=no_publish, oneshot=True, port=0, namespace="ns")
    assert asyncio.run(tu_main.run(opts, kubeconfig=str(kc))) == 1
    assert waited == ([] if no_publish else [True])


def test_updater_pod_cache_timeout_is_one_error_line(monkeypatch, tmp_path, caplog) -> None:
    """-no-publish against an API that never answers: the pod cache sync times out, one error
    line (it was a logging traceback: a Go %q in a Python format), exit 1."""
    import asyncio

    from nfd.topology_updater import sysfs, updater
    from nfd.topology_updater.updater import Options

    kc = _unreachable_kubeconfig(tmp_path)

    class KubeletConfig:
        async def close(self) -> None:
            pass

    class NeverSynced:
        pods = None
        kubelet_config = KubeletConfig()

        def __init__(self, *_a, **_kw) -> None:
            pass

        async def start_pod_cache(self) -> bool:
            return False

    monkeypatch.setattr(sysfs, "read_topology", lambda _paths: object())
    monkeypatch.setattr(updater, "TopologyUpdater", NeverSynced)
    opts = Options(node_name="n1", kubelet_config_uri="file:///k.yaml", podresources_socket="/x",
                   no_publish=True, oneshot=True, port=0, namespace="ns")
    assert asyncio.run(tu_main.run(opts, kubeconfig=str(kc))) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == ['timed out waiting for node-scoped Pod cache sync for node "n1"']


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ("/var/lib/kubelet/pod-resources/kubelet.sock", "/var/lib/kubelet/pod-resources/kubelet.sock"),
        # upstream's e2e pods pass the URL form
        ("unix:///host-var/lib/kubelet/pod-resources/kubelet.sock", "/host-var/lib/kubelet/pod-resources/kubelet.sock"),
        ("UNIX:///run/k.sock", "/run/k.sock"),
        ("unix:/run/k.sock", "/run/k.sock"),
        ("/run/a%20b.sock", "/run/a b.sock"),  # percent-decoded like a URL's path, as upstream
        ("kubelet.sock", "kubelet.sock"),  # relative to the working directory
    ],
)
def test_podresources_socket_takes_a_path_or_a_unix_url(value: str, path: str) -> None:
    from nfd.topology_updater.kubelet import socket_path

    assert socket_path(value) == path


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("tcp://127.0.0.1:10250", "tcp endpoints are not supported"),
        ("http://localhost/x.sock", "protocol 'http' not supported"),
        ("unix://run/k.sock", "absolute path"),
        ("unix://", "absolute path"),
        ("", "no socket path"),
        ("/run/a%zz.sock", "invalid URL escape"),
    ],
)
def test_podresources_socket_other_forms_refused_naming_the_flag(value: str, why: str) -> None:
    from nfd.topology_updater.kubelet import EndpointError, socket_path

    with pytest.raises(EndpointError) as e:
        socket_path(value)
    assert str(e.value).startswith("-podresources-socket=") and why in str(e.value)
    assert "\n" not in str(e.value)


def test_updater_refuses_a_bad_socket_at_start_in_one_line(monkeypatch, caplog) -> None:
    monkeypatch.setenv("NODE_NAME", "n1")
    assert tu_main.main(["-kubelet-config-uri=file:///k.yaml", "-podresources-socket=http://x/y"]) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert errors == ["-podresources-socket='http://x/y': protocol 'http' not supported (a socket path or a unix:// URL)"]


def test_kubelet_config_file_uri_forms_as_upstream(tmp_path) -> None:
    """file:/p, file:///p and percent escapes name the same file, as Go's url.URL.Path does."""
    import asyncio

    from nfd.topology_updater import kubeletconfig

    d = tmp_path / "a b"
    d.mkdir()
    (d / "k.yaml").write_text("topologyManagerPolicy: single-numa-node\n")
    for uri in (f"file:{d}/k.yaml".replace(" ", "%20"), f"file://{d}/k.yaml".replace(" ", "%20")):
        kubeletconfig.check_uri(uri)
        info = asyncio.run(kubeletconfig.KubeletConfigSource(uri, token_file="/nonexistent").load())
        assert info.policy == "single-numa-node"
        assert asyncio.run(kubeletconfig.load(uri, token_file="/nonexistent")).policy == "single-numa-node"
