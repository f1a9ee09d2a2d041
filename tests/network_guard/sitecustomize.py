"""Loaded by every Python process whose PYTHONPATH starts with this folder (tests only).

Refuses and records any connection to an address outside the loopback range, so a test can run
the demo book and assert that nothing reached for the network. Jupyter kernels talk to their
clients over loopback (and through libzmq, not Python sockets), so they are unaffected.
"""

import ipaddress
import os
import socket

_LOG = os.environ.get("VLBIAS_NETWORK_LOG")
_real_connect = socket.socket.connect
_real_connect_ex = socket.socket.connect_ex
_real_getaddrinfo = socket.getaddrinfo


def _is_local(host) -> bool:
    if host in ("localhost", "", None):
        return True
    try:
        return ipaddress.ip_address(str(host).split("%")[0]).is_loopback
    except ValueError:
        return False


def _refuse(what: str):
    if _LOG:
        with open(_LOG, "a", encoding="utf-8") as handle:
            handle.write(f"{os.getpid()} {what}\n")
    raise OSError(f"network access blocked in tests: {what}")


def _check(sock, address):
    if sock.family in (socket.AF_INET, socket.AF_INET6) and not _is_local(address[0]):
        _refuse(f"connect {address!r}")


def connect(self, address):
    _check(self, address)
    return _real_connect(self, address)


def connect_ex(self, address):
    _check(self, address)
    return _real_connect_ex(self, address)


def getaddrinfo(host, *args, **kwargs):
    if not _is_local(host if not isinstance(host, bytes) else host.decode()):
        _refuse(f"resolve {host!r}")
    return _real_getaddrinfo(host, *args, **kwargs)


socket.socket.connect = connect
socket.socket.connect_ex = connect_ex
socket.getaddrinfo = getaddrinfo
