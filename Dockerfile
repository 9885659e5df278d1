# The app image (§8.2): Python 3.11, the same install steps as `make setup` / CI.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu \
    PY=python

RUN apt-get update \
 && apt-get install -y --no-install-recommends build-essential git curl poppler-utils make \
 && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY requirements.txt requirements-dev.txt ./
COPY scripts/install.sh scripts/install.sh
# PIP_EXTRA_INDEX_URL above makes torch==2.13.0 resolve to the CPU build.
RUN sh scripts/install.sh python requirements-dev.txt

COPY . .
# The container stays up; run commands with `make shell` or `docker compose exec app make ask Q=...`.
CMD ["sleep", "infinity"]
