"""``python -m bench``: the benchmark suite (bench.suite)."""

from bench.suite import main

raise SystemExit(main())
