"""A server process's bind index catches up with catalog edits by the rows they changed, not by
a rebuild; a gap in the change log, or a large import, builds afresh. Binds always see at least
the catalog version committed when their request began."""
from __future__ import annotations

import pytest

from allocation import catalog_index as cache
from spaces import services
from spaces.catalog import CatalogRow
from spaces.models import CatalogChange, CharterItem


@pytest.fixture
def builds(monkeypatch) -> list[int]:
    """Each full build of a bind index, by space id."""
    done: list[int] = []
    real = cache.load_index

    def counted(space_id: int):
        done.append(space_id)
        return real(space_id)

    monkeypatch.setattr(cache, "load_index", counted)
    return done


def bind(space, title: str) -> str | None:
    from allocation.services import bind_title

    return bind_title(space=space, title=title).work_item_id


def test_edits_are_applied_row_by_row_and_bind_as_a_fresh_build_would(space, builds):
    assert bind(space, "Retry and backoff policy for tool calls") == "T3"
    assert builds == [space.pk]
    services.upsert_charter_item(space=space, work_item_id="T3", canonical_title="Rotate the staging keys",
                                 aliases=["key rotation"])
    services.upsert_charter_item(space=space, work_item_id="T9", canonical_title="Retry and backoff policy",
                                 aliases=[])
    services.delete_charter_item(item=CharterItem.objects.get(space=space, work_item_id="T2"))
    assert bind(space, "Retry and backoff policy for tool calls") == "T9"
    assert bind(space, "key rotation") == "T3"
    assert builds == [space.pk]  # caught up without building again
    index = cache.catalog_index(space)
    fresh = cache.load_index(space.pk)
    assert len(index) == len(fresh) == 3
    for title in ("token spend dashboard", "Retry policy", "staging keys", "benchmark review agents"):
        assert index.bind(title) == fresh.bind(title), title


def test_a_gap_in_the_log_or_a_large_import_builds_afresh(space, builds):
    bind(space, "anything")
    services.upsert_charter_item(space=space, work_item_id="T4", canonical_title="Nightly backups", aliases=[])
    CatalogChange.objects.all().delete()  # as if purged before this process caught up
    assert bind(space, "Nightly backups") == "T4"
    assert builds == [space.pk, space.pk]
    rows = [CatalogRow(f"T{n}", f"generated work item {n}", []) for n in range(10, 10 + services.MAX_LOGGED_CHANGES + 1)]
    services.import_catalog(space=space, rows=rows)
    assert list(CatalogChange.objects.filter(version=space.__class__.objects.get(pk=space.pk).catalog_version)
                .values_list("work_item_id", flat=True)) == [CatalogChange.EVERYTHING]
    assert bind(space, "generated work item 500") == "T500"
    assert len(builds) == 3


def test_many_small_edits_fold_back_into_a_fresh_build(space, builds):
    bind(space, "anything")
    for n in range(60):  # more than the 3-row catalog's share of edited rows
        services.upsert_charter_item(space=space, work_item_id=f"T{100 + n}", canonical_title=f"task kind {n}",
                                     aliases=[])
        assert bind(space, f"task kind {n}") == f"T{100 + n}"
    assert 1 < len(builds) < 10


def test_the_cache_is_bounded_in_bytes_least_recently_used_first(space, settings, builds):
    from tests.factories import SpaceFactory

    other = SpaceFactory(slug="other")
    services.import_catalog(space=other, rows=[CatalogRow("T1", "Nightly backups", [])])
    one = cache.catalog_index(space).nbytes
    cache.catalog_index(other)
    assert cache.cached_bytes() >= one and len(builds) == 2
    settings.SPACES_CATALOG_CACHE_BYTES = one + 1  # room for about one of them
    cache.catalog_index(space)  # the most recently used now; nothing evicted until the next store
    services.upsert_charter_item(space=other, work_item_id="T2", canonical_title="Rotate keys", aliases=[])
    cache.catalog_index(other)  # stored again (caught up): the least recently used goes
    assert cache.cached_bytes() <= one + 1 or len(cache._cache) == 1
    assert list(cache._cache) == [other.pk]
    cache.catalog_index(space)  # evicted, so built again
    assert builds.count(space.pk) == 2
