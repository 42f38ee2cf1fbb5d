"""Which process holds the other end of a loopback connection (Linux /proc)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys

import pytest

from gateway.runner import peer_process
from gateway.runner.peer_process import socket_inode

HEADER = ("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
          "timeout inode\n")
LITTLE = sys.byteorder == "little"
LOOPBACK = "0100007F" if LITTLE else "7F000001"
MAPPED = ("0000000000000000FFFF00000100007F" if LITTLE
          else "00000000000000000000FFFF7F000001")


def row(local: str, remote: str, inode: int) -> str:
    return (f"   0: {local} {remote} 01 00000000:00000000 00:00000000 00000000     0        0 "
            f"{inode} 1 0000000000000000 20 4 30 10 -1\n")


def test_the_connecting_socket_is_found_by_both_ends() -> None:
    tcp = HEADER + "".join([
        row(f"{LOOPBACK}:1F90", "00000000:0000", 11),        # the listener
        row(f"{LOOPBACK}:1F90", f"{LOOPBACK}:A000", 12),    # the server's end
        row(f"{LOOPBACK}:A000", f"{LOOPBACK}:1F91", 13),    # same port, another server
        row(f"{LOOPBACK}:A000", f"{LOOPBACK}:1F90", 14),    # the client's end
        row(f"{LOOPBACK}:A002", f"{LOOPBACK}:1F90", 0),     # closed (TIME_WAIT)
    ])
    assert socket_inode([tcp], ("127.0.0.1", 0xA000), ("127.0.0.1", 0x1F90)) == 14
    assert socket_inode([tcp], ("127.0.0.1", 0xA001), ("127.0.0.1", 0x1F90)) is None
    assert socket_inode([tcp], ("127.0.0.1", 0xA002), ("127.0.0.1", 0x1F90)) is None


def test_an_ipv4_mapped_client_is_found_in_tcp6() -> None:
    tcp6 = HEADER + row(f"{MAPPED}:A000", f"{MAPPED}:1F90", 21)
    assert socket_inode(["", tcp6], ("127.0.0.1", 0xA000), ("127.0.0.1", 0x1F90)) == 21


needs_proc = pytest.mark.skipif(not peer_process.supported(),
                                reason="which process holds a socket is read from /proc (Linux)")


@needs_proc
def test_the_process_holding_a_real_connection_is_told_apart() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        server = listener.getsockname()
        with socket.create_connection(server) as mine:
            accepted, peer = listener.accept()
            with accepted:
                assert peer == mine.getsockname()
                assert peer_process.holds_connection(os.getpid(), peer, server) == ""
                child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
                try:
                    why = peer_process.holds_connection(child.pid, peer, server)
                finally:
                    child.kill()
                    child.wait()
        assert f"process {child.pid} does not hold" in why
    gone = peer_process.holds_connection(os.getpid(), peer, server)
    assert "no socket connected" in gone


@needs_proc
def test_sock_diag_and_the_socket_table_name_the_same_inode() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        server = listener.getsockname()
        with socket.create_connection(server) as mine, socket.socket(socket.AF_INET6) as mapped:
            accepted, peer = listener.accept()
            mapped.connect(("::ffff:127.0.0.1", server[1]))
            accepted6, peer6 = listener.accept()
            with accepted, accepted6:
                for client, address in ((mine, peer), (mapped, peer6)):
                    inode = os.fstat(client.fileno()).st_ino
                    assert peer_process.diag_inode(address, server) == inode
                    tables = peer_process._tables()
                    assert peer_process.socket_inode(tables, address, server) == inode
        assert peer_process.diag_inode(("127.0.0.1", 1), server) is None
