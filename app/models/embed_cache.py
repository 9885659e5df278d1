"""EMBED_CACHE_DIR: passage vectors kept on disk, so a text embedded once is not embedded again.

A store already reuses the vector of a text it holds (app.ingestion.staging). This cache serves what
the store cannot: the same files synced into another database or collection, a store made again from
scratch, another machine's worker on a shared folder. It is LangChain's ``CacheBackedEmbeddings`` over
a file store with one file per text (its SHA-256 under the model's own folder), written atomically
(a temporary file renamed into place: two processes writing one text never leave half a vector), the
folders readable by this user only (vectors are derived from the documents). The cache never stops
a sync: a file that does not read back as a vector counts as missing (it is embedded again), and a
folder that cannot be written is warned about once and then left alone.

The model's folder is named for what makes its vectors: ``EMBED_MODEL`` and the size and date of
the model's file, so a model replaced on disk starts a new folder. Queries are not cached (each
question is new). Off (no folder) by default.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from langchain_core.embeddings import Embeddings
from langchain_core.stores import ByteStore

DIR_MODE = 0o700
log = logging.getLogger(__name__)


class AtomicFileStore(ByteStore):
    """Bytes under ``root``, one file per key, each written to a temporary file then renamed."""

    def __init__(self, root: Path):
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
        self.warned = False

    def _path(self, key: str) -> Path:
        if not key.isalnum():  # the keys are hex digests: nothing else names a file here
            raise ValueError(f"embedding cache key must be letters and digits, got {key!r}")
        return self.root / key[:2] / key

    def mget(self, keys: Sequence[str]) -> list[bytes | None]:
        """The bytes of each key, None where there is no file, it cannot be read or it is not JSON."""
        out: list[bytes | None] = []
        for key in keys:
            try:
                raw = self._path(key).read_bytes()
                json.loads(raw)
            except (OSError, ValueError):
                raw = None
            out.append(raw)
        return out

    def mset(self, key_value_pairs: Sequence[tuple[str, bytes]]) -> None:
        """Write each key's bytes: a temporary file in the same folder, renamed over the key's file."""
        for key, value in key_value_pairs:
            path = self._path(key)
            try:
                path.parent.mkdir(parents=True, exist_ok=True, mode=DIR_MODE)
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            except OSError as exc:
                self._warn(exc)
                return
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(value)
                os.replace(tmp, path)
            except OSError as exc:
                Path(tmp).unlink(missing_ok=True)
                self._warn(exc)
                return
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise

    def _warn(self, exc: OSError) -> None:
        """One warning per store that its folder cannot be written (the vectors are used all the same)."""
        if not self.warned:
            self.warned = True
            log.warning("EMBED_CACHE_DIR: cannot write %s (%s); vectors are not kept", self.root, exc.strerror or exc)

    def mdelete(self, keys: Sequence[str]) -> None:
        """Remove the keys' files (those missing are skipped)."""
        for key in keys:
            self._path(key).unlink(missing_ok=True)

    def yield_keys(self, prefix: str | None = None) -> Iterator[str]:
        """The keys held (those starting with ``prefix``)."""
        for path in self.root.glob("*/*"):
            if not path.name.startswith(".tmp-") and (prefix is None or path.name.startswith(prefix)):
                yield path.name


def model_namespace(model: str, model_path: Path | None) -> str:
    """The cache folder name of a model: a digest of its name and, when it has a file or folder on
    disk, that path's size and modification time (a model replaced on disk gets a new folder)."""
    stamp = ""
    if model_path is not None:
        try:
            st = model_path.stat()
            stamp = f"{model_path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
        except OSError:
            stamp = str(model_path)
    return hashlib.sha256(f"{model}|{stamp}".encode()).hexdigest()[:16]


class CachedEmbeddings(Embeddings):
    """``inner`` with its passage vectors kept under ``folder/<namespace>`` (LangChain's
    ``CacheBackedEmbeddings``, SHA-256 keys); other attributes (the token counter, the model's
    limits) are ``inner``'s."""

    def __init__(self, inner: Any, folder: Path, namespace: str):
        from langchain_classic.embeddings import CacheBackedEmbeddings

        self.inner = inner
        self.folder = Path(folder) / namespace
        self.cache = CacheBackedEmbeddings.from_bytes_store(inner, AtomicFileStore(self.folder), key_encoder="sha256")

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        """Vectors of ``texts``: those on disk read back, the others embedded by the model and stored."""
        return self.cache.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        """A question's vector, from the model (not cached)."""
        return self.inner.embed_query(text)

    def __getattr__(self, name: str):
        if name.startswith("__") or name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)
