#!/usr/bin/env python3
"""lowp's CPU scaled matmul against the numpy path a user would take, in one invocation.

For each workload and size it runs
  * lowp:   `lowp-run --gen ... --bench N` (JIT-compiled lowp-to-loops kernel, release build:
            the byte kernel where the formats and the host allow it, the GEMV or narrow form
            where M is small: the `dot, form` column), and
            the same with `--dot i8` (the byte kernel on pmaddubsw, where the host has
            VNNI and so runs vpdpbusd by default) and `--dot f32 --bf16-dot off` (the f32
            kernel on FMAs; by default, where the host has AVX512-BF16, formats the byte
            kernel does not take run it on bf16 pairs: `dot=bf16`);
  * numpy:  decode the codes (ml_dtypes astype, or a lookup table for a custom format),
            multiply by the broadcast block scales, then OpenBLAS sgemm (A @ B.T);
  * sgemm:  OpenBLAS sgemm alone on pre-decoded f32 operands (the ceiling to aim for),
and prints a table of GFLOP/s (2 M N K / median time) and the lowp / numpy ratio.

Usage: python3 bench/cpu_matmul.py [--sizes 512,1024,2048,16x8192x8192] [--runs 5]
                                   [--lowp-run PATH]
(a size is M = N = K, or M x N x K: 16x8192x8192 is the decode shape of LLM inference)
Needs numpy and ml_dtypes (pip install numpy ml_dtypes); builds nothing itself:
`cargo build --release -p lowp-run` first.
"""

import argparse
import os
import re
import subprocess
import sys
import time

import ml_dtypes
import numpy as np

# (name, lowp-run flags, numpy element dtype or (exponent, mantissa) bits of an all-finite
# custom format decoded by a table, block, scale kind)
WORKLOADS = [
    ("MXFP4 e2m1 mx/32", ["--lhs", "f4e2m1", "--rhs", "f4e2m1", "--layout", "mx"], ml_dtypes.float4_e2m1fn, 32, "e8m0"),
    ("FP8 e4m3 per-tensor", ["--lhs", "f8e4m3", "--rhs", "f8e4m3", "--layout", "per_tensor"], ml_dtypes.float8_e4m3fn, None, "tensor"),
    ("MXFP8 e4m3 mx/32", ["--lhs", "f8e4m3", "--rhs", "f8e4m3", "--layout", "mx"], ml_dtypes.float8_e4m3fn, 32, "e8m0"),
    ("NVFP4 e2m1 nvfp4/16", ["--lhs", "f4e2m1", "--rhs", "f4e2m1", "--layout", "nvfp4"], ml_dtypes.float4_e2m1fn, 16, "ue4m3"),
    ("custom f4e3m0 mx/32", ["--lhs", "f4e3m0", "--rhs", "f4e3m0", "--layout", "mx"], (3, 0), 32, "e8m0"),
    ("MXFP6 e2m3 mx/32", ["--lhs", "f6e2m3", "--rhs", "f6e2m3", "--layout", "mx"], ml_dtypes.float6_e2m3fn, 32, "e8m0"),
    ("custom f7e2m4 per-tensor", ["--lhs", "f7e2m4", "--rhs", "f7e2m4", "--layout", "per_tensor"], (2, 4), None, "tensor"),
]


def custom_table(e, m):
    """The values of every code of the all-finite custom format fNeXmY (IEEE bias, no inf
    or NaN: lowp-formats' custom formats), the sign in the top bit: f4e3m0 is +-{0, 0.25,
    0.5, 1, 2, 4, 8, 16}."""
    bias = 2 ** (e - 1) - 1
    values = []
    for code in range(2 ** (1 + e + m)):
        field, mant = (code >> m) & (2**e - 1), code & (2**m - 1)
        if field == 0:
            v = mant / 2**m * 2.0 ** (1 - bias)
        else:
            v = (1 + mant / 2**m) * 2.0 ** (field - bias)
        values.append(-v if code >> (e + m) else v)
    return np.array(values, dtype=np.float32)


def median_time(fn, runs):
    fn()  # warm-up
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return sorted(times)[len(times) // 2]


def numpy_path(m, n, k, dtype, block, scale_kind, runs, rng):
    """Median times of (decode + scale + sgemm) and of sgemm alone."""
    table = custom_table(*dtype) if isinstance(dtype, tuple) else None
    if table is not None:
        ncodes = len(table)
    elif dtype == ml_dtypes.float4_e2m1fn:
        ncodes = 16
    elif dtype == ml_dtypes.float6_e2m3fn:
        ncodes = 64
    else:
        ncodes = 256
    a_codes = rng.integers(0, ncodes, size=(m, k), dtype=np.uint8)
    b_codes = rng.integers(0, ncodes, size=(n, k), dtype=np.uint8)
    if dtype == ml_dtypes.float8_e4m3fn:
        # Avoid the NaN codes 0x7F / 0xFF.
        a_codes[(a_codes & 0x7F) == 0x7F] = 0
        b_codes[(b_codes & 0x7F) == 0x7F] = 0
    if scale_kind == "tensor":
        sa = np.float32(rng.uniform(0.5, 4))
        sb = np.float32(rng.uniform(0.5, 4))
    elif scale_kind == "e8m0":
        sa = np.exp2(rng.integers(-4, 4, size=(m, k // block))).astype(np.float32)
        sb = np.exp2(rng.integers(-4, 4, size=(n, k // block))).astype(np.float32)
    else:
        sa = rng.uniform(0.5, 4, size=(m, k // block)).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)
        sb = rng.uniform(0.5, 4, size=(n, k // block)).astype(ml_dtypes.float8_e4m3fn).astype(np.float32)

    def decode(codes):
        if table is not None:
            return table[codes]
        return codes.view(dtype).astype(np.float32)

    def scaled(codes, s):
        if block is None:
            return decode(codes) * s
        return decode(codes) * np.repeat(s, block, axis=1)

    def full():
        return scaled(a_codes, sa) @ scaled(b_codes, sb).T

    a32 = scaled(a_codes, sa)
    b32 = scaled(b_codes, sb)
    return median_time(full, runs), median_time(lambda: a32 @ b32.T, runs)


def lowp_path(lowp_run, m, n, k, flags, runs):
    """Median seconds, (pipeline ms, JIT ms) and the kernel taken (`dot=` and `form=`)."""
    cmd = [lowp_run, "--gen", "--m", str(m), "--n", str(n), "--k", str(k), *flags, "--bench", str(runs)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    ms = float(re.search(r"median_ms=([0-9.]+)", out).group(1))
    compile_ms = re.search(r"pipeline_ms=([0-9.]+) jit_ms=([0-9.]+)", out)
    dot = re.search(r"dot=(\w+)", out).group(1)
    form = re.search(r"form=(\w+)", out)
    if form:
        dot = f"{dot} {form.group(1)}"
    return ms / 1e3, (float(compile_ms.group(1)), float(compile_ms.group(2))), dot


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--sizes", default="512,1024,2048")
    p.add_argument("--runs", type=int, default=5)
    here = os.path.dirname(os.path.abspath(__file__))
    p.add_argument("--lowp-run", default=os.path.join(here, "..", "target", "release", "lowp-run"))
    args = p.parse_args()
    if not os.path.exists(args.lowp_run):
        sys.exit(f"{args.lowp_run} not found: cargo build --release -p lowp-run")
    rng = np.random.default_rng(0)
    def shape(s):
        dims = [int(d) for d in s.split("x")]
        return tuple(dims * 3) if len(dims) == 1 else tuple(dims)

    sizes = [shape(s) for s in args.sizes.split(",")]
    rows = []
    compile_1024 = None
    # All lowp runs first: OpenBLAS's worker threads keep spinning for a while after a
    # GEMM in this process and would steal the cores from a lowp-run started meanwhile.
    lowp_times = {}
    for name, flags, _, _, _ in WORKLOADS:
        for s in sizes:
            t, comp, dot = lowp_path(args.lowp_run, *s, flags, args.runs)
            t8, _, dot8 = lowp_path(args.lowp_run, *s, [*flags, "--dot", "i8"], args.runs)
            t32, _, _ = lowp_path(args.lowp_run, *s, [*flags, "--dot", "f32", "--bf16-dot", "off"], args.runs)
            lowp_times[(name, s)] = (t, dot, t8, dot8, t32)
            if s == (1024, 1024, 1024) and compile_1024 is None:
                compile_1024 = (name, comp)
            print(f"  measured lowp {name} {s}", file=sys.stderr)
    for name, flags, dtype, block, scale_kind in WORKLOADS:
        for s in sizes:
            flops = 2.0 * s[0] * s[1] * s[2]
            nt, st = numpy_path(*s, dtype, block, scale_kind, args.runs, rng)
            lt, dot, lt8, dot8, lt32 = lowp_times[(name, s)]
            g8 = f"{flops / lt8 / 1e9:.1f}" if dot8.startswith("i8") else "-"
            rows.append((name, s, dot, flops / lt / 1e9, g8, flops / lt32 / 1e9, flops / nt / 1e9, flops / st / 1e9))
            print(f"  measured numpy {name} {s}", file=sys.stderr)
    print(f"threads: {os.cpu_count()} cores; numpy {np.__version__}, ml_dtypes {ml_dtypes.__version__}")
    print(
        "| workload | M x N x K | dot, form | lowp GFLOP/s | lowp --dot i8 | lowp f32 FMAs "
        "| numpy decode+scale+sgemm GFLOP/s | lowp / numpy | sgemm alone GFLOP/s |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name, s, dot, lg, g8, lg32, ng, sg in rows:
        print(
            f"| {name} | {'x'.join(map(str, s))} | {dot} | {lg:.1f} | {g8} | {lg32:.1f} | {ng:.1f} "
            f"| {lg / ng:.2f}x | {sg:.1f} |"
        )
    if compile_1024:
        name, (pipe, jit) = compile_1024
        print(f"compile ({name}, 1024^3): lowp pipeline {pipe:.1f} ms, JIT (LLVM -O3 + codegen) {jit:.1f} ms")


if __name__ == "__main__":
    main()
