"""People in the loop in the admin (SPEC §21): the space's questions and messages, read only.
A question is answered where people work (the board's panel, or any front's answer command);
proposals are the task list filtered by status proposed, with its Approve and Refuse actions."""
from __future__ import annotations

from django.contrib import admin

from fronts.admin.read_only import ReadOnlyAdmin
from tasks.models import Message, Question


@admin.register(Question)
class QuestionAdmin(ReadOnlyAdmin):
    list_display = ["id", "task", "asker", "to", "addressee", "state", "created_at", "expires_at", "answered_by"]
    list_filter = ["state", "to", "space"]
    search_fields = ["body", "answer"]
    ordering = ["-id"]
    list_select_related = ["task", "asker", "addressee", "answered_by"]
    fields = readonly_fields = ["space", "task", "asker", "to", "addressee", "body", "options", "claim", "state",
                                "expires_at", "answer", "option", "answered_by", "created_at", "closed_at"]


@admin.register(Message)
class MessageAdmin(ReadOnlyAdmin):
    list_display = ["id", "task", "sender", "thread", "created_at"]
    list_filter = ["space"]
    search_fields = ["body", "thread"]
    ordering = ["-id"]
    show_full_result_count = False
    list_select_related = ["task", "sender"]
    fields = readonly_fields = ["space", "task", "sender", "thread", "recipients", "body", "created_at"]
