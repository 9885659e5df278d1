"""The write side of the store: sync a data folder, add and remove documents, rebuild the graph, each
under the writer lock with the schema created or migrated once. Nothing here reads as a user: the
writer sees every document (:class:`app.store.RagStore` joins it with the read side)."""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from langchain_core.documents import Document

from app import storage
from app.config import Settings
from app.embeddings import embedding_size
from app.errors import DataSourceError, StoreNotReadyError, WriterBusyError
from app.ingestion.documents import write_api_document
from app.ingestion.scan import resolve_file, scan
from app.ingestion.sync import sync, update_graph
from app.permissions.principals import FULL_ACCESS
from app.storage.handle import StoreHandle


class StoreWriter(StoreHandle):
    """Sync, add and remove documents under the writer lock (one writer per collection, across
    processes; re-entrant for the thread that holds it)."""

    def __init__(self, settings: Settings | None = None, embeddings: Any = None, engine: Any = None):
        super().__init__(settings, embeddings, engine)
        self._writing = 0
        self._writer: int | None = None  # the thread holding the writer lock (re-entrant for it only)
        self._thread_lock = threading.Lock()

    @contextmanager
    def writing(self, wait: bool = True) -> Iterator[StoreWriter]:
        """Hold the writer lock and make sure the schema exists (created or migrated once).

        Re-entrant for the thread holding it; another thread or process makes this one wait
        (one warning line) or, with ``wait=False``, raise WriterBusyError.
        """
        me = threading.get_ident()
        if self._writing and self._writer == me:
            self._writing += 1
            try:
                yield self
            finally:
                self._writing -= 1
            return
        if not self._thread_lock.acquire(blocking=wait):  # another thread of this process is writing
            raise WriterBusyError("another writer is running (in this process); try again when it is done")
        try:
            with storage.writer_lock(self.engine, wait=wait):
                self._writing, self._writer = 1, me
                try:
                    if not self._schema_ready:
                        self._vectorstore = storage.create_schema(
                            self.engine,
                            self.embeddings,
                            self.collection,
                            embedding_size(self.settings, self.embeddings),
                        )
                        self._schema_ready = True
                    yield self
                finally:
                    self._writing, self._writer = 0, None
        finally:
            self._thread_lock.release()

    def stored_documents(self) -> list[dict]:
        """Every stored document, whoever may read it (the writer's view; ``[]`` before the first sync)."""
        if not self._schema_ready:
            try:
                storage.check_schema(self.engine, self.collection)
            except StoreNotReadyError:
                return []
        return storage.list_documents(self.engine, self.collection, FULL_ACCESS)

    def sync(
        self,
        data_dir: str | Path | None = None,
        *,
        dry_run: bool = False,
        progress: bool = False,
        allow_empty: bool = False,
        wait: bool = True,
        workers: int | None = None,
        graph: bool = True,
        queue: bool = False,
    ):
        """Make the store match ``data_dir`` (default DATA_DIR); returns (plan, report).

        Only documents that came from the data dir are updated or removed; those
        added with :meth:`add_document` of a ``Document`` are left alone. ``workers``
        (default INGEST_WORKERS) processes read, chunk and embed files in parallel. With ``graph``, the
        graph is rebuilt at the end when anything changed (GRAPH_EXTRACTOR not ``off``). With ``queue``,
        the files are jobs for ``python -m app.worker`` on any machine, and this writer waits for them.
        """
        data_dir = Path(data_dir or self.settings.ingest.data_dir)
        if dry_run:  # a plan only: no lock, no schema, no writes
            return sync(
                data_dir,
                self.embeddings,
                self.engine,
                self.settings,
                dry_run=True,
                allow_empty=allow_empty,
                stored=self.stored_documents(),
            )
        with self.writing(wait):
            return sync(
                data_dir,
                self.embeddings,
                self.engine,
                self.settings,
                progress=progress,
                allow_empty=allow_empty,
                workers=workers or self.settings.ingest.workers,
                graph=graph,
                queue=queue,
            )

    def update_graph(self, wait: bool = True):
        """Rebuild the graph if chunks changed since it was built (under the writer lock); the
        BuildReport, or None when it was current or GRAPH_EXTRACTOR is off."""
        if self.settings.graph.extractor == "off":
            return None
        with self.writing(wait):
            return update_graph(self.engine, self.settings, self.embeddings)

    def add_document(
        self, path_or_doc: str | Path | Document | Sequence[Document], data_dir: str | Path | None = None
    ) -> list[str]:
        """Add (or update) a file, a folder's files, or Documents; return the parent document IDs.

        Files must lie under ``data_dir`` (their ID is the path relative to ``data_dir``). A folder adds
        its files without removing others. Documents are stored as they are: their ``id`` (or a new UUID)
        is the parent ID, ``metadata['source']`` their source (default: the ID); a sync of the data dir
        never removes them.
        """
        if isinstance(path_or_doc, Document) or (
            isinstance(path_or_doc, (list, tuple)) and path_or_doc and all(isinstance(d, Document) for d in path_or_doc)
        ):
            docs = [path_or_doc] if isinstance(path_or_doc, Document) else list(path_or_doc)
            with self.writing():
                return [write_api_document(d, self.embeddings, self.engine, self.settings) for d in docs]
        data_dir = Path(data_dir or self.settings.ingest.data_dir)
        path = Path(path_or_doc)
        if path.is_dir():
            files = [f for f in scan(data_dir, self.settings)[0] if f.path.absolute().is_relative_to(path.absolute())]
        else:
            files = [resolve_file(path, data_dir, self.settings)]
        with self.writing():
            _, report = sync(data_dir, self.embeddings, self.engine, self.settings, files=files, remove_missing=False)
        if report.failures:
            raise DataSourceError("; ".join(report.failures))
        return [f.doc_id for f in files]

    def remove_document(self, doc_id_or_path: str | Path, wait: bool = True) -> int:
        """Remove a document (by ID, file path or file name) from every index; return chunks removed.

        DataSourceError if no stored document matches.
        """
        wanted = str(doc_id_or_path)
        with self.writing(wait):
            docs = self.stored_documents()
            match = [d for d in docs if wanted in (d["doc_id"], d["source_file"])]
            if not match:
                try:
                    rel = Path(wanted).absolute().relative_to(Path(self.settings.ingest.data_dir).absolute()).as_posix()
                    match = [d for d in docs if d["doc_id"] == rel]
                except ValueError:
                    match = []
            if not match:
                raise DataSourceError(f"no stored document {wanted!r} (see `make docs`)")
            if len(match) > 1:
                raise DataSourceError(f"{wanted!r} is ambiguous: {', '.join(d['doc_id'] for d in match)}")
            return storage.delete_document(self.engine, self.collection, match[0]["doc_id"], match[0]["source_file"])
