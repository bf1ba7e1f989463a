"""The write pipeline: walk → load → chunk → write a revision (unless unchanged), and removal of what left.

The engine holds the collection's writer lock around these; they never embed (the engine does after).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from retrievo.errors import SourceError
from retrievo.ingest.chunkers import chunk_document
from retrievo.ingest.loaders import Unchanged
from retrievo.ingest.prepare import FileJob, Prepared, PreparePool, modified_time, prepare
from retrievo.ingest.records.loader import MODEL_SUFFIXES, load_model_file
from retrievo.ingest.records.readers import sniff
from retrievo.ingest.sources import included, walk
from retrievo.models import IndexReport, LoadedDocument, SkippedFile
from retrievo.store.base import NewRevision, Store
from retrievo.text.hashing import sha256_text

WRITE_GROUP = 64  # documents written together: one transaction, a few statements for the new ones


class IndexProgress(Protocol):
    """What long work reports as it goes; the CLI draws progress bars from it."""

    def file_done(self, path: str) -> None: ...

    def embedding_started(self, total: int) -> None: ...

    def embedded(self, count: int) -> None: ...


class NoProgress:
    def file_done(self, path: str) -> None:
        pass

    def embedding_started(self, total: int) -> None:
        pass

    def embedded(self, count: int) -> None:
        pass


def index_root(
    store: Store,
    report: IndexReport,
    root: Path,
    collection: str,
    chunker: str,
    include: Sequence[str],
    exclude: Sequence[str],
    force: bool,
    progress: IndexProgress,
    max_file_bytes: int,
    top: Path | None = None,
) -> None:
    """Every file under ``root``; sources under it that are gone leave search. ``top``: the indexed root
    ``root`` lies in (a watcher's changed folder inside it), what files are named from; ``root`` itself if None.

    Files are read and chunked by a ``PreparePool`` (worker processes once a run passes a few hundred
    files) in walk order, and written here WRITE_GROUP at a time while the workers read the next ones.
    """
    seen: set[str] = set()
    explicit = root.is_file()

    def jobs() -> Iterator[FileJob]:
        group: list[Path] = []
        for candidate in walk(root, include, exclude):
            report.files_seen += 1
            if candidate.skip:
                report.skipped.append(SkippedFile(str(candidate.path), candidate.skip))
                continue
            # A file that fails to load keeps what was indexed from it before: nothing is lost.
            seen.add(str(candidate.path))
            if candidate.path.suffix.lower() in MODEL_SUFFIXES and _is_model(candidate.path):
                seen.update(_ingest_model(store, report, candidate.path, collection, force, max_file_bytes))
                progress.file_done(str(candidate.path))
                continue
            group.append(candidate.path)
            if len(group) >= WRITE_GROUP:
                yield from _file_jobs(
                    store, collection, group, chunker, force, max_file_bytes, explicit, top or root
                )
                group = []
        yield from _file_jobs(store, collection, group, chunker, force, max_file_bytes, explicit, top or root)

    ready: list[Prepared] = []
    with PreparePool() as pool:
        for prepared in pool.map(jobs()):
            if _loaded(report, prepared, progress.file_done):
                ready.append(prepared)
                if len(ready) >= WRITE_GROUP:
                    _write_group(store, report, collection, chunker, force, ready, progress.file_done)
        _write_group(store, report, collection, chunker, force, ready, progress.file_done)
    gone = [source for source in store.sources_under(collection, str(root)) if source not in seen]
    report.documents_removed += store.remove_sources(collection, gone)


def _loaded(report: IndexReport, prepared: Prepared, done: Callable[[str], None] | None) -> bool:
    """Whether a prepared file is to be written; an unchanged or skipped one is counted here (and done)."""
    if isinstance(prepared.outcome, LoadedDocument):
        return True
    if isinstance(prepared.outcome, Unchanged):
        report.documents_unchanged += 1
    else:
        report.skipped.append(SkippedFile(str(prepared.path), prepared.outcome.reason))
    if done is not None:
        done(str(prepared.path))
    return False


def _file_jobs(
    store: Store,
    collection: str,
    paths: list[Path],
    chunker: str,
    force: bool,
    max_file_bytes: int,
    explicit: bool,
    root: Path | None = None,
) -> Iterator[FileJob]:
    """A group of files as jobs, with what is indexed of them (one query for the group)."""
    states = {} if force or not paths else store.document_states(collection, [str(p) for p in paths])
    for path in paths:
        state = states.get(str(path))
        yield FileJob(
            path,
            max_file_bytes,
            explicit,
            state.source_hash if state else None,
            state.file_hash if state else None,
            chunker,
            root,
        )


def update_paths(
    store: Store,
    report: IndexReport,
    roots: Sequence[Path],
    changed: Sequence[Path],
    collection: str,
    max_file_bytes: int,
) -> None:
    """Only the changed paths: files that exist are (re)loaded, paths that vanished leave search."""
    for path in dict.fromkeys(changed):
        root = next((r for r in roots if path == r or r in path.parents), None)
        if root is None:
            continue
        if path.is_file():
            if not included(root, path):
                continue
            report.files_seen += 1
            _load_and_ingest(
                store, report, path, collection, "auto", False, max_file_bytes, path == root, root
            )
        elif path.is_dir():
            index_root(
                store, report, path, collection, "auto", (), (), False, NoProgress(), max_file_bytes, root
            )
        else:
            report.documents_removed += store.remove_sources(
                collection, store.sources_under(collection, str(path))
            )


def _load_and_ingest(
    store: Store,
    report: IndexReport,
    path: Path,
    collection: str,
    chunker: str,
    force: bool,
    max_file_bytes: int,
    explicit: bool,
    root: Path | None = None,
) -> None:
    """Load and write one file (a model file: each of its elements), in this process."""
    if path.suffix.lower() in MODEL_SUFFIXES and _is_model(path):
        _ingest_model(store, report, path, collection, force, max_file_bytes)
        return
    for job in _file_jobs(store, collection, [path], chunker, force, max_file_bytes, explicit, root):
        prepared = prepare(job)
        ready = [prepared] if _loaded(report, prepared, None) else []
        _write_group(store, report, collection, chunker, force, ready, None)


def _is_model(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return sniff(handle.read(4096)) is not None
    except OSError:
        return False


def _ingest_model(
    store: Store, report: IndexReport, path: Path, collection: str, force: bool, max_file_bytes: int
) -> list[str]:
    """Every element of a model as a record; elements gone from the model leave search.

    A model that cannot be read (malformed, hostile, too large) is skipped with its reason and
    everything indexed from it before stays as it was.
    """
    prefix = str(path) + "#"
    existing = [s for s in store.sources_under(collection, str(path)) if s.startswith(prefix)]
    try:
        size = path.stat().st_size
        if size > max_file_bytes:
            raise SourceError(f"too large: {size} bytes > limit {max_file_bytes} (raise --max-file-bytes)")
        _, documents = load_model_file(path, path.read_bytes())
    except SourceError as exc:
        report.skipped.append(SkippedFile(str(path), str(exc)))
        return existing
    except OSError as exc:
        report.skipped.append(SkippedFile(str(path), f"unreadable: {exc.strerror or exc}"))
        return existing
    modified = modified_time(path)
    ingest_documents(store, report, documents, collection, "whole", force, modified)
    current = [d.source for d in documents]
    wanted = set(current)
    report.documents_removed += store.remove_sources(collection, [s for s in existing if s not in wanted])
    return current


def ingest_document(
    store: Store,
    report: IndexReport,
    loaded: LoadedDocument,
    collection: str,
    chunker: str,
    force: bool,
    modified: str | None,
) -> None:
    """Write one loaded document as a new revision, unless its content hash is unchanged."""
    ingest_documents(store, report, [loaded], collection, chunker, force, modified)


def ingest_documents(
    store: Store,
    report: IndexReport,
    documents: Iterable[LoadedDocument],
    collection: str,
    chunker: str,
    force: bool,
    modified: str | None,
    done: Callable[[str], None] | None = None,
) -> None:
    """``ingest_document`` for each, WRITE_GROUP at a time: their states read in one query
    (``Store.document_states``), the changed ones written together (``Store.write_revisions``); ``done``
    hears each source once it is written or found unchanged."""
    group: list[Prepared] = []  # distinct sources: a repeated one waits for the group's write
    sources: set[str] = set()
    for loaded in documents:
        if loaded.source in sources or len(group) >= WRITE_GROUP:
            _write_group(store, report, collection, chunker, force, group, done, modified)
            sources.clear()
        group.append(Prepared(Path(loaded.source), loaded))
        sources.add(loaded.source)
    _write_group(store, report, collection, chunker, force, group, done, modified)


def _write_group(
    store: Store,
    report: IndexReport,
    collection: str,
    chunker: str,
    force: bool,
    group: list[Prepared],
    done: Callable[[str], None] | None,
    modified: str | None = None,
) -> None:
    """Write a group of loaded documents (emptied after): unchanged ones counted, changed ones written
    as new revisions in one call. A prepared file brings its chunks and hash; the others are chunked
    here, and only if changed. ``modified``: the time of documents given as such (a prepared file
    brings its own)."""
    if not group:
        return
    documents = [p.outcome for p in group if isinstance(p.outcome, LoadedDocument)]
    states = store.document_states(collection, [document.source for document in documents])
    pending: list[tuple[NewRevision, bool]] = []  # (revision, whether the document is new)
    for prepared in group:
        loaded = prepared.outcome
        assert isinstance(loaded, LoadedDocument)
        source_hash = prepared.source_hash or sha256_text(loaded.text)
        state = states.get(loaded.source)
        if state is not None and state.source_hash == source_hash and not force:
            report.documents_unchanged += 1
            if done is not None:
                done(loaded.source)
            continue
        drafts = prepared.drafts if prepared.source_hash else chunk_document(loaded, chunker)
        when = prepared.modified if prepared.source_hash else modified
        pending.append((NewRevision(loaded, source_hash, drafts, when), state is None))
    if pending:
        store.write_revisions(collection, [revision for revision, _ in pending])
    for revision, new in pending:
        report.chunks_written += len(revision.drafts)
        if new:
            report.documents_added += 1
        else:
            report.documents_changed += 1
        if done is not None:
            done(revision.document.source)
    group.clear()
