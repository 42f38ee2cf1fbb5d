"""Which process holds the other end of a loopback TCP connection, on Linux: the kernel names
the connecting socket's inode when asked by its address (sock_diag over netlink, one exact
lookup of ~15 us; where that is missing, the socket table in /proc/net/tcp and tcp6, whose
reading walks the whole table, ~5 ms even on a quiet machine), and a process holds it when
one of the links in /proc/<pid>/fd reads `socket:[inode]`.

What a run's hook endpoint uses to answer only the Claude Code it started: a token in Claude
Code's environment or command line is readable by any process of the same user (the agent's
commands included, through /proc/<pid>/environ), the socket Claude Code connected with is
not something another process can hold (Claude Code does not pass its sockets to the
commands it runs: measured with 2.1.332, a Bash command's only descriptors are 0, 1 and 2).

Elsewhere (macOS and the BSDs have no /proc) `supported()` is False and nothing is checked.
"""

from __future__ import annotations

import errno
import ipaddress
import os
import socket
import struct
import sys
from collections.abc import Iterable

PROC = "/proc"
Address = tuple[str, int]


def supported() -> bool:
    """Whether this system tells which process holds a socket (Linux, /proc mounted)."""
    return sys.platform.startswith("linux") and os.path.isdir(f"{PROC}/self/fd")


def holds_connection(pid: int, peer: Address, server: Address) -> str:
    """'' when process `pid` holds the socket that connected from `peer` to `server`; else
    why not (said in a log line)."""
    try:
        inode = connection_inode(peer, server)
    except OSError as exc:
        return f"the socket table cannot be read: {exc.strerror or exc}"
    if inode is None:
        return f"no socket connected from {peer[0]}:{peer[1]} (it closed?)"
    try:
        if holds_socket(pid, inode):
            return ""
    except OSError as exc:
        return f"the descriptors of process {pid} cannot be read: {exc.strerror or exc}"
    return f"process {pid} does not hold the socket connected from {peer[0]}:{peer[1]}"


def connection_inode(local: Address, remote: Address) -> int | None:
    """The inode of the socket bound to `local` and connected to `remote`; None if none."""
    try:
        return diag_inode(local, remote)
    except OSError:  # no sock_diag here (some containers): the slower socket table
        return socket_inode(_tables(), local, remote)


SOCK_DIAG = 4
"""NETLINK_SOCK_DIAG"""
SOCK_DIAG_BY_FAMILY = 20
NLMSG_ERROR = 2
NLM_F_REQUEST = 1
ALL_STATES = 0xFFFFFFFF
NO_COOKIE = 0xFFFFFFFF
INODE_OFFSET = 16 + 68
"""In the reply: the netlink header, then inet_diag_msg, whose idiag_inode is at 68."""


def diag_inode(local: Address, remote: Address) -> int | None:
    """One exact lookup through netlink sock_diag (inet_diag_req_v2 with the full address,
    as `ss` asks); OSError when the kernel does not offer it."""
    family = socket.AF_INET6 if ":" in local[0] else socket.AF_INET
    request = struct.pack("=BBBBI", family, socket.IPPROTO_TCP, 0, 0, ALL_STATES)
    request += struct.pack(">HH", local[1], remote[1])
    for host in (local[0], remote[0]):
        request += socket.inet_pton(family, host).ljust(16, b"\0")  # __be32 [4]
    request += struct.pack("=III", 0, NO_COOKIE, NO_COOKIE)
    header = struct.pack("=IHHII", 16 + len(request), SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST, 1, 0)
    with socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, SOCK_DIAG) as link:
        link.settimeout(1.0)
        link.sendto(header + request, (0, 0))
        reply = link.recv(8192)
    if len(reply) < 20:
        raise OSError("a short sock_diag reply")
    kind = struct.unpack_from("=H", reply, 4)[0]
    if kind == NLMSG_ERROR:
        error = -struct.unpack_from("=i", reply, 16)[0]
        if error == errno.ENOENT:
            return None
        raise OSError(error, os.strerror(error))
    if kind != SOCK_DIAG_BY_FAMILY or len(reply) < INODE_OFFSET + 4:
        raise OSError(f"an unexpected sock_diag reply (type {kind})")
    inode = struct.unpack_from("=I", reply, INODE_OFFSET)[0]
    return int(inode) or None


def holds_socket(pid: int, inode: int) -> bool:
    target = f"socket:[{inode}]"
    with os.scandir(f"{PROC}/{pid}/fd") as fds:
        for fd in fds:
            try:
                if os.readlink(fd.path) == target:
                    return True
            except OSError:  # closed since listed
                continue
    return False


def socket_inode(tables: Iterable[str], local: Address, remote: Address) -> int | None:
    """The inode of the socket bound to `local` and connected to `remote`, from the text of
    /proc/net/tcp and tcp6 (an IPv4 address may appear there IPv4-mapped)."""
    local_port, remote_port = f":{local[1]:04X}", f":{remote[1]:04X}"
    want = (_normal(local[0]), local[1], _normal(remote[0]), remote[1])
    for table in tables:
        for line in table.splitlines()[1:]:
            fields = line.split()
            if len(fields) < 10 or not fields[1].endswith(local_port):
                continue
            if not fields[2].endswith(remote_port):
                continue
            try:
                here, there = _address(fields[1]), _address(fields[2])
            except ValueError:
                continue
            if (*here, *there) == want and fields[9] != "0":  # 0: no socket (TIME_WAIT)
                return int(fields[9])
    return None


def _tables() -> list[str]:
    tables = []
    for name in ("tcp", "tcp6"):
        try:
            with open(f"{PROC}/net/{name}", encoding="ascii") as f:
                tables.append(f.read())
        except FileNotFoundError:  # no IPv6
            if name == "tcp":
                raise
    return tables


def _address(field: str) -> tuple[str, int]:
    """`0100007F:1F90` -> ('127.0.0.1', 8080): each 32-bit word as the kernel printed it, in
    this machine's byte order."""
    hex_address, hex_port = field.split(":")
    words = [int(hex_address[i:i + 8], 16) for i in range(0, len(hex_address), 8)]
    packed = struct.pack(f"={len(words)}I", *words)
    family = socket.AF_INET if len(packed) == 4 else socket.AF_INET6
    return _normal(socket.inet_ntop(family, packed)), int(hex_port, 16)


def _normal(host: str) -> str:
    address = ipaddress.ip_address(host)
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return str(address.ipv4_mapped)
    return str(address)
