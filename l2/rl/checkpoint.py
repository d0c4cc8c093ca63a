"""PPO checkpoints of the RL source: the shipped policy, the observation/action layout they were trained on.

Checkpoints are rsl_rl's own (``actor_state_dict``, ``critic_state_dict``, ...). The ones our scripts write
also carry ``infos["layout"]``, the env's policy-observation terms and action terms with their widths, so a
rollout can say exactly what differs; for other rsl_rl checkpoints the widths are read from the weights.

Export a trained run's checkpoint as the shipped policy (actor and critic, no optimizer state, plus the
env/agent cfgs it was trained with)::

    python -m l2.rl.checkpoint logs/rl/<run>/model_<it>.pt --to l2/lift/config/franka/policies/rl
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from l2.format import cli_args
from l2.format.l2file import one_line
from l2.lift.config import franka

if TYPE_CHECKING:
    from isaaclab.envs import ManagerBasedRLEnv

SHIPPED_MODEL = franka.RL_POLICY
SHIPPED = SHIPPED_MODEL.parent
"""The Franka's shipped policy's folder: ``model.pt``, ``params/env.yaml``, ``params/agent.yaml``."""

POLICY_KWARG = "rsl_rl_policy"
"""The gym registration kwarg naming an RL task's shipped policy (``model.pt``)."""


def shipped_model(task: str) -> Path:
    """The policy shipped for ``task`` (its registration's :data:`POLICY_KWARG`); a
    :class:`~l2.recording.sim.TaskCfgError` when none is."""
    import gymnasium as gym

    from l2.recording import sim

    sim.register_tasks()
    spec = gym.registry.get(task)
    if spec is None or POLICY_KWARG not in spec.kwargs:
        raise sim.TaskCfgError(f"--task {task}: no rsl_rl policy is shipped for it; give a checkpoint (model_<it>.pt)")
    return Path(spec.kwargs[POLICY_KWARG])


Layout = dict[str, list[list]]
"""``{"observation": [[term, width], ...], "action": [[term, width], ...]}``"""


class LayoutError(ValueError):
    """A checkpoint trained on another observation or action layout than the env's."""


def env_layout(env: ManagerBasedRLEnv, group: str = "policy") -> Layout:
    """The policy group's terms and the action terms of ``env``, in the order the policy sees them."""
    import math

    obs = env.observation_manager
    actions = env.action_manager
    return {
        "observation": [
            [n, math.prod(d)] for n, d in zip(obs.active_terms[group], obs.group_obs_term_dim[group], strict=True)
        ],
        "action": [[n, d] for n, d in zip(actions.active_terms, actions.action_term_dim, strict=True)],
    }


def checkpoint_layout(checkpoint: dict) -> Layout:
    """The layout stored in a checkpoint, or its widths alone (term names ``?``) for a foreign one."""
    layout = (checkpoint.get("infos") or {}).get("layout")
    if layout:
        return layout
    actor = checkpoint["actor_state_dict"]
    weights = [k for k in actor if k.startswith("mlp.") and k.endswith(".weight")]
    first, last = weights[0], max(weights, key=lambda k: int(k.split(".")[1]))
    return {"observation": [["?", actor[first].shape[1]]], "action": [["?", actor[last].shape[0]]]}


def describe(layout: Layout) -> str:
    def part(terms: list[list]) -> str:
        total = sum(w for _, w in terms)
        return (
            f"{total} = " + " + ".join(f"{n} {w}" for n, w in terms) if any(n != "?" for n, _ in terms) else str(total)
        )

    return f"observation {part(layout['observation'])}; action {part(layout['action'])}"


def check_layout(path: str | Path, checkpoint: dict, env: ManagerBasedRLEnv) -> None:
    """Raise :class:`LayoutError` (one line naming both layouts) when the checkpoint does not fit ``env``."""
    want, have = env_layout(env), checkpoint_layout(checkpoint)
    named = all(n != "?" for key in have for n, _ in have[key])
    same = (
        have == want
        if named
        else all(sum(w for _, w in have[k]) == sum(w for _, w in want[k]) for k in ("observation", "action"))
    )
    if not same:
        raise LayoutError(f"{path}: checkpoint was trained on {describe(have)}; the env has {describe(want)}")


def load(path: str | Path, device: str) -> dict:
    """An rsl_rl checkpoint file's contents; :class:`LayoutError` when there is no such file or it is not an rsl_rl
    checkpoint (an actor's weights that :func:`checkpoint_layout` can read)."""
    import torch

    if not Path(path).is_file():
        raise LayoutError(f"{path}: no such checkpoint")
    try:
        checkpoint = torch.load(path, map_location=device, weights_only=False)
    except Exception as exc:  # noqa: BLE001  (torch.load raises anything unpickling can on a file that is not one)
        raise LayoutError(
            f"{path}: not a torch checkpoint ({type(exc).__name__}: {one_line(str(exc))[:160]})"
        ) from None
    try:
        checkpoint_layout(checkpoint)
    except (AttributeError, KeyError, TypeError, ValueError, IndexError):
        raise LayoutError(f"{path}: not an rsl_rl checkpoint (no actor_state_dict with mlp.<i>.weight)") from None
    return checkpoint


def inference_policy(env: ManagerBasedRLEnv, path: str | Path, checkpoint: dict, agent_cfg):
    """``(vec_env, policy)``: rsl_rl's wrapper of ``env`` and the checkpoint's deterministic actor, which maps
    the env's observation groups (a TensorDict) to actions. Raises :class:`LayoutError` when the checkpoint
    was trained on another observation or action layout than the env's."""
    from isaaclab_rl.rsl_rl import RslRlVecEnvWrapper, create_rsl_rl_runner

    vec_env = RslRlVecEnvWrapper(env, clip_actions=agent_cfg.clip_actions)
    runner = create_rsl_rl_runner(vec_env, agent_cfg, log_dir=None)
    check_layout(path, checkpoint, env)
    runner.alg.load(checkpoint, load_cfg={"actor": True}, strict=True)
    return vec_env, runner.get_inference_policy(device=env.device)


def export(source: Path, target: Path) -> Path:
    """Copy a run's checkpoint (actor, critic and infos only) and the run's cfgs into ``target``."""
    import torch

    checkpoint = torch.load(source, map_location="cpu", weights_only=False)
    slim = {k: checkpoint[k] for k in ("actor_state_dict", "critic_state_dict", "iter", "infos") if k in checkpoint}
    target.mkdir(parents=True, exist_ok=True)
    torch.save(slim, target / "model.pt")
    params = source.parent / "params"
    if params.is_dir():
        shutil.copytree(params, target / "params", dirs_exist_ok=True)
    return target / "model.pt"


def main(argv: list[str] | None = None) -> int:
    parser = cli_args.Parser(prog="python -m l2.rl.checkpoint", description=__doc__.split("\n\n")[0])
    parser.add_argument("checkpoint", type=cli_args.existing_file, help="model_<it>.pt of a run of l2/rl/train.py")
    parser.add_argument(
        "--to", type=cli_args.output_folder, default=str(SHIPPED), help="folder to write (default: the shipped policy)"
    )
    args = parser.parse_args(argv)
    try:
        load(args.checkpoint, "cpu")
    except LayoutError as exc:
        cli_args.fail(str(exc))
    print(f"exported {export(Path(args.checkpoint), Path(args.to))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
