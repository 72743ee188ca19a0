"""Per-process cache of each space's bind index, checked against the database on every use,
bounded in bytes (``SPACES_CATALOG_CACHE_BYTES``, least recently used evicted first).

The cache is only a speed-up: ``Space.catalog_version`` is bumped in the same
transaction as every catalog change, so a process whose copy is older than the
committed version brings it up to date before binding: by the rows the versions since
changed (``CatalogChange``), or, when those are many or no longer logged, by a fresh
build. Correctness never depends on the cache.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from django.conf import settings

from allocation.binding import CatalogIndex
from spaces.models import CatalogChange, CharterItem, Space

# An index scores at most this many edited rows beside its build (and never more than a
# tenth of it) before the next catch-up builds afresh.
MAX_EDITED_ROWS = 2000
_cache: OrderedDict[int, tuple[int, CatalogIndex]] = OrderedDict()
_lock = threading.Lock()


def current_catalog_version(space_id: int) -> int:
    return Space.objects.filter(pk=space_id).values_list("catalog_version", flat=True).get()


def load_index(space_id: int) -> CatalogIndex:
    rows = CharterItem.objects.filter(space_id=space_id).values_list("work_item_id", "canonical_title", "aliases")
    return CatalogIndex(rows.iterator(chunk_size=5000))


def caught_up(space_id: int, version: int, index: CatalogIndex) -> tuple[int, CatalogIndex] | None:
    """``index`` (at ``version``) with the rows every later committed version changed, and the
    version it is now at; None when a fresh build is due (too many rows, or a gap in the log)."""
    changes = list(CatalogChange.objects.filter(space_id=space_id, version__gt=version)
                   .values_list("version", "work_item_id"))
    versions = {v for v, _ in changes}
    if not changes or versions != set(range(version + 1, max(versions) + 1)):
        return None  # a version whose changes were purged (or not yet visible): build afresh
    changed = {wid for _, wid in changes}
    if CatalogChange.EVERYTHING in changed or index.edited + len(changed) > min(MAX_EDITED_ROWS, len(index) // 10 + 50):
        return None
    # Read after the log: a row may be newer than max(versions), never older; a later catch-up
    # applies it again.
    current = {wid: (title, aliases) for wid, title, aliases in CharterItem.objects
               .filter(space_id=space_id, work_item_id__in=changed).values_list("work_item_id", "canonical_title", "aliases")}
    return max(versions), index.with_changes({wid: current.get(wid) for wid in changed})


def catalog_index(space: Space, *, version: int | None = None) -> CatalogIndex:
    """The bind index for ``space`` at ``version`` or later (the version is read now when not given).

    The version is read before the rows, so an index is never older than the version it
    is filed under.
    """
    if version is None:
        version = current_catalog_version(space.pk)
    with _lock:
        cached = _cache.get(space.pk)
        if cached is not None and cached[0] >= version:
            _cache.move_to_end(space.pk)
            return cached[1]
    updated = caught_up(space.pk, *cached) if cached is not None else None
    if updated is None or updated[0] < version:
        updated = (version, load_index(space.pk))
    with _lock:
        cached = _cache.get(space.pk)
        if cached is None or cached[0] < updated[0]:
            _cache[space.pk] = updated
            _cache.move_to_end(space.pk)
            evict(settings.SPACES_CATALOG_CACHE_BYTES)
    return updated[1]


def evict(limit: int) -> None:
    """Drop the least recently used indexes until the rest hold at most ``limit`` bytes (the one
    just used stays even alone past it: a bind needs it). The caller holds ``_lock``."""
    total = sum(index.nbytes for _, index in _cache.values())
    while total > limit and len(_cache) > 1:
        _, (_, index) = _cache.popitem(last=False)
        total -= index.nbytes


def cached_bytes() -> int:
    with _lock:
        return sum(index.nbytes for _, index in _cache.values())


def forget_all() -> None:
    with _lock:
        _cache.clear()
