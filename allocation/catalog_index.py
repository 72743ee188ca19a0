"""Per-process cache of each space's bind index, checked against the database on every use.

The cache is only a speed-up: ``Space.catalog_version`` is bumped in the same
transaction as every catalog change, so a process whose copy is older than the
committed version rebuilds it before binding. Correctness never depends on the cache.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

from allocation.binding import CatalogIndex
from spaces.models import CharterItem, Space

MAX_CACHED_SPACES = 64
_cache: OrderedDict[int, tuple[int, CatalogIndex]] = OrderedDict()
_lock = threading.Lock()


def current_catalog_version(space_id: int) -> int:
    return Space.objects.filter(pk=space_id).values_list("catalog_version", flat=True).get()


def load_index(space_id: int) -> CatalogIndex:
    rows = CharterItem.objects.filter(space_id=space_id).values_list("work_item_id", "canonical_title", "aliases")
    return CatalogIndex(rows.iterator(chunk_size=5000))


def catalog_index(space: Space, *, version: int | None = None) -> CatalogIndex:
    """The bind index for ``space`` at ``version`` (read now when not given).

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
    index = load_index(space.pk)
    with _lock:
        cached = _cache.get(space.pk)
        if cached is None or cached[0] < version:
            _cache[space.pk] = (version, index)
            _cache.move_to_end(space.pk)
            while len(_cache) > MAX_CACHED_SPACES:
                _cache.popitem(last=False)
    return index


def forget_all() -> None:
    with _lock:
        _cache.clear()
