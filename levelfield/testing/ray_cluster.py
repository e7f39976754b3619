"""A throwaway multi-node Ray cluster on this machine, for tests and benchmarks of ``executor="ray"``.

``LocalRayCluster`` starts a head and further nodes with ``ray start --block``, each in a session
of its own under a temp dir of its own, on ports chosen free, so several clusters (other people's
tests) share a machine without meeting. Every process of a node is ended by its PID: never
``ray stop``, which ends every Ray on the machine.

>>> with LocalRayCluster(cpus_per_node=1) as cluster:   # doctest: +SKIP
...     cluster.add_node()
...     lf.evaluate(data, agent, executor=lf.RayExecutor(address=cluster.address))
...     cluster.kill(cluster.nodes[1])                   # a node lost (SIGKILL), half way

Token auth is on, as ``ray start`` turns it on by default: drivers connect with
``RAY_AUTH_MODE=token`` and the token in ``~/.ray/auth_token`` (``env()`` gives both).

Every node is on loopback: ``--node-ip-address`` is :data:`LOOPBACK` (127.0.0.2), so the head's
address (``127.0.0.2:PORT``), the GCS, the raylets, the workers and the agents are all named by, and
reached at, a loopback address. Not 127.0.0.1: on Linux Ray replaces exactly ``127.0.0.1`` (and
``localhost``, ``::1``) by the machine's LAN address (``ray._private.services.resolve_ip_for_localhost``),
for ``ray start --node-ip-address`` and ``--address`` as for ``ray.init(_node_ip_address=...)``; any
other address of 127.0.0.0/8 it keeps as given. The C++ servers (GCS, raylet, core workers) still
listen on every interface, as Ray binds them to 127.0.0.1 only when the node's address is exactly
127.0.0.1; nothing connects to them but by the loopback address, and token auth guards them.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

__all__ = ["LOOPBACK", "LocalRayCluster", "RayNode", "local_ray_options", "token_auth_here"]

_START_SECONDS = 180.0

LOOPBACK = "127.0.0.2"
"""The address of every test node: on loopback, and not ``127.0.0.1``, which Ray swaps for the LAN address
(see the module's docstring). ``levelfield.executors.ray`` starts its own local Ray on the same address."""



@dataclass
class RayNode:
    """One node: its ``ray start --block`` process (a session leader) and its log."""

    process: subprocess.Popen[bytes]
    log: Path
    head: bool = False
    node_id: str | None = None
    """Ray's id for the node, once it has joined."""
    killed: bool = field(default=False)

    def pids(self) -> list[int]:
        """Every live process of this node: the ones in its session (raylet, workers, GCS on the head)."""
        return _session_pids({self.process.pid})


class LocalRayCluster:
    """A head and nodes started with ``ray start`` on this machine; ended (by PID) on ``stop()`` or ``with`` exit."""

    def __init__(self, cpus_per_node: int = 1, *, temp_dir: str | Path | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        # Ray's socket paths have a length limit: the temp dir has to be short.
        self.root = Path(temp_dir) if temp_dir is not None else Path(tempfile.mkdtemp(prefix="lfray-", dir="/tmp"))
        self._own_root = temp_dir is None  # removed on stop(): Ray's logs and sockets of a throwaway cluster
        self.cpus_per_node = cpus_per_node
        self.extra_env = dict(env or {})
        self.nodes: list[RayNode] = []
        self.address = ""
        self._guard: subprocess.Popen[bytes] | None = None

    # -- starting -----------------------------------------------------------------------------

    def env(self) -> dict[str, str]:
        """The environment of this cluster's processes, and of a driver that joins it."""
        return {**os.environ, "RAY_AUTH_MODE": "token", "RAY_USAGE_STATS_ENABLED": "0", **self.extra_env}

    def start(self) -> str:
        """Start the head node; return its address (``host:port``)."""
        port = _free_port()
        self.address = ""
        (self.root / "head" / "ray_current_cluster").unlink(missing_ok=True)  # a head started here before
        node = self._launch("head", [
            "--head", "--port", str(port), "--include-dashboard", "false",
            "--dashboard-port", str(_free_port()), "--ray-client-server-port", str(_free_port()),
        ])
        node.head = True
        self.address = self._read_address(node)
        node.node_id = self._wait_for_new_node(set())
        return self.address

    def add_node(self, cpus: int | None = None) -> RayNode:
        """Start one more node and wait until the cluster counts it."""
        if not self.address:
            raise RuntimeError("start() the head first")
        before = set(self._alive_ids())
        node = self._launch(f"node{len(self.nodes)}", ["--address", self.address], cpus=cpus)
        node.node_id = self._wait_for_new_node(before, node)
        return node

    def _launch(self, name: str, args: Sequence[str], cpus: int | None = None) -> RayNode:
        log = self.root / f"{name}.log"
        self.root.mkdir(parents=True, exist_ok=True)
        command = [
            sys.executable, "-m", "ray.scripts.scripts", "start", "--block", *args,
            "--node-ip-address", LOOPBACK, "--num-cpus", str(cpus or self.cpus_per_node), "--num-gpus", "0",
            "--temp-dir", str(self.root / name),
            # Ports Ray would otherwise take at fixed numbers, which another cluster here may hold.
            "--dashboard-agent-listen-port", str(_free_port()), "--dashboard-agent-grpc-port", str(_free_port()),
            "--metrics-export-port", str(_free_port()), "--runtime-env-agent-port", str(_free_port()),
            "--object-store-memory", str(200 * 1024 * 1024), "--disable-usage-stats",
        ]
        with log.open("wb") as handle:
            process = subprocess.Popen(command, stdout=handle, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                       env=self.env(), start_new_session=True)
        node = RayNode(process, log)
        self.nodes.append(node)
        self._guarded(process.pid)
        return node

    def _guarded(self, session: int) -> None:
        """Have the guard end this node's processes should this process die without stop() (a killed test run)."""
        if self._guard is None or self._guard.poll() is not None:
            # This file run as a script (it imports nothing but the standard library).
            self._guard = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, start_new_session=True)
        assert self._guard.stdin is not None
        self._guard.stdin.write(f"{session}\n".encode())
        self._guard.stdin.flush()

    def _read_address(self, node: RayNode) -> str:
        deadline = time.monotonic() + _START_SECONDS
        written = self.root / "head" / "ray_current_cluster"
        while time.monotonic() < deadline:
            if node.process.poll() is not None:
                raise RuntimeError(f"ray start --head ended ({node.process.returncode}):\n{_tail(node.log)}")
            if written.exists() and written.read_text().strip():
                return written.read_text().strip()
            time.sleep(0.2)
        raise RuntimeError(f"the Ray head did not start in {_START_SECONDS:.0f} s:\n{_tail(node.log)}")

    def _alive_ids(self) -> list[str]:
        from ray._raylet import GcsClient  # type: ignore[attr-defined]  # a compiled module mypy cannot read

        client = GcsClient(address=self.address)
        return [info.node_id.hex() for info in client.get_all_node_info(timeout=10).values()
                if info.state == 0]  # ALIVE

    def _wait_for_new_node(self, before: set[str], node: RayNode | None = None) -> str:
        """The id of an alive node not in ``before``. Waits for a new id, not for one more alive node: a
        node killed just before may still count as alive in ``before`` and be marked dead meanwhile."""
        deadline = time.monotonic() + _START_SECONDS
        last: Exception | None = None
        while time.monotonic() < deadline:
            watched = node or self.nodes[0]
            if watched.process.poll() is not None:
                raise RuntimeError(f"ray start ended ({watched.process.returncode}):\n{_tail(watched.log)}")
            try:
                joined = [node_id for node_id in self._alive_ids() if node_id not in before]
                if joined:
                    return joined[0]
            except Exception as exc:  # noqa: BLE001 - the GCS is still starting
                last = exc
            time.sleep(0.3)
        raise RuntimeError(f"Ray node not up in {_START_SECONDS:.0f} s ({last}):\n{_tail(watched.log)}")

    # -- ending -------------------------------------------------------------------------------

    def kill(self, node: RayNode) -> None:
        """SIGKILL every process of a node, by PID (a node lost: a spot instance taken back, a crash)."""
        _kill_sessions({node.process.pid})
        node.process.wait(30)
        node.killed = True

    def stop(self) -> None:
        """End every process of every node (by PID), newest node first."""
        for node in reversed(self.nodes):
            if not node.killed:
                self.kill(node)
        if self._guard is not None:
            assert self._guard.stdin is not None
            self._guard.stdin.close()  # nothing left for it to end: it exits
            self._guard.wait(30)
        if self._own_root:
            shutil.rmtree(self.root, ignore_errors=True)

    def __enter__(self) -> LocalRayCluster:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()


def local_ray_options() -> dict[str, str | bool]:
    """What a test or benchmark gives ``ray.init(...)`` to start a Ray of its own on loopback only:
    ``ray.init(num_cpus=2, **local_ray_options())``. Not for a ``ray.init`` that joins a cluster."""
    if not sys.platform.startswith("linux"):  # macOS, Windows: Ray's local node is 127.0.0.1 already
        return {"include_dashboard": False}
    return {"_node_ip_address": LOOPBACK, "include_dashboard": False}


def token_auth_here(on: bool = True) -> None:
    """Turn Ray's token auth on (or back to Ray's default) for this process, as ``RAY_AUTH_MODE=token`` set
    before Python started would: a driver joining a cluster that ``ray start`` began needs it."""
    if on:
        os.environ["RAY_AUTH_MODE"] = "token"
    else:
        os.environ.pop("RAY_AUTH_MODE", None)
    try:
        from ray._raylet import Config  # type: ignore[attr-defined]  # a compiled module mypy cannot read
    except ImportError:  # pragma: no cover - a Ray without token auth
        return
    Config.initialize("")  # Ray reads the mode once per process; read it again


def _session_pids(sessions: set[int]) -> list[int]:
    """The live (not zombie) processes of these sessions, read from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
            state = stat[stat.rindex(")") + 2]
            if state != "Z" and os.getsid(int(entry)) in sessions:
                found.append(int(entry))
        except (OSError, ValueError):  # gone meanwhile
            continue
    return found


def _kill_sessions(sessions: set[int]) -> None:
    """SIGKILL every process of these sessions, by PID, until none is left (a raylet may be forking a worker)."""
    for _ in range(50):
        pids = _session_pids(sessions)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)


def _guard() -> None:
    """The guard: reads the nodes' session ids from stdin; at its end (the starter gone, killed or done) ends them."""
    sessions = {int(line) for line in sys.stdin if line.strip()}
    _kill_sessions(sessions)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _tail(path: Path, lines: int = 30) -> str:
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


if __name__ == "__main__":
    _guard()
