"""``python -m app.users``: users, groups, personal tokens and the audit log (app.cli.users)."""

from app.cli.users import main

raise SystemExit(main())
