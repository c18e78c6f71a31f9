"""Memory on the peer, measured as shardbench's engines measure theirs (docs/architecture.md, "The
memory record"; engine/memory/memory_record.h names the categories):

- held by category, exact, from the wrapped model's own tensors: parameters sharded and
  unsharded, gradients, optimizer state; each storage counted once (FSDP1's original parameters
  are views into its flat parameter, FSDP2's gradients views into one reduce-scatter output per
  unit), at its allocated size (padding included, as our engines count it);
- the host's high-water mark (VmHWM), split into init and training: Linux restarts it from the
  current RSS when 5 is written to /proc/self/clear_refs, which the peer does when warmup ends;
- on GPU, the CUDA caching allocator's figures, reset when warmup ends.

FSDP1's flat parameters (and their unsharded and mixed-precision buffers) are reached through
`FullyShardedDataParallel.fsdp_modules` and each module's `_handle`; FSDP2's through each
module's `_get_fsdp_state()._fsdp_param_group`. Both are private: where a torch version lacks
them, `held` raises `NotMeasurable` and the figures are reported as not measured, never as zero.
"""
import torch

CATEGORIES = ("params_sharded", "params_unsharded", "grads", "optim_state")
DTYPE_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


class NotMeasurable(Exception):
    """This torch version does not expose what the figure is counted from."""


def _local(t):
    """A DTensor's local shard (FSDP2), else the tensor itself."""
    return t.to_local() if hasattr(t, "to_local") else t


class _Storages:
    """Storages counted once each, in the first category that claims them."""

    def __init__(self, categories=CATEGORIES):
        self.seen = set()
        self.bytes = {c: 0 for c in categories}
        self.by_dtype = {}

    def add(self, category, tensor):
        if tensor is None:
            return
        t = _local(tensor)
        storage = t.untyped_storage()
        size = storage.nbytes()
        if size == 0:  # freed (FSDP resizes a resharded buffer's storage to 0)
            return
        key = (t.device, storage.data_ptr())
        if key in self.seen:
            return
        self.seen.add(key)
        self.bytes[category] += size
        if category == "params_sharded":
            name = DTYPE_NAMES.get(t.dtype)
            if name:
                self.by_dtype[name] = self.by_dtype.get(name, 0) + size


def _fsdp1_handles(model):
    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    handles = []
    for m in FSDP.fsdp_modules(model):
        if not hasattr(m, "_handle"):
            raise NotMeasurable("FullyShardedDataParallel has no _handle in this torch version")
        if m._handle is not None:
            handles.append(m._handle)
    return handles


def _fsdp2_params(model):
    from torch.distributed.fsdp import FSDPModule
    params = []
    for m in model.modules():
        if not isinstance(m, FSDPModule):
            continue
        if not hasattr(m, "_get_fsdp_state"):
            raise NotMeasurable("fully_shard modules have no _get_fsdp_state in this torch version")
        group = m._get_fsdp_state()._fsdp_param_group
        if group is not None:
            params.extend(group.fsdp_params)
    return params


def held(storages, model, optimizer):
    """Bytes by category this rank holds now, and parameter bytes by stored dtype. `storages`:
    the stack's own (fsdp1_storages or fsdp2_storages: recipes.py picks), then what every stack
    holds alike (parameters' gradients, the optimizer's state)."""
    s = _Storages()
    try:
        storages(s, model)
    except AttributeError as e:  # this torch version names FSDP's internals otherwise
        raise NotMeasurable(f"this torch version lacks the FSDP internals the peer counts from ({e})") from e
    for p in model.parameters():
        s.add("grads", p.grad)
    for state in optimizer.state.values():
        for v in state.values():
            if torch.is_tensor(v):
                s.add("optim_state", v)
    return s.bytes, s.by_dtype


def fsdp1_storages(s, model):
    """FSDP1: each handle's flat shard, its gathered buffers and its sharded gradient."""
    handles = _fsdp1_handles(model)
    for h in handles:
        s.add("params_sharded", h.flat_param)  # the local shard (its storage: `_local_shard`'s)
    for p in model.parameters():  # use_orig_params: views into the flat shards above
        s.add("params_sharded", p)
    for h in handles:
        fp = h.flat_param
        for name in ("_full_param_padded", "_full_prec_full_param_padded", "_mp_shard"):
            s.add("params_unsharded", getattr(fp, name, None))
    for h in handles:  # the sharded gradient covers the whole flat shard, frozen slots too
        s.add("grads", h.flat_param.grad)
        s.add("grads", getattr(h.flat_param, "_saved_grad_shard", None))


def fsdp2_storages(s, model):
    """FSDP2: each FSDPParam's padded shard and its all-gather outputs."""
    fsdp_params = _fsdp2_params(model)
    for fp in fsdp_params:
        s.add("params_sharded", fp._sharded_param_data)  # padded: the view `sharded_param` lies inside
    for p in model.parameters():
        s.add("params_sharded", p)
    for fp in fsdp_params:
        for t in getattr(fp, "all_gather_outputs", []) or []:
            s.add("params_unsharded", t)
        s.add("params_unsharded", getattr(fp, "_unsharded_param", None))


def storage_bytes(tensors):
    """Allocated bytes of the tensors' storages, each storage once (None and freed ones skipped)."""
    s = _Storages(("all",))
    for t in tensors:
        s.add("all", t)
    return s.bytes["all"]


def buffer_bytes(model):
    """The model's buffers (rotary inv_freq), each storage once, as harness/scenario_runner.cc counts ours."""
    return storage_bytes(model.buffers())


# ---- the host's high-water mark ----

def host_rss_peak():
    """VmHWM of this process, in bytes (the kernel's own figure, as shardbench's engines read it)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise NotMeasurable("/proc/self/status has no VmHWM")


def reset_host_rss_peak():
    """Restarts VmHWM from the current RSS (Linux: 5 written to /proc/self/clear_refs). Returns
    why it could not, or None."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return None
    except OSError as e:
        return f"/proc/self/clear_refs refused the peak reset ({e.strerror}): VmHWM would include init"


# ---- the CUDA caching allocator ----

def reset_device_peaks(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)


def device_figures(device):
    """The caching allocator's figures, under the metric names shardbench reports (GPU only)."""
    if device.type != "cuda":
        return {}
    s = torch.cuda.memory_stats(device)
    names = {"device_allocated_peak": "allocated_bytes.all.peak", "device_reserved_peak": "reserved_bytes.all.peak",
             "device_active_peak": "active_bytes.all.peak", "device_alloc_retries": "num_alloc_retries",
             "device_ooms": "num_ooms"}
    return {ours: s[theirs] for ours, theirs in names.items() if theirs in s}  # absent: not measured, not 0


# ---- PyTorch's CPU tensors, counted by our tracking allocator ----

class TrackedAllocations:
    """shardbench's tracking allocator (engine/memory/tracking_allocator_c_api.cc) installed into
    this process's libc10, so that PyTorch's CPU tensors are counted as our engines' are: every
    allocation's bytes, current and peak, peaks restarted when a window opens. Only with the torch
    the library was built against: `why_not` says otherwise, and the figures are not measured."""

    def __init__(self, path):
        import ctypes
        self.lib, self.why_not = None, None
        if not path:
            self.why_not = "the shardbench build has no peer allocator library (libshardbench_peer_allocator.so)"
            return
        try:
            lib = ctypes.CDLL(path)
        except OSError as e:  # e.g. another torch's libc10 lacks a symbol ours was linked against
            self.why_not = f"shardbench's tracking allocator does not load into this torch {torch.__version__}: {e}"
            return
        lib.shardbench_allocator_torch_version.restype = ctypes.c_char_p
        lib.shardbench_allocator_current.restype = ctypes.c_int64
        lib.shardbench_allocator_peak.restype = ctypes.c_int64
        built_for = lib.shardbench_allocator_torch_version().decode()
        if torch.__version__.split("+")[0] != built_for:
            self.why_not = (f"shardbench's tracking allocator was built against torch {built_for}, this peer runs "
                            f"{torch.__version__} (c10's allocator interface is not a stable ABI)")
            return
        lib.shardbench_allocator_install()
        if not lib.shardbench_allocator_installed():
            self.why_not = "c10 kept another CPU allocator (a higher priority was set before ours)"
            return
        self.lib = lib

    def reset_peaks(self):
        if self.lib:
            self.lib.shardbench_allocator_reset_peaks()

    def current(self):
        return self.lib.shardbench_allocator_current() if self.lib else None

    def peak(self):
        return self.lib.shardbench_allocator_peak() if self.lib else None
