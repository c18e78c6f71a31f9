"""Collectives on the peer, counted at the c10d call as shardbench's communicator counts its own
(engine/comm/communicator.h): per collective the calls and the bytes of the larger buffer
(all-gather output, reduce-scatter input, all-reduce and broadcast tensor: the nccl-tests "size"
convention), over the measured steps only; and per step the time this rank sat blocked in them
(a synchronous call's duration, an asynchronous one's `wait()`), which step_time_busy subtracts.

PyTorch's FSDP1 and FSDP2 call `torch.distributed.<collective>` through the module attribute
(`dist.all_gather_into_tensor(...)`), so wrapping those attributes sees every call they make.
How long a collective was in flight on Gloo's own threads is not visible from here: the
`comm_<collective>_time` metrics are reported as not measured on the peer.
"""
import time

import torch.distributed as dist


def _nbytes(t):
    return t.numel() * t.element_size()


def _arg(args, kwargs, index, name):
    return args[index] if len(args) > index else kwargs[name]


# dist function -> (our collective name, bytes of one call)
_COUNTED = {
    "all_gather_into_tensor": ("all_gather", lambda a, k: _nbytes(_arg(a, k, 0, "output_tensor"))),
    "all_gather": ("all_gather", lambda a, k: sum(_nbytes(t) for t in _arg(a, k, 0, "tensor_list"))),
    "reduce_scatter_tensor": ("reduce_scatter", lambda a, k: _nbytes(_arg(a, k, 1, "input"))),
    "reduce_scatter": ("reduce_scatter", lambda a, k: sum(_nbytes(t) for t in _arg(a, k, 1, "input_list"))),
    "all_reduce": ("all_reduce", lambda a, k: _nbytes(_arg(a, k, 0, "tensor"))),
    "broadcast": ("broadcast", lambda a, k: _nbytes(_arg(a, k, 0, "tensor"))),
    "barrier": ("barrier", lambda a, k: 0),
}


class CollectiveCounter:
    """Installs itself on torch.distributed; counts only while `counting` (the measured steps,
    a checkpoint save excluded), and accumulates blocked time always (read per step)."""

    def __init__(self):
        self.counting = False
        self.annotate = False  # tracing: the time blocked in a collective as a "wait <collective>" span
        self.counts = {}
        self.blocked_s = 0.0
        self._originals = {}
        work_base = getattr(dist.distributed_c10d, "Work", None)
        self._timed_work = _timed_work_class(work_base, self) if work_base is not None else None

    @property
    def times_waits(self):
        """Whether an asynchronous collective's wait is timed (else blocked time is not measured)."""
        return self._timed_work is not None

    def install(self):
        for name, (collective, size) in _COUNTED.items():
            original = getattr(dist, name)
            self._originals[name] = original
            setattr(dist, name, self._wrap(original, collective, size))

    def start(self):
        self.counts = {}
        self.counting = True

    def stop(self):
        self.counting = False

    def _wrap(self, original, collective, size):
        counter = self

        def counted(*args, **kwargs):
            if counter.counting:
                entry = counter.counts.setdefault(collective, {"count": 0, "bytes": 0})
                entry["count"] += 1
                entry["bytes"] += size(args, kwargs)
            t0 = time.perf_counter()
            blocking = not kwargs.get("async_op", False)
            with counter.wait_span(collective if blocking else None):
                work = original(*args, **kwargs)
            if work is None:  # synchronous: the call was the wait
                counter.blocked_s += time.perf_counter() - t0
                return work
            return counter._timed_work(work, collective) if counter._timed_work else work

        counted.__wrapped__ = original
        return counted

    def wait_span(self, collective):
        """A "wait <collective>" span while tracing (the timeline's blocked time); else nothing."""
        import contextlib
        if not self.annotate or collective is None:
            return contextlib.nullcontext()
        import torch
        return torch.profiler.record_function(f"wait {collective}")

    def figures(self):
        """`comm` as harness/peer_records.cc reads it; seconds in flight are not seen here."""
        return {c: {"count": e["count"], "bytes": e["bytes"], "seconds": None} for c, e in self.counts.items()}


def _timed_work_class(base, counter):
    """A Work that adds the time its caller waits to the counter's blocked time. A subclass of
    c10d's Work, because FSDP2 checks `isinstance(work, dist.distributed_c10d.Work)` before it
    waits."""
    try:
        class TimedWork(base):
            def __init__(self, inner, collective=""):
                super().__init__()
                self._inner = inner
                self._collective = collective

            def wait(self, timeout=None):
                t0 = time.perf_counter()
                try:
                    with counter.wait_span(self._collective):
                        return self._inner.wait() if timeout is None else self._inner.wait(timeout)
                finally:
                    counter.blocked_s += time.perf_counter() - t0

            def is_completed(self):
                return self._inner.is_completed()

            def is_success(self):
                return self._inner.is_success()

            def get_future(self):
                return self._inner.get_future()

            def result(self):
                return self._inner.result()

            def exception(self):
                return self._inner.exception()

        TimedWork(_DoneWork())  # constructible in this torch version?
        return TimedWork
    except Exception:  # noqa: BLE001 - without it, waits are not timed (blocked time undercounts)
        return None


class _DoneWork:
    def wait(self, timeout=None):
        return True
