from tests.tasks.conftest import tasks3  # noqa: F401  (tasks 1, 2 and 3 in agent-lab)
