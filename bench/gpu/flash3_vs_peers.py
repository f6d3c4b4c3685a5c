#!/usr/bin/env python3
"""attnkit:flash3 forward vs torch SDPA (cuDNN, FlashAttention-2) in ONE process (BENCHMARKS.md).

flash3 is reached through bench/gpu/flash3_shim.cpp (a C entry point, ctypes) on torch tensors.
Shapes: 16384 tokens, hidden 2048: B = 16384/S, H = 2048/D, bf16, causal and not.
Method: CUDA events per call, warm-up first, median of --reps calls, inputs rotated over 3 sets
(> 3 x L2), ~0.3 s pause between implementations. Also cross-checks flash3's output against
cuDNN's (relative Frobenius error) at every shape.

usage: flash3_vs_peers.py --lib build/libflash3_shim.so --json out.json [--s 512,1024] [--d 64]
"""
import argparse
import ctypes
import json
import math
import statistics
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def load(lib_path):
    lib = ctypes.CDLL(lib_path)
    f = lib.flash3_forward
    P, I64, I64P = ctypes.c_void_p, ctypes.c_int64, ctypes.POINTER(ctypes.c_int64)
    f.argtypes = [P, P, P, P, P, I64P, I64P, I64P, I64P, I64, I64, I64, I64, I64, I64,
                  ctypes.c_int, ctypes.c_int, ctypes.c_double, P, ctypes.c_char_p, ctypes.c_int]
    f.restype = ctypes.c_int
    lib.flash3_set_tuning.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int]
    lib.flash3_set_knobs.argtypes = [ctypes.c_int] * 5
    lib.flash3_set_knobs2.argtypes = [ctypes.c_int] * 4

    def optional(name, nargs):  # a knob setter of a later session; None in older shims
        fn = getattr(lib, name, None)
        if fn is not None:
            fn.argtypes = [ctypes.c_int] * nargs
        return fn

    knobs3 = optional("flash3_set_knobs3", 1)  # round 2 (kv_tile_256)
    knobs4 = optional("flash3_set_knobs4", 1)  # round 3 (kv_ring_256)
    knobs5 = optional("flash3_set_knobs5", 2)  # session 4 (uniform_desc, lazy_rescale)
    knobs_qreg = optional("flash3_set_knobs_qreg", 1)  # session 5 (q_regs)
    knobs_diet = optional("flash3_set_knobs_diet", 1)  # session 7 (tile_diet)
    knobs_tmaepi = optional("flash3_set_knobs_tmaepi", 1)  # session 7 (tma_epilogue)
    knobs_rotate = optional("flash3_set_knobs_rotate", 1)  # session 13 (rotate_rounds)
    knobs_prefetch = optional("flash3_set_knobs_prefetch", 2)  # session 14 (q/kv_prefetch)
    knobs_epi = optional("flash3_set_knobs_epi", 1)  # session 14 (epi_wide)
    knobs_tail = optional("flash3_set_knobs_tail", 3)  # session 19 (tail_split, min, max_grid)
    knobs_tail_probe = optional("flash3_set_knobs_tail_probe", 1)  # session 19 (measurement)
    knobs_tc = optional("flash3_set_knobs_tc", 1)  # session 40 (tc_row_sum)
    knobs_lpt = optional("flash3_set_knobs_lpt", 2)  # session 46 (lpt_schedule, section MB)
    knobs_lpt_partial = optional("flash3_set_knobs_lpt_partial", 1)  # session 61 (pct)
    knobs_skip = optional("flash3_set_knobs_skip", 1)  # session 48 (skip_masked_turn)
    knobs_mctail = optional("flash3_set_knobs_mctail", 1)  # session 57 (multicast_tail)
    knobs_edge_nc = optional("flash3_set_knobs_edge_nc", 1)  # session 58 helper (edge_nc_twin)
    knobs_smem_pad = optional("flash3_set_knobs_smem_pad", 1)  # session 65 (smem_pad, bytes)
    knobs_rtab = optional("flash3_set_knobs_round_table", 1)  # session 70 (round_table)
    last_slot = getattr(lib, "flash3_last_slot", None)
    if last_slot is not None:
        last_slot.restype = ctypes.c_int

    def set_tuning(pingpong=-1, persistent=1, wide_n=0, q_bufs=2, scheduler=-1, wgs=0, overlap=1,
                   ordered=-1, early=0, vst=2, cluster=-1, legacy=0, kv256=0, ring=0, uni=-1, lazy=-1,
                   qreg=0, diet=-1, tmaepi=-1, rotate=-1, qpf=-1, kvpf=0,
                   epi=-1, tail=-1, tailmin=-1, grid=0, tprobe=0, tc=-1, lpt=-1, lptmb=0,
                   skip=-1, mctail=-1, edgenc=-1, lptw=-1, smempad=0, rtab=-1):
        lib.flash3_set_tuning(pingpong, persistent, wide_n)
        lib.flash3_set_knobs(q_bufs, scheduler, wgs, overlap, ordered)
        lib.flash3_set_knobs2(early, vst, cluster, legacy)
        if knobs3 is not None:
            knobs3(kv256)
        if knobs4 is not None:
            knobs4(ring)
        if knobs5 is not None:  # -1: the compiled default
            knobs5(uni, lazy)
        if knobs_qreg is not None:
            knobs_qreg(qreg)
        if knobs_diet is not None:
            knobs_diet(diet)
        if knobs_tmaepi is not None:
            knobs_tmaepi(tmaepi)
        if knobs_rotate is not None:
            knobs_rotate(rotate)
        if knobs_prefetch is not None:
            knobs_prefetch(qpf, kvpf)
        if knobs_epi is not None:
            knobs_epi(epi)
        if knobs_tail is not None:
            knobs_tail(tail, tailmin, grid)
        if knobs_tail_probe is not None:
            knobs_tail_probe(tprobe)
        if knobs_tc is not None:
            knobs_tc(tc)
        elif tc != -1:
            raise SystemExit("tc: the shim has no flash3_set_knobs_tc")
        if knobs_lpt is not None:
            knobs_lpt(lpt, lptmb)
        elif lpt != -1 or lptmb != 0:
            raise SystemExit("lpt: the shim has no flash3_set_knobs_lpt")
        if knobs_lpt_partial is not None:
            knobs_lpt_partial(lptw)
        elif lptw != -1:
            raise SystemExit("lptw: the shim has no flash3_set_knobs_lpt_partial")
        if knobs_skip is not None:
            knobs_skip(skip)
        elif skip != -1:
            raise SystemExit("skip: the shim has no flash3_set_knobs_skip")
        if knobs_mctail is not None:  # (the multicast twin with the split tail)
            knobs_mctail(mctail)
        elif mctail != -1:
            raise SystemExit("mctail: the shim has no flash3_set_knobs_mctail")
        if knobs_edge_nc is not None:  # (D 64 slot 14's non-causal twin, all edge-diet parts)
            knobs_edge_nc(edgenc)
        elif edgenc != -1:
            raise SystemExit("edgenc: the shim has no flash3_set_knobs_edge_nc")
        if knobs_smem_pad is not None:  # (unused shared memory added to each launch)
            knobs_smem_pad(smempad)
        elif smempad != 0:
            raise SystemExit("smempad: the shim has no flash3_set_knobs_smem_pad")
        if knobs_rtab is not None:  # (the non-causal rotated rounds rebalanced)
            knobs_rtab(rtab)
        elif rtab != -1:
            raise SystemExit("rtab: the shim has no flash3_set_knobs_round_table")
    set_tuning.has_diet = knobs_diet is not None
    set_tuning.last_slot = last_slot
    last_tail = getattr(lib, "flash3_last_tail_tiles", None)  # session 19
    if last_tail is not None:
        last_tail.restype = ctypes.c_int
    set_tuning.last_tail = last_tail
    last_lpt = getattr(lib, "flash3_last_lpt_rounds", None)  # session 46
    if last_lpt is not None:
        last_lpt.restype = ctypes.c_int
    set_tuning.last_lpt = last_lpt
    last_lpt_gain = getattr(lib, "flash3_last_lpt_gain", None)  # session 48
    if last_lpt_gain is not None:
        last_lpt_gain.restype = ctypes.c_double
    set_tuning.last_lpt_gain = last_lpt_gain
    set_tuning.has_tmaepi = knobs_tmaepi is not None
    set_tuning.has_rotate = knobs_rotate is not None
    set_tuning.has_prefetch = knobs_prefetch is not None
    return f, set_tuning


def strides(t):
    return (ctypes.c_int64 * 4)(*t.stride())


def make_flash3(fn, q, k, v, out, lse, causal):
    """A call of the shim's flash3_forward; causal: False / True (top-left) or 2 (bottom-right,
    flash3_shim.cpp)."""
    b, sq, hq, d = q.shape
    sk, hkv = k.shape[1], k.shape[2]
    err = ctypes.create_string_buffer(512)
    args = [q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(), lse.data_ptr(),
            strides(q), strides(k), strides(v), strides(out), b, sq, sk, hq, hkv, d,
            1 if q.dtype == torch.bfloat16 else 0, 2 if causal == 2 else 1 if causal else 0,
            1.0 / math.sqrt(d),
            torch.cuda.current_stream().cuda_stream, err, 512]

    def run():
        if fn(*args) != 0:
            raise RuntimeError(err.value.decode())
    return run


def make_sdpa(backend, q, k, v, causal):
    qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)

    def run():
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(qt, kt, vt, is_causal=causal)
    return run


def time_it(runs, reps, warmup=10):
    for i in range(warmup):
        runs[i % len(runs)]()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(reps)]
    for i in range(reps):
        ev[i][0].record()
        runs[i % len(runs)]()
        ev[i][1].record()
    torch.cuda.synchronize()
    return statistics.median(a.elapsed_time(b) for a, b in ev)


def ceilings():
    a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
    ms = time_it([lambda: a @ b], 30, 5)
    gemm = 2 * 8192 ** 3 / ms / 1e9
    x = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    ms = time_it([lambda: y.copy_(x)], 30, 5)
    bw = 2 * (1 << 30) / ms / 1e9  # bytes per ms / 1e9 = TB/s
    return gemm, bw


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--json", required=True)
    ap.add_argument("--s", default="512,1024,2048,4096,8192,16384")
    ap.add_argument("--d", default="64,128,256")
    ap.add_argument("--causal", default="0,1")
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("--pause", type=float, default=0.3)
    ap.add_argument("--ab", default="", help="A/B flash3 variants on these D:S pairs, e.g. 128:1024,128:16384")
    ap.add_argument("--ab-more", action="store_true", help="also ping-pong and wide-tile variants")
    ap.add_argument("--ab-set", default="s3", help="s3: session-3 variants (early rescale, 3 V stages, ...); "
                    "v5: the session-2 list")
    a = ap.parse_args()
    fn, set_tuning = load(a.lib)
    ab = {tuple(int(x) for x in p.split(":")) for p in a.ab.split(",") if p}
    torch.manual_seed(0)
    gemm, bw = ceilings()
    print(f"ceilings: bf16 GEMM 8192^3 {gemm:.0f} TFLOP/s, copy {bw:.2f} TB/s", flush=True)
    rows = []
    dt = torch.bfloat16
    for d in [int(x) for x in a.d.split(",")]:
        for s in [int(x) for x in a.s.split(",")]:
            for causal in [bool(int(x)) for x in a.causal.split(",")]:
                b, h = 16384 // s, 2048 // d
                sets = []
                for _ in range(3):
                    q, k, v = (torch.randn(b, s, h, d, device="cuda", dtype=dt) for _ in range(3))
                    out = torch.empty_like(q)
                    lse = torch.empty(b, h, s, device="cuda", dtype=torch.float32)
                    sets.append((q, k, v, out, lse))
                flops = 4 * b * h * s * s * d / (2 if causal else 1)
                impls = {
                    "attnkit:flash3": [make_flash3(fn, q, k, v, o, l, causal) for q, k, v, o, l in sets],
                    "torch:cudnn": [make_sdpa(SDPBackend.CUDNN_ATTENTION, q, k, v, causal) for q, k, v, _, _ in sets],
                    "torch:flash": [make_sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, causal) for q, k, v, _, _ in sets],
                }
                if (d, s) in ab:  # variants, same shape, same process (not in the JSON rows)
                    if a.ab_set == "v5":
                        variants = [("default", {}), ("ordered-softmax", {"ordered": 1}),
                                    ("no-overlap", {"overlap": 0}), ("q-1buf", {"q_bufs": 1}),
                                    ("sched-static", {"scheduler": 0}), ("sched-dynamic", {"scheduler": 1}),
                                    ("non-persistent", {"persistent": 0})]
                        if d == 64:
                            variants.append(("2-consumer-wgs", {"wgs": 2}))
                    elif a.ab_set == "s3r1":  # session 3, run 1
                        variants = [("default", {}), ("early-rescale", {"early": 1}), ("v-3stages", {"vst": 3}),
                                    ("early+v3", {"early": 1, "vst": 3}), ("q-1buf", {"q_bufs": 1}),
                                    ("sched-dynamic", {"scheduler": 1}), ("default-again", {})]
                        if d >= 128 and not causal:
                            variants[1:1] = [("cluster2", {"cluster": 2}), ("cluster2+early", {"cluster": 2, "early": 1}),
                                             ("cluster2+early+v3", {"cluster": 2, "early": 1, "vst": 3})]
                    elif a.ab_set == "s3r2":  # round 2: D = 256 128-key tiles, interleaved with cuDNN
                        variants = [("default", {}), ("kv128", {"kv256": 128}), ("cudnn", None),
                                    ("default-again", {}), ("kv128-again", {"kv256": 128}),
                                    ("cudnn-again", None)]
                        if d != 256:
                            variants = [v for v in variants if not v[0].startswith("kv128")]
                    elif a.ab_set == "s3r3":  # round 3: + the K/V chunk ring, interleaved with cuDNN
                        variants = [("default", {}), ("kv128", {"kv256": 128}), ("kv128-ring", {"ring": 1}),
                                    ("cudnn", None), ("default-again", {}), ("kv128-again", {"kv256": 128}),
                                    ("kv128-ring-again", {"ring": 1}), ("cudnn-again", None)]
                        if d != 256:
                            variants = [v for v in variants if not v[0].startswith("kv128")]
                    elif a.ab_set == "s5q":  # session 5 (helper f3fwd9): Q in registers, D = 128
                        variants = [("default", {}), ("base", {"uni": 0, "lazy": 0}), ("qreg", {"qreg": 1}),
                                    ("uni+lazy", {"uni": 1, "lazy": 1}), ("cudnn", None)]
                        variants = variants + [(n + "-again", kw) for n, kw in variants]
                    elif a.ab_set == "s7d":  # session 7 (helper f3fwd15): per-tile diet, D = 128
                        if not getattr(set_tuning, "has_diet", False):
                            raise SystemExit("--ab-set s7d: the shim has no flash3_set_knobs_diet")
                        variants = [("default", {}), ("nodiet", {"diet": 0}), ("diet", {"diet": 1}),
                                    ("cudnn", None)]
                        if d == 64:  # helper f3fwd16: D = 64 diet also with uniform descriptors (slot 14)
                            variants[3:3] = [("diet-uni", {"diet": 1, "uni": 1})]
                        variants = variants + [(n + "-again", kw) for n, kw in variants]
                    elif a.ab_set == "s7t":  # session 7 (helper f3fwd17): epilogue via smem + TMA store
                        if not getattr(set_tuning, "has_tmaepi", False):
                            raise SystemExit("--ab-set s7t: the shim has no flash3_set_knobs_tmaepi")
                        # default: the auto (session 8: TMA epilogue at D 128, not at D 64);
                        # notmaepi / tmaepi: the diet's STG / TMA epilogue forced
                        variants = [("default", {}), ("notmaepi", {"tmaepi": 0}), ("tmaepi", {"tmaepi": 1}),
                                    ("cudnn", None)]
                        variants = variants + [(n + "-again", kw) for n, kw in variants]
                    elif a.ab_set == "s4f":  # session 4 (helper f3fwd7): uniform descriptors, lazy rescale
                        variants = [("default", {}), ("uniform", {"uni": 1, "lazy": 0}),
                                    ("lazy", {"uni": 0, "lazy": 1}), ("uni+lazy", {"uni": 1, "lazy": 1}),
                                    ("base", {"uni": 0, "lazy": 0}), ("cudnn", None)]
                        variants = variants + [(n + "-again", kw) for n, kw in variants]
                    else:  # session 3, final run: the descriptor change (default) against v5's, interleaved
                        variants = [("default", {}), ("legacy-desc", {"legacy": 1}), ("early-rescale", {"early": 1}),
                                    ("default-again", {}), ("legacy-desc-again", {"legacy": 1})]
                        if d >= 128 and not causal:
                            variants[3:3] = [("cluster2", {"cluster": 2})]
                    if a.ab_more:
                        variants += [("pingpong-off", {"pingpong": 0}), ("pingpong-on", {"pingpong": 1})]
                        if d == 128 and not causal:
                            variants.append(("wide-n", {"wide_n": 1}))
                    for name, kw in variants:
                        if kw is None:  # a peer in the same interleaved sequence
                            time.sleep(a.pause)
                            m = time_it(impls["torch:cudnn"], a.reps)
                            print(f"  A/B D={d} S={s} causal={int(causal)} {name} {flops / m / 1e9:6.1f} TFLOP/s",
                                  flush=True)
                            continue
                        set_tuning(**kw)
                        if kw:  # a variant must agree with cuDNN too
                            impls["attnkit:flash3"][0]()
                            ref = impls["torch:cudnn"][0]().transpose(1, 2).float()
                            rel = ((sets[0][3].float() - ref).norm() / ref.norm()).item()
                            if not rel < 2e-2:
                                print(f"  !! flash3[{name}] disagrees with cuDNN: rel {rel}")
                        time.sleep(a.pause)
                        m = time_it(impls["attnkit:flash3"], a.reps)
                        slot = set_tuning.last_slot() if getattr(set_tuning, "last_slot", None) else -1
                        set_tuning()
                        print(f"  A/B D={d} S={s} causal={int(causal)} flash3[{name}] {flops / m / 1e9:6.1f} TFLOP/s"
                              f" (slot {slot})", flush=True)
                # Cross-check flash3 against cuDNN on set 0.
                impls["attnkit:flash3"][0]()
                ref = impls["torch:cudnn"][0]().transpose(1, 2).float()
                got = sets[0][3].float()
                rel = ((got - ref).norm() / ref.norm()).item()
                ms = {}
                for name, runs in impls.items():
                    time.sleep(a.pause)
                    try:
                        ms[name] = time_it(runs, a.reps)
                    except Exception as e:  # a peer that cannot run this shape
                        print(f"  {name} failed: {e}")
                        continue
                    rows.append({"impl": name, "pass": "fwd", "dtype": "bf16", "b": b, "h": h,
                                 "s": s, "d": d, "causal": causal, "ms": round(ms[name], 4),
                                 "tflops": round(flops / ms[name] / 1e9, 1)})
                f3, cd, fa = (ms.get(n) for n in ("attnkit:flash3", "torch:cudnn", "torch:flash"))
                tf = lambda m: flops / m / 1e9 if m else float("nan")
                print(f"D={d:3d} S={s:5d} causal={int(causal)}  flash3 {tf(f3):6.1f}  cudnn {tf(cd):6.1f}"
                      f"  fa2 {tf(fa):6.1f} TFLOP/s   f3/cudnn {cd / f3 if cd else float('nan'):.3f}"
                      f"  f3/fa2 {fa / f3 if fa else float('nan'):.3f}   rel_err_vs_cudnn {rel:.2e}",
                      flush=True)
                if not rel < 2e-2:
                    print(f"  !! flash3 disagrees with cuDNN: rel {rel}")
                del sets, impls
                torch.cuda.empty_cache()
    res = {"gpu": torch.cuda.get_device_name(), "date": time.strftime("%Y-%m-%d"),
           "torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
           "gemm_tflops_8192": round(gemm, 1), "copy_tbs": round(bw, 2), "rows": rows}
    with open(a.json, "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
