"""fs_readers on real files and folders (issue 49, row 3): who may search every folder from the data
folder down and read the file, from mode bits and POSIX access ACLs written with os.setxattr in the
Linux binary format (there is no setfacl here), as ``os-user:`` / ``os-group:`` principals. The tests
run as root, who could open anything, so readers are computed from the bits, never by trying. The
kernel refuses to store a malformed ACL and root can read every xattr, so only those two cases
replace ``os.getxattr`` (never the function under test)."""

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
    READ,
    SEARCH,
    USER,
    USER_OBJ,
    Grant,
    MalformedACL,
    chain,
    chain_readers,
    fs_readers,
    mode_grant,
    parse_acl,
)

NO_ID = 0xFFFFFFFF
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another group or user needs root")

OWNER = f"os-user:{pwd.getpwuid(os.geteuid()).pw_name}"
OWN_GROUP = f"os-group:{grp.getgrgid(os.getegid()).gr_name}"  # the group of what the tests create
_GROUPS = sorted((g for g in grp.getgrall() if g.gr_gid != os.getegid()), key=lambda g: g.gr_gid)
_USERS = sorted((u for u in pwd.getpwall() if u.pw_uid != os.geteuid()), key=lambda u: u.pw_uid)
if len(_GROUPS) < 2 or not _USERS:
    pytest.skip("needs two named groups and another named user in /etc/group and /etc/passwd", allow_module_level=True)
GX, GZ = _GROUPS[0], _GROUPS[1]
UY = _USERS[0]
X, Z, Y = f"os-group:{GX.gr_name}", f"os-group:{GZ.gr_name}", f"os-user:{UY.pw_name}"
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


def data_folder(parent: Path) -> Path:
    """A data folder (0755, the tests' own user and group) under ``parent``: the root of every chain."""
    root = parent / "data"
    root.mkdir()
    root.chmod(0o755)
    return root


@pytest.fixture
def share(tmp_path):
    """A data folder on tmp_path (tmp_path itself is 0700: above the data folder, never examined)."""
    return data_folder(tmp_path)


@pytest.fixture
def acl_dir(tmp_path):
    """A data folder on a filesystem that stores POSIX access ACLs: under tmp_path, else under /dev/shm."""
    if _supports_acl(tmp_path):
        yield data_folder(tmp_path)
        return
    if os.path.isdir("/dev/shm"):
        shm = Path(tempfile.mkdtemp(dir="/dev/shm"))
        try:
            if _supports_acl(shm):
                yield data_folder(shm)
                return
        finally:
            shutil.rmtree(shm)
    pytest.skip("neither tmp_path nor /dev/shm stores system.posix_acl_access (no ACL support)")


# --- mode bits, no extended ACL: the file in the data folder (0755) --------------------------------


@needs_root
def test_0640_gives_the_owner_and_the_owning_group(share):
    assert fs_readers(make_file(share, 0o640, gid=GX.gr_gid), share) == {OWNER, X}


@needs_root
def test_0644_gives_everyone_and_each_group_that_reaches_it(share):
    assert fs_readers(make_file(share, 0o644, gid=GX.gr_gid), share) == {OWNER, X, OWN_GROUP, "everyone"}


def test_0600_gives_only_the_owner(share):
    assert fs_readers(make_file(share, 0o600), share) == {OWNER}


def test_an_owner_without_the_read_bit_is_no_reader_and_others_alone_are_not_everyone(share):
    assert fs_readers(make_file(share, 0o004), share) == frozenset()


@needs_root
def test_unnamed_group_and_owner_use_their_ids(share):
    path = make_file(share, 0o640, gid=UNNAMED_GID, uid=UNNAMED_UID)
    assert fs_readers(path, share) == {f"os-uid:{UNNAMED_UID}", f"os-gid:{UNNAMED_GID}"}


def test_returns_a_frozenset(share):
    assert isinstance(fs_readers(make_file(share, 0o600), share), frozenset)


# --- the folders on the way: search (x) on each, from the data folder down -----------------------


def folder(parent: Path, mode: int, gid: int | None = None) -> Path:
    """A real folder with the given mode (and group)."""
    path = parent / "経理"
    path.mkdir()
    if gid is not None:
        os.chown(path, -1, gid)
    path.chmod(mode)
    return path


@needs_root
def test_row_3_a_0750_folder_keeps_others_out_of_its_0644_files(share):
    path = make_file(folder(share, 0o750, gid=GX.gr_gid), 0o644, gid=GX.gr_gid)
    assert fs_readers(path, share) == {OWNER, X}


def test_a_0700_folder_leaves_only_its_owner(share):
    assert fs_readers(make_file(folder(share, 0o700), 0o644), share) == {OWNER}


def test_search_without_read_on_a_folder_is_enough_to_reach_a_file(share):
    assert fs_readers(make_file(folder(share, 0o711), 0o644), share) == {OWNER, OWN_GROUP, "everyone"}


def test_read_without_search_on_a_folder_is_not(share):
    assert fs_readers(make_file(folder(share, 0o744), 0o644), share) == {OWNER}


def test_the_data_folder_itself_is_on_the_way(share):
    path = make_file(share, 0o644)
    share.chmod(0o700)
    assert fs_readers(path, share) == {OWNER}


@needs_root
def test_a_group_denied_where_others_may_pass_is_not_widened_to_everyone(share):
    """0705 with group X: members of X may not enter (POSIX takes the group class, not other), so the
    file is not everyone's; nor is another group's, whose members might also be in X."""
    path = make_file(folder(share, 0o705, gid=GX.gr_gid), 0o644)
    assert fs_readers(path, share) == {OWNER}


def test_a_file_outside_the_data_folder_is_nobodys(share, tmp_path):
    assert fs_readers(make_file(tmp_path, 0o644), share) == frozenset()


def test_the_chain_is_the_data_folder_each_folder_and_the_file(share):
    path = share / "docs" / "経理" / "a.md"
    assert chain(path, share) == [
        (share, SEARCH),
        (share / "docs", SEARCH),
        (share / "docs" / "経理", SEARCH),
        (path, READ),
    ]


def test_folders_are_examined_once_per_cache(share):
    sub = folder(share, 0o755)
    cache: dict = {}
    for name in ("a.md", "b.md"):
        (sub / name).write_text("x", encoding="utf-8")
        fs_readers(sub / name, share, cache)
    assert sorted(key for key in cache if key[0] != "groups") == sorted(
        [(str(share), SEARCH), (str(sub), SEARCH), (str(sub / "a.md"), READ), (str(sub / "b.md"), READ)]
    )


# --- one grant, exact: the kernel's order of classes ---------------------------------------------


def stat_of(mode: int, uid: int = 10, gid: int = 20) -> os.stat_result:
    return os.stat_result((mode, 0, 0, 1, uid, gid, 0, 0, 0, 0))


@pytest.mark.parametrize(
    "mode, right, expected",
    [
        (0o750, SEARCH, Grant(10, True, {}, {20: True}, False)),
        (0o604, READ, Grant(10, True, {}, {20: False}, True)),
        (0o071, SEARCH, Grant(10, False, {}, {20: True}, True)),
    ],
)
def test_mode_grant(mode, right, expected):
    assert mode_grant(stat_of(mode), right) == expected


GROUP_DENIED = Grant(10, True, {30: False}, {20: False, 21: True}, True)


@pytest.mark.parametrize(
    "uid, gids, expected",
    [
        (10, None, True),  # the owner: the owner class
        (30, frozenset({21}), False),  # a named user: its entry, whatever its groups give
        (40, frozenset({20}), False),  # in a group that has no right: denied, though others have it
        (40, frozenset({20, 21}), True),  # any of its groups' entries that grants is enough
        (40, frozenset({99}), True),  # in no listed group: the other class
        (40, None, False),  # groups unknown: a group might deny it, so no
    ],
)
def test_grant_user(uid, gids, expected):
    assert GROUP_DENIED.user(uid, gids) is expected


def test_grant_group_and_everyone():
    assert (GROUP_DENIED.group(21), GROUP_DENIED.group(20), GROUP_DENIED.group(99)) == (True, False, False)
    assert GROUP_DENIED.everyone() is False
    assert Grant(10, True, {}, {20: True}, True).everyone() is True
    assert Grant(10, True, {}, {20: True}, True).group(99) is True


def test_chain_readers_intersects_every_step():
    folder_grant = Grant(UNNAMED_UID, True, {}, {UNNAMED_GID: True}, False)  # 0750
    file_grant = Grant(UNNAMED_UID, True, {}, {UNNAMED_GID: True}, True)  # 0644
    assert chain_readers([folder_grant, file_grant], lambda uid: None) == {
        f"os-uid:{UNNAMED_UID}",
        f"os-gid:{UNNAMED_GID}",
    }
    open_folder = Grant(UNNAMED_UID, True, {}, {UNNAMED_GID: True}, True)
    assert "everyone" in chain_readers([open_folder, file_grant], lambda uid: None)
    assert chain_readers([], lambda uid: None) == frozenset()


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
    assert fs_readers(path, acl_dir) == {OWNER, X, Y}


def test_acl_mask_none_grants_neither(acl_dir):
    path = make_file(acl_dir, 0o600)
    set_acl(path, _acl(mask=0))
    assert fs_readers(path, acl_dir) == {OWNER}


def test_acl_named_group_without_read_is_absent(acl_dir):
    path = make_file(acl_dir, 0o600)
    set_acl(path, _acl(mask=7, group_x=2) + [(GROUP, 5, GZ.gr_gid)])
    assert fs_readers(path, acl_dir) == {OWNER, Y, Z}


@needs_root
def test_acl_owning_group_uses_group_obj_and_mask_not_the_mode_bits(acl_dir):
    path = make_file(acl_dir, 0o600, gid=GZ.gr_gid)
    set_acl(path, _acl(mask=4, group_obj=0))
    assert os.stat(path).st_mode & 0o040  # the mode's group bits show the mask, not GROUP_OBJ
    assert Z not in fs_readers(path, acl_dir)
    set_acl(path, _acl(mask=4, group_obj=4))
    assert fs_readers(path, acl_dir) == {OWNER, Z, X, Y}
    set_acl(path, _acl(mask=0, group_obj=4))
    assert fs_readers(path, acl_dir) == {OWNER}


def test_acl_other_read_is_everyone_only_when_no_entry_takes_it_away(acl_dir):
    path = make_file(acl_dir, 0o600)
    set_acl(path, _acl(mask=0, other=4))  # the named user and group may not read: not everyone
    assert fs_readers(path, acl_dir) == {OWNER}
    set_acl(path, _acl(mask=4, group_obj=4, other=4))
    assert fs_readers(path, acl_dir) == {OWNER, OWN_GROUP, X, Y, "everyone"}


def test_acl_unnamed_ids(acl_dir):
    path = make_file(acl_dir, 0o600)
    entries = [(USER_OBJ, 6, NO_ID), (USER, 4, UNNAMED_UID), (GROUP_OBJ, 0, NO_ID), (GROUP, 4, UNNAMED_GID)]
    set_acl(path, entries + [(MASK, 4, NO_ID), (OTHER, 0, NO_ID)])
    assert fs_readers(path, acl_dir) == {OWNER, f"os-uid:{UNNAMED_UID}", f"os-gid:{UNNAMED_GID}"}


@needs_root
def test_acl_on_a_folder_lets_a_named_group_through(acl_dir):
    sub = folder(acl_dir, 0o700)
    set_acl(
        sub, [(USER_OBJ, 7, NO_ID), (GROUP_OBJ, 0, NO_ID), (GROUP, 1, GX.gr_gid), (MASK, 1, NO_ID), (OTHER, 0, NO_ID)]
    )
    path = make_file(sub, 0o640, gid=GX.gr_gid)
    assert fs_readers(path, acl_dir) == {OWNER, X}


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
    assert fs_readers(path, acl_dir) == frozenset()


def test_unreadable_acl_gives_admin_only(share, monkeypatch):
    path = make_file(share, 0o644)

    def eio(*args, **kwargs):
        raise OSError(errno.EIO, os.strerror(errno.EIO), str(path))

    monkeypatch.setattr(filesystem.os, "getxattr", eio)
    assert fs_readers(path, share) == frozenset()


def test_filesystem_without_acls_falls_back_to_the_mode_bits(share, monkeypatch):
    path = make_file(share, 0o644)

    def enotsup(*args, **kwargs):
        raise OSError(errno.ENOTSUP, os.strerror(errno.ENOTSUP), str(path))

    monkeypatch.setattr(filesystem.os, "getxattr", enotsup)
    assert fs_readers(path, share) == {OWNER, OWN_GROUP, "everyone"}


def test_missing_file_and_dangling_symlink_give_admin_only(share):
    link = share / "link"
    link.symlink_to(share / "gone")
    assert fs_readers(share / "gone", share) == frozenset()
    assert fs_readers(link, share) == frozenset()


def test_symlink_is_followed(share):
    link = share / "link"
    link.symlink_to(make_file(share, 0o604))
    assert fs_readers(link, share) == {OWNER}  # 0604: the owning group may not read, so not everyone
    os.chmod(link, 0o644)
    assert fs_readers(link, share) == {OWNER, OWN_GROUP, "everyone"}
