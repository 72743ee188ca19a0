"""A space's Agent Card (SPEC §18): the space described as an agent other agents hand work to."""
from __future__ import annotations

from a2a.types import a2a_pb2 as pb

from common.version import project_version
from spaces.models import CharterItem, Member, Space

PROTOCOL_VERSION = "1.0"
BINDINGS = ("JSONRPC", "HTTP+JSON")  # both served at /a2a/{slug}; JSON-RPC first, the SDK client's default
SCHEME = "spaces_api_key"
INPUT_MODES = ["text/plain", "application/json"]
OUTPUT_MODES = ["text/plain"]
GENERAL_SKILL = "work"


def skills(space: Space) -> list[pb.AgentSkill]:
    """One skill per charter slot (id its work item id, name its canonical title, examples its
    aliases), then the general skill for work no slot names."""
    found = [pb.AgentSkill(id=item.work_item_id, name=item.canonical_title, tags=["catalog"],
                           description=f"Catalogued work {item.work_item_id}: {item.canonical_title}. "
                                       "Asked for twice, or in other words, it is one task.",
                           examples=[str(alias) for alias in item.aliases or []])
             for item in CharterItem.objects.filter(space=space).order_by("position")]
    found.append(pb.AgentSkill(
        id=GENERAL_SKILL, name="Any other work", tags=["work"],
        description="Work no catalog slot names: the message's first line is the title, the rest its body; "
                    "a data part may carry title, body, work_item_id, priority, labels and blocked_by.",
        examples=["Rotate the staging database credentials\nThe old ones leaked in a log."]))
    return found


def agent_card(space: Space, base_url: str, *, member: Member | None = None) -> pb.AgentCard:
    """The card anyone may read; ``member``'s extended card says what the caller's key may do."""
    url = f"{base_url}/a2a/{space.slug}"
    description = (f"The agent team of the space {space.name!r}. Send it work: it becomes a task, created once "
                   "however often or however worded it is asked for, done by one agent and checked by another "
                   "before it is called complete.")
    if member is not None:
        description += f" Your key is {member.name!r}'s, a {member.role}."
    return pb.AgentCard(
        name=space.name, description=description, version=project_version(),
        supported_interfaces=[pb.AgentInterface(url=url, protocol_binding=binding, protocol_version=PROTOCOL_VERSION)
                              for binding in BINDINGS],
        provider=pb.AgentProvider(organization="Spaces", url=base_url),
        documentation_url=f"{base_url}/v1/reference?section=a2a",
        capabilities=pb.AgentCapabilities(streaming=True, push_notifications=True, extended_agent_card=True),
        security_schemes={SCHEME: pb.SecurityScheme(http_auth_security_scheme=pb.HTTPAuthSecurityScheme(
            scheme="bearer", bearer_format="Spaces API key",
            description="A member's API key of this space, as on every REST route."))},
        security_requirements=[pb.SecurityRequirement(schemes={SCHEME: pb.StringList()})],
        default_input_modes=INPUT_MODES, default_output_modes=OUTPUT_MODES, skills=skills(space))
