"""Benchmarks of the app (``make bench`` = ``python -m bench``), kept out of the product: every
figure next to the raw engine measured in the same run (bench.suite), with the MCP server
(bench.serve), scale-out (bench.scale) and graph (bench.graph) sections, what they share
(bench.kit), the tiny random-weight cross-encoder they and the tests build (bench.tiny_models),
and the big-file ingest measurement (``python -m bench.big_csv``)."""
