"""A network namespace of the test run's own, where the real node's cluster lives.

`NetNamespace.create()` makes a named namespace (`ip netns add`) with its loopback up and one veth
pair: the namespace's end carries the node's address (NODE_IP, not loopback: the kubelet serves
there, the apiserver advertises it, the apiserver's node proxy reaches the kubelet through it),
the other end stays in the test process's namespace (HOST_IP) so the tests reach the apiserver.
Nothing routes further: the namespace has no default route, a route for the Service range to its
own end (kube-proxy rewrites those packets before they would leave), and an nftables table that
drops whatever it would send out of the veth except answers to the test process. `close()`
deletes the namespace (the veth pair goes with it).

Processes enter it with `exec_argv()` (nsenter of the network namespace only: the mount namespace
stays the machine's, so containerd, runc and the kubelet see each other's mounts); the test
process opens a socket inside with `entered()` (one thread, for the time of the block).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

CLONE_NEWNET = 0x40000000
#: the veth pair's /30: HOST_IP in the test process's namespace, NODE_IP in the node's
HOST_IP = "172.31.238.1"
NODE_IP = "172.31.238.2"
PREFIX = 30
#: the pods' network (the CNI bridge) and the Services' range (the apiserver's flag)
POD_CIDR = "10.250.0.0/24"
SERVICE_CIDR = "10.96.0.0/16"
KUBERNETES_SERVICE_IP = "10.96.0.1"


class NetnsError(RuntimeError):
    pass


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL("libc.so.6", use_errno=True)


def _setns(fd: int) -> None:
    if _libc().setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


def _ip(*args: str, netns: str | None = None) -> str:
    argv = ["ip", *(("-n", netns) if netns else ()), *args]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False, timeout=30)
    if proc.returncode != 0:
        raise NetnsError(f"{' '.join(argv)} failed (exit {proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def _sysctl_in(path: Path, key: str, value: str) -> None:
    """Write a per-namespace sysctl from inside the namespace (/proc/sys/net is the network
    namespace of the thread that opens it)."""
    with entered_path(path):
        fd = os.open(f"/proc/sys/{key.replace('.', '/')}", os.O_WRONLY)
        try:
            os.write(fd, value.encode())
        finally:
            os.close(fd)


@contextlib.contextmanager
def entered_path(path: Path) -> Iterator[None]:
    """This thread in the namespace at `path` for the block (sockets opened here stay in it)."""
    back = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(path, os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(back)
    finally:
        os.close(target)
        os.close(back)


def unavailable() -> str | None:
    """Why this machine cannot make the node's namespace, or None."""
    if os.geteuid() != 0:
        return "not root: cannot create a network namespace"
    if subprocess.run(["ip", "-V"], capture_output=True, check=False).returncode != 0:
        return "no `ip` command (iproute2) to create the node's network namespace"
    return None


@dataclass
class NetNamespace:
    name: str
    host_if: str
    node_if: str = "eth0"

    @property
    def path(self) -> Path:
        return Path("/run/netns") / self.name

    @classmethod
    def create(cls, name: str | None = None) -> NetNamespace:
        """The namespace, its loopback, the veth pair, the routes and the guard; removed again if
        any step fails."""
        tag = f"{os.getpid() % 100000}"
        ns = cls(name=name or f"nfd-e2e-{tag}", host_if=f"nfde2e{tag}")
        stale = Path("/run/netns") / ns.name
        if stale.exists():  # a run killed before its teardown, same pid: it is ours to remove
            subprocess.run(["ip", "netns", "del", ns.name], capture_output=True, check=False)
        try:
            ns._setup()
        except BaseException:
            ns.close()
            raise
        return ns

    def _setup(self) -> None:
        _ip("netns", "add", self.name)
        _ip("link", "set", "lo", "up", netns=self.name)
        _ip("link", "add", self.host_if, "type", "veth", "peer", "name", self.node_if, "netns", self.name)
        _ip("addr", "add", f"{HOST_IP}/{PREFIX}", "dev", self.host_if)
        _ip("link", "set", self.host_if, "up")
        _ip("addr", "add", f"{NODE_IP}/{PREFIX}", "dev", self.node_if, netns=self.name)
        _ip("link", "set", self.node_if, "up", netns=self.name)
        # Service addresses are rewritten by kube-proxy on the way out; the route only lets the
        # kernel pick a source for them (there is no default route).
        _ip("route", "add", SERVICE_CIDR, "dev", self.node_if, "src", NODE_IP, netns=self.name)
        _sysctl_in(self.path, "net.ipv4.ip_forward", "1")
        # IPv4 only: no router solicitations or other IPv6 chatter on the veth
        _sysctl_in(self.path, f"net.ipv6.conf.{self.node_if}.disable_ipv6", "1")
        with contextlib.suppress(OSError):  # per namespace where br_netfilter is built in
            _sysctl_in(self.path, "net.bridge.bridge-nf-call-iptables", "1")
        self._guard()

    def _guard(self) -> None:
        """Nothing leaves through the veth but answers to the test process: the namespace never
        starts a conversation outside itself, and pods cannot reach the test machine."""
        # postrouting: the interface a packet really leaves by (an output hook still sees the
        # route picked before kube-proxy's DNAT, e.g. the veth for a Service address); forwarded
        # packets (the pods') pass here too
        rules = f"""table inet nfd-e2e-guard {{
  chain leaving {{ type filter hook postrouting priority 0; policy accept;
    oifname "{self.node_if}" ip daddr != {HOST_IP} drop
    oifname "{self.node_if}" ct state established,related accept
    oifname "{self.node_if}" drop
  }}
}}
"""
        proc = subprocess.run(["ip", "netns", "exec", self.name, "nft", "-f", "-"], input=rules,
                              capture_output=True, text=True, check=False, timeout=30)
        if proc.returncode != 0:
            raise NetnsError(f"nft guard in {self.name} failed (exit {proc.returncode}): {proc.stderr.strip()}")

    def entered(self) -> contextlib.AbstractContextManager[None]:
        return entered_path(self.path)

    def exec_argv(self, argv: list[str]) -> list[str]:
        """`argv` run inside the namespace by a plain subprocess (nsenter: network only)."""
        return ["nsenter", f"--net={self.path}", "--", *argv]

    def close(self) -> None:
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, check=False, timeout=30)
        subprocess.run(["ip", "link", "del", self.host_if], capture_output=True, check=False, timeout=30)
