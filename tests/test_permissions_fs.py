"""fs_readers on real files: mode bits, and POSIX access ACLs written with os.setxattr in the Linux
binary format (there is no setfacl here). The kernel refuses to store a malformed ACL and root can read
every xattr, so only those two cases replace ``os.getxattr`` (never the function under test)."""

from __future__ import annotations

import errno
import grp
import os
import pwd
import shutil
import struct
import tempfile
from pathlib import Path

import pytest

from app.permissions import filesystem
from app.permissions.filesystem import (
    ACL_XATTR,
    GROUP,
    GROUP_OBJ,
    MASK,
    OTHER,
    USER,
    USER_OBJ,
    MalformedACL,
    fs_readers,
    parse_acl,
)

NO_ID = 0xFFFFFFFF
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another group or user needs root")

OWNER = f"user:{pwd.getpwuid(os.geteuid()).pw_name}"
_GROUPS = sorted((g for g in grp.getgrall() if g.gr_gid != os.getegid()), key=lambda g: g.gr_gid)
_USERS = sorted((u for u in pwd.getpwall() if u.pw_uid != os.geteuid()), key=lambda u: u.pw_uid)
if len(_GROUPS) < 2 or not _USERS:
    pytest.skip("needs two named groups and another named user in /etc/group and /etc/passwd", allow_module_level=True)
GX, GZ = _GROUPS[0], _GROUPS[1]
UY = _USERS[0]
UNNAMED_GID = next(gid for gid in range(54321, 70000) if gid not in {g.gr_gid for g in grp.getgrall()})
UNNAMED_UID = next(uid for uid in range(54321, 70000) if uid not in {u.pw_uid for u in pwd.getpwall()})


def pack_acl(entries: list[tuple[int, int, int]], version: int = 2) -> bytes:
    """The system.posix_acl_access value for ``(tag, perm, id)`` entries."""
    return struct.pack("<I", version) + b"".join(struct.pack("<HHI", *entry) for entry in entries)


def make_file(directory: Path, mode: int, gid: int | None = None, uid: int | None = None) -> Path:
    """A real file with the given mode (and owner / group when given)."""
    path = directory / "doc.txt"
    path.write_text("社内資料", encoding="utf-8")
    if gid is not None or uid is not None:
        os.chown(path, -1 if uid is None else uid, -1 if gid is None else gid)
    os.chmod(path, mode)
    return path


def set_acl(path: Path, entries: list[tuple[int, int, int]]) -> None:
    """Write the ACL (the kernel wants entries in (tag, id) order) and check the kernel kept it as written."""
    data = pack_acl(sorted(entries))
    os.setxattr(path, ACL_XATTR, data)
    assert os.getxattr(path, ACL_XATTR) == data


def _supports_acl(directory: Path) -> bool:
    probe = directory / "probe"
    probe.touch()
    try:
        set_acl(probe, [(USER_OBJ, 6, NO_ID), (USER, 4, 1), (GROUP_OBJ, 4, NO_ID), (MASK, 4, NO_ID), (OTHER, 0, NO_ID)])
        return True
    except (OSError, AssertionError):
        return False
    finally:
        probe.unlink()


@pytest.fixture
def acl_dir(tmp_path):
    """A directory on a filesystem that stores POSIX access ACLs: tmp_path, else one under /dev/shm."""
    if _supports_acl(tmp_path):
        yield tmp_path
        return
    if os.path.isdir("/dev/shm"):
        shm = Path(tempfile.mkdtemp(dir="/dev/shm"))
        try:
            if _supports_acl(shm):
                yield shm
                return
        finally:
            shutil.rmtree(shm)
    pytest.skip("neither tmp_path nor /dev/shm stores system.posix_acl_access (no ACL support)")


# --- mode bits, no extended ACL ------------------------------------------------------------------


@needs_root
def test_0640_gives_the_owning_group(tmp_path):
    assert fs_readers(make_file(tmp_path, 0o640, gid=GX.gr_gid)) == {OWNER, GX.gr_name}


@needs_root
def test_0644_gives_everyone(tmp_path):
    assert fs_readers(make_file(tmp_path, 0o644, gid=GX.gr_gid)) == {OWNER, GX.gr_name, "everyone"}


def test_0600_gives_only_the_owner(tmp_path):
    assert fs_readers(make_file(tmp_path, 0o600)) == {OWNER}


def test_owner_is_a_reader_even_without_the_owner_read_bit(tmp_path):
    assert fs_readers(make_file(tmp_path, 0o004)) == {OWNER, "everyone"}


@needs_root
def test_unnamed_group_and_owner_use_their_ids(tmp_path):
    path = make_file(tmp_path, 0o640, gid=UNNAMED_GID, uid=UNNAMED_UID)
    assert fs_readers(path) == {f"user:uid:{UNNAMED_UID}", f"gid:{UNNAMED_GID}"}


def test_returns_a_frozenset(tmp_path):
    assert isinstance(fs_readers(make_file(tmp_path, 0o600)), frozenset)


# --- POSIX access ACL ----------------------------------------------------------------------------


def _acl(mask: int, group_x: int = 4, user_y: int = 4, group_obj: int = 0, other: int = 0):
    return [
        (USER_OBJ, 6, NO_ID),
        (USER, user_y, UY.pw_uid),
        (GROUP_OBJ, group_obj, NO_ID),
        (GROUP, group_x, GX.gr_gid),
        (MASK, mask, NO_ID),
        (OTHER, other, NO_ID),
    ]


def test_acl_named_group_and_user_with_mask_read(acl_dir):
    path = make_file(acl_dir, 0o600)
    set_acl(path, _acl(mask=4))
    assert fs_readers(path) == {OWNER, GX.gr_name, f"user:{UY.pw_name}"}


def test_acl_mask_none_grants_neither(acl_dir):
    path = make_file(acl_dir, 0o600)
    set_acl(path, _acl(mask=0))
    assert fs_readers(path) == {OWNER}


def test_acl_named_group_without_read_is_absent(acl_dir):
    path = make_file(acl_dir, 0o600)
    set_acl(path, _acl(mask=7, group_x=2) + [(GROUP, 5, GZ.gr_gid)])
    assert fs_readers(path) == {OWNER, f"user:{UY.pw_name}", GZ.gr_name}


@needs_root
def test_acl_owning_group_uses_group_obj_and_mask_not_the_mode_bits(acl_dir):
    path = make_file(acl_dir, 0o600, gid=GZ.gr_gid)
    set_acl(path, _acl(mask=4, group_obj=0))
    assert os.stat(path).st_mode & 0o040  # the mode's group bits show the mask, not GROUP_OBJ
    assert GZ.gr_name not in fs_readers(path)
    set_acl(path, _acl(mask=4, group_obj=4))
    assert fs_readers(path) == {OWNER, GZ.gr_name, GX.gr_name, f"user:{UY.pw_name}"}
    set_acl(path, _acl(mask=0, group_obj=4))
    assert fs_readers(path) == {OWNER}


def test_acl_other_read_gives_everyone_whatever_the_mask(acl_dir):
    path = make_file(acl_dir, 0o600)
    set_acl(path, _acl(mask=0, other=4))
    assert fs_readers(path) == {OWNER, "everyone"}


def test_acl_unnamed_ids(acl_dir):
    path = make_file(acl_dir, 0o600)
    entries = [(USER_OBJ, 6, NO_ID), (USER, 4, UNNAMED_UID), (GROUP_OBJ, 0, NO_ID), (GROUP, 4, UNNAMED_GID)]
    set_acl(path, entries + [(MASK, 4, NO_ID), (OTHER, 0, NO_ID)])
    assert fs_readers(path) == {OWNER, f"user:uid:{UNNAMED_UID}", f"gid:{UNNAMED_GID}"}


# --- files that cannot be examined -> admin only -------------------------------------------------

MALFORMED = {
    "short": b"\x02\x00",
    "version 3": pack_acl(_acl(mask=4), version=3),
    "truncated entry": pack_acl(_acl(mask=4))[:-3],
    "unknown tag": pack_acl(_acl(mask=4) + [(0x40, 4, NO_ID)]),
    "no mask": pack_acl([(USER_OBJ, 6, NO_ID), (GROUP_OBJ, 4, NO_ID), (GROUP, 4, GX.gr_gid), (OTHER, 4, NO_ID)]),
    "no other": pack_acl([(USER_OBJ, 6, NO_ID), (GROUP_OBJ, 4, NO_ID)]),
}


@pytest.mark.parametrize("name", MALFORMED)
def test_malformed_acl_gives_admin_only(acl_dir, monkeypatch, name):
    path = make_file(acl_dir, 0o644)
    with pytest.raises(OSError):  # why the bytes are handed over by getxattr: the kernel will not store them
        os.setxattr(path, ACL_XATTR, MALFORMED[name])
    with pytest.raises(MalformedACL):
        parse_acl(MALFORMED[name])
    monkeypatch.setattr(filesystem.os, "getxattr", lambda *args, **kwargs: MALFORMED[name])
    assert fs_readers(path) == frozenset()


def test_unreadable_acl_gives_admin_only(tmp_path, monkeypatch):
    path = make_file(tmp_path, 0o644)

    def eio(*args, **kwargs):
        raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))

    monkeypatch.setattr(filesystem.os, "getxattr", eio)
    assert fs_readers(path) == frozenset()


def test_filesystem_without_acls_falls_back_to_the_mode_bits(tmp_path, monkeypatch):
    path = make_file(tmp_path, 0o604)

    def enotsup(*args, **kwargs):
        raise OSError(errno.ENOTSUP, os.strerror(errno.ENOTSUP), str(path))

    monkeypatch.setattr(filesystem.os, "getxattr", enotsup)
    assert fs_readers(path) == {OWNER, "everyone"}


def test_missing_file_and_dangling_symlink_give_admin_only(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "gone")
    assert fs_readers(tmp_path / "gone") == frozenset()
    assert fs_readers(link) == frozenset()


def test_symlink_is_followed(tmp_path):
    link = tmp_path / "link"
    link.symlink_to(make_file(tmp_path, 0o604))
    assert fs_readers(link) == {OWNER, "everyone"}
