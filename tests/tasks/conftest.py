import pytest

from spaces.models import Space
from tests.factories import create_task
from tests.conftest import make_persona


@pytest.fixture
def writer3(space):
    return make_persona(space, "writer", "writer3")


@pytest.fixture
def writer4(space):
    return make_persona(space, "writer", "writer4")


@pytest.fixture
def tasks3(space, steward):
    """Tasks 1, 2 and 3 in agent-lab."""
    return [create_task(space=space, actor=steward.member, title=t)
            for t in ["Retry policy", "Write the onboarding guide", "Benchmark harness for code-review agents"]]


def set_space(space: Space, **fields) -> None:
    Space.objects.filter(pk=space.pk).update(**fields)
    space.refresh_from_db()
