#!/usr/bin/env python3
"""The PyTorch FSDP peer: one rank of a shardbench scenario run on PyTorch's own FSDP
(`engine: torch_fsdp2` -> fully_shard, `engine: torch_fsdp1` -> FullyShardedDataParallel) on
Hugging Face transformers' LlamaForCausalLM with peft's LoRA, starting from the weights
shardbench exported (INIT/model, INIT/adapter), on the same batches (data.py), with the same
optimizer, schedule and measurement window. Rank 0 writes OUT/records.json (records.py): every
rank's measurements, from which shardbench builds the result exactly as for its own engines.
Launched by `shardbench run` with torchrun's variables, one process per rank.

    PYTHONPATH=peers python -m torch_fsdp.peer SCENARIO_YAML --out OUT --init INIT [--allocator LIB]

Read it top to bottom as harness/scenario_runner.cc: setup (connect, build, wrap, load), train
(warmup, then the measured steps, a save where asked), measure (memory by category, collectives,
host and device peaks), check_checkpoint, write. The scenario is typed (scenario.py); what differs
between stacks (wrapping, clipping, FSDP internals, state dict API) is the recipe's (recipes.py).

Exit codes as shardbench's: 0 ok, 1 a check failed or PyTorch refused the combination (a
finding, written to the records with PyTorch's own message), 2 bad input, 3 infrastructure.
"""
import argparse
import datetime
import math
import os
import shutil
import sys
import time
import traceback

try:  # a broken environment is infrastructure (exit 3), not a failed check
    import yaml

    from . import checkpoints, collectives, data, frozen_dtype, host, learning, memory, meta_init, optimizer, \
        recipes, records, scenario, units, unshard_gauge, wrap
    from .loss import micro_batch_loss
except ImportError as e:
    print(f"peer: the peer's Python lacks a package: {e}", file=sys.stderr)
    sys.exit(3)


class BadInput(Exception):
    """The user's input is wrong (a malformed token file): exit 2, as shardbench's engines say."""


# A programming error raised by the peer's own code (its innermost frame in this package), or a
# scenario of the wrong shape (shardbench wrote it): our bug, whatever the run was doing.
PROGRAMMING_ERRORS = (KeyError, AttributeError, TypeError, NameError, IndexError)


def is_our_bug(e):
    if isinstance(e, scenario.ScenarioBug):
        return True
    tb = e.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return isinstance(e, PROGRAMMING_ERRORS) and tb is not None and \
        os.path.dirname(os.path.abspath(tb.tb_frame.f_code.co_filename)) == os.path.dirname(os.path.abspath(__file__))


# What the peer does not measure, and why (the result lists these instead of zeros).
NOT_MEASURED = {
    "grad_sync_time": "PyTorch reduces gradients inside backward's hooks: there is no separate phase to time",
    "checkpoint_bytes_read": "not counted on the peer (transformers and safetensors read the files)",
}
# Without a trace the peer sees no collective in flight on Gloo's threads: the profiler does.
UNTRACED_WHY = "measured from the torch profiler's timeline: run --trace (profile.trace: true) on Gloo"
SPAN_METRICS = ("comm_exposed_time", "comm_overlap_ratio", "rank_idle_time")
# Exact on our engines, varying from launch to launch on the peer: written as sampled.
ALLOCATOR_VARIES = ("Gloo's worker threads release a collective's buffers when they finish, so the order of frees "
                    "around an asynchronous all-gather varies (seen: one decoder layer's bytes, 1 launch in 3)")
SAMPLED_HERE = {"peak_allocated": ALLOCATOR_VARIES, "init_peak_bytes": ALLOCATOR_VARIES,
                "checkpoint_save_peak_bytes": ALLOCATOR_VARIES}
COMM_TIME_WHY = ("a collective's time in flight runs on Gloo's or NCCL's own threads, which the peer does not see "
                 "(comm_wait_seconds and step_time_busy carry the time its rank waited)")


class PeerRun:
    """One scenario instance on one rank of PyTorch's FSDP, phase by phase."""

    def __init__(self, args, s):
        self.args, self.s = args, s
        self.train_cfg = s.train
        self.recipe = recipes.for_scenario(s)
        self.engine = s.engine
        self.rank = int(os.environ.get("RANK", 0))
        self.world = int(os.environ.get("WORLD_SIZE", 1))
        self.local_rank = int(os.environ.get("LOCAL_RANK", 0))
        self.started_at = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        # init=meta built here on the meta device, unless the stack loads efficiently its own way
        # (accelerate: cpu_ram_efficient_loading, inside prepare).
        self.on_meta = s.init == "meta" and self.recipe.builds_on_meta
        self.model_dir = s.model if self.on_meta and os.path.isdir(s.model) \
            else os.path.join(args.init, "model")
        self.record = records.RankRecord()
        self.not_measured = dict(NOT_MEASURED)
        self.counter = collectives.CollectiveCounter()
        self.tracked = None  # our tracking allocator in this process (setup installs it)
        self.peak_before_save = None
        self.save_failure = None  # what PyTorch said when it could not save the checkpoint
        self.gauge = unshard_gauge.UnshardGauge()
        self.checks = []
        self.refusal = None
        # profile.trace: torch.profiler over the measured steps, the phases annotated as ours are.
        self.tracing = s.profile.trace
        self.profiler = None
        if not self.tracing or s.backend != "gloo":
            self.not_measured.update({name: UNTRACED_WHY for name in SPAN_METRICS})

    # ---- setup ----

    def setup(self):
        """Connect, build, wrap (PyTorch may refuse: then False), load. Libraries are loaded
        before the clock starts (main imports them), as shardbench's are before its own init
        timer: init_time covers connecting, building or loading the model and sharding it."""
        t_start = self.connect()
        figures = self.record.figures
        import torch
        torch.manual_seed(self.train_cfg.seed)

        # 1. The same initial weights (exported by shardbench; with init=meta from the scenario's own
        # Hugging Face directory where it names one), the same trainable set. init=meta builds on the
        # meta device here and loads the weights into the shards after wrapping (meta_init.py).
        t = time.perf_counter()
        model, self.params_total, self.params_trainable, keys = self.build()
        figures["init_time_construct"] = time.perf_counter() - t
        self.trainable_bytes = sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)

        # 2. Wrap, build the optimizer and (init=meta) load the weights, in the recipe's order;
        # PyTorch (or the stack) refusing the combination is a finding. Validation happens before
        # FSDP's first collective, so a refusing rank is never left alone in one.
        t = time.perf_counter()
        load_seconds = []
        with records.keeping_warnings():  # PyTorch's own warnings are findings too
            wrapped, self.refusal = pytorch_may_refuse(
                lambda: self.recipe.wrap_and_optimize(model, self.device, self.loader(keys, load_seconds)),
                self.world, one_line=False)
        if self.refusal:
            print(f"peer: PyTorch refused the scenario: {self.refusal}", file=sys.stderr)
            return False
        self.model, self.optimizer = wrapped
        figures["init_time_shard"] = time.perf_counter() - t - sum(load_seconds)
        self.units = units.units(self.model)
        t = time.perf_counter()
        self.load_checkpoint_at_init()
        if self.on_meta:
            figures["init_time_load"] = sum(load_seconds) + time.perf_counter() - t
        elif self.s.init == "meta":
            self.not_measured["init_time_load"] = self.recipe.why_no_load_time
        else:
            self.not_measured["init_time_load"] = ("init=eager: from_pretrained reads the weights and builds the model in "
                                                   "one call, all of it in init_time_construct")
        figures["init_time"] = time.perf_counter() - t_start
        figures["init_host_rss_peak"] = memory.host_rss_peak()
        if not self.tracked.why_not:
            figures["init_peak_bytes"] = self.tracked.peak()
        return True

    def connect(self):
        """Our allocator counting, the device, the collective and unshard gauges, the process
        group. Returns when init's clock started."""
        import torch
        import torch.distributed as dist
        if self.s.timing.pin_cores:  # before PyTorch starts its threads, which inherit it
            host.pin_to_rank_cores(self.local_rank, int(os.environ.get("LOCAL_WORLD_SIZE", self.world)))
        # Every CPU tensor PyTorch allocates from here on is counted, as in our engines' processes.
        self.tracked = memory.TrackedAllocations(self.args.allocator)
        if self.tracked.why_not:
            for name in ("peak_allocated", "init_peak_bytes"):
                self.not_measured[name] = self.tracked.why_not
        self.tracked.reset_peaks()
        t_start = self.t_start = time.perf_counter()
        if self.s.backend == "nccl":
            torch.cuda.set_device(self.local_rank)
            self.device = torch.device("cuda", self.local_rank)
            torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = self.s.mixed_precision.allow_tf32
        else:
            self.device = torch.device("cpu")
        self.counter.install()  # before FSDP looks anything up
        why = self.recipe.install_gauge(self.gauge)
        if why:
            self.not_measured["params_unsharded_peak_bytes"] = self.not_measured["grads_unsharded_peak_bytes"] = why
        t = time.perf_counter()
        dist.init_process_group(self.s.backend, timeout=datetime.timedelta(seconds=self.s.timeout_s),
                                device_id=self.device if self.s.backend == "nccl" else None)
        self.record.figures["init_time_connect"] = time.perf_counter() - t
        return t_start

    def load_checkpoint_at_init(self):
        """checkpoint.load_from: a torch.distributed.checkpoint directory's parameters and optimizer
        state over the built ones (checkpoints.load, the engine's own SHARDED path). A checkpoint
        PyTorch cannot load is the user's input (exit 2, in PyTorch's words), on every rank."""
        directory = self.s.checkpoint.load_from
        if not directory:
            return
        with records.keeping_warnings():  # PyTorch's state dict warnings are the result's, not stderr's
            _, failure = pytorch_may_refuse(
                lambda: checkpoints.load("sharded", self.model, self.optimizer, directory, self.recipe.state_dicts), self.world)
        if failure:
            raise BadInput(f"checkpoint.load_from '{directory}': PyTorch could not load it: {failure}")

    def build(self):
        """(model, params_total, params_trainable, checkpoint keys or None): eager, or on meta."""
        if self.on_meta:
            built = meta_init.build(self.s, self.args.init, self.model_dir)
            return (*built, meta_init.checkpoint_keys(built[0]))
        return (*wrap.load_model(self.s, self.args.init, self.device), None)

    def loader(self, keys, seconds=None):
        """What the recipe calls where its stack loads init=meta's weights into the wrapped model
        (nothing for init=eager); the seconds it took appended to `seconds`."""
        def load(wrapped):
            if self.on_meta:
                t = time.perf_counter()
                self.recipe.load_meta(wrapped, keys, self.args.init, self.model_dir, self.device)
                if seconds is not None:
                    seconds.append(time.perf_counter() - t)
        return load

    def build_and_wrap(self):
        """The model as this run builds it, wrapped and loaded, with its optimizer."""
        built, _, _, keys = self.build()
        return self.recipe.wrap_and_optimize(built, self.device, self.loader(keys))

    # ---- train ----

    def train(self):
        try:
            self.source = data.scenario_data(self.s.data, self.train_cfg.seed, self.train_cfg.seq_len,
                                             wrap.vocab_size(self.args.init))
        except ValueError as e:  # a malformed token file
            raise BadInput(str(e)) from e
        t = time.perf_counter()
        if self.s.checks.learning:
            self.fingerprints_before = learning.fingerprints(self.model)
        fingerprint_s = time.perf_counter() - t  # harness work, kept out of time_to_first_step
        self.base_lrs = [g["lr"] for g in self.optimizer.param_groups]
        warmup = self.train_cfg.warmup_steps
        self.total = self.train_cfg.total_steps
        self.kind = self.s.checkpoint.type
        self.save_at = checkpoints.save_after(self.s) if self.kind != "none" else -1
        self.checkpoint_dir = os.path.join(self.args.out, "checkpoint")
        self.saved, self.at_save = None, None
        rec = self.record
        for step in range(self.total):
            if step == warmup:
                self.start_measured_window()
            blocked_before = self.counter.blocked_s
            t0 = time.perf_counter()
            with self.phase("step"):
                loss, local_loss, optimizer_s = self.train_step(self.model, self.optimizer, step)
            rec.step_seconds.append(time.perf_counter() - t0)
            rec.comm_wait_seconds.append(self.counter.blocked_s - blocked_before)
            rec.optimizer_seconds.append(optimizer_s)
            rec.loss.append(loss)
            rec.local_loss.append(local_loss)
            if step == 0:
                rec.figures["time_to_first_step"] = time.perf_counter() - self.t_start - fingerprint_s
            if not math.isfinite(loss):  # the global loss: every rank stops after this very step
                self.stopped_after = step + 1
                break
            if step + 1 == self.save_at:  # between steps, outside their timers, counts and peaks
                self.counter.stop()
                self.gauge.stop()
                self.save(in_window=step + 1 > warmup)
                self.counter.counting = self.gauge.active = step + 1 > warmup
        else:
            self.stopped_after = None
        self.counter.stop()
        self.gauge.stop()
        if self.profiler is not None:  # one Trace Event file per rank, shardbench reads it back
            self.profiler.stop()
            self.counter.annotate = False
            self.profiler.export_chrome_trace(os.path.join(self.args.out, f"trace.rank{self.rank}.json"))

    def phase(self, name):
        """A span of the timeline when tracing (engine/profile/torch_profiler_trace.h reads them)."""
        import contextlib
        import torch
        return torch.profiler.record_function(name) if self.profiler is not None else contextlib.nullcontext()

    def save(self, in_window):
        """The checkpoint, with the allocator's peaks reset around it as harness/checkpoint_harness.cc
        does: the save's own peak above where it started, and the window's peak before it kept."""
        if in_window:
            self.peak_before_save = self.tracked.peak()
        start = self.tracked.current()
        self.tracked.reset_peaks()

        def save():
            if self.s.checks.state_dict_roundtrip:
                self.at_save = checkpoints.local_state(self.model, self.optimizer)
            return checkpoints.save(self.kind, self.model, self.optimizer, self.checkpoint_dir, self.model_dir,
                                    os.path.join(self.args.init, "adapter"), self.recipe.state_dicts)

        with records.keeping_warnings():
            self.saved, self.save_failure = pytorch_may_refuse(save, self.world)
        self.save_peak = None if self.tracked.why_not else self.tracked.peak() - start
        self.tracked.reset_peaks()

    def start_measured_window(self):
        """Counts and peaks cover the measured steps only (as start_measured_window in
        harness/scenario_runner.cc)."""
        self.counter.start()
        self.gauge.start()
        self.tracked.reset_peaks()
        if self.tracing:
            import torch
            activities = [torch.profiler.ProfilerActivity.CPU]
            if self.device.type == "cuda":
                activities.append(torch.profiler.ProfilerActivity.CUDA)
            self.profiler = torch.profiler.profile(activities=activities)
            self.profiler.start()
            self.counter.annotate = True
        memory.reset_device_peaks(self.device)
        why = memory.reset_host_rss_peak()
        if why:
            self.not_measured["host_rss_peak"] = why

    def train_step(self, m, opt, step):
        """One training step of `m` on the step's batches; returns (global loss, this rank's own,
        optimizer seconds: clipping, schedule and the step, as shardbench's trainer times them)."""
        import torch.distributed as dist
        opt.zero_grad(set_to_none=True)
        loss_sum = None
        b, accum = self.train_cfg.batch_size, self.train_cfg.grad_accumulation
        for ids, labels in data.micro_batches(self.source, step, self.rank, b, accum):
            with self.phase("forward"):
                loss = micro_batch_loss(m, ids, labels, self.device)
            with self.phase("backward"):
                self.recipe.backward(m, loss / accum)
            loss_sum = loss.detach() if loss_sum is None else loss_sum + loss.detach()
        local_loss = loss_sum / accum
        global_loss = local_loss.clone()
        if self.world > 1:
            dist.all_reduce(global_loss)
            global_loss /= self.world
        t_opt = time.perf_counter()
        with self.phase("optimizer"):
            if self.train_cfg.max_grad_norm > 0:
                self.recipe.clip_grad_norm(m, self.train_cfg.max_grad_norm)
            factor = optimizer.lr_factor(self.train_cfg, step)
            for g, lr in zip(opt.param_groups, self.base_lrs):
                g["lr"] = lr * factor
            opt.step()
        optimizer_s = time.perf_counter() - t_opt
        # .item() waits for the step's device work, as shardbench's trainer's loss read does.
        return global_loss.item(), local_loss.item(), optimizer_s

    # ---- measure ----

    def measure(self):
        """What this rank holds after the last step and what it measured, into its record; taken
        before the checkpoint checks build a second model."""
        rec = self.record
        try:
            rec.held, rec.param_bytes_by_dtype = self.recipe.held(self.model, self.optimizer)
        except memory.NotMeasurable as e:
            for name in ("param_bytes", "grad_bytes", "optim_state_bytes", "grad_blowup"):
                self.not_measured[name] = str(e)
            rec.param_bytes_by_dtype = {}
        rec.figures["buffer_bytes"] = memory.buffer_bytes(self.model)
        if "params_unsharded_peak_bytes" not in self.not_measured:
            rec.peak = {"params_unsharded": self.gauge.params_peak, "grads": self.gauge.grads_peak}
        if "host_rss_peak" not in self.not_measured:
            rec.figures["host_rss_peak"] = memory.host_rss_peak()
        rec.figures.update(memory.device_figures(self.device))
        rec.comm = self.counter.figures()
        for c in rec.comm:
            self.not_measured[f"comm_{c}_time"] = COMM_TIME_WHY
        if not self.counter.times_waits:
            rec.comm_wait_seconds = []
            self.not_measured["step_time_busy"] = "this torch version's Work cannot be wrapped to time waits"
        if not self.tracked.why_not:
            rec.figures["peak_allocated"] = max(self.tracked.peak(), self.peak_before_save or 0)
        if self.saved is not None:
            rec.figures["checkpoint_save_time"], rec.figures["checkpoint_bytes"], total = self.saved
            rec.figures["checkpoint_bytes_total"] = total
            if self.tracked.why_not:
                self.not_measured["checkpoint_save_peak_bytes"] = self.tracked.why_not
            else:
                rec.figures["checkpoint_save_peak_bytes"] = self.save_peak
        if self.s.checks.learning:
            after = learning.fingerprints(self.model)
            first = data.micro_batches(self.source, 0, self.rank, self.train_cfg.batch_size, self.train_cfg.grad_accumulation)
            loss = float("nan") if self.stopped_after else learning.same_batch_loss(self.model, list(first), self.device, self.world)
            self.checks.append(learning.check(self.fingerprints_before, after, rec.loss[0], loss, self.world))
        if self.s.checks.frozen_dtype:
            self.checks.append(frozen_dtype.check(self.s, self.model, self.model_dir))

    # ---- check_checkpoint ----

    def check_checkpoint(self):
        """A fresh model and optimizer load what was saved, compared with the state at the save
        (state_dict_roundtrip); then train the remaining steps, compared with the uninterrupted
        run's losses and final state (resume)."""
        import torch.distributed as dist
        failed_save, own = self.save_failure, self.recipe.state_dicts
        if self.stopped_after or failed_save:
            why = (f"not run: training stopped after step {self.stopped_after} (the loss was not finite)" if self.stopped_after
                   else f"PyTorch failed to save the {self.kind} checkpoint: {failed_save}")
            asked = [name for name in ("state_dict_roundtrip", "resume") if getattr(self.s.checks, name)]
            for name in asked or (["checkpoint_save"] if failed_save else []):
                self.checks.append({"name": name, "passed": False, "detail": why})
        else:
            with records.keeping_warnings():  # PyTorch's state dict warnings are the result's, not stderr's
                at_end = checkpoints.local_state(self.model, self.optimizer) if self.s.checks.resume else None
            if self.at_save is not None or at_end is not None:
                with records.keeping_warnings():
                    fresh, fresh_optimizer = self.build_and_wrap()

                    def load():
                        if self.at_save is not None:
                            return checkpoints.roundtrip_check(self.kind, self.at_save, fresh, fresh_optimizer,
                                                               self.checkpoint_dir, self.save_at, self.device, own)
                        return checkpoints.load(self.kind, fresh, fresh_optimizer, self.checkpoint_dir, own), None

                    loaded, failure = pytorch_may_refuse(load, self.world)
                    if failure:  # PyTorch could not load what it saved: a finding in its own words
                        why = f"PyTorch failed to load the {self.kind} checkpoint it saved: {failure}"
                        for name in ("state_dict_roundtrip", "resume"):
                            if getattr(self.s.checks, name):
                                self.checks.append({"name": name, "passed": False, "detail": why})
                        at_end = None
                    else:
                        load_s, roundtrip = loaded
                        if roundtrip:
                            self.checks.append(roundtrip)
                        self.record.figures["checkpoint_load_time"] = load_s
                    if at_end is not None:
                        after = [self.train_step(fresh, fresh_optimizer, step)[0] for step in range(self.save_at, self.total)]
                        self.checks.append(checkpoints.resume_check(
                            self.kind, self.save_at, after, self.record.loss[self.save_at:],
                            checkpoints.local_state(fresh, fresh_optimizer), at_end, self.device))
        if self.kind != "none" and not self.s.checkpoint.keep:
            dist.barrier()
            if self.rank == 0:
                shutil.rmtree(self.checkpoint_dir, ignore_errors=True)

    # ---- write ----

    def write(self):
        """Every rank's record to rank 0, which writes records.json. Returns the exit code."""
        import torch.distributed as dist
        out = records.RunRecords(started_at=self.started_at, versions=records.versions(self.engine, self.s.backend))
        if self.refusal is not None:
            out.refusal = self.refusal
        else:
            gathered = [None] * self.world
            dist.all_gather_object(gathered, self.record)
            out.ranks = gathered
            out.params_total, out.params_trainable = self.params_total, self.params_trainable
            out.trainable_bytes = self.trainable_bytes
            out.units = self.units
            out.checks = self.checks
            out.not_measured = self.not_measured
            sampled = {**SAMPLED_HERE, **self.recipe.sampled}
            out.sampled = {k: v for k, v in sampled.items() if k not in self.not_measured}
            if self.device.type == "cuda":
                out.matmul_peak_flops_per_s = host.matmul_peak(self.device)
                out.gpu_name = __import__("torch").cuda.get_device_name(self.device)
        if self.rank == 0:
            out.write(self.args.out)
        dist.barrier()  # rank 0's records are on disk before anyone leaves
        failed = self.refusal is not None or any(not c["passed"] for c in self.checks)
        return 1 if failed else 0


def pytorch_may_refuse(fn, world, one_line=True):
    """Runs a step of PyTorch's that may refuse what it is asked (a combination it cannot wrap, a
    state dict type it cannot save or load): (its result, None), or (None, "rank R: PyTorch's own
    words") on every rank when any rank raised: every rank learns it, so none is left alone in a
    later collective. The machine or the network failing is raised as it is (infrastructure)."""
    import torch
    import torch.distributed as dist
    result, failure = None, None
    try:
        result = fn()
    except (RuntimeError, ValueError, NotImplementedError, AssertionError) as e:
        if isinstance(e, (torch.OutOfMemoryError, dist.DistError)) or "DefaultCPUAllocator" in str(e):
            raise
        failure = f"{type(e).__name__}: {e}"
        if one_line:
            failure = failure.strip().replace("\n", " ")[:600]
    failures = [None] * world
    dist.all_gather_object(failures, failure)
    first = next(((r, f) for r, f in enumerate(failures) if f), None)
    return (None, f"rank {first[0]}: {first[1]}") if first else (result, None)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("scenario")
    p.add_argument("--out", required=True)
    p.add_argument("--init", required=True)
    p.add_argument("--allocator", help="shardbench's tracking allocator library (harness/peer_launch.cc passes it)")
    args = p.parse_args()
    s = scenario.load(args.scenario)
    import peft  # noqa: F401  (loaded before init's clock, as shardbench's libraries are)
    import torch  # noqa: F401
    import transformers  # noqa: F401
    if s.engine == "torchtune":
        try:
            import torchtune.training  # noqa: F401  (~15 s on 2 cores: before the clock too)
        except ImportError as e:  # the environment, not the run: infrastructure
            print(f"peer: engine torchtune needs torchtune in {sys.executable} (scripts/setup-peer-env.sh torchtune): "
                  f"{e}", file=sys.stderr)
            return 3
    run = PeerRun(args, s)
    if run.setup():
        run.train()
        run.measure()
        run.check_checkpoint()
    return run.write()


def exit_now(code):
    """Leaves without tearing the process group down: everything is written (rank 0's records
    atomically, before the barrier), and Gloo's teardown at interpreter exit aborts now and then
    ("terminate called without an active exception", seen on torch 2.11), which would turn a
    finished run into a crashed rank."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    try:
        exit_now(main())
    except (BadInput, FileNotFoundError, yaml.YAMLError) as e:  # the user's files
        print(f"peer: bad input: {type(e).__name__}: {e}", file=sys.stderr)
        exit_now(2)
    except Exception as e:  # a crash of the run itself (a collective, the machine) or a bug of ours
        traceback.print_exc()
        if is_our_bug(e):  # never the user's input: shardbench's "internal error", exit 3 as infrastructure's
            print(f"peer: internal error (a bug of peers/torch_fsdp): {type(e).__name__}: {e}", file=sys.stderr)
        exit_now(3)
