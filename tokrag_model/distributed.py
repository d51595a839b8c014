"""Data-parallel evaluation with lm-eval's own engine: on GPUs ``accelerate launch --num_processes N -m lm_eval
--model <method> ...`` (one process per device), on CPUs ``torchrun --nproc_per_node N -m lm_eval ... --device cpu``
(gloo backend; ``accelerate launch --num_processes N --cpu`` needs MPI for several CPU processes: without it, it
starts one process and sets no ``WORLD_SIZE``, so nothing is sharded).

lm-eval 0.4.13 shards the requests of a task by ``lm.rank`` / ``lm.world_size`` and gathers results and
samples on rank 0 through ``lm.all_gather``, ``lm.gather_object`` and ``lm.barrier``. Its ``hf`` model only
does this on several GPUs; the tokrag models do it whenever the launcher announces more than one process
(``WORLD_SIZE`` > 1). ``tokrag leaderboard run`` refuses to be so launched (``--jobs N`` runs cells in parallel).

Greedy decoding of one request never depends on the other requests in the process (batch rows are
independent and padded per branch), so N processes give the same per-question outputs and scores as
one process; only the wall time changes.
"""

from __future__ import annotations

import os
from typing import Any


def world_size_from_env() -> int:
    """Number of processes announced by the launcher (``WORLD_SIZE``; 1 when not launched)."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


class DataParallel:
    """The rank/world-size state and the three collectives lm-eval calls, backed by ``accelerate``.

    With one process every collective is the identity (lm-eval's defaults). With several, an
    ``accelerate.Accelerator`` is created (CPU: gloo; GPU: NCCL, one device per local rank).

    Args:
        device: the requested device (``cpu``, ``cuda``, ``cuda:N``); with several GPU processes each
            process uses ``cuda:<local rank>``.
    """

    def __init__(self, device: str) -> None:
        self.accelerator: Any = None
        self.rank, self.world_size = 0, 1
        self.device = device
        if world_size_from_env() > 1:
            from accelerate import Accelerator

            self.accelerator = Accelerator(cpu=str(device).startswith("cpu"))
            if self.accelerator.num_processes > 1:
                self.rank = int(self.accelerator.process_index)
                self.world_size = int(self.accelerator.num_processes)
                self.device = str(self.accelerator.device)
            else:
                self.accelerator = None

    def all_gather(self, tensor):
        """Concatenate ``tensor`` over processes (shape ``(world_size * n, ...)``); identity with one process."""
        return tensor if self.world_size <= 1 else self.accelerator.gather(tensor)

    def gather_object(self, obj: Any, dst: int = 0) -> list | None:
        """List of every process's ``obj`` on rank ``dst`` (``None`` elsewhere); ``[obj]`` with one process."""
        if self.world_size <= 1:
            return [obj]
        import torch.distributed as dist

        out = [None] * self.world_size if self.rank == dst else None
        dist.gather_object(obj, out, dst=dst)
        return out

    def barrier(self) -> None:
        """Wait for every process (no-op with one)."""
        if self.world_size > 1:
            self.accelerator.wait_for_everyone()
