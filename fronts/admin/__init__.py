"""The Django admin's pages, one module per app whose tables they show (imported by the admin's
autodiscovery)."""
from fronts.admin import allocation, costs, events, people, routines, spaces, tasks, webhooks  # noqa: F401
