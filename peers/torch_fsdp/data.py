"""The token batches of a scenario, rebuilt in Python from the documented order
(engine/model/data_source.h, synthetic_data.h, token_file_data.h): sample i of step s comes from
(seed, s, i) alone, so every implementation and every world size sees the same global batch.
Pure Python integers (mod 2**64) and the standard library; torch only to hand back tensors."""
import mmap
import os

M = (1 << 64) - 1


def splitmix64(z):
    z = (z + 0x9E3779B97F4A7C15) & M
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


def sample_hash(seed, step, sample):
    return splitmix64(seed ^ splitmix64(((step * 0x100000001B3) & M) ^ sample))


def seed_for(seed, name):
    """engine/model/module.h SeedFor: FNV-1a of the name, mixed with the seed."""
    h = 1469598103934665603
    for c in name.encode():
        h = ((h ^ c) * 1099511628211) & M
    z = h ^ ((seed + 0x9E3779B97F4A7C15) & M)
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
    return z ^ (z >> 31)


class SyntheticData:
    """A fixed random bigram map (token t is followed by next[t]); sample i of step s starts at
    sample_hash(seed, s, i) mod vocab."""

    def __init__(self, seed, vocab_size, seq_len):
        self.seed, self.vocab, self.seq_len = seed, vocab_size, seq_len
        self.next = list(range(vocab_size))
        base = seed_for(seed, "bigram")
        for i in range(vocab_size - 1, 0, -1):  # Fisher-Yates, counter-based
            j = splitmix64((base + i) & M) % (i + 1)
            self.next[i], self.next[j] = self.next[j], self.next[i]

    def sequence(self, step, sample):
        tok = sample_hash(self.seed, step, sample) % self.vocab
        out = []
        for _ in range(self.seq_len + 1):
            out.append(tok)
            tok = self.next[tok]
        return out


class TokenFileData:
    """Flat little-endian uint16/uint32 token ids; sample i of step s is the window of seq_len + 1
    tokens at sample_hash(seed, s, i) mod (N - seq_len)."""

    def __init__(self, path, token_dtype, seed, vocab_size, seq_len):
        self.width = {"uint16": 2, "uint32": 4}[token_dtype]
        self.seed, self.vocab, self.seq_len, self.path = seed, vocab_size, seq_len, path
        size = os.path.getsize(path)
        if size % self.width:
            raise ValueError(f"token file {path}: {size} bytes is not a whole number of {token_dtype} tokens")
        self.tokens = size // self.width
        if self.tokens < seq_len + 1:
            raise ValueError(f"token file {path}: {self.tokens} tokens, a sample needs {seq_len + 1}")
        with open(path, "rb") as f:
            self.map = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)

    def sequence(self, step, sample):
        offset = sample_hash(self.seed, step, sample) % (self.tokens - self.seq_len)
        raw = self.map[offset * self.width:(offset + self.seq_len + 1) * self.width]
        out = [int.from_bytes(raw[k:k + self.width], "little") for k in range(0, len(raw), self.width)]
        for k, t in enumerate(out):
            if t >= self.vocab:
                raise ValueError(f"token file {self.path}: token {t} at index {offset + k} is not below vocab_size {self.vocab}")
        return out


def scenario_data(data, seed, seq_len, vocab_size):
    """The data source the scenario's `data` section (scenario.Data) names, for train.seed and
    train.seq_len."""
    if data.source == "tokens":
        return TokenFileData(data.path, data.token_dtype, seed, vocab_size, seq_len)
    return SyntheticData(seed, vocab_size, seq_len)


def micro_batches(source, step, rank, batch_size, accumulation):
    """Rank r's micro-batches of step `step`: samples [(r*A + m)*b, (r*A + m + 1)*b) for m < A, as
    lists of (input_ids, labels) rows."""
    out = []
    for m in range(accumulation):
        first = (rank * accumulation + m) * batch_size
        seqs = [source.sequence(step, first + k) for k in range(batch_size)]
        out.append(([s[:-1] for s in seqs], [s[1:] for s in seqs]))
    return out
