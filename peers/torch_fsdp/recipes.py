"""The stacks the peer runs, one recipe class each, over the shared core (peer.py's phases with
data.py, optimizer.py, learning.py, memory.py, records.py): what differs between stacks is how the
model is wrapped, how gradients are clipped, which FSDP internals the memory count and the unshard
gauge read, and which state dict API a checkpoint goes through. Everything else is the core's.

Adding a stack (accelerate's FSDP1 / FSDP2 plugins, torchtune's recipe): a class here, its entry
in RECIPES, and its engine in harness/scenario/engine_registry.cc.
"""
from . import fsdp1_state_dicts, memory, optimizer, wrap


class Recipe:
    """One stack. `s`: the typed scenario (scenario.py)."""
    engine = None
    # The state dict API of this stack's own users for the checkpoint kinds it has one for
    # (save, load, layout); other kinds go through torch.distributed.checkpoint's (checkpoints.py).
    state_dicts = None

    def __init__(self, s):
        self.s = s

    @property
    def flat_params(self):
        """The optimizer sees flat parameters (FSDP1 without use_orig_params)."""
        return False

    def wrap(self, model, device):
        raise NotImplementedError

    def wrap_and_optimize(self, model, device):
        """Wraps the model and builds AdamW before or after, as optimizer.build asks."""
        before = self.s.optimizer.build == "before_wrap"
        opt = optimizer.adamw(self.s, optimizer.param_groups(model, self.s.train, False)) if before else None
        model = self.wrap(model, device)
        if not before:
            opt = optimizer.adamw(self.s, optimizer.param_groups(model, self.s.train, self.flat_params))
        return model, opt

    def clip_grad_norm(self, model, max_norm):
        import torch
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.grad is not None], max_norm)

    def held(self, model, optim):
        """Bytes by category this rank holds now, and parameter bytes by stored dtype."""
        raise NotImplementedError

    def install_gauge(self, gauge):
        """The unshard gauge on this stack's transitions; why it could not, or None."""
        raise NotImplementedError


class Fsdp2(Recipe):
    """PyTorch's fully_shard (FSDP2), as torchtitan applies it."""
    engine = "torch_fsdp2"

    def wrap(self, model, device):
        if self.s.activation_checkpointing:
            wrap.checkpoint_decoder_layers(model)  # before fully_shard (torchtitan)
        model = wrap.fsdp2(self.s, model)
        if wrap.on_meta(model):
            model.to_empty(device=device)  # each rank's shards, uninitialised (torchtitan)
        return model

    def held(self, model, optim):
        return memory.held(memory.fsdp2_storages, model, optim)

    def install_gauge(self, gauge):
        return gauge.install_fsdp2()


class Fsdp1(Recipe):
    """PyTorch's FullyShardedDataParallel (FSDP1), as its tutorial and accelerate wrap it."""
    engine = "torch_fsdp1"
    state_dicts = fsdp1_state_dicts

    @property
    def flat_params(self):
        return not self.s.sharding.use_orig_params

    def wrap(self, model, device):
        model = wrap.fsdp1(self.s, model, device)
        if self.s.activation_checkpointing:
            wrap.checkpoint_decoder_layers(model)  # inside the wrapped units (PyTorch's FSDP tutorial)
        return model

    def clip_grad_norm(self, model, max_norm):
        model.clip_grad_norm_(max_norm)  # FSDP1's own: the norm over every rank's flat shards

    def held(self, model, optim):
        return memory.held(memory.fsdp1_storages, model, optim)

    def install_gauge(self, gauge):
        return gauge.install_fsdp1()


RECIPES = {cls.engine: cls for cls in (Fsdp1, Fsdp2)}


def for_scenario(s):
    """The recipe of the scenario's engine (harness/scenario/peer_scenario.cc admits only these)."""
    return RECIPES[s.engine](s)
