"""Closed-loop evaluation: run a policy in the lift task, measure its success rate, keep its rollouts.

The policy is an rsl_rl checkpoint run in-process (by default the shipped PPO policy), any server that
speaks Isaac-GR00T's policy-server protocol (a fine-tuned GR00T N1.6 on a GPU machine, or ``python -m
l2.serve``), or the recorded actions of a GR00T LeRobot dataset (``replay:``, served in-process over the
same protocol). A served policy sees the env's obs terms through the mapping config L3 built its training
dataset with (modality keys, columns, quaternion order, cameras, instruction), and its action chunk goes
back to the env's action through the inverse of the same config (docs/evaluate.md).

Episodes run in waves of --num_envs: the envs start their episodes together (one ``reset`` request per
wave) and an env whose episode has ended holds still until the wave is over, so every episode is counted
once, from its first step, whatever its length.

The package, by responsibility: ``cli`` (the command line), ``spec`` (the policy asked for, the defaults),
``actors`` (observations into action chunks), ``episodes`` (the episode loop), ``videos``, ``run`` (one
process), ``spread`` (several processes).

Examples::

    python -m l2.evaluate                                     # the shipped PPO policy, 16 episodes
    python -m l2.evaluate --episodes 64 --num_envs 32 --report outputs/eval/ppo.json --videos outputs/eval
    python -m l2.evaluate --policy server:gpu-box:5555 --episodes 50 --num_envs 10
    python -m l2.evaluate --policy replay:outputs/lift_cube_gr00t --reset-from data/demos/scripted_lift_cube.hdf5
    python -m l2.evaluate --policy rsl_rl:logs/rl/run/model_119.pt --record data/demos/policy_lift_cube.hdf5
"""
