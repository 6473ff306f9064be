"""Check our slim FA3 `flash_ops` on the GPU against plain PyTorch attention: `python3 -m shrinker.gpu.fa3_check`.

The ops are called through sgl_kernel's own flash_attn.py (from the wheel, in the source pack), in
the shapes SGLang's fa3 and dsa backends use for DeepSeek: absorbed-MLA decode and extend
(q_rope 64 + q_nope as qv 512 against a paged 512 latent cache, 16 heads against 1), and the MHA
prefill (q/k 192, v 128, varlen, causal or not, with the softmax LSE). The reference is float32
attention on the same bf16 inputs; a case passes at a relative L2 error under TOLERANCE and with
every output element written. Then the arguments the build refuses must raise, not run.
"""

from __future__ import annotations

import argparse
import importlib
import itertools
import json
import math
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

TOLERANCE = 2e-2  # bf16 inputs and output against a float32 reference: 1e-3 .. 1e-2 expected


def load_ops(so: Path, py_dir: Path):
    """sgl_kernel.flash_attn from the wheel's own Python, over our .so as sgl_kernel.flash_ops."""
    root = Path(tempfile.mkdtemp(prefix="fa3-check-"))
    pkg = root / "sgl_kernel"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for name in ("flash_attn.py", "debug_utils.py"):
        shutil.copyfile(py_dir / name, pkg / name)
    shutil.copyfile(so, pkg / so.name)
    import torch  # noqa: F401  (the .so needs torch's libraries loaded first)

    sys.path.insert(0, str(root))
    return importlib.import_module("sgl_kernel.flash_attn")


def rel_err(out, ref) -> float:
    out, ref = out.float(), ref.float()
    return float((out - ref).norm() / ref.norm().clamp_min(1e-12))


def _attend(q, k, v, scale: float, causal: bool):
    """float32 softmax attention of one sequence: q (sq, h, d), k (sk, hk, d), v (sk, hk, dv); out, lse (h, sq)."""
    import torch

    h, hk = q.shape[1], k.shape[1]
    k = k.repeat_interleave(h // hk, dim=1)
    v = v.repeat_interleave(h // hk, dim=1)
    s = torch.einsum("qhd,khd->hqk", q.float(), k.float()) * scale
    sq, sk = q.shape[0], k.shape[0]
    if causal:  # aligned to the bottom right, as FlashAttention's causal mask
        i = torch.arange(sq, device=q.device)[:, None] + (sk - sq)
        j = torch.arange(sk, device=q.device)[None, :]
        s = s.masked_fill(j > i, float("-inf"))
    lse = torch.logsumexp(s, dim=-1)
    p = torch.softmax(s, dim=-1)
    return torch.einsum("hqk,khd->qhd", p, v.float()), lse


def _page_table(pages_per_seq: list[int], spare: int, g):
    """(block table, page count): each sequence gets its pages in a shuffled order, `spare` pages unused."""
    import torch

    num_pages = sum(pages_per_seq) + spare
    perm = torch.randperm(num_pages, generator=g, device="cuda").to(torch.int32)
    table = torch.zeros(len(pages_per_seq), max(pages_per_seq), dtype=torch.int32, device="cuda")
    used = 0
    for i, n in enumerate(pages_per_seq):
        table[i, :n] = perm[used:used + n]
        used += n
    return table, num_pages


def mla_case(fa, *, seqlens_k, seqlens_q, page_size, num_splits, heads=16, seed=0):
    """Absorbed MLA as flashattention_backend / dsa_backend call it: q=q_rope, qv=q_nope, paged latent cache."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    dev, bf = "cuda", torch.bfloat16
    b = len(seqlens_k)
    pages_per_seq = [math.ceil(n / page_size) for n in seqlens_k]
    table, num_pages = _page_table(pages_per_seq, 3, g)
    k_rope = torch.randn(num_pages, page_size, 1, 64, generator=g, device=dev).to(bf)
    c_kv = torch.randn(num_pages, page_size, 1, 512, generator=g, device=dev).to(bf)
    total_q = sum(seqlens_q)
    q_rope = torch.randn(total_q, heads, 64, generator=g, device=dev).to(bf)
    q_nope = torch.randn(total_q, heads, 512, generator=g, device=dev).to(bf)
    cu_q = torch.tensor(list(itertools.accumulate(seqlens_q, initial=0)), dtype=torch.int32, device=dev)
    cache_seqlens = torch.tensor(seqlens_k, dtype=torch.int32, device=dev)
    scale = 1.0 / math.sqrt(192)
    out = fa.flash_attn_with_kvcache(q=q_rope, k_cache=k_rope, v_cache=c_kv, qv=q_nope, page_table=table,
                                     cache_seqlens=cache_seqlens, cu_seqlens_q=cu_q, cu_seqlens_k_new=cu_q,
                                     max_seqlen_q=max(seqlens_q), softmax_scale=scale, causal=True,
                                     num_splits=num_splits)
    refs = []
    for i in range(b):
        rows = (table[i, :pages_per_seq[i]].long()[:, None] * page_size
                + torch.arange(page_size, device=dev)[None, :]).reshape(-1)[:seqlens_k[i]]
        kr = k_rope.reshape(-1, 1, 64)[rows]
        kv = c_kv.reshape(-1, 1, 512)[rows]
        qs = slice(int(cu_q[i]), int(cu_q[i + 1]))
        q_all = torch.cat([q_rope[qs], q_nope[qs]], dim=-1)
        k_all = torch.cat([kr, kv], dim=-1)
        refs.append(_attend(q_all, k_all, kv, scale, causal=True)[0])
    return out, torch.cat(refs)


def mha_case(fa, *, seqlens, causal, with_lse, heads=16, seed=1, poison=True):
    """The MHA prefill: flash_attn_varlen_func with q/k 192, v 128 (what the fa3 and dsa backends call)."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    dev, bf = "cuda", torch.bfloat16
    total = sum(seqlens)
    q = torch.randn(total, heads, 192, generator=g, device=dev).to(bf)
    k = torch.randn(total, heads, 192, generator=g, device=dev).to(bf)
    v = torch.randn(total, heads, 128, generator=g, device=dev).to(bf)
    cu = torch.tensor(list(itertools.accumulate(seqlens, initial=0)), dtype=torch.int32, device=dev)
    scale = 1.0 / math.sqrt(192)
    out_buf = torch.full((total, heads, 128), float("nan"), dtype=bf, device=dev) if poison else None
    res = fa.flash_attn_varlen_func(q=q, k=k, v=v, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=max(seqlens),
                                    max_seqlen_k=max(seqlens), softmax_scale=scale, causal=causal,
                                    return_softmax_lse=with_lse, out=out_buf)
    out, lse = (res[0], res[1]) if with_lse else (res, None)
    refs, ref_lse = [], []
    for i in range(len(seqlens)):
        s = slice(int(cu[i]), int(cu[i + 1]))
        o, l_ = _attend(q[s], k[s], v[s], scale, causal)
        refs.append(o)
        ref_lse.append(l_)
    return out, torch.cat(refs), lse, (torch.cat(ref_lse, dim=1) if with_lse else None)


def paged_mha_case(fa, *, seqlens_k, heads=16, seed=2):
    """flash_attn_with_kvcache with hdim 192/128, page size 1, and get_scheduler_metadata's plan (paged 192_128)."""
    import torch

    g = torch.Generator(device="cuda").manual_seed(seed)
    dev, bf = "cuda", torch.bfloat16
    b = len(seqlens_k)
    table, num_pages = _page_table(list(seqlens_k), 5, g)
    kc = torch.randn(num_pages, 1, heads, 192, generator=g, device=dev).to(bf)
    vc = torch.randn(num_pages, 1, heads, 128, generator=g, device=dev).to(bf)
    q = torch.randn(b, heads, 192, generator=g, device=dev).to(bf)
    cu_q = torch.arange(b + 1, dtype=torch.int32, device=dev)
    cache_seqlens = torch.tensor(seqlens_k, dtype=torch.int32, device=dev)
    meta = fa.get_scheduler_metadata(batch_size=b, max_seqlen_q=1, max_seqlen_k=max(seqlens_k), num_heads=heads,
                                     num_heads_k=heads, headdim=192, cache_seqlens=cache_seqlens,
                                     qkv_dtype=bf, headdim_v=128, cu_seqlens_q=cu_q, page_size=1, causal=True)
    scale = 1.0 / math.sqrt(192)
    out = fa.flash_attn_with_kvcache(q=q, k_cache=kc, v_cache=vc, page_table=table, cache_seqlens=cache_seqlens,
                                     cu_seqlens_q=cu_q, max_seqlen_q=1, softmax_scale=scale, causal=True,
                                     scheduler_metadata=meta)
    refs = []
    for i in range(b):
        rows = table[i, :seqlens_k[i]].long()
        refs.append(_attend(q[i:i + 1], kc[rows, 0], vc[rows, 0], scale, causal=True)[0])
    return out, torch.cat(refs), meta


def refusals(fa) -> list[tuple[str, str]]:
    """Calls the build must refuse: (name, the error's first line or 'DID NOT RAISE')."""
    import torch

    dev, bf = "cuda", torch.bfloat16
    q = torch.randn(4, 8, 192, device=dev).to(bf)
    k = torch.randn(4, 8, 192, device=dev).to(bf)
    v = torch.randn(4, 8, 128, device=dev).to(bf)
    cu = torch.tensor([0, 4], dtype=torch.int32, device=dev)
    base = dict(q=q, k=k, v=v, cu_seqlens_q=cu, cu_seqlens_k=cu, max_seqlen_q=4, max_seqlen_k=4, causal=True)
    calls = {
        "sinks": lambda: fa.flash_attn_varlen_func(**base, sinks=torch.zeros(8, device=dev)),
        "softcap": lambda: fa.flash_attn_varlen_func(**base, softcap=30.0),
        "only_qv": lambda: fa.flash_attn_varlen_func(**base, qv=torch.randn(4, 8, 512, device=dev).to(bf),
                                                     only_qv=True),
        "pack_gqa": lambda: fa.flash_attn_varlen_func(**base, pack_gqa=True),
        "fp16": lambda: fa.flash_attn_varlen_func(**{**base, "q": q.half(), "k": k.half(), "v": v.half()}),
        "hdim 64/64 (not built)": lambda: fa.flash_attn_varlen_func(
            **{**base, "q": q[..., :64].contiguous(), "k": k[..., :64].contiguous(), "v": v[..., :64].contiguous()}),
        "sliding window (local)": lambda: fa.flash_attn_varlen_func(**base, window_size=(2, 0)),
    }
    out = []
    for name, call in calls.items():
        try:
            call()
            torch.cuda.synchronize()
            out.append((name, "DID NOT RAISE"))
        except Exception as exc:  # the op's TORCH_CHECK arrives as RuntimeError
            out.append((name, f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"))
    return out


def run_checks(fa) -> dict:
    import torch

    cases = {
        "mla decode, page 1, num_splits 0 (heuristic)": lambda: mla_case(
            fa, seqlens_k=[37, 1, 300, 1200], seqlens_q=[1, 1, 1, 1], page_size=1, num_splits=0),
        "mla decode, page 1, num_splits 1": lambda: mla_case(
            fa, seqlens_k=[37, 1, 300, 1200], seqlens_q=[1, 1, 1, 1], page_size=1, num_splits=1),
        "mla decode, page 64 (dsa page size), long": lambda: mla_case(
            fa, seqlens_k=[2049, 700], seqlens_q=[1, 1], page_size=64, num_splits=0, seed=3),
        "mla extend 8 tokens (target verify), page 64, TMA": lambda: mla_case(
            fa, seqlens_k=[40, 300], seqlens_q=[8, 8], page_size=64, num_splits=1, seed=4),
        "mla extend 8 tokens, page 64, split": lambda: mla_case(
            fa, seqlens_k=[4000, 3000], seqlens_q=[8, 8], page_size=64, num_splits=4, seed=5),
        "mla extend 3 tokens, page 1": lambda: mla_case(
            fa, seqlens_k=[3, 50, 129], seqlens_q=[3, 3, 3], page_size=1, num_splits=0, seed=6),
        "mha prefill causal (192/128)": lambda: mha_case(fa, seqlens=[5, 130, 1, 257], causal=True, with_lse=False),
        "mha prefix chunk, not causal, lse": lambda: mha_case(fa, seqlens=[64, 9, 200], causal=False, with_lse=True),
        "paged 192/128 with get_scheduler_metadata": lambda: paged_mha_case(fa, seqlens_k=[17, 1, 333]),
    }
    rows = []
    for name, case in cases.items():
        s = time.monotonic()
        try:
            res = case()
            torch.cuda.synchronize()
            out, ref = res[0], res[1]
            err = rel_err(out, ref)
            row = {"case": name, "rel_err": err, "nan": bool(torch.isnan(out).any()), "shape": list(out.shape)}
            if len(res) == 4 and res[2] is not None:
                row["lse_rel_err"] = rel_err(res[2], res[3])
            if len(res) == 3:
                row["scheduler_metadata"] = {"dtype": str(res[2].dtype), "numel": res[2].numel()}
            row["ok"] = err < TOLERANCE and not row["nan"] and row.get("lse_rel_err", 0.0) < TOLERANCE
        except Exception as exc:
            row = {"case": name, "ok": False, "error": f"{type(exc).__name__}: {exc}",
                   "traceback": traceback.format_exc()[-1500:]}
        row["seconds"] = round(time.monotonic() - s, 2)
        rows.append(row)
    refused = refusals(fa)
    return {"tolerance": TOLERANCE, "cases": rows,
            "refusals": [{"call": n, "result": r, "ok": r != "DID NOT RAISE"} for n, r in refused],
            "passed": all(r["ok"] for r in rows) and all(r != "DID NOT RAISE" for _, r in refused),
            "device": torch.cuda.get_device_name(0), "torch": torch.__version__}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python3 -m shrinker.gpu.fa3_check", description=__doc__.splitlines()[0])
    ap.add_argument("--so", type=Path, required=True, help="our flash_ops.abi3.so")
    ap.add_argument("--py", type=Path, required=True, help="folder with the wheel's flash_attn.py and debug_utils.py")
    ap.add_argument("--out", type=Path, required=True, help="check.json")
    args = ap.parse_args(argv)
    try:
        fa = load_ops(args.so, args.py)
    except Exception as exc:
        print(f"error: cannot load {args.so}: {type(exc).__name__}: {exc}", file=sys.stderr)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"passed": False, "load_error": f"{type(exc).__name__}: {exc}"}) + "\n")
        return 1
    result = run_checks(fa)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    for r in result["cases"]:
        detail = f"rel_err {r['rel_err']:.2e}" if "rel_err" in r else r.get("error", "")[:200]
        if "lse_rel_err" in r:
            detail += f", lse {r['lse_rel_err']:.2e}"
        print(f"  {'ok  ' if r['ok'] else 'FAIL'} {r['case']}: {detail}")
    for r in result["refusals"]:
        print(f"  {'ok  ' if r['ok'] else 'FAIL'} refuses {r['call']}: {r['result']}")
    print(f"fa3 check: {'passed' if result['passed'] else 'FAILED'}", flush=True)
    return 0 if result["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
