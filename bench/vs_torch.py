#!/usr/bin/env python3
"""lowp's FP8 results beside torch._scaled_mm (cuBLASLt) on the same inputs.

Each DIR is what `lowp-gpu-run BUNDLE --dump OUT` wrote for one kernel: the inputs as the
entry takes them (a.bin, sa.bin, b.bin, sb.bin, bias.bin), problem.txt, lowp's result
(out.bin, f32) and the lowp-formats oracle's (oracle.bin, f64). For E4M3 / E5M2 operands
with per-tensor scales it runs torch._scaled_mm (A row-major, B^T column-major, f32 out,
the bias added after) and prints one line per DIR:

  vs_torch NAME: lowp max_rel=.. torch max_rel=.. lowp-torch max_abs=.. (max |oracle| ..)

max_rel is the largest |x - oracle| over max |oracle| (of the whole result). Other formats
and layouts are skipped with the reason. Exit 1 when torch is missing or a case fails.
"""
import os
import sys

import numpy as np


def problem(d):
    out = {}
    for line in open(os.path.join(d, "problem.txt")):
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


def main(dirs):
    try:
        import torch
    except ImportError:
        print("vs_torch: torch is not importable")
        return 1
    types = {"f8e4m3": torch.float8_e4m3fn, "f8e5m2": torch.float8_e5m2}
    status = 0
    for d in dirs:
        name = os.path.basename(os.path.normpath(d))
        p = problem(d)
        if p.get("lhs") not in types or p.get("rhs") not in types:
            print(f"vs_torch {name}: skipped ({p.get('lhs')} x {p.get('rhs')}: not FP8)")
            continue
        if p.get("lhs_layout") != "per_tensor" or p.get("rhs_layout") != "per_tensor":
            print(f"vs_torch {name}: skipped (layouts {p.get('lhs_layout')}, "
                  f"{p.get('rhs_layout')}: the comparison takes per-tensor scales)")
            continue
        m, n, k = int(p["m"]), int(p["n"]), int(p["k"])
        raw = lambda f, t: np.fromfile(os.path.join(d, f), dtype=t)
        try:
            dev = "cuda"
            a = torch.from_numpy(raw("a.bin", np.uint8).reshape(m, k)).to(dev)
            b = torch.from_numpy(raw("b.bin", np.uint8).reshape(n, k)).to(dev)
            a = a.view(types[p["lhs"]])
            b = b.view(types[p["rhs"]])
            sa = torch.tensor(float(raw("sa.bin", np.float32)[0]), device=dev)
            sb = torch.tensor(float(raw("sb.bin", np.float32)[0]), device=dev)
            ref = torch._scaled_mm(a, b.t(), scale_a=sa, scale_b=sb, out_dtype=torch.float32)
            if p.get("bias") == "true":
                ref = ref + torch.from_numpy(raw("bias.bin", np.float32)).to(dev)
            ref = ref.cpu().numpy().astype(np.float64).reshape(m, n)
        except Exception as e:  # cuBLASLt refuses some mixes (E5M2 x E5M2)
            print(f"vs_torch {name}: torch._scaled_mm failed: {type(e).__name__}: {e}")
            status = 1
            continue
        oracle = raw("oracle.bin", np.float64).reshape(m, n)
        lowp = raw("out.bin", np.float32).astype(np.float64).reshape(m, n)
        scale = max(np.abs(oracle).max(), np.finfo(np.float32).tiny)
        rel = lambda x: np.abs(x - oracle).max() / scale
        print(f"vs_torch {name}: {m}x{n}x{k} {p['lhs']} x {p['rhs']} "
              f"lowp max_rel={rel(lowp):.3e} torch max_rel={rel(ref):.3e} "
              f"lowp-torch max_abs={np.abs(lowp - ref).max():.3e} (max |oracle| {scale:.3e})")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
