"""Generate demos with Isaac Lab Mimic from a few source demos of a task (``python -m l2.mimic``).

Kit-less on the CPU like every other source. Two steps in one process: (1) annotate: the source demos are replayed
from their initial states and Mimic's ``datagen_info`` (end-effector, object and target poses, the
task's subtask signals) is recorded automatically; (2) generate: Isaac Lab Mimic's ``DataGenerator`` cuts the demos
into the task's subtasks (the lift: grasp, then lift; the SO-101 stack: four), moves each segment with its object's
new pose, stitches them with interpolation and runs them in the env; the successful ones are written in the L2
schema (the same obs, cameras and actions as the source), exactly ``--num_demos``.

Examples::

    python -m l2.mimic --input data/demos/scripted_lift_cube.hdf5 --num_demos 10
    python -m l2.mimic --input data/demos/scripted_lift_cube.hdf5 --demos demo_0 demo_1 demo_2 --num_demos 100
    python -m l2.mimic --input data/demos/teleop_lift_cube.hdf5 --output data/demos/mimic_teleop_lift_cube.hdf5
    python -m l2.mimic --input data/demos/scripted_lift_cube.hdf5 --num_demos 10 presets=no_cameras --overwrite
    python -m l2.mimic --task L2-Stack-Cube-SO101-Mimic-v0 --input data/demos/scripted_stack_cube_so101.hdf5 \
        --demos demo_0 demo_1 demo_2 demo_3 demo_4 --num_demos 20 presets=no_cameras
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time

from l2.format import atomic, cli_args
from l2.recording import cli, sim, workers

DEFAULT_TASK = f"{sim.DEFAULT_TASK}-Mimic"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = cli.runner_parser(__doc__, "python -m l2.mimic")
    parser.prog = "python -m l2.mimic"
    parser.add_argument(
        "--input", type=cli_args.existing_file, required=True, help="L2 HDF5 file holding the source demo(s)"
    )
    parser.add_argument(
        "--demos",
        nargs="+",
        default=["demo_0"],
        metavar="DEMO",
        help="source demos to generate from (default: %(default)s)",
    )
    parser.add_argument(
        "--annotated",
        type=cli_args.output_file,
        default=None,
        metavar="PATH",
        help="also keep the annotated source demos (Mimic's datagen_info) in this HDF5 file",
    )
    parser.add_argument(
        "--hold_steps",
        type=cli_args.non_negative_int,
        default=10,
        metavar="N",
        help="repeat each source demo's last action N times (a demo ends at its first success: without a hold, "
        "a generated attempt that lags behind ends still rising; default: %(default)s)",
    )
    sim.add_sim_args(parser, num_envs=4, task=DEFAULT_TASK)
    cli.add_output_args(parser, source="mimic", num_demos=10, workers=True)
    parser.add_argument(
        "--max_attempts",
        type=cli_args.positive_int,
        default=None,
        help="give up after this many generation attempts (default: 4 x num_demos + num_envs)",
    )
    parser.set_defaults(episodes=None)  # read by l2.recording.collect.finish
    return cli.parse(parser, argv)


def check_mimic_task(task: str, device: str) -> None:
    """Refuse, before any simulator starts, a task that Isaac Lab Mimic cannot drive: one whose env class is no
    ``ManagerBasedRLMimicEnv`` or whose cfg is no ``MimicEnvCfg`` with subtasks."""
    sim.init_warp(device)
    import gymnasium as gym
    from gymnasium.envs.registration import load_env_creator
    from isaaclab.envs import ManagerBasedRLMimicEnv
    from isaaclab.envs.mimic_env_cfg import MimicEnvCfg
    from isaaclab_tasks.utils.parse_cfg import load_cfg_from_registry

    sim.check_task(task)
    cfg = load_cfg_from_registry(task, "env_cfg_entry_point")
    entry = gym.registry[task].entry_point
    if not isinstance(cfg, MimicEnvCfg) or not any(cfg.subtask_configs.values()):
        why = "its cfg is no MimicEnvCfg with subtask_configs"
    elif not issubclass(load_env_creator(entry) if isinstance(entry, str) else type(entry), ManagerBasedRLMimicEnv):
        why = f"its env class {entry} is no ManagerBasedRLMimicEnv"
    else:
        return
    mimic = sorted(k for k, spec in gym.registry.items() if k.startswith("L2-") and k.endswith(("-Mimic", "-Mimic-v0")))
    raise sim.TaskCfgError(f"--task {task}: not a Mimic task, {why} (this package's Mimic tasks: {', '.join(mimic)})")


def _check_input(args: argparse.Namespace) -> None:
    """Refuse, before the simulator starts, an input that is not a valid L2 file or lacks a demo."""
    from l2.format import schema
    from l2.format.l2file import L2File
    from l2.format.validate import validate_file

    if args.annotated and os.path.exists(args.annotated) and not args.overwrite:
        cli.fail(f"{args.annotated} exists; pass --overwrite to replace it")
    if not os.path.isfile(args.input):
        cli.fail(f"{args.input}: no such file")
    report = validate_file(args.input)
    if not report.ok:
        cli.fail(f"not a valid L2 file: {report.violations[0]}")
    with L2File(args.input, guard=False) as f:  # validate_file read it through
        for demo in args.demos:
            if demo not in f.demos:
                cli.fail(f"{args.input}:/{schema.DATA_GROUP}/{demo}: no such demo")


def generate(args: argparse.Namespace) -> int:
    import random

    import numpy as np
    import torch

    from l2.mimic.annotate import AnnotationError, annotate
    from l2.recording import collect

    _check_input(args)
    env_cfg = sim.load_env_cfg(args.task, args.device, args.num_envs, args.seed, args.overrides)
    # As Isaac Lab's Mimic generation does: no termination ends an episode, the generator does; it reads
    # the success term itself.
    success_term = env_cfg.terminations.success
    env_cfg.terminations = None
    max_attempts = args.max_attempts or 4 * args.num_demos + args.num_envs
    output = cli.record_to(env_cfg, args, max_successes=args.num_demos)
    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)

    with sim.make_env(env_cfg, args.task) as env, tempfile.TemporaryDirectory() as tmp:
        env.reset()
        annotated = os.path.join(tmp, "annotated.hdf5")
        start = time.perf_counter()
        try:
            notes = annotate(env, args.input, args.demos, annotated, success_term, args.hold_steps)
        except AnnotationError as exc:
            cli.fail(str(exc))
        if args.annotated:  # kept only whole: copied beside its place, then renamed into it
            with atomic.replacing(args.annotated) as partial:
                shutil.copyfile(annotated, partial)
        for n in notes:
            print(
                f"annotated {n.demo}: {n.steps} steps ({args.hold_steps} held), subtask signals rise at step "
                + ", ".join(f"{signal} {step}" for signal, step in n.subtask_ends.items()),
                flush=True,
            )
        annotate_s = time.perf_counter() - start
        stats = run_generation(env, annotated, success_term, args.num_demos, max_attempts)

    rows = [("source demos", f"{', '.join(args.demos)} of {args.input} (annotated in {annotate_s:.1f} s)")]
    if args.annotated:
        rows.append(("annotated file", args.annotated))
    cli.print_summary(rows)
    return collect.finish(args, stats, output)


def run_generation(env, annotated: str, success_term, num_demos: int, max_attempts: int):
    """Isaac Lab Mimic's generation loop (``isaaclab_mimic.datagen``) with one generator task per env,
    each attempt exported through the env's recorder; stops once ``num_demos`` are written or after
    ``max_attempts`` attempts. Returns :class:`l2.recording.collect.CollectionStats`."""
    import torch
    from isaaclab_mimic.datagen import DataGenInfoPool
    from tqdm import tqdm

    from l2.mimic.generator import JoiningDataGenerator
    from l2.recording.collect import CollectionStats, stop_after_step
    from l2.recording.handler import dataset_handler

    pool = DataGenInfoPool(env, env.cfg, env.device)
    pool.load_from_dataset_file(annotated)
    generator = JoiningDataGenerator(env=env, src_demo_datagen_info_pool=pool)
    handler = dataset_handler(env)
    stats = CollectionStats(in_file_before=handler.get_num_episodes())
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    reset_queue: asyncio.Queue = asyncio.Queue()
    action_queue: asyncio.Queue = asyncio.Queue()
    rec = env.recorder_manager

    def finished(env_id: int, success: bool) -> None:
        # What a reset would do to the attempt (camera frames, seed) then export it with Mimic's verdict,
        # which a reset would overwrite with the (removed) termination terms'.
        ids = [env_id]
        rec.record_pre_reset(ids, force_export_or_skip=False)
        rec.set_success_to_episodes(ids, torch.tensor([[success]], device=env.device))
        rec.export_episodes(ids)
        stats.attempts += 1
        stats.successes += success

    async def attempts(env_id: int) -> None:
        while True:
            result = await generator.generate(
                env_id=env_id,
                success_term=success_term,
                env_reset_queue=reset_queue,
                env_action_queue=action_queue,
                export_demo=False,
            )
            finished(env_id, bool(result["success"]))

    tasks = asyncio.gather(*(loop.create_task(attempts(i)) for i in range(env.num_envs)))
    start = time.perf_counter()

    def over() -> bool:
        return bool(stop) or handler.successes_written >= num_demos or stats.attempts >= max_attempts

    stop = cli.StopRequest()
    try:
        with (
            torch.inference_mode(),
            tqdm(total=num_demos, unit="demo", desc="mimic demos", dynamic_ncols=True, mininterval=0.5) as bar,
            stop_after_step(bar) as stop,
        ):
            while not over():
                # Let every generator run until it has queued its next action (resetting envs on request).
                while action_queue.qsize() != env.num_envs and not over():
                    loop.run_until_complete(asyncio.sleep(0))
                    if tasks.done():
                        tasks.result()  # re-raises a generator's exception
                    while not reset_queue.empty():
                        env.reset(env_ids=torch.tensor([reset_queue.get_nowait()], device=env.device))
                        reset_queue.task_done()
                if over():
                    break
                queued = loop.run_until_complete(asyncio.gather(*(action_queue.get() for _ in range(env.num_envs))))
                actions = torch.zeros(env.num_envs, env.action_manager.total_action_dim, device=env.device)
                for env_id, action in queued:
                    actions[env_id] = action
                env.step(actions)
                for _ in range(env.num_envs):
                    action_queue.task_done()
                stats.frames += env.num_envs
                stats.seconds = time.perf_counter() - start
                bar.set_postfix(success=f"{stats.successes}/{stats.attempts}", refresh=False)
                bar.update(handler.successes_written - bar.n)
            bar.set_postfix(success=f"{stats.successes}/{stats.attempts}", refresh=False)
            bar.update(handler.successes_written - bar.n)
    finally:
        tasks.cancel()
        loop.run_until_complete(asyncio.gather(tasks, return_exceptions=True))
        loop.close()
        asyncio.set_event_loop(None)
    stats.seconds = time.perf_counter() - start
    stats.written = handler.successes_written
    stats.interrupted = stop if stop else None
    return stats


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        check_mimic_task(args.task, args.device)
    except sim.TaskCfgError as exc:
        cli.fail(str(exc))
    _check_input(args)  # once, before any collector process starts
    return workers.run_collector(generate, args, ["-m", "l2.mimic"], desc="mimic demos")


if __name__ == "__main__":
    sys.exit(main())
