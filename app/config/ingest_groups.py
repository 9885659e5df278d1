"""The settings of reading the data folder: chunking, parallel and queued workers, links, OCR and the
limits on what one file may make a sync do; read like the other groups (app.config.groups)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from app.config import read
from app.config.groups import OCR_LANGS_DEFAULT

ZIP_MB_PER_OFFICE_MB = 4  # MAX_ZIP_MB when unset: what the parts of the largest Office file read may inflate to


@dataclass(frozen=True)
class IngestSettings:
    """Reading the data folder: chunking, parallel workers, links, OCR, and the limits on what one
    file may make a sync do (README, "Limits")."""

    VARIABLES: ClassVar[tuple[str, ...]] = (
        "DATA_DIR",
        "CHUNK_SIZE",
        "CHUNK_OVERLAP",
        "INGEST_WORKERS",
        "INGEST_BATCH_CHUNKS",
        "FOLLOW_EXTERNAL_LINKS",
        "MAX_PDF_MB",
        "MAX_CSV_MB",
        "MAX_TEXT_MB",
        "MAX_ROWS",
        "MAX_CELL_CHARS",
        "MAX_FILE_CHARS",
        "MAX_READER_MB",
        "MAX_OFFICE_MB",
        "MAX_IMAGE_MB",
        "MAX_ZIP_MB",
        "MAX_ZIP_ENTRIES",
        "OCR_DPI",
        "OCR_LANGS",
        "PARSE_TIMEOUT_S",
        "QUEUE_LEASE_S",
        "QUEUE_MAX_ATTEMPTS",
        "WORKER_CONCURRENCY",
    )
    data_dir: Path = Path("data")
    chunk_size: int = read.int_default("CHUNK_SIZE")
    chunk_overlap: int = read.int_default("CHUNK_OVERLAP")
    workers: int = read.int_default("INGEST_WORKERS")
    batch_chunks: int = read.int_default("INGEST_BATCH_CHUNKS")
    follow_external_links: bool = False  # links in the data dir to regular files outside it
    max_pdf_mb: int = read.int_default("MAX_PDF_MB")
    max_csv_mb: int = read.int_default("MAX_CSV_MB")
    max_text_mb: int = read.int_default("MAX_TEXT_MB")
    max_rows: int = read.int_default("MAX_ROWS")
    max_cell_chars: int = read.int_default("MAX_CELL_CHARS")
    max_file_chars: int = read.int_default("MAX_FILE_CHARS")
    max_reader_mb: int = field(default_factory=lambda: read.reader_mb_default())  # MAX_READER_MB
    max_office_mb: int = read.int_default("MAX_OFFICE_MB")
    max_image_mb: int = read.int_default("MAX_IMAGE_MB")
    max_zip_mb: int = read.int_default("MAX_ZIP_MB")
    max_zip_entries: int = read.int_default("MAX_ZIP_ENTRIES")
    ocr_dpi: int = read.int_default("OCR_DPI")
    ocr_langs: str = OCR_LANGS_DEFAULT  # Tesseract languages, '+'-joined
    parse_timeout_s: int = read.int_default("PARSE_TIMEOUT_S")
    queue_lease_s: int = read.int_default("QUEUE_LEASE_S")
    queue_max_attempts: int = read.int_default("QUEUE_MAX_ATTEMPTS")
    worker_concurrency: int = read.int_default("WORKER_CONCURRENCY")

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> IngestSettings:
        """The group from ``env`` (ValueError naming a bad variable)."""
        limits = {name.lower(): read.integer(env, name) for name in cls.VARIABLES if name.startswith("MAX_")}
        if not limits["max_reader_mb"]:  # a share of the machine's memory (read.reader_mb_default)
            limits.pop("max_reader_mb")
        if not env.get("MAX_ZIP_MB", "").strip():  # in proportion to the largest Office file read
            limits["max_zip_mb"] = ZIP_MB_PER_OFFICE_MB * limits["max_office_mb"]
        return cls(
            data_dir=Path(env.get("DATA_DIR") or "data"),
            chunk_size=read.integer(env, "CHUNK_SIZE"),
            chunk_overlap=read.integer(env, "CHUNK_OVERLAP"),
            workers=read.integer(env, "INGEST_WORKERS"),
            batch_chunks=read.integer(env, "INGEST_BATCH_CHUNKS"),
            follow_external_links=read.flag(env, "FOLLOW_EXTERNAL_LINKS"),
            ocr_dpi=read.integer(env, "OCR_DPI"),
            ocr_langs=read.ocr_langs(env, "OCR_LANGS", OCR_LANGS_DEFAULT),
            parse_timeout_s=read.integer(env, "PARSE_TIMEOUT_S"),
            queue_lease_s=read.integer(env, "QUEUE_LEASE_S"),
            queue_max_attempts=read.integer(env, "QUEUE_MAX_ATTEMPTS"),
            worker_concurrency=read.integer(env, "WORKER_CONCURRENCY"),
            **limits,
        )
