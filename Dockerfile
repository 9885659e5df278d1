# The app image (§8.2): Python 3.11, the same install steps as `make setup` / CI.
# The base is pinned by digest through docker-compose.yml (build arg PYTHON_IMAGE); built
# without it (e.g. `docker build .`), the tag below is used.
ARG PYTHON_IMAGE=python:3.11-slim
FROM ${PYTHON_IMAGE}

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu \
    PY=python

# tesseract-ocr(-jpn, -jpn-vert): OCR of scanned PDFs and images (app/formats/ocr.py)
RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential git curl poppler-utils make \
    tesseract-ocr tesseract-ocr-jpn tesseract-ocr-jpn-vert \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt requirements-dev.txt ./
COPY scripts/install.sh scripts/build_pgvector.sh scripts/install_ocr.sh scripts/
# PIP_EXTRA_INDEX_URL above makes torch==2.13.0 resolve to the CPU build. Runs as root (apt, pip).
RUN sh scripts/install.sh python requirements-dev.txt

# The app runs as an ordinary user: the embedded PostgreSQL then runs as that user too.
RUN useradd --create-home --uid 10001 --user-group app && chown app:app /app
COPY --chown=app:app . .
USER app
# The container stays up; run commands with `make shell` or `docker compose exec app make ask Q=...`.
CMD ["sleep", "infinity"]
