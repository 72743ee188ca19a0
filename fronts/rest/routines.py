"""REST routes of routines (SPEC §22): ``/v1/spaces/{slug}/routines[/{id}]``."""
from __future__ import annotations

from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import status
from rest_framework.request import Request
from rest_framework.response import Response

from fronts.rest.spaces import SpaceView
from spaces.models import Role
from tasks import commands
from tasks.serializers import RoutineCreateSerializer, RoutineSerializer, RoutineUpdateSerializer


class RoutineListView(SpaceView):
    """Any member reads the space's routines; a steward makes one."""
    serializer_class = RoutineSerializer
    required_roles = {"GET": Role.READER, "POST": commands.create_routine.role}

    @extend_schema(operation_id="spaces_routines_list",
                   responses=inline_serializer("Routines", fields={"results": RoutineSerializer(many=True)}))
    def get(self, request: Request, slug: str) -> Response:
        return self.run(commands.LIST_ROUTINES)

    @extend_schema(request=RoutineCreateSerializer, responses={201: RoutineSerializer})
    def post(self, request: Request, slug: str) -> Response:
        return self.run(commands.create_routine)


class RoutineDetailView(SpaceView):
    serializer_class = RoutineSerializer
    required_roles = {"GET": Role.READER, "PATCH": commands.update_routine.role,
                      "DELETE": commands.delete_routine.role}

    def get(self, request: Request, slug: str, routine: str) -> Response:
        return self.run(commands.GET_ROUTINE, routine=routine)

    @extend_schema(request=RoutineUpdateSerializer)
    def patch(self, request: Request, slug: str, routine: str) -> Response:
        return self.run(commands.update_routine, routine=routine)

    @extend_schema(request=None, responses={204: None})
    def delete(self, request: Request, slug: str, routine: str) -> Response:
        self.run(commands.delete_routine, routine=routine)
        return Response(status=status.HTTP_204_NO_CONTENT)  # a DELETE answers no body
