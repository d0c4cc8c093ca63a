"""The actors that turn the env's observations into action chunks: an rsl_rl checkpoint in-process
(:class:`RslRlActor`), or a policy behind GR00T's policy-server protocol (:class:`ServedActor`, its client made by
:func:`connect`, with the observation and the action going through the mapping config)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

import numpy as np

from l2.evaluate.spec import EvaluationError, PolicySpec
from l2.format import schema

if TYPE_CHECKING:
    import torch
    from isaaclab.envs import ManagerBasedRLEnv

    from l2.policy.modality import ModalityAdapter
    from l2.policy.protocol import PolicyClient


class RslRlActor:
    """An rsl_rl checkpoint's deterministic actor, in-process, one action per step."""

    def __init__(self, env: ManagerBasedRLEnv, path: str, checkpoint: dict, agent_cfg):
        from l2.rl.checkpoint import inference_policy

        self.vec_env, self.policy = inference_policy(env, path, checkpoint, agent_cfg)
        self.clip = agent_cfg.clip_actions
        self.requests = 0

    def reset(self, episodes: list[int] | None, batch: int) -> None:
        pass

    def chunk(self, env: ManagerBasedRLEnv, step: int) -> torch.Tensor:
        import torch

        with torch.inference_mode():
            action = self.policy(self.vec_env.get_observations())
        if self.clip is not None:
            action = torch.clamp(action, -self.clip, self.clip)
        self.requests += 1
        return action[:, None]


def obs_terms(obs_buf: dict) -> dict[str, np.ndarray]:
    """The env's current observation as the L2 file names its terms: ``{"obs/<term>": (num_envs, ...)}``."""
    terms = {}
    for value in obs_buf.values():
        if isinstance(value, dict):
            for term, tensor in value.items():
                terms[f"{schema.OBS}/{term}"] = tensor.detach().cpu().numpy()
    return terms


def _one_item(observation: dict, index: int) -> dict:
    """Batch item ``index`` of a GR00T observation, as a batch of one."""
    return {
        "video": {k: v[index : index + 1] for k, v in observation["video"].items()},
        "state": {k: v[index : index + 1] for k, v in observation["state"].items()},
        "language": {k: v[index : index + 1] for k, v in observation["language"].items()},
    }


class ServedActor:
    """A policy behind the protocol: observations built and actions mapped back by a :class:`ModalityAdapter`."""

    def __init__(self, client: PolicyClient, adapter: ModalityAdapter, action_dim: int, one_env_per_request: bool):
        self.client = client
        self.adapter = adapter
        self.action_dims = {schema.ACTIONS: action_dim}
        self.one_env_per_request = one_env_per_request
        self.episodes: list[int] | None = None
        self.requests = 0

    def reset(self, episodes: list[int] | None, batch: int) -> None:
        self.episodes = episodes
        if not self.one_env_per_request:
            self.client.reset({"episode_index": episodes} if episodes is not None else {})
            self.requests += 1

    def chunk(self, env: ManagerBasedRLEnv, step: int) -> torch.Tensor:
        import torch

        observation = self.adapter.observation(obs_terms(env.obs_buf))
        batch = env.num_envs
        if self.one_env_per_request:
            parts = []
            for e in range(batch):
                if self.episodes is not None:  # a replay server answers one episode at a time: say which, and where
                    self.client.reset({"episode_index": self.episodes[e], "step_index": step})
                    self.requests += 1
                action, _ = self.client.get_action(_one_item(observation, e), {"episode_step": [step]})
                parts.append(self.adapter.env_actions(action, self.action_dims, 1)[schema.ACTIONS])
                self.requests += 1
            chunk = np.concatenate(parts)
        else:
            action, _ = self.client.get_action(observation, {"episode_step": [step] * batch})
            chunk = self.adapter.env_actions(action, self.action_dims, batch)[schema.ACTIONS]
            self.requests += 1
        return torch.from_numpy(chunk).to(env.device)


def connect(spec: PolicySpec, args: argparse.Namespace, mapping, where: str):
    """A client of the policy (for ``replay:``, of an in-process server started here), answering ``ping``."""
    from l2.policy.protocol import PolicyClient, PolicyServer, ProtocolError
    from l2.policy.replay import DatasetError, DatasetReplayPolicy

    if spec.kind == "replay":
        try:
            policy = DatasetReplayPolicy(spec.target, mapping, where=where)
        except DatasetError as exc:
            raise EvaluationError(str(exc)) from None
        server = PolicyServer(policy, host="127.0.0.1", port=0, api_token=args.api_token)
        server.start_thread()
        client = PolicyClient("127.0.0.1", server.port, args.timeout, args.api_token)
    else:
        host, _, port = spec.target.rpartition(":")
        client = PolicyClient(host, int(port), args.timeout, args.api_token)
    try:
        client.ping()
    except ProtocolError as exc:
        raise EvaluationError(str(exc)) from None
    return client
