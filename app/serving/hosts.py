"""This server's own names, and the Host and Origin headers it accepts (app.serving.access checks them).

Host patterns (ALLOWED_HOSTS, comma-separated) are lower-cased ``name:port`` (exactly that port) or
``name`` / ``name:*`` (that name with any port, or with none); IPv6 addresses in brackets
(``[fe80::1]:8765``; a bare ``fe80::1`` means any port). Origins (ALLOWED_ORIGINS) are compared
exactly as ``scheme://host[:port]`` (lower-cased, a trailing ``/`` dropped); there are no wildcards.
Bound to 0.0.0.0 or ``::``, every address and name of this machine is its own (:func:`this_machine`),
and PUBLIC_URL's host and origin are accepted too.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")  # the names a client on this machine uses
UNSPECIFIED = ("0.0.0.0", "::", "")  # binding these listens on every address, loopback included
ANY_PORT = "*"
_HOST_NAME = re.compile(r"[a-z0-9._-]+|\[[0-9a-f:.]+\]")  # a DNS name, IPv4, or [IPv6]


def is_loopback(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ::1 (brackets allowed, IPv4-mapped too); False for
    every other name or address, including 0.0.0.0 and ``::`` (those listen on all addresses)."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def host_port(host: str, port: int | str) -> str:
    """``host:port`` as in a Host header or URL: IPv6 addresses in brackets, lower-cased."""
    name = host.strip().strip("[]").lower()
    return f"[{name}]:{port}" if ":" in name else f"{name}:{port}"


@dataclass(frozen=True)
class MachineNames:
    """What this machine is called: its interfaces' addresses (loopback ones included, as found) and
    its host names (``socket.gethostname()`` and the FQDN)."""

    addresses: tuple[str, ...] = ()
    hostnames: tuple[str, ...] = ()


def interface_addresses() -> tuple[str, ...]:
    """Every IPv4 and IPv6 address of this machine's network interfaces (``psutil.net_if_addrs``),
    in the interfaces' order; the addresses the host name resolves to when psutil is missing."""
    try:
        import psutil
    except ImportError:  # pragma: no cover - psutil is in requirements.txt
        try:
            infos = socket.getaddrinfo(socket.gethostname(), None)
        except OSError:
            return ()
        return tuple(dict.fromkeys(str(info[4][0]) for info in infos))
    families = (socket.AF_INET, socket.AF_INET6)
    return tuple(
        dict.fromkeys(
            entry.address for entries in psutil.net_if_addrs().values() for entry in entries if entry.family in families
        )
    )


def machine_hostnames() -> tuple[str, ...]:
    """This machine's host name and its fully qualified name (one when they are the same)."""
    names = [socket.gethostname()]
    try:
        names.append(socket.getfqdn())
    except OSError:  # pragma: no cover - getfqdn falls back to the host name itself
        pass
    return tuple(dict.fromkeys(name.strip().lower() for name in names if name.strip()))


def this_machine() -> MachineNames:
    """The addresses and host names of this machine, looked up now (the discovery behind
    :func:`own_names`; tests replace it)."""
    return MachineNames(interface_addresses(), machine_hostnames())


def _usable_address(address: str, ipv6: bool) -> str | None:
    """``address`` without its zone (``%eth0``) as a client would name it; None for a loopback or
    unspecified address, an IPv6 link-local one (a URL cannot carry its zone), IPv6 when ``ipv6`` is
    False, or something that is not an address."""
    try:
        parsed = ipaddress.ip_address(address.strip().strip("[]").partition("%")[0])
    except ValueError:
        return None
    if parsed.is_loopback or parsed.is_unspecified or (parsed.version == 6 and (parsed.is_link_local or not ipv6)):
        return None
    return str(parsed)


def _usable_hostname(name: str) -> str | None:
    """A host name a client may send (lower-cased); None for a loopback name or one with odd characters."""
    value = name.strip().lower().rstrip(".")
    if not value or is_loopback(value) or not _HOST_NAME.fullmatch(value) or value.startswith("["):
        return None
    return value


def own_names(
    bind_host: str, port: int, interface_addrs: Iterable[str] = (), hostnames: Iterable[str] = ()
) -> tuple[str, ...]:
    """The ``host:port`` names of this server itself, from what the machine is called.

    Bound to loopback: the bound address and the loopback names. Bound to 0.0.0.0 (or ``::``, which
    takes IPv6 addresses too): the loopback names, then each of ``interface_addrs`` that another
    machine can use (no loopback, no IPv6 link-local), then ``hostnames``. Bound to one other address:
    that address and ``hostnames``. 0.0.0.0 and ``::`` themselves are never a name."""
    bind = bind_host.strip().strip("[]").lower()
    names: list[str] = []
    if bind not in UNSPECIFIED:
        names.append(host_port(bind, port))
    if is_loopback(bind) or bind in UNSPECIFIED:
        names.extend(host_port(name, port) for name in LOOPBACK_NAMES)
    if bind in UNSPECIFIED:
        usable = (_usable_address(address, ipv6=bind != "0.0.0.0") for address in interface_addrs)
        names.extend(host_port(address, port) for address in usable if address)
    if not is_loopback(bind):
        names.extend(host_port(name, port) for name in map(_usable_hostname, hostnames) if name)
    return tuple(dict.fromkeys(names))


def _machine_for(bind_host: str, machine: MachineNames | None) -> MachineNames:
    """``machine``, else what :func:`this_machine` finds (not looked up for a loopback binding)."""
    if machine is not None:
        return machine
    return MachineNames() if is_loopback(bind_host) else this_machine()


def server_hosts(bind_host: str, port: int, machine: MachineNames | None = None) -> tuple[str, ...]:
    """:func:`own_names` of a server bound to ``bind_host:port`` on ``machine`` (default: this one)."""
    found = _machine_for(bind_host, machine)
    return own_names(bind_host, port, found.addresses, found.hostnames)


def colleague_url(bind_host: str, port: int, public_url: str = "", machine: MachineNames | None = None) -> str:
    """The address (``scheme://host[:port]``, no trailing ``/``) people open: PUBLIC_URL when set; on
    loopback the bound address; bound to 0.0.0.0 / ``::`` the machine's first address another machine
    can use (IPv4 first), else its host name, else a placeholder -- never a loopback name there."""
    if public_url.strip():
        return public_url.strip().rstrip("/")
    bind = bind_host.strip().strip("[]")
    if bind not in UNSPECIFIED:
        return f"http://{host_port(bind, port)}"
    found = _machine_for(bind_host, machine)
    usable = [a for a in (_usable_address(a, ipv6=bind != "0.0.0.0") for a in found.addresses) if a]
    usable.sort(key=lambda address: ":" in address)  # IPv4 first, else in the interfaces' order
    names = [name for name in map(_usable_hostname, found.hostnames) if name]
    return f"http://{host_port((usable + names + ['<this-machine>'])[0], port)}"


def _public_parts(public_url: str) -> tuple[str, str] | None:
    """PUBLIC_URL's ``(origin, host[:port])``, lower-cased, a default port (80, 443) left out as a
    browser does; None when unset. ValueError when it is not an http(s) URL with a host."""
    if not public_url.strip():
        return None
    try:
        parts = urlsplit(public_url.strip().lower())
        port = parts.port
    except ValueError:
        parts, port = None, None
    if parts is None or parts.scheme not in ("http", "https") or not parts.hostname or "@" in parts.netloc:
        raise ValueError(f"PUBLIC_URL: {public_url!r} is not an address such as https://rag.example.co.jp")
    default = {"http": 80, "https": 443}[parts.scheme]
    name = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    host = name if port in (None, default) else f"{name}:{port}"
    return f"{parts.scheme}://{host}", host


def public_host(public_url: str) -> str | None:
    """The Host header a request through PUBLIC_URL carries (``host[:port]``); None when unset."""
    parts = _public_parts(public_url)
    return parts[1] if parts else None


def public_origin(public_url: str) -> str | None:
    """The Origin of a page opened at PUBLIC_URL (``scheme://host[:port]``); None when unset."""
    parts = _public_parts(public_url)
    return parts[0] if parts else None


def host_pattern(entry: str) -> str:
    """One ALLOWED_HOSTS entry as a pattern: ``name:port`` kept, ``name`` becomes ``name:*``
    (any port); a bare IPv6 address is bracketed. ValueError for anything else (no wildcard names)."""
    raw = entry.strip().lower()
    if raw.startswith("["):
        name, _, rest = raw[1:].partition("]")
        port = rest[1:] if rest.startswith(":") else ANY_PORT
        ok = bool(name) and rest in ("", f":{port}")
        name = f"[{name}]"
    elif raw.count(":") > 1:  # a bare IPv6 address
        name, port, ok = f"[{raw}]", ANY_PORT, True
    else:
        name, _, port = raw.partition(":")
        port, ok = port or ANY_PORT, bool(name)
    if not ok or not _HOST_NAME.fullmatch(name) or (port != ANY_PORT and not port.isdigit()):
        raise ValueError(f"ALLOWED_HOSTS: {entry!r} is not a host name or host:port")
    return f"{name}:{port}"


def allowed_hosts(
    bind_host: str, port: int, extra: Iterable[str] = (), *, public_url: str = "", machine: MachineNames | None = None
) -> tuple[str, ...]:
    """Host patterns accepted: :func:`server_hosts` (with bare names too when the port is 80, the
    port clients leave out), PUBLIC_URL's ``host[:port]`` (:func:`public_host`), plus ``extra``
    (ALLOWED_HOSTS) through :func:`host_pattern`."""
    own = server_hosts(bind_host, port, machine)
    bare = tuple(name.rpartition(":")[0] for name in own) if port == 80 else ()
    public = public_host(public_url)
    return tuple(dict.fromkeys(own + bare + ((public,) if public else ()) + tuple(host_pattern(e) for e in extra)))


def host_allowed(host: str | None, patterns: Iterable[str]) -> bool:
    """Whether a Host header value matches one of ``patterns`` (exact ``name:port``, or
    ``name:*``: that name with any port or none)."""
    value = (host or "").strip().lower()
    if not value:
        return False
    for pattern in patterns:
        if value == pattern:
            return True
        name, _, port = pattern.rpartition(":")
        if port == ANY_PORT:
            head, sep, tail = value.rpartition(":")
            if value == name or (head == name and sep and tail.isdigit()):
                return True
    return False


def origin_value(entry: str) -> str:
    """An origin as compared: lower-cased, without a trailing ``/``; ValueError unless it looks
    like ``http(s)://host[:port]``."""
    value = entry.strip().lower().rstrip("/")
    scheme, sep, rest = value.partition("://")
    if scheme not in ("http", "https") or not sep or not rest or "/" in rest:
        raise ValueError(f"ALLOWED_ORIGINS: {entry!r} is not an origin such as https://rag.example.com")
    return value


def same_origins(hosts: Iterable[str], port: int) -> tuple[str, ...]:
    """The origins of pages served under the Host patterns ``hosts``: ``http://`` + each one; a
    ``name:*`` pattern gives ``http://name:<port>`` (this server's port) and ``http://name``."""
    origins: list[str] = []
    for pattern in hosts:
        name, sep, any_port = pattern.rpartition(":")
        if sep and any_port == ANY_PORT:
            origins.extend((f"http://{name}:{port}", f"http://{name}"))
        else:
            origins.append(f"http://{pattern}")
    return tuple(dict.fromkeys(origins))


def allowed_origins(
    bind_host: str,
    port: int,
    extra: Iterable[str] = (),
    *,
    hosts: Iterable[str] | None = None,
    public_url: str = "",
    machine: MachineNames | None = None,
) -> tuple[str, ...]:
    """Origins accepted: the page's own under every accepted Host (:func:`same_origins` of ``hosts``,
    default :func:`allowed_hosts` without extras), PUBLIC_URL's origin, plus ``extra``
    (ALLOWED_ORIGINS). ``http://localhost:<another port>`` is not one of them."""
    if hosts is None:
        hosts = allowed_hosts(bind_host, port, public_url=public_url, machine=machine)
    public = public_origin(public_url)
    return tuple(
        dict.fromkeys(same_origins(hosts, port) + ((public,) if public else ()) + tuple(origin_value(e) for e in extra))
    )


def origin_allowed(origin: str | None, origins: Iterable[str]) -> bool:
    """True when there is no Origin header (not a browser) or it is exactly one of ``origins``."""
    if origin is None:
        return True
    return origin.strip().lower().rstrip("/") in origins


def access_lists(
    bind_host: str,
    port: int,
    extra_hosts: Iterable[str] = (),
    extra_origins: Iterable[str] = (),
    *,
    public_url: str = "",
    machine: MachineNames | None = None,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The Host patterns and Origins a server bound to ``bind_host:port`` accepts, from one look at
    this machine: :func:`allowed_hosts` with ``extra_hosts``, and :func:`allowed_origins` (the
    same-origin of every one of those hosts) with ``extra_origins``."""
    machine = _machine_for(bind_host, machine)
    hosts = allowed_hosts(bind_host, port, extra_hosts, public_url=public_url, machine=machine)
    origins = allowed_origins(bind_host, port, extra_origins, hosts=hosts, public_url=public_url, machine=machine)
    return hosts, origins


def serving_line(
    what: str, bind_host: str, port: int, path: str, public_url: str = "", machine: MachineNames | None = None
) -> tuple[str, str]:
    """``(url, line)``: the URL people open (:func:`colleague_url` + ``path``) and the start line that
    names it, with this machine's own loopback URL too when the server also listens there."""
    url = colleague_url(bind_host, port, public_url, machine) + path
    local = colleague_url(bind_host if is_loopback(bind_host) else "127.0.0.1", port) + path
    serves_loopback = is_loopback(bind_host) or bind_host.strip().strip("[]") in UNSPECIFIED
    also = f"on this machine also {local}; " if serves_loopback and url != local else ""
    return url, f"{what} on {url} ({also}Ctrl-C to stop)"
