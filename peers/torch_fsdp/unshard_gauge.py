"""The peaks of unsharded parameters and gradients on the peer, as our engines' gauges keep them
(engine/shard/unit_driver.h: `params_unsharded_peak_bytes`, `grads_unsharded_peak_bytes`): bytes
of every unit's gathered parameters, and of its full gradients before their reduce-scatter,
summed over units at each moment a unit's state changes, the largest sum over the measured steps.

PyTorch allocates and frees those buffers inside FSDP's own hooks, so the gauge reads them at
FSDP's own transitions, by wrapping the methods that make them (private, version-dependent):

  FSDP2  FSDPParamGroup.unshard (issued: the flat all-gather output holds the unit, as for a
         prefetch), .wait_for_unshard (copied out: all_gather_outputs), .reshard (freed),
         .post_backward (at its start every unsharded gradient of the unit exists; FSDP2 drops
         them before it returns)
  FSDP1  FlatParamHandle.unshard (gathered: _full_param_padded), .reshard (freed),
         _runtime_utils._post_backward_hook (at its start flat_param.grad is the unit's
         unsharded gradient; after it, the shard)

Each transition re-reads only that unit's storages (their allocated size, padding included). A
torch version without these methods: `install_fsdp1` / `install_fsdp2` (the recipe picks) return
why, and the two metrics are reported as not measured. Inside wait_for_unshard FSDP2 holds a
unit twice for a moment (the flat output and the copies it splits out): the gauge reads before
and after, as our gauges count a unit once.
"""
import functools

from .memory import storage_bytes as _storage_bytes


class UnshardGauge:
    def __init__(self):
        self.active = False
        self.params, self.grads = {}, {}  # unit -> bytes now
        self.params_peak = self.grads_peak = 0

    def start(self):
        """The measured window opens: peaks restart from what is held now."""
        self.active = True
        self.params_peak, self.grads_peak = sum(self.params.values()), sum(self.grads.values())

    def stop(self):
        self.active = False

    def _set(self, table, unit, value):
        table[unit] = value
        if self.active:
            total = sum(table.values())
            if table is self.params:
                self.params_peak = max(self.params_peak, total)
            else:
                self.grads_peak = max(self.grads_peak, total)

    # ---- FSDP2 ----

    def _fsdp2_params(self, group):
        # An issued all-gather not yet copied out (a prefetch) holds the unit's gathered
        # parameters in its flat output: they are gathered, in another buffer.
        pending = getattr(group, "_all_gather_result", None)
        tensors = [getattr(pending, "all_gather_output", None)]
        for fp in group.fsdp_params:
            tensors.extend(getattr(fp, "all_gather_outputs", None) or [])
            tensors.append(getattr(fp, "_unsharded_param", None))
        self._set(self.params, id(group), _storage_bytes(tensors))

    def _fsdp2_grads(self, group):
        grads = [fp._unsharded_param.grad for fp in group.fsdp_params if hasattr(fp, "_unsharded_param")]
        grads += [getattr(fp, "unsharded_accumulated_grad", None) for fp in group.fsdp_params]
        self._set(self.grads, id(group), _storage_bytes(grads))

    # ---- FSDP1 ----

    def _fsdp1_params(self, handle):
        fp = handle.flat_param
        self._set(self.params, id(handle), _storage_bytes([getattr(fp, "_full_param_padded", None),
                                                            getattr(fp, "_full_prec_full_param_padded", None)]))

    def install_fsdp2(self):
        """Wraps FSDP2's transitions (before any model is wrapped). Returns why it could not, or None."""
        try:
            from torch.distributed.fsdp._fully_shard._fsdp_param_group import FSDPParamGroup as Group
            _after(Group, "unshard", self._fsdp2_params)
            _after(Group, "wait_for_unshard", self._fsdp2_params)
            _after(Group, "reshard", self._fsdp2_params)
            _before_and_after(Group, "post_backward", self._fsdp2_grads, self._fsdp2_grads)
            return None
        except (ImportError, AttributeError) as e:
            return _LACKS.format(e)

    def install_fsdp1(self):
        """Wraps FSDP1's transitions (before any model is wrapped). Returns why it could not, or None."""
        try:
            from torch.distributed.fsdp import _runtime_utils
            from torch.distributed.fsdp._flat_param import FlatParamHandle as Handle
            _after(Handle, "unshard", self._fsdp1_params)
            _after(Handle, "reshard", self._fsdp1_params)
            original = _runtime_utils._post_backward_hook

            @functools.wraps(original)
            def post_backward_hook(state, handle, *args, **kwargs):
                self._set(self.grads, id(handle), _storage_bytes([handle.flat_param.grad]))
                try:
                    return original(state, handle, *args, **kwargs)
                finally:
                    self._set(self.grads, id(handle), 0)  # now the shard (grad_bytes counts it)

            _runtime_utils._post_backward_hook = post_backward_hook
            return None
        except (ImportError, AttributeError) as e:
            return _LACKS.format(e)


_LACKS = "this torch version lacks the FSDP internals the peer reads its gathered buffers at ({})"


def _after(cls, name, fn):
    original = getattr(cls, name)

    @functools.wraps(original)
    def wrapped(self, *args, **kwargs):
        out = original(self, *args, **kwargs)
        fn(self)
        return out

    setattr(cls, name, wrapped)


def _before_and_after(cls, name, before, after):
    original = getattr(cls, name)

    @functools.wraps(original)
    def wrapped(self, *args, **kwargs):
        before(self)
        try:
            return original(self, *args, **kwargs)
        finally:
            after(self)

    setattr(cls, name, wrapped)
