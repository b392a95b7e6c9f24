#!/usr/bin/env python3
# Event model of scenarios/spec/specs/quorum-lockstep.yaml, the reason for
# its lockstep_rounds: four contenders, near nodes {1,2},{3},{4},{5}, far
# links L each way for the fault's 5.5 s; each try waits for every reply,
# a failed one unwinds (its deletes land a link's latency later) and
# sleeps its delay, a won one holds 50-100 ms and releases. The rounds are
# checker/lockstep.go's: tries grouped within W, rounds of two or more
# tokens none with a majority, nobody holding, no key of another token
# (approximated: another try's set within 3L before the round). Prints how
# often a delay uniform over [lo, hi), or fixed, shows that many rounds in
# a row.  Usage: python3 docs/quorum-lockstep-model.py [RUNS]
import heapq, random, sys
L, W, END = 50.0, 50.0, 5500.0
NEAR = {0: {1, 2}, 1: {3}, 2: {4}, 3: {5}}
def lat(c, n): return 1.0 if n in NEAR[c] else L + 1.0
def simulate(lo, hi, fixed=None):
    q, seq = [], [0]
    def at(t, f, *a):
        seq[0] += 1; heapq.heappush(q, (t, seq[0], f, a))
    node = {n: None for n in range(1, 6)}   # token holding the node
    sets, holds, tok = [], [], [0]
    def try_(c, t):
        tok[0] += 1; k = tok[0]; won = set()
        for n in range(1, 6): at(t + lat(c, n), setnx, c, k, n, won)
        at(t + 2 * L + 2, end, c, k, won)
    def setnx(t, c, k, n, won):
        if node[n] is None:
            node[n] = k; won.add(n); sets.append((t, n, k))
    def dele(t, k, n):
        if node[n] == k: node[n] = None
    def end(t, c, k, won):
        if len(won) >= 3:
            cs = random.uniform(50, 100); holds.append((t, t + cs))
            for n in range(1, 6): at(t + cs + lat(c, n), dele, k, n)
            at(t + cs + 2 * L + 2, try_, c)
        else:
            for n in range(1, 6): at(t + lat(c, n), dele, k, n)
            d = fixed if fixed is not None else random.uniform(lo, hi)
            at(t + 2 * L + 2 + d, try_, c)
    for c in NEAR: at(random.uniform(0, 0.2), try_, c)
    while q:
        t, _, f, a = heapq.heappop(q)
        if t > END: break
        f(t, *a) if f is not try_ else try_(a[0], t)
    return sets, holds
def rows(sets, holds, rounds):
    tries, open_ = [], {}
    for t, n, k in sorted(sets):
        tr = open_.get(k)
        if tr is None or t - tr[0] > W:
            tr = [t, k, set()]; open_[k] = tr; tries.append(tr)
        tr[2].add(n)
    state, i, row, best = {}, 0, 0, 0
    evs = sorted(sets)
    while i < len(tries):
        j = i
        while j < len(tries) and tries[j][0] - tries[i][0] <= W: j += 1
        g, t0 = tries[i:j], tries[i][0]
        toks = {x[1] for x in g}
        held = any(a <= t0 < b for a, b in holds)
        # stray: a key set before t0 by a token outside the round, still there
        # (approximation: a non-member try's key within 3L before t0)
        stray = any(x[1] not in toks and t0 - 3 * L < x[0] < t0 for x in tries[max(0, i - 8):i])
        ok = len(toks) > 1 and all(len(x[2]) < 3 for x in g) and not held and not stray
        row = row + 1 if ok else 0
        best = max(best, row); i = j
    return best >= rounds
N = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
for name, lo, hi, fixed in (("[50,250)", 50, 250, None), ("[0,200)", 0, 200, None), ("fixed 500", 0, 0, 500.0)):
    runs = [simulate(lo, hi, fixed) for _ in range(N)]
    print(name, ' '.join('rounds %d: %.3f%%' % (r, 100.0 * sum(rows(s, h, r) for s, h in runs) / N) for r in (3, 4, 5, 6)))
