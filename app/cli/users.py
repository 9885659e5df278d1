"""``python -m app.users``: users, groups, personal tokens and the audit log, without questions asked.

python -m app.users add alice --groups 経理,営業   # creates or updates (idempotent)
python -m app.users token alice                   # a new personal token: the only line on stdout
python -m app.users revoke alice                  # ends all of alice's tokens at once
python -m app.users remove alice
python -m app.users list
python -m app.users audit --days 7                # with AUDIT_LOG=1: who asked, when, what was shown
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from app.cli import run
from app.config import get_settings
from app.formats.limits import escape
from app.permissions.principals import check_name
from app.storage import users as user_rows
from app.store import RagStore
from app.users.identity import UnknownUserError, new_token, parse_groups, token_hash


def parser() -> argparse.ArgumentParser:
    """The command line."""
    p = argparse.ArgumentParser(prog="python -m app.users", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="action", required=True)
    add = sub.add_parser("add", help="create a user, or set an existing user's groups")
    add.add_argument("name")
    add.add_argument("--groups", default="", help="comma-separated groups (everyone is implied; admin reads all)")
    for action, text in (
        ("remove", "remove a user and their tokens"),
        ("token", "print a new personal token"),
        ("revoke", "end every token of a user"),
    ):
        sub.add_parser(action, help=text).add_argument("name")
    sub.add_parser("list", help="the users, their groups and how many tokens they hold")
    audit = sub.add_parser("audit", help="the audit log (AUDIT_LOG=1), newest first")
    audit.add_argument("--days", type=int, default=None, help="how far back (default AUDIT_RETENTION_DAYS)")
    audit.add_argument("--json", action="store_true", help="one JSON object per line")
    p.add_argument("--debug", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    args = parser().parse_args(argv)

    def body() -> int:
        settings = get_settings()
        store = RagStore(settings)
        if args.action in ("list", "audit"):
            with store.writing():  # the tables exist (created or migrated once)
                pass
            if args.action == "list":
                for row in user_rows.list_users(store.engine):
                    groups = ",".join(row["groups"]) or "-"
                    print(f"{escape(row['name'])}\tgroups: {escape(groups)}\ttokens: {row['tokens']}")
            else:
                print_audit(store.engine, args.days or settings.access.audit_retention_days, args.json)
            return 0
        name = check_name(args.name)
        with store.writing():
            if args.action == "add":
                user_rows.upsert_user(store.engine, name, parse_groups(args.groups))
                print(f"user {escape(name)}: groups {','.join(parse_groups(args.groups)) or '-'}", file=sys.stderr)
            elif args.action == "remove":
                if not user_rows.delete_user(store.engine, name):
                    raise UnknownUserError(f"no user {name!r} (see `python -m app.users list`)")
                print(f"removed {escape(name)} and their tokens", file=sys.stderr)
            elif user_rows.user_groups(store.engine, name) is None:
                raise UnknownUserError(f"no user {name!r}; add it first: python -m app.users add {name}")
            elif args.action == "token":
                token = new_token()
                user_rows.add_token(store.engine, name, token_hash(token))
                print(token)
            else:
                ended = user_rows.revoke_tokens(store.engine, name)
                print(f"revoked {ended} token(s) of {escape(name)}", file=sys.stderr)
        return 0

    return run(body, debug=args.debug)


def print_audit(engine, days: int, as_json: bool) -> None:
    """The audit rows of the last ``days`` days, as lines or JSON."""
    for row in user_rows.audit_rows(engine, days):
        if as_json:
            print(json.dumps({**row, "at": row["at"].isoformat()}, ensure_ascii=False))
        else:
            question = f"\t{escape(row['question'])}" if row["question"] else ""
            sources = ",".join(row["sources"]) or "-"
            print(
                f"{row['at']:%Y-%m-%d %H:%M:%S}\t{escape(row['user_name'])}\t{row['surface']}\t{row['action']}\t"
                f"{escape(sources)}{question}"
            )


if __name__ == "__main__":
    raise SystemExit(main())
