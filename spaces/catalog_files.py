"""Reading catalog files for the operator commands (SPEC §9)."""
from __future__ import annotations

import json
from pathlib import Path

from spaces.catalog import CatalogRow, parse_catalog_row


class CatalogFileError(ValueError):
    pass


def read_catalog_file(path: str | Path) -> list[CatalogRow]:
    """A JSON list of rows, or an object with the list under ``"catalog"``; rows upsert by id,
    so a later row with the same id replaces an earlier one."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CatalogFileError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CatalogFileError(f"{path}: not a JSON file ({exc})") from None
    if isinstance(data, dict):
        data = data.get("catalog")
    if not isinstance(data, list):
        raise CatalogFileError(f'{path}: expected a list of rows or an object with a "catalog" list')
    rows: dict[str, CatalogRow] = {}
    for number, raw in enumerate(data, start=1):
        try:
            row = parse_catalog_row(raw)
        except ValueError as exc:
            raise CatalogFileError(f"{path}: row {number}: {exc}") from None
        rows[row.work_item_id] = row
    return list(rows.values())
