"""A document's readers from the file share's own POSIX permissions (``ACCESS_FROM_FS=1``), as the
file system enforces them.

A principal may read a file when it may search (``x``) every folder from the data folder down to the
file's own folder, the data folder included, and read (``r``) the file itself (:func:`fs_readers`).
Each step is decided the way the kernel decides it for one process: the owner by the owner bits; a
named user of the POSIX ACL by its entry and the mask; a member of the owning group or of a named
group by those entries (masked; any one that grants is enough, none granting denies even when the
other bits would grant); anyone else by the other bits. Root's override is not modelled: root is the
owner or somebody else, like any user.

The principals are the file share's own, in a namespace of their own: ``os-user:NAME``,
``os-group:NAME`` (``os-uid:N`` / ``os-gid:N`` for ids without a name), and ``everyone`` only when
*every* user may reach and read the file (the other bits grant and no owner, named or group entry
takes the right away). A group is a reader when its members may read the file as members of it. The
access file's ``[os]`` table maps them to our users and groups (app.permissions.rules); an unmapped
one is stored as it is and no user holds it (fail closed).

The ACL is the ``system.posix_acl_access`` extended attribute, parsed here (pylibacl ships no wheel
and would need compiling): a little-endian header (u32 version 2), then 8-byte entries (u16 tag, u16
perm, u32 id).
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import struct
from dataclasses import dataclass
from pathlib import Path

ACL_XATTR = "system.posix_acl_access"
EVERYONE = "everyone"
ACL_VERSION = 2
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
READ, SEARCH = 4, 1
_HEADER = struct.Struct("<I")
_ENTRY = struct.Struct("<HHI")
_TAGS = frozenset({USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER})
_NO_ACL = frozenset({errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP})


class MalformedACL(ValueError):
    """The ``system.posix_acl_access`` value is not a valid version-2 POSIX access ACL."""


@dataclass(frozen=True)
class Grant:
    """Whom one file or folder grants one right (read, or search): its owner (uid) and whether the
    owner class grants it, the named users and the groups (owning and named, by id, mask applied), and
    whether the other class grants it."""

    owner: int
    owner_ok: bool
    users: dict[int, bool]
    groups: dict[int, bool]
    other: bool

    def everyone(self) -> bool:
        """Whether every user holds the right: the other class and every other class grant it."""
        return self.other and self.owner_ok and all(self.users.values()) and all(self.groups.values())

    def user(self, uid: int, gids: frozenset[int] | None) -> bool:
        """Whether the user ``uid``, a member of ``gids`` (None: unknown), holds the right."""
        if uid == self.owner:
            return self.owner_ok
        if uid in self.users:
            return self.users[uid]
        if gids is None:  # its groups are unknown: only when no group entry could take the right away
            return self.other and all(self.groups.values())
        matched = [ok for gid, ok in self.groups.items() if gid in gids]
        return any(matched) if matched else self.other

    def group(self, gid: int) -> bool:
        """Whether the members of group ``gid`` hold the right as members (its entry; without one, the
        other class, and only when no other group entry could take it away from a member)."""
        if gid in self.groups:
            return self.groups[gid]
        return self.other and all(self.groups.values())


def group_principal(gid: int) -> str:
    """``os-group:NAME`` from :mod:`grp`, or ``os-gid:1234`` when the gid has no name."""
    try:
        return f"os-group:{grp.getgrgid(gid).gr_name}"
    except KeyError:
        return f"os-gid:{gid}"


def user_principal(uid: int) -> str:
    """``os-user:NAME`` from :mod:`pwd`, or ``os-uid:1234`` when the uid has no name."""
    try:
        return f"os-user:{pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"os-uid:{uid}"


def user_groups(uid: int) -> frozenset[int] | None:
    """The gids the user ``uid`` is a member of (its primary group included); None without a passwd entry."""
    try:
        entry = pwd.getpwuid(uid)
        return frozenset(os.getgrouplist(entry.pw_name, entry.pw_gid))
    except (KeyError, OSError):
        return None


def parse_acl(data: bytes) -> list[tuple[int, int, int]]:
    """The ``(tag, perm, id)`` entries of a POSIX ACL xattr value.

    Raises :class:`MalformedACL` on a bad size or version, an unknown tag, a missing or repeated
    USER_OBJ / GROUP_OBJ / OTHER entry, more than one MASK, or named entries without a MASK.
    """
    if len(data) < _HEADER.size or (len(data) - _HEADER.size) % _ENTRY.size:
        raise MalformedACL(f"size {len(data)} is not a 4-byte header plus 8-byte entries")
    (version,) = _HEADER.unpack_from(data)
    if version != ACL_VERSION:
        raise MalformedACL(f"version {version}, expected {ACL_VERSION}")
    entries = [_ENTRY.unpack_from(data, offset) for offset in range(_HEADER.size, len(data), _ENTRY.size)]
    tags = [tag for tag, _, _ in entries]
    if unknown := set(tags) - _TAGS:
        raise MalformedACL(f"unknown tag(s) {sorted(unknown)}")
    if any(tags.count(tag) != 1 for tag in (USER_OBJ, GROUP_OBJ, OTHER)) or tags.count(MASK) > 1:
        raise MalformedACL("USER_OBJ, GROUP_OBJ and OTHER must appear once, MASK at most once")
    if (USER in tags or GROUP in tags) and MASK not in tags:
        raise MalformedACL("named entries without a MASK entry")
    return entries


def _read_acl(path: Path) -> bytes | None:
    """The raw access ACL, or ``None`` when the file has none or its filesystem has no ACLs."""
    try:
        return os.getxattr(path, ACL_XATTR, follow_symlinks=True)
    except OSError as exc:
        if exc.errno in _NO_ACL:
            return None
        raise


def mode_grant(st: os.stat_result, right: int) -> Grant:
    """The grant of ``right`` (READ or SEARCH) by the mode bits alone (no extended ACL)."""
    mode = st.st_mode
    return Grant(st.st_uid, bool(mode & (right << 6)), {}, {st.st_gid: bool(mode & (right << 3))}, bool(mode & right))


def acl_grant(st: os.stat_result, entries: list[tuple[int, int, int]], right: int) -> Grant:
    """The grant of ``right`` by a POSIX access ACL: named users and groups (and the owning group)
    through the mask; the owner and others by their own entries."""
    mask = next((perm for tag, perm, _ in entries if tag == MASK), 0o7)
    perms = {tag: perm for tag, perm, _ in entries if tag in (USER_OBJ, GROUP_OBJ, OTHER)}
    users = {qualifier: bool(perm & mask & right) for tag, perm, qualifier in entries if tag == USER}
    groups = {qualifier: bool(perm & mask & right) for tag, perm, qualifier in entries if tag == GROUP}
    groups[st.st_gid] = groups.get(st.st_gid, False) or bool(perms[GROUP_OBJ] & mask & right)
    return Grant(st.st_uid, bool(perms[USER_OBJ] & right), users, groups, bool(perms[OTHER] & right))


def object_grant(path: Path, right: int) -> Grant:
    """The grant of ``right`` on ``path`` (links followed); OSError or MalformedACL when it cannot be examined."""
    st = os.stat(path)
    raw = _read_acl(path)
    return mode_grant(st, right) if raw is None else acl_grant(st, parse_acl(raw), right)


def chain(path: Path, root: Path) -> list[tuple[Path, int]]:
    """The folders from ``root`` down to ``path``'s own (SEARCH each) and ``path`` (READ); ValueError
    when ``path`` is not under ``root``."""
    parts = path.absolute().relative_to(root.absolute()).parts
    folders = [root.joinpath(*parts[:n]) for n in range(len(parts))]
    return [(folder, SEARCH) for folder in folders] + [(path, READ)]


def chain_readers(grants: list[Grant], groups_of=user_groups) -> frozenset[str]:
    """The principals every grant of ``grants`` lets through (one grant per step of :func:`chain`)."""
    uids = {g.owner for g in grants} | {uid for g in grants for uid in g.users}
    gids = {gid for g in grants for gid in g.groups}
    readers = {user_principal(uid) for uid in uids if all(g.user(uid, groups_of(uid)) for g in grants)}
    readers |= {group_principal(gid) for gid in gids if all(g.group(gid) for g in grants)}
    if grants and all(g.everyone() for g in grants):
        readers.add(EVERYONE)
    return frozenset(readers)


def fs_readers(path: Path, root: Path, cache: dict | None = None) -> frozenset[str]:
    """The principals that may reach and read ``path`` under the data folder ``root``: search on
    ``root`` and every folder down to the file, read on the file (module docstring). ``cache`` (a dict
    kept for one sync) saves examining a folder again for each of its files.

    When any step cannot be examined (``stat`` fails, reading an ACL fails with any error other than
    ENODATA / ENOTSUP, an ACL is malformed) or ``path`` is not under ``root``, returns ``frozenset()``,
    meaning admin only; nothing is raised or logged here, so the caller should log that case.
    """
    cache = {} if cache is None else cache
    try:
        steps = chain(path, root)
        grants = []
        for step, right in steps:
            key = (str(step.absolute()), right)
            if key not in cache:
                cache[key] = object_grant(step, right)
            grants.append(cache[key])
    except (OSError, MalformedACL, ValueError):
        return frozenset()

    def groups_of(uid: int) -> frozenset[int] | None:
        if ("groups", uid) not in cache:
            cache["groups", uid] = user_groups(uid)
        return cache["groups", uid]

    return chain_readers(grants, groups_of)
