"""Least privilege in the admin: every action needs the permission for what it changes, and a
staff user who may only view gets none of them (superusers have all)."""
from __future__ import annotations

import pytest
from django.contrib import admin
from django.contrib.auth.models import Permission, User
from django.test import Client, RequestFactory

from spaces.models import ApiKey
from tasks.models import Task, TaskStatus
from tests.factories import create_task


def registered_actions() -> list[tuple[admin.ModelAdmin, str]]:
    """Every action of every registered admin, found at run time, so a new one cannot skip the test."""
    found = []
    for model_admin in admin.site._registry.values():
        for name in model_admin.actions or []:
            found.append((model_admin, name))
    return found


def user_with(codenames: list[str]) -> User:
    user = User.objects.create_user("viewer", "viewer@example.com", "pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=user.pk)  # a fresh instance: permissions are cached per object


def request_by(user: User):
    request = RequestFactory().get("/admin/")
    request.user = user
    return request


def view_codenames() -> list[str]:
    return [f"view_{model._meta.model_name}" for model in admin.site._registry]


def test_every_action_names_the_permission_it_needs():
    actions = registered_actions()
    assert len(actions) >= 10  # the stewardship, key and expiry actions
    for model_admin, name in actions:
        function = getattr(type(model_admin), name)
        assert getattr(function, "allowed_permissions", None), f"{model_admin}: action {name} checks no permission"


@pytest.mark.django_db
def test_a_view_only_staff_user_gets_no_action_and_a_superuser_gets_them_all():
    viewer = request_by(user_with(view_codenames()))
    boss = request_by(User.objects.create_superuser("ada", "ada@example.com", "pw"))
    for model_admin, name in registered_actions():
        assert name not in model_admin.get_actions(viewer), f"{model_admin}: a viewer may run {name}"
        assert name in model_admin.get_actions(boss), f"{model_admin}: a superuser may not run {name}"


def test_a_view_only_staff_user_cannot_issue_a_key_or_supersede(space, steward, writer):
    user_with(view_codenames())
    client = Client()
    client.login(username="viewer", password="pw")
    keys = ApiKey.objects.count()
    client.post("/admin/spaces/member/", {"action": "issue_key", "_selected_action": [str(steward.member.pk)]})
    assert ApiKey.objects.count() == keys
    task = create_task(space=space, actor=writer.member, title="Retry policy")
    for name in ("withdraw", "reject"):
        client.post("/admin/tasks/task/", {"action": name, "_selected_action": [str(task.pk)]})
    assert Task.objects.get(pk=task.pk).status == TaskStatus.OPEN


def test_the_permission_for_the_change_is_enough(space, writer):
    user_with([*view_codenames(), "change_task"])
    client = Client()
    client.login(username="viewer", password="pw")
    task = create_task(space=space, actor=writer.member, title="Retry policy")
    client.post("/admin/tasks/task/", {"action": "withdraw", "_selected_action": [str(task.pk)]})
    assert Task.objects.get(pk=task.pk).status == TaskStatus.WITHDRAWN


def test_the_bind_preview_takes_the_permission_to_view_the_space_and_its_catalog(space):
    """Any staff user used to open any space's bind preview (slot ids, scores); now it takes
    view_space and view_charteritem."""
    path = f"/admin/spaces/space/{space.pk}/bind/?title=Retry+policy"
    staff = user_with([])
    client = Client()
    client.force_login(staff)
    assert client.get(path).status_code == 403
    staff.user_permissions.set(Permission.objects.filter(codename="view_space"))
    client.force_login(User.objects.get(pk=staff.pk))
    assert client.get(path).status_code == 403
    staff.user_permissions.set(Permission.objects.filter(codename__in=["view_space", "view_charteritem"]))
    client.force_login(User.objects.get(pk=staff.pk))
    assert client.get(path).status_code == 200
