"""``python -m app.db {init,stop,status,check}`` (``make db-status``, ``make db-stop``): manage the database."""

from __future__ import annotations

import argparse
from collections.abc import Iterable

from app import db, storage
from app.cli import run
from app.config import get_settings
from app.errors import StoreNotReadyError
from app.storage import embedded as embedded_pg


def main(argv: Iterable[str] | None = None) -> int:
    """CLI: ``python -m app.db {init,stop,status,check}``."""
    parser = argparse.ArgumentParser(prog="python -m app.db", description="Manage the vector database.")
    parser.add_argument("action", choices=["init", "stop", "status", "check"])
    parser.add_argument("--no-wait", action="store_true", help="init: fail at once if another writer is running")
    parser.add_argument("--debug", action="store_true")
    args = parser.parse_args(list(argv) if argv is not None else None)

    def body() -> int:
        s = get_settings()
        if args.action == "stop":
            if not s.db.embedded:
                print(f"the database is a server ({storage.describe_target(s)}); nothing embedded to stop")
            else:
                print(embedded_pg.stop(s.db.pgdata_dir).capitalize())
            return 0
        engine = storage.get_engine(s)
        if args.action == "check":
            facts = storage.check_server(engine)
            pgvector = facts["installed"] and f"{facts['installed']} installed" or f"{facts['available']} available"
            role = "read replica" if facts["replica"] else "primary"
            print(
                f"{storage.describe_target(s)}: PostgreSQL {facts['server']} ({role}), pgvector {pgvector}, "
                f"user {facts['db_user']}: OK"
            )
            return 0
        if args.action == "init":
            db.init_db(s, engine=engine, wait=not args.no_wait)
        try:
            storage.check_schema(engine, s.retrieval.collection_name)
            chunks = storage.count_chunks(engine, s.retrieval.collection_name)
        except StoreNotReadyError as exc:
            print(f"{storage.describe_target(s)}: {exc}")
            return 0
        print(f"{storage.describe_target(s)}: {chunks} chunks in collection '{s.retrieval.collection_name}'")
        return 0

    return run(body, debug=args.debug)


if __name__ == "__main__":
    raise SystemExit(main())
