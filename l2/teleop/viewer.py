"""The operator's browser view (``--visualizer viser``): the current attempt's instruction above the scene.

Isaac Lab's viser visualizer serves the scene through Newton's ``ViewerViser``; its ``viser.ViserServer``
takes GUI elements, so the instruction is a markdown panel in the page's control pane, rewritten when an
attempt begins (with ``presets=variety`` each attempt draws its own).
"""

from __future__ import annotations

import weakref

VIEW_EYE, VIEW_LOOKAT = (1.5, -1.1, 0.9), (0.45, 0.0, 0.1)
"""The operator's viewpoint (m, world frame): the workspace from the front right."""

_PANELS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
"""viser server -> its instruction panel (one per server, made on first use)."""


def viser_servers(env) -> list:
    """The ``viser.ViserServer`` of each viser visualizer of ``env``'s simulation (none without one)."""
    servers = []
    for viz in env.sim.visualizers:
        server = getattr(getattr(viz, "_viewer", None), "_server", None)
        if server is not None and hasattr(server, "gui"):
            servers.append(server)
    return servers


def frame_workspace(env) -> None:
    """Start every browser that connects from now on at the operator's viewpoint (viser's default frames the
    whole 100 m ground plane, where the robot is a speck)."""
    for server in viser_servers(env):
        server.initial_camera.position = VIEW_EYE
        server.initial_camera.look_at = VIEW_LOOKAT


def show_instruction(env, text: str) -> None:
    """Show ``text`` as the instruction in every browser view of ``env`` (a no-op without one)."""
    content = f"### Instruction\n{text}"
    for server in viser_servers(env):
        panel = _PANELS.get(server)
        if panel is None:
            _PANELS[server] = server.gui.add_markdown(content, order=-1.0)
        else:
            panel.content = content
