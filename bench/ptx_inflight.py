#!/usr/bin/env python3
"""Check PTX for uses of in-flight wgmma accumulators.

A register that `wgmma.mma_async` writes belongs to the tensor cores until a
`wgmma.wait_group N` retires the commit group it is in (the N most recent groups stay in
flight). Any other instruction that names such a register in between reads or writes it
while the tensor cores do: a copy LLVM inserted through a phi, a promotion hoisted above
its wait. ptxas either serializes the wgmma (and says so) or the result is undefined.

The scan is linear over each kernel's instructions (loop back edges are not followed, so
it checks each path as laid out). Usage: ptx_inflight.py FILE.ptx...; exit 1 on a finding.
"""
import re
import sys


def findings(text):
    groups, open_group, bad = [], set(), []
    for n, line in enumerate(text.split("\n"), 1):
        t = line.strip()
        if t.startswith(".entry") or t.startswith(".visible .entry"):
            groups, open_group = [], set()
            continue
        if t.startswith("wgmma.mma_async"):
            regs = re.search(r"\{([^}]*)\}", t).group(1)
            open_group |= {r.strip() for r in regs.split(",")}
            continue
        if t.startswith("wgmma.commit_group"):
            groups.append(open_group)
            open_group = set()
            continue
        m = re.match(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", t)
        if m:
            keep = int(m.group(1))
            groups = groups[len(groups) - keep:] if keep else []
            continue
        if t.startswith("//") or t.endswith(":"):
            continue
        live = set().union(open_group, *groups)
        hit = live & set(re.findall(r"%r\d+", t))
        if hit:
            bad.append((n, t, sorted(hit)[:3]))
    return bad


def main(paths):
    status = 0
    for p in paths:
        bad = findings(open(p).read())
        if bad:
            status = 1
            print(f"{p}: {len(bad)} uses of in-flight wgmma registers, first: {bad[0]}")
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
