"""``python -m app.users``: users, groups, personal tokens and the audit log, without questions asked.

python -m app.users add alice --groups 経理,営業   # creates, or sets the groups of the user stored as alice
python -m app.users token alice                   # a new personal token: the only line on stdout
python -m app.users revoke alice                  # ends all of alice's tokens at once
python -m app.users remove alice
python -m app.users list
python -m app.users audit --days 7                # with AUDIT_LOG=1: who asked, when, what was shown
python -m app.users audit --summary --days 30      # per day: questions, refusals, 👎 share, median times (as /admin)
python -m app.users check --user alice            # the access file's problems; what alice may read
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from app.cli import run
from app.config import get_settings
from app.formats.limits import escape
from app.permissions.principals import check_name, may_read
from app.permissions.readers import access_check, permissions_on
from app.storage import users as user_rows
from app.store import RagStore
from app.text.storable import check_fields
from app.users.accounts import add_user
from app.users.identity import UnknownUserError, new_token, parse_groups, principals_for_user, token_hash


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
    audit.add_argument(
        "--summary",
        action="store_true",
        help="the administrator's summary per day (the page's /admin; default 30 days)",
    )
    check = sub.add_parser("check", help="the access file's problems, and what a user may read (exit 1 on a problem)")
    check.add_argument("--user", default=None, help="list the documents this user may read")
    check.add_argument("--data-dir", type=Path, default=None, help="the data folder (default DATA_DIR)")
    p.add_argument("--debug", action="store_true")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """CLI entry point."""
    args = parser().parse_args(argv)
    try:  # an argument whose bytes were not UTF-8 arrives as lone surrogates: refused before any work
        check_fields({"name": getattr(args, "name", None), "--groups": getattr(args, "groups", None)})
        check_fields({"--user": getattr(args, "user", None)})
    except ValueError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 2

    def body() -> int:
        settings = get_settings()
        store = RagStore(settings)
        if args.action == "check":
            with store.writing():  # the tables exist (created or migrated once)
                pass
            return print_check(store.engine, settings, args.data_dir or settings.ingest.data_dir, args.user)
        if args.action in ("list", "audit"):
            with store.writing():  # the tables exist (created or migrated once)
                pass
            if args.action == "list":
                for row in user_rows.list_users(store.engine):
                    groups = ",".join(row["groups"]) or "-"
                    print(f"{escape(row['name'])}\tgroups: {escape(groups)}\ttokens: {row['tokens']}")
            elif args.summary:
                print_summary(store, settings, args.days or 30)
            else:
                print_audit(store.engine, args.days or settings.access.audit_retention_days, args.json)
            return 0
        name = check_name(args.name)
        with store.writing():
            if args.action == "add":
                name, before = add_user(store.engine, args.name, parse_groups(args.groups))
                after = ",".join(parse_groups(args.groups)) or "-"
                was = "" if before is None else f" (was {escape(','.join(before) or '-')})"
                print(f"user {escape(name)}: groups {escape(after)}{was}", file=sys.stderr)
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


def print_check(engine, settings, data_dir: Path, user: str | None) -> int:
    """``check``: one ``warning:`` line per problem of the access file, then, for ``user``, the documents
    they may read (the readers the next sync gives); 1 when a problem was found, else 0."""
    rows = user_rows.list_users(engine)
    groups = {group for row in rows for group in row["groups"]}
    from app.ingestion.scan import scan  # the format registry loads only for a check

    files, _ = scan(data_dir, settings)
    found = access_check(settings, data_dir, files, groups, [row["name"] for row in rows])
    for line in found.problems:
        print(f"warning: {escape(line)}")
    if not permissions_on(settings, data_dir):
        print(
            f"no access file ({escape(str(settings.access.file_in(data_dir)))}) and ACCESS_FROM_FS is off: "
            "everyone reads everything"
        )
    if user is not None:
        name = check_name(user)
        principals = principals_for_user(engine, name)
        readable = [doc_id for doc_id, readers in found.readers.items() if may_read(principals, readers)]
        print(f"{escape(name)} may read {len(readable)} of {len(found.readers)} documents:")
        for doc_id in sorted(readable):
            print(f"  {escape(doc_id)}")
    elif not found.problems:
        print(f"{len(found.readers)} documents, no problem found")
    return 1 if found.problems else 0


def print_summary(store, settings, days: int) -> None:
    """``audit --summary``: the table /admin shows, read as the owner (the command line reads everything)."""
    from datetime import date

    from app.permissions.principals import FULL_ACCESS
    from app.serving.feedback import flagged_questions
    from app.serving.usage import summarize, summary_lines
    from app.storage.usage import answer_rows, flagged_answer_ids

    if days < 1:
        raise ValueError(f"--days must be at least 1, got {days}")
    rows = answer_rows(store.engine, FULL_ACCESS, days + 1)
    feedback_on = settings.memory.feedback
    collection = settings.retrieval.collection_name
    flagged_ids = flagged_answer_ids(store.engine, collection, FULL_ACCESS, days + 1) if feedback_on else set()
    doc_ids = [d["doc_id"] for d in store.list_documents(FULL_ACCESS)]
    usage = summarize(rows, flagged_ids, doc_ids, date.today(), days)
    flagged = flagged_questions(settings, store.engine) if feedback_on else []
    if not settings.access.audit:
        print("note: AUDIT_LOG is off: no question is recorded", file=sys.stderr)
    for line in summary_lines(usage, flagged, settings.access.audit_questions):
        print("\t".join(escape(part) for part in line.split("\t")))  # a stored question cannot forge a line


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
