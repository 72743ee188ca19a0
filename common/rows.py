"""Rows of hand-written SQL turned into model instances, converted as the ORM would."""
from __future__ import annotations

from functools import cache

from django.db import DEFAULT_DB_ALIAS, connection, connections
from django.db.models import Model


@cache
def converters(model: type[Model]) -> list[tuple]:
    """Per column, the converters the ORM's compiler would apply (the backend's, then the
    field's own, e.g. a JSON field's decoding), with the column expression they expect."""
    out = []
    for field in model._meta.concrete_fields:
        column = field.get_col(model._meta.db_table)
        out.append((column, connection.ops.get_db_converters(column) + column.get_db_converters(connection)))
    return out


@cache
def attnames(model: type[Model]) -> list[str]:
    return [f.attname for f in model._meta.concrete_fields]


def instance(model: type[Model], values: tuple) -> Model:
    """``model`` from a row of all its concrete columns in field order, converted as the ORM would."""
    db = connections[DEFAULT_DB_ALIAS]  # the wrapper itself: each use of the proxy is a thread-local lookup
    converted = []
    for (column, functions), value in zip(converters(model), values):
        for convert in functions:
            value = convert(value, column, db)
        converted.append(value)
    return model.from_db(db.alias, attnames(model), converted)


