"""agentkernel as a Jupyter AI 3 chat persona, "Agent Kernel".

Jupyter AI's persona manager loads this module through the
``jupyter_ai.personas`` entry point of the agentkernel package; nothing else
imports it (``import agentkernel`` does not), so without Jupyter AI it is
never read. jupyter-ai-acp-client's ``BaseAcpPersona`` runs the ACP agent:
here ``agentkernel acp``, the binary this package installed, one process
for every chat, started on the first message to the persona.

The model and its keys are agentkernel's own: ``AGENTKERNEL_MODEL`` and the
provider's key variables in the environment JupyterLab was started from, or
the config file ($AGENTKERNEL_CONFIG, default
~/.config/agentkernel/config.json). A chat's conversation is an agentkernel
session of the chat's directory (``agentkernel sessions``, ``%agent
resume``), loaded again with ``session/load`` when the server restarts.
"""

from pathlib import Path

from jupyter_ai_persona_manager import PersonaDefaults, PersonaRequirementsUnmet

try:
    from jupyter_ai_acp_client.base_acp_persona import BaseAcpPersona
    from jupyter_ai_acp_client.default_acp_client import JaiAcpClient
except ImportError as e:  # Jupyter AI without its ACP client
    raise PersonaRequirementsUnmet(
        "The Agent Kernel persona runs agentkernel as an ACP agent, which needs jupyter-ai-acp-client:"
        " pip install jupyter-ai-acp-client, then restart JupyterLab."
    ) from e

from agentkernel import find_binary

try:
    _BINARY = find_binary()
except FileNotFoundError as e:
    raise PersonaRequirementsUnmet(str(e)) from e

_AVATAR = str(Path(__file__).with_name("avatar.svg"))


class _Client(JaiAcpClient):
    """Jupyter AI's ACP client without session/load's replay.

    The chat keeps its own copy of the conversation, so the client means to
    ignore the updates a load replays; but it ignores only those handled
    while the load runs, and its ACP SDK handles each update in a task of
    its own, some after the load's answer: the agent's earlier answers came
    back as new messages. agentkernel marks the replay's updates
    (``_meta.agentkernel.replay``); they are dropped whenever they come.
    """

    async def session_update(self, session_id, update, **kwargs):
        meta = getattr(update, "field_meta", None) or {}
        if (meta.get("agentkernel") or {}).get("replay"):
            return None
        return await super().session_update(session_id, update, **kwargs)


class AgentKernelPersona(BaseAcpPersona):
    """Agent Kernel: ``agentkernel acp`` behind Jupyter AI's ACP client."""

    acp_client_class = _Client

    def __init__(self, *args, **kwargs):
        super().__init__(*args, executable=[_BINARY, "acp"], **kwargs)

    @property
    def defaults(self) -> PersonaDefaults:
        return PersonaDefaults(
            name="Agent Kernel",
            description=(
                "agentkernel's agent: the model, rules, hooks and MCP servers of your agentkernel configuration;"
                " its code runs in a Jupyter kernel of its own in the chat's directory, and each chat is an"
                " agentkernel session you can rewind (/rewind)."
            ),
            avatar_path=_AVATAR,
            system_prompt="unused",  # agentkernel's own
        )
