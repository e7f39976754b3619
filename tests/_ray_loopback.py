"""Every Ray the tests start stays on loopback (127.0.0.0/8): what its nodes report, what its processes
name on their command lines and the addresses they listen on, read from /proc (Linux)."""

from __future__ import annotations

import ipaddress
import os
import re
import sys
from collections.abc import Iterable
from pathlib import Path

import pytest

LOOPBACK = ipaddress.ip_network("127.0.0.0/8")
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="reads /proc; Ray moves a node off 127.0.0.1 on Linux only")
_IPV4 = re.compile(r"(?<![\d.])(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})(?![\d.])")


def on_loopback(address: str) -> bool:
    """``127.0.0.2``, ``127.0.0.2:6379``, ``[::ffff:127.0.0.2]:6379``: inside 127.0.0.0/8."""
    host = address.rsplit(":", 1)[0] if address.count(":") == 1 or address.startswith("[") else address
    ip = ipaddress.ip_address(host.strip("[]"))
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip in LOOPBACK


def off_loopback(pids: Iterable[int]) -> list[str]:
    """What these processes name or listen on outside 127.0.0.0/8: IPv4 addresses on their command lines
    (0.0.0.0 aside), and listening sockets bound to one such address. A socket bound to every interface
    (Ray's C++ servers, unless the node is exactly 127.0.0.1) names no address and is not counted."""
    listening = _listening()
    found = []
    for pid in pids:
        try:
            args = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            sockets = {os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
        except OSError:  # ended meanwhile
            continue
        for ip in set(_IPV4.findall(args)) - {"0.0.0.0"}:
            if not on_loopback(ip):
                found.append(f"pid {pid} names {ip}: {args[:200]}")
        for link in sockets:
            bound = listening.get(link)
            if bound is not None and not bound.is_unspecified and not on_loopback(str(bound)):
                found.append(f"pid {pid} listens on {bound}")
    return found


def ray_tree(root: int) -> list[int]:
    """``root`` and every process below it (a driver's own Ray: GCS, raylet, workers, agents)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            children.setdefault(int(stat[stat.rindex(")") + 2:].split()[1]), []).append(int(entry))
    tree, todo = [], [root]
    while todo:
        pid = todo.pop()
        tree.append(pid)
        todo.extend(children.get(pid, []))
    return tree


def _listening() -> dict[str, ipaddress.IPv4Address | ipaddress.IPv6Address]:
    """``socket:[inode]`` -> the address of every listening TCP socket on this machine."""
    found = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] != "0A":  # LISTEN
                continue
            raw = bytes.fromhex(fields[1].split(":")[0])
            if sys.byteorder == "little":  # each 32-bit word is in host order
                raw = b"".join(raw[i:i + 4][::-1] for i in range(0, len(raw), 4))
            address = ipaddress.ip_address(raw)
            if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
                address = address.ipv4_mapped
            found[f"socket:[{fields[9]}]"] = address
    return found
