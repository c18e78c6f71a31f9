"""The stacks the peer runs, one recipe class each, over the shared core (peer.py's phases with
data.py, optimizer.py, learning.py, memory.py, records.py): what differs between stacks is how the
model is wrapped, how gradients are clipped, which FSDP internals the memory count and the unshard
gauge read, and which state dict API a checkpoint goes through. Everything else is the core's.

Adding a stack: a class here, its entry in RECIPES, and its engine in
harness/scenario/engine_registry.cc.
"""
import abc
import os

from . import accelerate_plugin, fsdp1_state_dicts, memory, meta_init, optimizer, torchtune_recipe, wrap


class Recipe(abc.ABC):
    """One stack. `s`: the typed scenario (scenario.py). A stack defines wrap, held and
    install_gauge (abstract: a recipe without them cannot be built); the rest has defaults."""
    engine = None
    # The state dict API of this stack's own users for the checkpoint kinds it has one for
    # (save, load, layout); other kinds go through torch.distributed.checkpoint's (checkpoints.py).
    state_dicts = None
    # init=meta: the peer builds the model on the meta device and the recipe loads it
    # (load_meta); False where the stack loads efficiently its own way, inside its wrapping, and
    # why its load time is then not separate.
    builds_on_meta = True
    why_no_load_time = None
    # Figures exact on the other stacks that vary from launch to launch on this one: written as
    # sampled (name -> why), so that no gate or bisection reads their noise as a change.
    sampled = {}

    def __init__(self, s):
        self.s = s

    @property
    def flat_params(self):
        """The optimizer sees flat parameters (FSDP1 without use_orig_params)."""
        return False

    @abc.abstractmethod
    def wrap(self, model, device):
        """The model wrapped by this stack's FSDP (the optimizer is the caller's)."""

    def wrap_and_optimize(self, model, device, load):
        """Wraps the model and builds AdamW before or after, as optimizer.build asks; then
        `load(model)` (init=meta's weights, the caller's) into the shards the optimizer holds
        already (to_empty and param_init_fn kept the parameter objects)."""
        before = self.s.optimizer.build == "before_wrap"
        opt = optimizer.adamw(self.s, optimizer.param_groups(model, self.s.train, False)) if before else None
        model = self.wrap(model, device)
        if not before:
            groups = optimizer.param_groups(model, self.s.train, self.flat_params)
            opt = self.prepared(model, optimizer.adamw(self.s, groups))
        load(model)
        return model, opt

    def load_meta(self, model, keys, init_dir, model_dir, device):
        """init=meta: the weights from the Hugging Face files into the wrapped model's shards."""
        meta_init.load(model, keys, init_dir, model_dir, self.s, device)

    def prepared(self, model, opt):
        """An optimizer built over the wrapped `model`, as this stack hands it to training."""
        return opt

    def backward(self, model, loss):
        loss.backward()

    def clip_grad_norm(self, model, max_norm):
        import torch
        torch.nn.utils.clip_grad_norm_([p for p in model.parameters() if p.grad is not None], max_norm)

    @abc.abstractmethod
    def held(self, model, optim):
        """Bytes by category this rank holds now, and parameter bytes by stored dtype."""

    @abc.abstractmethod
    def install_gauge(self, gauge):
        """The unshard gauge on this stack's transitions; why it could not, or None."""


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


class AccelerateStateDicts:
    """accelerate's save_state / load_state as the checkpoint of every kind it saves: the plugin's
    state_dict_type (accelerate_plugin.STATE_DICT_TYPES) in accelerate's own layout, with its RNG
    states. Each prepared model is saved and loaded by the Accelerator that prepared it."""
    LAYOUTS = {kind: f"accelerate save_state, {t}" for kind, t in accelerate_plugin.STATE_DICT_TYPES.items()}

    def __init__(self, recipe):
        self.recipe = recipe

    def save(self, kind, model, optim, directory, model_dir):
        """Collective. The files this rank wrote: those named for it (DCP's `__<rank>_0.distcp`,
        accelerate's `*rank<rank>*` and `random_states_<rank>.pkl`); rank 0 also the unnamed ones."""
        import torch.distributed as dist
        self.recipe.accelerator_of(model).save_state(directory)
        dist.barrier()
        rank, mine = dist.get_rank(), []
        for root, _, files in os.walk(directory):
            for f in files:
                named = [r for r in range(dist.get_world_size())
                         if f.startswith(f"__{r}_") or f"rank{r}" in f or f == f"random_states_{r}.pkl"]
                if (named and named[0] == rank) or (not named and rank == 0):
                    mine.append(os.path.join(root, f))
        return mine

    def load(self, kind, model, optim, directory):
        self.recipe.accelerator_of(model).load_state(directory)


class Accelerate(Recipe):
    """Hugging Face accelerate: an Accelerator with the scenario's FSDP plugin
    (accelerate_plugin.py, FSDP1 or FSDP2 by accelerate.fsdp_version), prepare,
    accelerator.backward, its clip_grad_norm_, save_state / load_state."""
    engine = "accelerate"
    builds_on_meta = False  # init=meta is its cpu_ram_efficient_loading (accelerate_plugin.py)
    why_no_load_time = ("init=meta through accelerate's cpu_ram_efficient_loading: rank 0's weights are broadcast "
                        "inside prepare (fsdp2_load_full_state_dict), part of init_time_shard")
    sampled = {"checkpoint_bytes": "save_state's files on rank 0 differ in size from launch to launch at accelerate 1.16 "
                                   "(seen: 743,698 and 743,762 bytes, same release, same directory name length)"}

    def __init__(self, s):
        super().__init__(s)
        self.version = s.accelerate.fsdp_version
        self.state_dicts = AccelerateStateDicts(self)
        self._accelerators = {}  # id(prepared model) -> the Accelerator that prepared it
        if s.backend == "gloo":
            accelerate_plugin.use_cpu_device()
        if s.init == "meta":
            accelerate_plugin.use_cpu_ram_efficient_loading()

    @property
    def flat_params(self):
        return self.version == 1 and not self.s.sharding.use_orig_params

    def wrap(self, model, device):
        """accelerator.prepare(model) alone (optimizer.build after_wrap; FSDP1 only: accelerate's
        FSDP2 needs the optimizer with it, refused up front)."""
        accelerator = accelerate_plugin.accelerator_for(self.s, model)
        model = accelerator.prepare(model)
        self._accelerators[id(model)] = accelerator
        return model

    def prepared(self, model, opt):
        return self.accelerator_of(model).prepare(opt)

    def wrap_and_optimize(self, model, device, load):
        """optimizer.build before_wrap: the optimizer over the model's own parameters, prepared
        together with it (accelerate maps its groups onto the wrapped parameters); after_wrap: the
        shared order (wrap, then the optimizer over the wrapped parameters, prepared)."""
        if self.s.optimizer.build != "before_wrap":
            return super().wrap_and_optimize(model, device, load)
        accelerator = accelerate_plugin.accelerator_for(self.s, model)
        opt = optimizer.adamw(self.s, optimizer.param_groups(model, self.s.train, False))
        model, opt = accelerator.prepare(model, opt)
        self._accelerators[id(model)] = accelerator
        load(model)  # nothing on meta (init=meta is refused for accelerate): kept for the one order
        return model, opt

    def accelerator_of(self, model):
        return self._accelerators[id(model)]

    def backward(self, model, loss):
        self.accelerator_of(model).backward(loss)

    def clip_grad_norm(self, model, max_norm):
        self.accelerator_of(model).clip_grad_norm_(model.parameters(), max_norm)

    def held(self, model, optim):
        return memory.held(memory.fsdp1_storages if self.version == 1 else memory.fsdp2_storages, model, optim)

    def install_gauge(self, gauge):
        return gauge.install_fsdp1() if self.version == 1 else gauge.install_fsdp2()


class Torchtune(Fsdp2):
    """torchtune 0.6.1's FSDP2 utilities in its distributed recipe's order (torchtune_recipe.py):
    fully_shard underneath, so FSDP2's memory count and gauge."""
    engine = "torchtune"
    state_dicts = torchtune_recipe.TorchtuneStateDicts()

    def wrap(self, model, device):
        return torchtune_recipe.shard(self.s, model)

    def wrap_and_optimize(self, model, device, load):
        """Shard, load (init=meta), then the optimizer over what was loaded: torchtune's load
        assigns new parameters into a meta model, which an optimizer built before would miss."""
        model = self.wrap(model, device)
        load(model)
        return model, optimizer.adamw(self.s, optimizer.param_groups(model, self.s.train, False))

    def load_meta(self, model, keys, init_dir, model_dir, device):
        torchtune_recipe.load_meta(self.s, model, keys, init_dir, model_dir, device)


RECIPES = {cls.engine: cls for cls in (Fsdp1, Fsdp2, Accelerate, Torchtune)}


def for_scenario(s):
    """The recipe of the scenario's engine (harness/scenario/peer_scenario.cc admits only these)."""
    return RECIPES[s.engine](s)
