"""Writes a tiny random Hugging Face Llama and its reference outputs for tests/hf_parity_test.cc.

    python make_llama_reference.py OUT_DIR

OUT_DIR/config.json, OUT_DIR/model.safetensors  the model, as save_pretrained writes it
OUT_DIR/reference.safetensors                   computed by transformers in fp32 on CPU:
    input_ids        int64 [2, 16]
    logits           [2, 16, vocab]
    loss             [1]  HF's loss with labels=input_ids (it shifts internally)
    grad.<name>      d loss / d param, for every parameter, HF names

The shapes are small enough to run in a second but exercise everything the C++ model reads
from config.json: grouped-query attention (4 heads, 2 kv heads), a non-default rope_theta and
rms_norm_eps, an untied lm_head. Deterministic: same torch + transformers, same bytes.
"""

import os
import sys

import torch
import transformers
from safetensors.torch import load_file, save_file
from transformers import LlamaConfig, LlamaForCausalLM

SEED = 1234
BATCH, SEQ = 2, 16


def build_model() -> LlamaForCausalLM:
    config = LlamaConfig(
        vocab_size=128,
        hidden_size=64,
        intermediate_size=160,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,  # GQA: each kv head serves 2 query heads
        max_position_embeddings=128,
        rope_theta=500000.0,  # not the 10000 default: proves the C++ side reads it
        rms_norm_eps=1e-6,  # not the 1e-5 default, for the same reason
        tie_word_embeddings=False,
        # HF's default 0.02 makes attention nearly uniform (scores ~ 64 * std^2 ~ 0.03), which
        # would hide rotary or masking mistakes; 0.1 gives scores of order 1.
        initializer_range=0.1,
        torch_dtype="float32",
    )
    # Eager attention: the plain softmax(QK^T/sqrt(d) + mask) V reference, no SDPA kernel.
    config._attn_implementation = "eager"
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(config).to(torch.float32).eval()
    # HF initialises RMSNorm weights to 1, under which a norm that ignored its weight would
    # still pass. Perturb them (seeded) so the weight's use is tested too.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("layernorm.weight") or name == "model.norm.weight":
                p.add_(0.2 * torch.randn(p.shape))
    return model


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    torch.set_num_threads(1)  # a fixed reduction order, so reruns give identical bytes
    torch.use_deterministic_algorithms(True)

    model = build_model()
    model.save_pretrained(out_dir, safe_serialization=True)

    # RoPE's inv_freq is a non-persistent buffer in transformers: the C++ model must recompute
    # it, not find it in the checkpoint. Fail here if a transformers version starts saving it.
    saved = load_file(os.path.join(out_dir, "model.safetensors"))
    leaked = [n for n in saved if "inv_freq" in n or "rotary" in n]
    if leaked:
        print(f"model.safetensors unexpectedly holds rotary buffers: {leaked}", file=sys.stderr)
        return 1
    params = dict(model.named_parameters())
    if sorted(saved) != sorted(params):
        print(f"model.safetensors names differ from the model's parameters: "
              f"{sorted(set(saved) ^ set(params))}", file=sys.stderr)
        return 1

    gen = torch.Generator().manual_seed(SEED + 1)
    input_ids = torch.randint(0, model.config.vocab_size, (BATCH, SEQ), generator=gen, dtype=torch.int64)

    model.zero_grad(set_to_none=True)
    out = model(input_ids=input_ids, labels=input_ids)
    out.loss.backward()

    tensors = {
        "input_ids": input_ids.contiguous(),
        "logits": out.logits.detach().to(torch.float32).contiguous(),
        "loss": out.loss.detach().to(torch.float32).reshape(1).contiguous(),
    }
    for name, p in model.named_parameters():
        if p.grad is None:
            print(f"parameter {name} got no gradient", file=sys.stderr)
            return 1
        tensors["grad." + name] = p.grad.detach().to(torch.float32).contiguous()
    save_file(tensors, os.path.join(out_dir, "reference.safetensors"),
              # One key: safetensors writes metadata in hash order, and bytes should not vary.
              metadata={"source": f"transformers {transformers.__version__}, torch {torch.__version__}"})
    print(f"wrote {out_dir}: loss {out.loss.item():.6f}, logits max |x| {out.logits.abs().max().item():.4f}, "
          f"{len(params)} parameters")
    return 0


if __name__ == "__main__":
    sys.exit(main())
