"""The Django project: configuration only (no business rules live here)."""
