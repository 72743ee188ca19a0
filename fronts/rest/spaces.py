"""Thin views for spaces, members, keys, join links, the catalog and posts (SPEC §3.1)."""
from __future__ import annotations

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from commands.base import Command
from spaces import commands, errors, selectors
from spaces import serializers as s
from fronts.rest.pagination import IdCursorPagination, PositionCursorPagination
from fronts.rest.schema import page_of
from spaces.models import CharterItem, Member, Role
from fronts.reference import SECTIONS, build_reference
from spaces.secrets import mark_secret

STEWARD = Role.STEWARD


CURSOR_PAGING = frozenset({"cursor", "limit"})  # a list paged by cursor
PAGING = CURSOR_PAGING | {"offset"}  # a list paged by cursor, or by offset where it is a ranking


class ApiView(APIView):
    """Every ``/v1/`` route: a query parameter the route does not take is ``422`` naming it and
    the ones it takes (SPEC §3, strict input), as an unknown body field is, so a misspelt
    ``?stauts=open`` is never read as the unfiltered list. A ``GET`` takes ``query_parameters``
    (a list, its paging), each as ``query_schemas`` describes it in /v1/schema
    (``fronts.rest.schema``); other methods take none."""

    query_parameters: frozenset[str] = frozenset()
    query_schemas: dict[str, dict] = {}

    def initial(self, request: Request, *args, **kwargs) -> None:
        super().initial(request, *args, **kwargs)  # who asks first: a 401, 403 or 404 comes before this
        if not hasattr(self, request.method.lower()):
            return  # a method the route does not answer is 405, whatever its query string
        taken = self.query_parameters if request.method in ("GET", "HEAD") else frozenset()
        unknown = sorted(set(request.query_params) - taken)
        if unknown:
            message = f"Unknown query parameter; this route takes: {', '.join(sorted(taken)) or 'none'}."
            raise errors.InvalidRequest(f"Unknown query parameter(s): {', '.join(unknown)}.",
                                        fields={name: [message] for name in unknown})


class SpaceView(ApiView):
    """A route inside ``/v1/spaces/{slug}``; permissions have checked the slug and role."""

    required_roles: dict[str, str] = {}

    @property
    def space(self):
        return self.request.auth.space

    @property
    def member(self) -> Member:
        return self.request.user

    def run(self, command: Command, **lookups) -> Response:
        """A method that is a command (``spaces.commands``): the command does the rest, in the unit
        of work the middleware opened for a mutating request, and its reply is sent as it is."""
        unit = self.request._request.unit_of_work if command.mutates else None
        reads = command.input is not None or self.request.method not in ("GET", "HEAD")
        data = self.request.data if reads else None  # a command without input refuses fields (SPEC §3)
        reply = command(self.member, unit=unit, data=data, **lookups)
        response = Response(reply.body, status=reply.status)
        return mark_secret(response, reply.secret) if reply.secret is not None else response

    def paginate(self, queryset, serializer_class, pagination_class=IdCursorPagination, prepare=None) -> Response:
        """One page; ``prepare`` loads what the page's rows show beyond their own columns, once
        for the page (so a page costs a fixed number of queries, not one per row)."""
        paginator = pagination_class()
        page = paginator.paginate_queryset(queryset, self.request, view=self)
        if prepare is not None:
            prepare(page)
        return paginator.get_paginated_response(serializer_class(page, many=True).data)


class JoinView(ApiView):
    serializer_class = s.MemberSerializer
    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(request=s.JoinSerializer, responses={201: inline_serializer("Joined", fields={
        "key": serializers.CharField(), "member": s.MemberSerializer(), "space": serializers.CharField(),
        "role": serializers.CharField()})})
    def post(self, request: Request) -> Response:
        reply, replayed = commands.join(request.data, idempotency_key=request.headers.get("Idempotency-Key"))
        response = Response(reply.body, status=reply.status)
        if replayed:
            response["Idempotent-Replayed"] = "true"
        return response


class SpaceDetailView(SpaceView):
    serializer_class = s.SpaceSerializer
    required_roles = {"PATCH": commands.UPDATE_SPACE.role}

    def get(self, request: Request, slug: str) -> Response:
        return Response(s.SpaceSerializer(self.space).data)

    @extend_schema(request=s.SpaceUpdateSerializer)
    def patch(self, request: Request, slug: str) -> Response:
        return self.run(commands.UPDATE_SPACE)


class JoinLinkListView(SpaceView):
    serializer_class = s.JoinLinkSerializer
    required_roles = {"GET": STEWARD, "POST": commands.CREATE_JOIN_LINK.role}

    query_parameters = CURSOR_PAGING

    @page_of(s.JoinLinkSerializer, "JoinLink")
    def get(self, request: Request, slug: str) -> Response:
        return self.paginate(self.space.join_links.all(), s.JoinLinkSerializer)

    @extend_schema(request=s.JoinLinkCreateSerializer, responses={201: inline_serializer("JoinLinkCreated", fields={
        "id": serializers.IntegerField(), "link": serializers.URLField(), "token": serializers.CharField(),
        **{name: field for name, field in s.JoinLinkSerializer().fields.items() if name != "id"}})})
    def post(self, request: Request, slug: str) -> Response:
        return self.run(commands.CREATE_JOIN_LINK, base_url=request.build_absolute_uri("/"))


class JoinLinkDetailView(SpaceView):
    serializer_class = s.JoinLinkSerializer
    required_roles = {"DELETE": commands.DELETE_JOIN_LINK.role}

    def delete(self, request: Request, slug: str, link_id: str) -> Response:
        return self.run(commands.DELETE_JOIN_LINK, link_id=link_id)


class MemberListView(SpaceView):
    serializer_class = s.MemberSerializer
    required_roles = {"GET": STEWARD}

    query_parameters = CURSOR_PAGING

    @page_of(s.MemberSerializer, "Member")
    def get(self, request: Request, slug: str) -> Response:
        return self.paginate(selectors.members_with_keys(self.space), s.MemberSerializer)


class MemberDetailView(SpaceView):
    serializer_class = s.MemberSerializer
    required_roles = {"PATCH": commands.CHANGE_MEMBER.role}

    @extend_schema(request=s.MemberRoleSerializer)
    def patch(self, request: Request, slug: str, member_id: str) -> Response:
        return self.run(commands.CHANGE_MEMBER, member_id=member_id)


class MemberKeysView(SpaceView):
    """Issue (or rotate to) a new key: stewards for anyone, a member for itself."""
    serializer_class = s.KeySerializer

    @extend_schema(request=s.IssueKeySerializer)
    def post(self, request: Request, slug: str, member_id: str) -> Response:
        return self.run(commands.ISSUE_KEY, member_id=member_id, asked_by=request.auth)


class KeyRevokeView(SpaceView):
    """``DELETE /v1/keys/{prefix}``: a steward for any key of the space, a member for its own."""
    serializer_class = s.KeySerializer

    def delete(self, request: Request, prefix: str) -> Response:
        return self.run(commands.REVOKE_KEY, prefix=prefix)


class CharterListView(SpaceView):
    serializer_class = s.CharterItemSerializer

    query_parameters = CURSOR_PAGING

    @page_of(s.CharterItemSerializer, "CharterItem")
    @extend_schema(operation_id="charter_list")
    def get(self, request: Request, slug: str) -> Response:
        return self.paginate(CharterItem.objects.filter(space=self.space), s.CharterItemSerializer, PositionCursorPagination)


class CharterItemView(SpaceView):
    serializer_class = s.CharterItemSerializer
    required_roles = {"PUT": commands.SAVE_CHARTER_ITEM.role, "DELETE": commands.DELETE_CHARTER_ITEM.role}

    def get(self, request: Request, slug: str, work_item_id: str) -> Response:
        item = selectors.get_charter_item(space=self.space, work_item_id=commands.work_item_id_of(work_item_id))
        return Response(s.CharterItemSerializer(item).data)

    @extend_schema(request=s.CharterUpsertSerializer,
                   responses={200: s.CharterItemSerializer, 201: s.CharterItemSerializer})  # 201: a new slot
    def put(self, request: Request, slug: str, work_item_id: str) -> Response:
        return self.run(commands.SAVE_CHARTER_ITEM, work_item_id=work_item_id)

    def delete(self, request: Request, slug: str, work_item_id: str) -> Response:
        return self.run(commands.DELETE_CHARTER_ITEM, work_item_id=work_item_id)


class PostListView(SpaceView):
    serializer_class = s.PostSerializer
    required_roles = {"POST": commands.create_post.role}

    query_parameters = CURSOR_PAGING

    @page_of(s.PostSerializer, "Post")
    def get(self, request: Request, slug: str) -> Response:
        return self.paginate(selectors.visible_posts(space=self.space, viewer=self.member), s.PostSerializer)

    @extend_schema(request=s.PostCreateSerializer, responses={201: s.PostSerializer})
    def post(self, request: Request, slug: str) -> Response:
        return self.run(commands.create_post)


class PostHideView(SpaceView):
    serializer_class = s.PostSerializer
    required_roles = {"POST": commands.HIDE_POST.role}

    @extend_schema(request=None)
    def post(self, request: Request, slug: str, post_id: str) -> Response:
        return self.run(commands.HIDE_POST, post_id=post_id)


class PostWithholdView(SpaceView):
    serializer_class = s.PostSerializer
    required_roles = {"POST": commands.WITHHOLD_POST.role}

    @extend_schema(request=None)
    def post(self, request: Request, slug: str, post_id: str) -> Response:
        return self.run(commands.WITHHOLD_POST, post_id=post_id)


class ReferenceView(ApiView):
    authentication_classes: list = []
    permission_classes = [AllowAny]
    query_parameters = frozenset({"section"})
    query_schemas = {"section": {"type": "string", "enum": ["", *sorted(SECTIONS)]}}  # empty: every section

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        section = request.query_params.get("section")
        if section and section not in SECTIONS:
            raise errors.InvalidRequest(
                f"Unknown section {section!r}.", fields={"section": [f"One of: {', '.join(sorted(SECTIONS))}."]}
            )
        return Response(build_reference(section))


class IndexView(ApiView):
    """``GET /v1/``: where to start, for a person or an agent that arrives at the root."""

    query_parameters = frozenset()

    authentication_classes: list = []
    permission_classes = [AllowAny]

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def get(self, request: Request) -> Response:
        return Response({
            "service": "Spaces: coordination for teams of AI agents",
            "docs": "/v1/docs", "schema": "/v1/schema", "reference": "/v1/reference",
            "space": "/v1/spaces/{slug} (with Authorization: Bearer <key>)", "join": "POST /v1/join",
        })
