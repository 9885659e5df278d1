"""A document's readers from the file share's own POSIX permissions (``ACCESS_FROM_FS=1``).

:func:`fs_readers` turns a file's owner, mode bits and POSIX access ACL (the ``system.posix_acl_access``
extended attribute) into reader principals: ``user:NAME``, group names and ``everyone``. The ACL's Linux
xattr format is parsed here (pylibacl ships no wheel and would need compiling): a little-endian header
(u32 version 2), then 8-byte entries (u16 tag, u16 perm, u32 id).
"""

from __future__ import annotations

import errno
import grp
import os
import pwd
import stat
import struct
from pathlib import Path

ACL_XATTR = "system.posix_acl_access"
EVERYONE = "everyone"
ACL_VERSION = 2
USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER = 0x01, 0x02, 0x04, 0x08, 0x10, 0x20
READ = 4
_HEADER = struct.Struct("<I")
_ENTRY = struct.Struct("<HHI")
_TAGS = frozenset({USER_OBJ, USER, GROUP_OBJ, GROUP, MASK, OTHER})
_NO_ACL = frozenset({errno.ENODATA, errno.ENOTSUP, errno.EOPNOTSUPP})


class MalformedACL(ValueError):
    """The ``system.posix_acl_access`` value is not a valid version-2 POSIX access ACL."""


def group_principal(gid: int) -> str:
    """The group's name from :mod:`grp`, or ``gid:1234`` when the gid has no name."""
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return f"gid:{gid}"


def user_principal(uid: int) -> str:
    """``user:NAME`` from :mod:`pwd`, or ``user:uid:1234`` when the uid has no name."""
    try:
        return f"user:{pwd.getpwuid(uid).pw_name}"
    except KeyError:
        return f"user:uid:{uid}"


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


def fs_readers(path: Path) -> frozenset[str]:
    """The principals that may read ``path`` according to its owner, mode bits and POSIX access ACL.

    The owner is always a reader (``user:<owner>``). Without an extended ACL, the owning group is a reader
    when the group-read bit is set and ``everyone`` when the other-read bit is set. With an ACL, each named
    user (``user:NAME``) and named group, and the owning group (GROUP_OBJ), is a reader when its perm AND
    the MASK entry grant read; ACL_OTHER with read gives ``everyone``. An entry without read adds nothing
    (POSIX ACLs have no explicit deny). Symlinks are followed.

    Only the file itself is checked: whether every directory on the way is searchable is not.

    When the file cannot be examined (``stat`` fails, reading the ACL fails with any error other than
    ENODATA / ENOTSUP, or the ACL is malformed), returns ``frozenset()``, meaning admin only; nothing is
    raised or logged here, so the caller should log that case.
    """
    try:
        st = os.stat(path)
        raw = _read_acl(path)
        entries = None if raw is None else parse_acl(raw)
    except (OSError, MalformedACL):
        return frozenset()
    readers = {user_principal(st.st_uid)}
    if entries is None:
        if st.st_mode & stat.S_IRGRP:
            readers.add(group_principal(st.st_gid))
        if st.st_mode & stat.S_IROTH:
            readers.add(EVERYONE)
        return frozenset(readers)
    mask = next((perm for tag, perm, _ in entries if tag == MASK), 0o7)
    for tag, perm, qualifier in entries:
        if tag == OTHER:
            if perm & READ:
                readers.add(EVERYONE)
        elif perm & mask & READ:
            if tag == USER:
                readers.add(user_principal(qualifier))
            elif tag == GROUP:
                readers.add(group_principal(qualifier))
            elif tag == GROUP_OBJ:
                readers.add(group_principal(st.st_gid))
    return frozenset(readers)
