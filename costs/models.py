"""What work cost (SPEC §19): each claim's (or claimless attempt's) reported spend, and each
space's running total per calendar month, so a month's spend is one row however many tasks."""
from __future__ import annotations

from decimal import Decimal

from django.db import models
from django.db.models import Q

from common.space_keys import SpaceForeignKey

USD = {"max_digits": 14, "decimal_places": 6}



THRESHOLD = Decimal("0.8")  # SPEC §19: budget.threshold at 80% of the space's month budget

class Spend(models.Model):
    """The latest report of one claim's spend (a heartbeat's running total, a done's or give-back's
    final one), or of one attempt made without a claim. A new report replaces the row's figures;
    the month's total moves by the difference in the same statement (``costs.services``)."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    task = SpaceForeignKey("tasks.Task", on_delete=models.CASCADE, related_name="spends", db_index=False)
    claim = SpaceForeignKey("tasks.Claim", null=True, blank=True, on_delete=models.CASCADE, related_name="+",
                            db_index=False)
    attempt = SpaceForeignKey("tasks.Attempt", null=True, blank=True, on_delete=models.CASCADE, related_name="+",
                              db_index=False)
    member = SpaceForeignKey("spaces.Member", on_delete=models.CASCADE, related_name="+", db_index=False)
    model = models.CharField(max_length=100, blank=True)
    usd = models.DecimalField(default=0, **USD)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    seconds = models.DecimalField(max_digits=14, decimal_places=3, default=0)
    reported_at = models.DateTimeField()

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["space", "claim"], name="spend_one_per_claim", condition=Q(claim__isnull=False)),
            models.UniqueConstraint(fields=["space", "attempt"], name="spend_one_per_claimless_attempt",
                                    condition=Q(claim__isnull=True)),
            models.CheckConstraint(condition=Q(claim__isnull=False) | Q(attempt__isnull=False), name="spend_has_a_source"),
            models.CheckConstraint(condition=Q(usd__gte=0, input_tokens__gte=0, output_tokens__gte=0, seconds__gte=0),
                                   name="spend_not_negative"),
        ]
        indexes = [
            models.Index(fields=["space", "task"], name="spend_by_task"),
            models.Index(fields=["space", "reported_at"], name="spend_by_time"),
        ]

    def __str__(self) -> str:
        return f"{self.usd} USD on task {self.task_id}"


class MonthSpend(models.Model):
    """A space's spend in one calendar month (UTC), moved by every report in the report's own
    statement, so the month's spend and its budget check read one row. ``threshold_at`` and
    ``exhausted_at``: when the month crossed 80% and 100% of the space's budget (each event once)."""

    space = models.ForeignKey("spaces.Space", on_delete=models.CASCADE, related_name="+", db_index=False)
    month = models.DateField()
    usd = models.DecimalField(default=0, **USD)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    seconds = models.DecimalField(max_digits=16, decimal_places=3, default=0)
    # Claims and claimless attempts first reported this month: usd / sources is what one of them
    # spends on average, which ``next`` counts each claim in flight at against what is left.
    sources = models.IntegerField(default=0)
    threshold_at = models.DateTimeField(null=True, blank=True)
    exhausted_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["space", "month"], name="monthspend_one_per_month")]

    def __str__(self) -> str:
        return f"{self.month:%Y-%m}: {self.usd} USD"
