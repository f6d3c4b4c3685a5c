"""CPU model of the flash3 backward's CTA dispatch in causal calls (session 49, helper f3bwdorder49;
src/backends/flash3/bwd_order.cuh, bench/notes/bwd-order-s49.md). No GPU, untimed.

Models the main backward kernel's grid (N key blocks, kv heads, batch): one CTA per key block,
non-persistent. Assumptions: one CTA per SM (132 SMs, all free at the start); the hardware
dispatches CTAs greedily in linear blockIdx order (x fastest, then the (kv head, batch) pairs one
after another) onto whichever SM frees first; a CTA's cost is 1 (fixed: K / V loads, dK / dV
epilogue) + the query blocks it visits (causal: those at or below its key block; bn keys, bm
query rows per block). Shapes: 16384 tokens x hidden 2048 (BENCHMARKS.md), so pairs = 16384 / S
x 2048 / D. Prints max SM load / mean load for the hardware order, an LPT bound (longest first
over all CTAs), and "x-major within sections of `sec` pairs" (bwd_order.cuh's order: every pair
of a section takes key block 0, then key block 1, ...). L2 effects (why sections, not all pairs
at once) and the power cap are not modelled.
Run: python3 bench/bwd_causal_order_model.py
"""
import heapq, math
def greedy(costs, g):
    h=[(0.0,c) for c in range(g)]
    for w in costs:
        l,c=heapq.heappop(h); heapq.heappush(h,(l+w,c))
    L=[l for l,_ in h]; return max(L)/(sum(L)/len(L))
def lpt(costs,g): return greedy(sorted(costs,reverse=True),g)
def run(name,s,bh,bn,bm,g=132,tc=1.0):
    N=math.ceil(s/bn); M=math.ceil(s/bm)
    per=[tc+ (M - (bn*x)//bm) for x in range(N)]   # query blocks touching rows >= bn*x
    order=[per[x] for _ in range(bh) for x in range(N)]   # hardware order: x fastest, heads sequential
    a=greedy(order,g); t=lpt(order,g)
    print(f"{name:14s} N {N:3d} x {bh:4d} heads: hw-order {a:.3f}  lpt {t:.3f}  gain {100*(a/t-1):+.1f} %")
for d,bn,bm in ((64,128,128),(128,128,80),(128,128,128),(256,64,64)):
  for s in (1024,1280,2048,2176,3328,4096,8192,16384):
    run(f"D{d} bm{bm} {s}",s,(16384//s)*(2048//d),bn,bm)
print("sectioned (x-major within sections of `sec` heads):")
def sect(name,s,bh,bn,bm,secs,g=132,tc=1.0):
    N=math.ceil(s/bn); M=math.ceil(s/bm)
    per=[tc+(M-(bn*x)//bm) for x in range(N)]
    out=[]
    for sec in secs:
        order=[]
        for h0 in range(0,bh,sec):
            hs=min(sec,bh-h0)
            for x in range(N):
                order += [per[x]]*hs
        out.append(f"sec{sec} {greedy(order,g):.3f}")
    hw=greedy([per[x] for _ in range(bh) for x in range(N)],g)
    print(f"{name:14s} hw {hw:.3f}  "+"  ".join(out))
for d,bn,bm in ((64,128,128),(128,128,80),(256,64,64)):
  for s in (1024,2048,2176,3328,4096,8192,16384):
    sect(f"D{d} {s}",s,(16384//s)*(2048//d),bn,bm,(4,8,16,32))
