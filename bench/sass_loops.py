#!/usr/bin/env python3
"""The loops of a kernel's SASS (no GPU needed): for each loop (a backward branch; an
outer one counts its inner ones' instructions once), its instructions, the wgmma (QGMMA /
HGMMA) among them, those that issue to the integer pipe (`ALU`, half rate), the IMADs (FMA
pipe) and the most frequent opcodes. What a warp issues per pipeline stage, against the tensor time of the
stage's instructions, says whether a kernel can be issue-bound (or integer-pipe-bound)
before any timing.

    bash scripts/ptxas.sh
    python3 bench/sass_loops.py gpu-carry/bundles/time-wgmma-8192x8192x8192-f4e2m1 [...]

Each argument is a bundle directory (its kernel.ptx is assembled for its chip), a .cubin
or nvdisasm's text. PTXAS / NVDISASM name the tools (default: target/ptxas/bin).
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PTXAS = os.environ.get("PTXAS", os.path.join(ROOT, "target/ptxas/bin/ptxas"))
NVDISASM = os.environ.get("NVDISASM", os.path.join(ROOT, "target/ptxas/bin/nvdisasm"))


def sass_of(path):
    """nvdisasm's text of a bundle directory, a cubin or a text file."""
    if os.path.isdir(path):
        chip = "sm_90a"
        with open(os.path.join(path, "launch.txt")) as f:
            for line in f:
                if line.startswith("chip = "):
                    chip = line.split("=", 1)[1].strip()
        with tempfile.TemporaryDirectory() as tmp:
            cubin = os.path.join(tmp, "k.cubin")
            subprocess.run([PTXAS, f"-arch={chip}", os.path.join(path, "kernel.ptx"), "-o", cubin],
                           check=True)
            return sass_of(cubin)
    if path.endswith(".cubin"):
        return subprocess.run([NVDISASM, "-c", path], check=True, capture_output=True,
                              text=True).stdout
    with open(path) as f:
        return f.read()


def parse(text):
    """Instructions (address, text) in order, and the index each label stands at."""
    code, labels = [], {}
    for line in text.splitlines():
        m = re.match(r"\s*(\.L_x_\d+):", line)
        if m:
            labels[m.group(1)] = len(code)
            continue
        m = re.match(r"\s*/\*([0-9a-f]+)\*/\s+(.*?)\s*;", line)
        if m:
            code.append((int(m.group(1), 16), m.group(2)))
    return code, labels


def opcode(text):
    """The opcode without its guard and modifiers."""
    text = re.sub(r"^@!?U?P[T0-9]+\s+", "", text)
    return text.split()[0].split(".")[0]


def loops(code, labels):
    """(first, last) instruction indices of each loop: a branch back, not from the
    out-of-line waits ptxas places after the last EXIT (their returns branch back too)."""
    exits = [i for i, (_, text) in enumerate(code) if opcode(text) == "EXIT"]
    end = exits[-1] if exits else len(code)
    found = []
    for i, (_, text) in enumerate(code[:end]):
        m = re.match(r"(@!?U?P[T0-9]+\s+)?BRA\s+`\((\.L_x_\d+)\)", text)
        if m and labels.get(m.group(2), len(code)) <= i:
            found.append((labels[m.group(2)], i))
    return found


# Integer-pipe (ALU) opcodes: 64 results a clock an SM on sm_90 (16 lanes an SMSP), so a
# warp's instruction holds its SMSP's pipe 2 clocks. IMAD (every form: .HI, .SHL, .IADD,
# .MOV, .X, .WIDE) runs on the FMA pipe instead, counted apart: the translations move
# shifts and adds there (`mul.hi`, `IMAD.SHL`), and whether IMAD too holds its pipe 2
# clocks is for the device to show.
ALU = {"IADD3", "LOP3", "SHF", "PRMT", "ISETP", "SEL", "VIMNMX", "VIMNMX3", "LEA", "SGXT",
       "IMNMX", "IABS", "FLO", "POPC", "BMSK", "PLOP3", "BREV"}


def report(path):
    code, labels = parse(sass_of(path))
    print(f"{os.path.basename(path.rstrip('/'))}:")
    for a, b in loops(code, labels):
        body = [t for _, t in code[a:b + 1]]
        ops = collections.Counter(opcode(t) for t in body)
        mma = sum(v for k, v in ops.items() if k.endswith("GMMA"))
        if len(body) < 16 and not mma:
            continue  # spin-waits, small copies
        alu = sum(v for k, v in ops.items() if k in ALU)
        top = ", ".join(f"{k} {v}" for k, v in ops.most_common(8))
        print(f"  {code[a][0]:#07x}-{code[b][0]:#07x}: {len(body):5d} instructions,"
              f" {mma} wgmma, {alu} integer-pipe, {ops['IMAD']} IMAD | {top}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        report(p)
