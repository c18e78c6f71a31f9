"""The loss of one micro-batch, as the training step (peer.py) and the learning check's same-batch
loss (learning.py) both compute it, so that the two can never drift apart: token ids onto the
device, the forward without a KV cache, cross entropy in fp32 over every position (as shardbench's
LlamaForCausalLM::loss)."""
import torch


def micro_batch_loss(model, ids, labels, device):
    ids_t = torch.tensor(ids, dtype=torch.long, device=device)
    labels_t = torch.tensor(labels, dtype=torch.long, device=device)
    # Training keeps no KV cache (as HF's Trainer with gradient checkpointing): with one, a
    # checkpointed layer's recompute appends to it and sees other shapes than its forward.
    logits = model(input_ids=ids_t, use_cache=False).logits
    return torch.nn.functional.cross_entropy(logits.float().reshape(-1, logits.size(-1)), labels_t.reshape(-1))
