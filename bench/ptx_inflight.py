#!/usr/bin/env python3
"""Check PTX for uses of in-flight wgmma accumulators.

A register that `wgmma.mma_async` writes belongs to the tensor cores until a
`wgmma.wait_group N` retires the commit group it is in (the N most recent groups stay in
flight). Any other instruction that names such a register in between reads or writes it
while the tensor cores do: a copy LLVM inserted through a phi, a promotion hoisted above
its wait. ptxas either serializes the wgmma (and says so) or the result is undefined.
(A later wgmma naming the same registers is the chaining the instruction allows.)

The check follows each kernel's control flow: basic blocks split at labels and branches,
and a forward dataflow to a fixed point over "register -> commit groups issued since its
group" (at a join the union, each register as young as on any path in), so a copy on a
branch edge, a loop's back edge or a merged tail after two loops is seen wherever LLVM
laid it out. Usage: ptx_inflight.py FILE.ptx...; exit 1 on a finding.
"""

import re
import sys

# Groups older than this are as old as it (bounds the dataflow on loops without a wait).
OLDEST = 16
OPEN = -1  # issued, not yet committed

BRANCH = re.compile(r"^(@!?%\w+\s+)?bra(\.uni)?\s+(\$?[\w.]+);")
REGISTER = re.compile(r"%[a-z]+\d+")


def kernels(text):
    """Each `.entry`'s instruction lines (numbered), from its body's `{` to its `}`."""
    lines = text.split("\n")
    n = 0
    while n < len(lines):
        if re.match(r"\s*(\.visible\s+)?\.entry\b", lines[n]):
            start = n
            while n < len(lines) and lines[n].rstrip() != "{":
                n += 1
            body, depth = [], 1
            n += 1
            # (Inline assembly opens scopes of its own: `{` .. `}` lines.)
            while n < len(lines):
                t = lines[n].strip()
                depth += (t == "{") - (t == "}")
                if depth == 0:
                    break
                body.append((n + 1, t))
                n += 1
            yield start + 1, body
        n += 1


def blocks(body):
    """Basic blocks as (label or None, [(line, text)], successors by label)."""
    out, cur, label, anon = [], [], None, 0

    def close(succ):
        nonlocal cur, label
        out.append([label, cur, succ])
        cur, label = [], None

    for n, t in body:
        if not t or t.startswith("//"):
            continue
        if re.match(r"^\$?[\w.]+:$", t):
            if cur or label is not None:
                close(["<next>"])
            label = t[:-1]
            continue
        cur.append((n, t))
        m = BRANCH.match(t)
        if m:
            close([m.group(3)] + (["<next>"] if m.group(1) else []))
        elif re.match(r"^(@!?%\w+\s+)?(ret|exit|trap);", t):
            close([] if not t.startswith("@") else ["<next>"])
    if cur or label is not None:
        close([])
    # Name the unnamed blocks, resolve fall-through.
    for i, b in enumerate(out):
        if b[0] is None:
            b[0] = f"<anon{anon}>"
            anon += 1
    names = [b[0] for b in out]
    for i, b in enumerate(out):
        b[2] = [
            (names[i + 1] if s == "<next>" else s)
            for s in b[2]
            if s != "<next>" or i + 1 < len(out)
        ]
    return out


def step(state, n, t, bad):
    """The state after instruction `t` (line `n`); uses of in-flight registers into `bad`."""
    if t.startswith("wgmma.mma_async"):
        regs = re.search(r"\{([^}]*)\}", t).group(1)
        state = dict(state)
        for r in regs.split(","):
            state[r.strip()] = OPEN
        return state
    if t.startswith("wgmma.commit_group"):
        return {r: min(a + 1, OLDEST) for r, a in state.items()}
    m = re.match(r"wgmma\.wait_group\.sync\.aligned\s+(\d+)", t)
    if m:
        keep = int(m.group(1))
        return {r: a for r, a in state.items() if a < keep}
    if t.startswith(".") or t in ("{", "}"):
        return state
    hit = state.keys() & set(REGISTER.findall(t))
    if hit and bad is not None:
        bad.append((n, t, sorted(hit)[:3]))
    return state


def join(a, b):
    out = dict(a)
    for r, age in b.items():
        out[r] = min(out.get(r, age), age)
    return out


def findings(text):
    bad = []
    for _, body in kernels(text):
        bs = blocks(body)
        if not bs:
            continue
        index = {b[0]: i for i, b in enumerate(bs)}
        preds = {i: [] for i in range(len(bs))}
        for i, (_, _, succ) in enumerate(bs):
            for s in succ:
                if s in index:
                    preds[index[s]].append(i)
        state_in = {0: {}}
        state_out = {}
        work = list(range(len(bs)))
        while work:
            i = work.pop(0)
            if i != 0 and not any(p in state_out for p in preds[i]):
                continue
            s = {}
            for p in preds[i]:
                if p in state_out:
                    s = join(s, state_out[p])
            if i == 0:
                s = join(s, state_in[0])
            for n, t in bs[i][1]:
                s = step(s, n, t, None)
            if state_out.get(i) != s:
                state_out[i] = s
                for succ in bs[i][2]:
                    if succ in index and index[succ] not in work:
                        work.append(index[succ])
        # The findings, once, from the fixed point's block entries.
        for i, b in enumerate(bs):
            s = {}
            for p in preds[i]:
                s = join(s, state_out.get(p, {}))
            for n, t in b[1]:
                s = step(s, n, t, bad)
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
